"""Inside the sandbox: give one kernel namespaces of its own, then drop every privilege.

For each kernel the zygote enters a new pid namespace just long enough to spawn a placeholder
init (`sleep`, pid 1; when it dies, everything in the namespace dies) and to fork the kernel
(pid 2, still the zygote's own child, so one fork per kernel as without the sandbox). The kernel
then, before any student code: enters new mount and IPC namespaces; mounts a private
size-limited /tmp (its home and working folder), a private /dev/shm, an empty folder over the
zygote's run folder with only its own folder (connection file, ipc sockets) shown again, the
folders of the Python environment and the package that these hide (a checkout in /tmp) shown
again read-only, and a /proc that shows its own pid namespace only; becomes an unprivileged
user (nobody when the grader is root) in a user namespace of its own (so RLIMIT_NPROC counts
this kernel's processes only, and applies even to a mapped root); enters a network namespace
of that user namespace, with nothing in it but its own loopback; and drops all capabilities.
When the kernel ends, the zygote kills its init, and so every process it left behind.
"""

from __future__ import annotations

import array
import contextlib
import ctypes
import fcntl
import os
import signal
import socket
import stat
import struct
import sys
import time
from collections.abc import Callable

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID = 0x00020000, 0x10000000, 0x20000000
CLONE_NEWIPC, CLONE_NEWNET = 0x08000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC = 1, 2, 4, 8, 4096, 0x4000
MS_REMOUNT, MS_PRIVATE = 32, 1 << 18
PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 4, 38
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
# capset(2) has no libc wrapper; its number per architecture (elsewhere the self-test fails and
# the grader falls back, loudly, to limits only).
SYS_CAPSET = {"x86_64": 126, "aarch64": 91}.get(os.uname().machine)
CAPABILITY_VERSION_3 = 0x20080522

libc = ctypes.CDLL(None, use_errno=True)


def check(result: int, what: str) -> None:
    if result != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{what}: {os.strerror(number)}")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = ""):
    encode = lambda s: s.encode() if s else None  # noqa: E731
    result = libc.mount(encode(source), encode(target), encode(fstype), flags, encode(data))
    check(result, f"mount {target}")


def write_file(path: str, text: str) -> None:
    with open(path, "w") as file:
        file.write(text)


def drop_capabilities() -> None:
    if SYS_CAPSET is None:
        raise OSError(f"capset: unknown system call number on {os.uname().machine}")
    header = struct.pack("II", CAPABILITY_VERSION_3, 0)
    data = bytes(24)  # two (effective, permitted, inheritable) triples, all zero
    check(libc.syscall(SYS_CAPSET, header, data), "capset")


def _inside(path: str, folders: list[str]) -> bool:
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


# statvfs flags of a mount -> the mount flags that keep them when it is remounted (a mount
# inherited from another user namespace may not lose them).
KEPT_FLAGS = {
    os.ST_NOSUID: MS_NOSUID,
    os.ST_NODEV: MS_NODEV,
    os.ST_NOEXEC: MS_NOEXEC,
    os.ST_NOATIME: 1024,  # MS_NOATIME
    os.ST_NODIRATIME: 2048,  # MS_NODIRATIME
    os.ST_RELATIME: 1 << 21,  # MS_RELATIME
}


def show_again(path: str, held: int) -> None:
    """Bind the host folder held open as `held` back at `path`, read-only, under a tmpfs just
    mounted there. The folders it makes on the way are the caller's, mode 755: the kernel or
    answer cell that runs there, as another user or without capabilities, can neither add to
    them nor rename them."""
    missing, folder = [], path
    while not os.path.isdir(folder):
        missing.append(folder)
        folder = os.path.dirname(folder)
    for folder in reversed(missing):
        os.mkdir(folder)
        os.chmod(folder, 0o755)
    mount(f"/proc/self/fd/{held}", path, None, MS_BIND | MS_REC)
    bound = os.statvfs(path).f_flag
    flags = MS_REMOUNT | MS_BIND | MS_RDONLY
    flags |= sum(flag for st, flag in KEPT_FLAGS.items() if bound & st)
    mount(None, path, None, flags)
    # Checked rather than trusted: what runs there must not write to what the grader runs.
    if not os.statvfs(path).f_flag & os.ST_RDONLY:
        raise OSError(f"{path} would be writable")


def _private_mounts(
    kernel_dir: str, run_dir: str, scratch_mb: int, uid: int, gid: int, shown: list[str]
) -> None:
    """In the kernel's new mount namespace: what it may write, and what it sees of the run
    folder (its own folder only). Folders the sandbox shows (the Python environment, the
    package) that the mounts below would hide (a checkout in /tmp) are held open first and bound
    back afterwards, read-only; nothing else of what they hide shows."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    own = os.open(kernel_dir, os.O_PATH | os.O_DIRECTORY)
    hidden = [p for p in shown if _inside(p, ["/tmp", "/dev/shm", run_dir]) and os.path.isdir(p)]
    held = {path: os.open(path, os.O_PATH | os.O_DIRECTORY) for path in hidden}
    owner = f"mode=0700,uid={uid},gid={gid}"
    # Bounded in bytes and in files (inodes): a tmpfs's default allows half the machine's pages.
    scratch = f"size={scratch_mb}m,nr_inodes={SCRATCH_FILES},mode=1777"
    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, scratch)
    if os.path.isdir("/dev/shm"):
        mount(
            "tmpfs",
            "/dev/shm",
            "tmpfs",
            MS_NOSUID | MS_NODEV | MS_NOEXEC,
            f"size=16m,nr_inodes=1024,{owner}",
        )
    if os.path.isdir(run_dir):  # not under /tmp: hide it the same way
        mount("tmpfs", run_dir, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,nr_inodes=64,mode=0755")
    os.makedirs(kernel_dir, exist_ok=True)
    mount(f"/proc/self/fd/{own}", kernel_dir, None, MS_BIND)
    os.close(own)
    for path, fd in held.items():  # in order: a folder before the ones inside it
        show_again(path, fd)
        os.close(fd)


def _own_loopback() -> None:
    """A network namespace with only a loopback interface, up. Nothing outside the kernel is
    reachable through it; ipykernel needs it to forward what a forked child prints (over TCP on
    127.0.0.1), which is otherwise lost, each message stalling the child for zmq's linger."""
    check(libc.unshare(CLONE_NEWNET), "unshare network namespace")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as any_socket:
        request = struct.pack("16sH22x", b"lo", 0)  # struct ifreq: a name, then the flags
        flags = struct.unpack_from("16sH", fcntl.ioctl(any_socket, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(any_socket, SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | IFF_UP))


def _become_unprivileged(uid: int | None) -> None:
    """In the kernel: a /proc of its own pid namespace, a non-root user (when `uid` is given),
    a user namespace of its own and a network namespace of that one, no capabilities, no way
    to gain any."""
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    # A uid change makes the process non-dumpable, and so its /proc/self files root's; this
    # process must still write its own uid_map.
    libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
    real_uid, real_gid = os.getuid(), os.getgid()
    check(libc.unshare(CLONE_NEWUSER), "unshare user namespace")
    write_file("/proc/self/setgroups", "deny")
    write_file("/proc/self/uid_map", f"{real_uid} {real_uid} 1")
    write_file("/proc/self/gid_map", f"{real_gid} {real_gid} 1")
    # Only a network namespace owned by this new user namespace is one the kernel may set up
    # (it has no CAP_NET_ADMIN over the zygote's), and only until its capabilities go.
    _own_loopback()
    drop_capabilities()
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def fork_isolated(
    request: dict, in_child: Callable[[], None], become_kernel
) -> tuple[int, int, socket.socket]:
    """In the zygote: fork a kernel into a new pid namespace (under a `sleep` as its init), and
    return (kernel pid, init pid, the socket on which it will ask to have its folder sealed:
    `seal_folder_of`). In the child, `in_child` runs first, then the kernel isolates itself
    (isolate_self) and becomes a kernel, `request["seal_fd"]` its end of that socket; it never
    returns there."""
    global _own_pid_namespace, _own_mount_namespace
    if _own_pid_namespace is None:
        _own_pid_namespace = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
        _own_mount_namespace = os.open("/proc/self/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    # Processes forked from now on go in a new pid namespace, until setns below.
    check(libc.unshare(CLONE_NEWPID), "unshare pid namespace")
    try:
        # pid 1: `sleep`, spawned without copying the zygote (vfork); when it dies, every
        # process of the namespace dies. It does not reap: orphans stay zombies until then.
        init = os.posix_spawn("/bin/sleep", ["sleep", "infinity"], {})
        try:
            kernel = os.fork()
        except OSError:
            os.kill(init, signal.SIGKILL)
            os.waitpid(init, 0)
            ours.close()
            theirs.close()
            raise
        if kernel == 0:
            ours.close()
            in_child()
            request = {**request, "seal_fd": theirs.detach()}
            try:
                isolate_self(request)
            except Exception as error:  # no student code has run: a plain failure, and this
                # copy of the zygote must not go on as one
                print(f"kernel set-up failed: {error}", file=sys.stderr, flush=True)
                os._exit(1)
            try:
                become_kernel(request)
            finally:
                os._exit(0)
    finally:
        check(libc.setns(_own_pid_namespace, CLONE_NEWPID), "setns back")
    theirs.close()
    return kernel, init, ours


def isolate_self(request: dict) -> None:
    """In the forked kernel (pid 2 of its namespace), before any student code."""
    os.close(_own_pid_namespace)
    os.close(_own_mount_namespace)
    uid = request.get("kernel_uid")
    owner = (uid, uid) if uid is not None else (os.getuid(), os.getgid())
    check(libc.unshare(CLONE_NEWNS | CLONE_NEWIPC), "unshare")
    where = request["kernel_dir"], request["run_dir"], int(request["scratch_mb"])
    _private_mounts(*where, *owner, request.get("shown", []))
    _become_unprivileged(uid)


_own_pid_namespace: int | None = None  # the zygote's, to return to after each fork
_own_mount_namespace: int | None = None  # the zygote's, to return to after each seal

SEALED = b"sealed"
SCRATCH_FILES = 20_000  # files and folders a kernel may make in its /tmp


def seal_when_listening(seal_fd: int, sockets: list[str], wait_s: float = 10.0) -> None:
    """In a kernel (or a verifier), once its sockets are bound and before any student code:
    have the zygote make the kernel's folder read-only in the kernel's mount namespace. That
    folder is the one place of the host's disk the kernel sees (bound from the zygote's run
    folder); it needs to be writable only to create the sockets. Raises OSError if the folder
    is not sealed after it (the kernel must then not run student code)."""
    deadline = time.monotonic() + wait_s
    while not all(os.path.exists(path) for path in sockets):  # ipykernel binds its heartbeat
        if time.monotonic() > deadline:  # socket on a thread of its own
            raise OSError(f"the kernel's sockets did not appear within {wait_s:.0f} s")
        time.sleep(0.001)
    namespace = os.open("/proc/self/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)
    with socket.socket(fileno=seal_fd) as channel:
        channel.settimeout(wait_s)
        rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [namespace]))]
        channel.sendmsg([b"seal"], rights)
        os.close(namespace)
        reply = channel.recv(4096)
    folder = os.path.dirname(sockets[0])
    if reply != SEALED or not os.statvfs(folder).f_flag & os.ST_RDONLY:
        why = reply.decode(errors="replace") or "no answer"
        raise OSError(f"the kernel's folder could not be made read-only ({why})")


def seal_folder_of(channel: socket.socket, folder: str) -> int | None:
    """In the zygote: answer a kernel's seal_when_listening on `channel` (then closed): make
    `folder` read-only in the mount namespace it sent. The zygote enters that namespace for the
    one remount (it alone has the capabilities for it) and comes back at once; the kernel has
    run no student code yet, so the namespace is as isolate_self made it. Returns that
    namespace (a file descriptor the caller closes; it keeps the kernel's /tmp after the
    kernel ends: files_in) once sealed, else None."""
    with channel:
        try:
            _message, rights, _flags, _address = channel.recvmsg(16, socket.CMSG_SPACE(4))
        except OSError:
            return None
        fds = [
            fd
            for level, kind, data in rights
            if kind == socket.SCM_RIGHTS
            for fd in array.array("i", data[: len(data) - len(data) % 4])
        ]
        if len(fds) != 1:
            for fd in fds:
                os.close(fd)
            return None  # the kernel died, or did not send its namespace: it will not go on
        try:
            _remount_read_only(fds[0], folder)
            reply = SEALED
        except OSError as error:
            reply = f"seal failed: {error}".encode()
        if reply != SEALED:
            os.close(fds[0])
        with contextlib.suppress(OSError):
            channel.sendall(reply)
        return fds[0] if reply == SEALED else None


def files_in(namespace: int, folder: str, max_bytes: int) -> list[tuple[str, bytes]]:
    """In the zygote, once the kernel whose mount `namespace` this is has ended (with every
    process of its pid namespace, so nothing changes them any more): the regular files under
    `folder` there, as (path relative to it, content), at most `max_bytes` in all. Never
    through a link, never a FIFO or device, a file too large for what is left skipped."""
    files: list[tuple[str, bytes]] = []
    with _in_namespace(namespace):
        budget = max_bytes
        with contextlib.suppress(OSError):  # the kernel may have replaced it by a link
            if not stat.S_ISDIR(os.lstat(folder).st_mode):
                return files
        for top, folders, names in os.walk(folder, followlinks=False):
            folders.sort()
            for name in sorted(names):
                path = os.path.join(top, name)
                with contextlib.suppress(OSError):
                    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY)
                    try:
                        info = os.fstat(fd)
                        if stat.S_ISREG(info.st_mode) and info.st_size <= budget:
                            with os.fdopen(fd, "rb", closefd=False) as file:
                                content = file.read(info.st_size)
                            budget -= len(content)
                            files.append((os.path.relpath(path, folder), content))
                    finally:
                        os.close(fd)
    return files


def _remount_read_only(namespace: int, folder: str) -> None:
    with _in_namespace(namespace):
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC
        mount(None, folder, None, flags)
        if not os.statvfs(folder).f_flag & os.ST_RDONLY:
            raise OSError(f"{folder} is still writable")


@contextlib.contextmanager
def _in_namespace(namespace: int):
    """In the zygote: enter a kernel's mount `namespace` for the block, then come back."""
    here = os.open(".", os.O_PATH | os.O_DIRECTORY)  # setns moves this process to its root
    if libc.setns(namespace, CLONE_NEWNS) != 0:
        os.close(here)
        check(-1, "setns into the kernel's mount namespace")
    try:
        yield
    finally:
        if libc.setns(_own_mount_namespace, CLONE_NEWNS) != 0:
            # Forking kernels from inside a kernel's mount namespace would give them its view.
            print("the kernel template could not return to its mount namespace", flush=True)
            os._exit(70)
        os.fchdir(here)
        os.close(here)


def self_test(run_dir: str, kernel_uid: int | None, shown: list[str]) -> str | None:
    """Isolate one do-nothing kernel exactly as for a real one, sealing its folder too; None if
    that works, else why. The zygote runs it in bwrap before it listens or imports torch
    (zygote.serve)."""
    kernel_dir = os.path.join(run_dir, "self-test")
    os.makedirs(kernel_dir, exist_ok=True)
    os.chmod(kernel_dir, 0o777)  # it binds a socket there as a kernel does, as nobody
    request = {"kernel_dir": kernel_dir, "run_dir": run_dir, "scratch_mb": 1, "shown": shown}

    def check(request: dict) -> None:  # the kernel must still see the environment and package
        if not all(os.path.isdir(path) for path in shown):
            os._exit(3)
        path = os.path.join(request["kernel_dir"], "self-test.sock")
        listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listening.bind(path)
        try:
            seal_when_listening(request["seal_fd"], [path])
        except OSError:
            os._exit(4)
        try:  # sealed: nothing more can be written there
            open(os.path.join(request["kernel_dir"], "written"), "w").close()
        except OSError:
            os._exit(0)
        os._exit(5)

    try:
        kernel, init, channel = fork_isolated(
            {**request, "kernel_uid": kernel_uid}, lambda: None, check
        )
    except OSError as error:
        return str(error)
    namespace = seal_folder_of(channel, kernel_dir)
    if namespace is not None:
        os.close(namespace)
    _, status = os.waitpid(kernel, 0)
    os.kill(init, signal.SIGKILL)
    os.waitpid(init, 0)
    why = {
        3: "an isolated kernel could not see the Python environment or the package",
        4: "an isolated kernel's folder could not be made read-only",
        5: "an isolated kernel's folder stayed writable after it was sealed",
    }
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        return why.get(code, f"an isolated kernel could not set itself up (exit status {status})")
    return None
