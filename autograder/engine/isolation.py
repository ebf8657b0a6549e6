"""Inside the sandbox: give one kernel namespaces of its own, then drop every privilege.

The zygote forks a *supervisor* per kernel. The supervisor enters new mount, pid, IPC and network
namespaces and mounts, in its own mount namespace only: a private size-limited /tmp (the
kernel's home and working folder), a private /dev/shm, and an empty folder over the zygote's run
folder with only this kernel's own folder (connection file, ipc sockets) shown again. It spawns
a placeholder init (`sleep`, pid 1 of the new pid namespace; when it dies, everything in the
namespace dies) and forks the kernel (pid 2). The kernel mounts a /proc that shows its own pid
namespace only, becomes an unprivileged user (nobody when the grader is root) in a user
namespace of its own (so RLIMIT_NPROC counts this kernel's processes only, and applies even to a
mapped root), and drops all capabilities before any student code runs. The supervisor waits
for the kernel, kills the init (and so every process left behind), and exits as the kernel did.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import struct
import sys
from collections.abc import Callable

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID = 0x00020000, 0x10000000, 0x20000000
CLONE_NEWIPC, CLONE_NEWNET = 0x08000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC = 1, 2, 4, 8, 4096, 0x4000
MS_PRIVATE = 1 << 18
PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 4, 38
SYS_CAPSET = 126  # x86_64
CAPABILITY_VERSION_3 = 0x20080522

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{what}: {os.strerror(number)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = ""):
    encode = lambda s: s.encode() if s else None  # noqa: E731
    result = _libc.mount(encode(source), encode(target), encode(fstype), flags, encode(data))
    _check(result, f"mount {target}")


def _write(path: str, text: str) -> None:
    with open(path, "w") as file:
        file.write(text)


def _drop_capabilities() -> None:
    header = struct.pack("II", CAPABILITY_VERSION_3, 0)
    data = bytes(24)  # two (effective, permitted, inheritable) triples, all zero
    _check(_libc.syscall(SYS_CAPSET, header, data), "capset")


def _private_mounts(kernel_dir: str, run_dir: str, scratch_mb: int, uid: int, gid: int) -> None:
    """In the supervisor's new mount namespace: what the kernel may write, and what it sees of
    the run folder (its own folder only)."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    own = os.open(kernel_dir, os.O_PATH | os.O_DIRECTORY)
    owner = f"mode=0700,uid={uid},gid={gid}"
    _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"size={scratch_mb}m,mode=1777")
    if os.path.isdir("/dev/shm"):
        _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, f"size=16m,{owner}")
    if os.path.isdir(run_dir):  # not under /tmp: hide it the same way
        _mount("tmpfs", run_dir, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
    os.makedirs(kernel_dir, exist_ok=True)
    _mount(f"/proc/self/fd/{own}", kernel_dir, None, MS_BIND)
    os.close(own)


def _become_unprivileged(uid: int | None) -> None:
    """In the kernel: a /proc of its own pid namespace, a non-root user (when `uid` is given),
    a user namespace of its own, no capabilities, no way to gain any."""
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    # A uid change makes the process non-dumpable, and so its /proc/self files root's; this
    # process must still write its own uid_map.
    _libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
    real_uid, real_gid = os.getuid(), os.getgid()
    _check(_libc.unshare(CLONE_NEWUSER), "unshare user namespace")
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{real_uid} {real_uid} 1")
    _write("/proc/self/gid_map", f"{real_gid} {real_gid} 1")
    _drop_capabilities()
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def supervise(request: dict, report: int, become_kernel: Callable[[dict], None]) -> None:
    """Run in the zygote's forked child; writes "<kernel pid>\\n" (or "error: ...") to the pipe
    `report`, then exits as the kernel does. Never returns."""
    kernel_dir, run_dir = request["kernel_dir"], request["run_dir"]
    uid = request.get("kernel_uid")
    owner = (uid, uid) if uid is not None else (os.getuid(), os.getgid())
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # it may die of the kernel's signal
    try:
        flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWNET
        _check(_libc.unshare(flags), "unshare")
        _private_mounts(kernel_dir, run_dir, int(request["scratch_mb"]), *owner)
        # pid 1: `sleep`, spawned without copying this process (vfork), never signalled from
        # inside; orphans stay zombies under it until the namespace ends.
        init = os.posix_spawn("/bin/sleep", ["sleep", "infinity"], {})
        kernel = os.fork()
        if kernel == 0:
            os.close(report)
            try:
                _become_unprivileged(uid)
            except OSError as error:  # no student code has run: a plain failure
                print(f"kernel set-up failed: {error}", file=sys.stderr, flush=True)
                os._exit(1)
            try:
                become_kernel(request)
            finally:
                os._exit(0)
    except BaseException as error:
        os.write(report, f"error: {error}\n".encode())
        os._exit(1)
    os.write(report, f"{kernel}\n".encode())
    os.close(report)
    try:
        _, status = os.waitpid(kernel, 0)
        os.kill(init, signal.SIGKILL)  # ends the pid namespace: nothing the kernel started survives
        os.waitpid(init, 0)
        if os.WIFSIGNALED(status):  # die of the same signal, for the zygote's status
            if os.WTERMSIG(status) not in (signal.SIGKILL, signal.SIGSTOP):
                signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
            os.kill(os.getpid(), os.WTERMSIG(status))
        os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)
    finally:
        os._exit(1)


def self_test(run_dir: str, kernel_uid: int | None) -> str | None:
    """Isolate one do-nothing kernel exactly as for a real one; None if that works, else why.
    Run (as a script, without importing torch) inside bwrap before the zygote is trusted to."""
    kernel_dir = os.path.join(run_dir, "self-test")
    os.makedirs(kernel_dir, exist_ok=True)
    report, write_end = os.pipe()
    request = {"kernel_dir": kernel_dir, "run_dir": run_dir, "scratch_mb": 1}
    pid = os.fork()
    if pid == 0:
        os.close(report)
        supervise({**request, "kernel_uid": kernel_uid}, write_end, lambda request: None)
    os.close(write_end)
    with os.fdopen(report) as lines:
        answer = lines.readline().strip()
    _, status = os.waitpid(pid, 0)
    if not answer.isdigit():
        return answer or "the kernel's supervisor ended without a word"
    if os.waitstatus_to_exitcode(status) != 0:
        return f"an isolated kernel could not drop its privileges (status {status})"
    return None


if __name__ == "__main__":
    why = self_test(sys.argv[1], int(sys.argv[2]) if sys.argv[2:] else None)
    print(why or "ok")
    sys.exit(1 if why else 0)
