"""The verifier's children, each in namespaces of its own, so that what one answer cell starts,
writes or changes ends with it.

A verifier host (verifier/host.py) serves one grading worker's notebooks one after another and
runs every answer cell in a child of its own. First, `own_namespaces` gives the host a user
namespace and a pid namespace of its own: the process forks, the child (pid 1 there, with
every capability of that user namespace and none outside it) goes on as the host, and the
parent only waits for it. Then `fork_apart` forks each child into a new pid namespace, as its
init, so everything the child starts (a daemon that left its process group included) is
killed when it ends. Before any student code, the child enters new mount and IPC namespaces,
with a fresh tmpfs on `/tmp` (its working folder) and on `/dev/shm`, in which the folders the
host sees under `/tmp` that Python needs (a virtual environment, the package, shown again by
the sandbox) are bound back read-only, and a `/proc` that shows its own pid namespace; then it
drops every capability. So the next child, of the same student or of the next one, starts as
if it were the first; and no child can name the host (`os.getppid()` is 0, `kill(-1)` reaches
its own namespace only, the host is not in its `/proc` and is not dumpable). Where the system
refuses a user namespace, nothing of this happens and `own_namespaces` says so: the host then
serves one notebook only, as a verifier did before it was kept.
"""

from __future__ import annotations

import contextlib
import os
import sys

from autograder.grade.sandbox.isolation import (
    CLONE_NEWIPC,
    CLONE_NEWNS,
    CLONE_NEWPID,
    CLONE_NEWUSER,
    MS_NODEV,
    MS_NOEXEC,
    MS_NOSUID,
    MS_PRIVATE,
    MS_REC,
    PR_SET_NO_NEW_PRIVS,
    SYS_CAPSET,
    check,
    drop_capabilities,
    libc,
    mount,
    show_again,
    write_file,
)
from autograder.grade.sandbox.limits import end_with_parent

PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
CHILD_TMP = "size=64m,nr_inodes=4096,mode=1777"  # an answer cell's own /tmp
CHILD_SHM = "size=16m,nr_inodes=1024,mode=1777"

_own_pid_namespace: int | None = None  # the host's, to come back to after each fork


def own_namespaces() -> bool:
    """In a verifier that has one thread: go on as pid 1 of a pid namespace owned by a user
    namespace of this process's own (mapped to its own uid and gid), from which `fork_apart`
    can make a namespace for each child. False, with nothing changed, where the system refuses
    a user namespace. The process that called it waits for that init and ends with its status;
    the init ends with it."""
    global _own_pid_namespace
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWPID) != 0:
        return False
    # Unmapped, the process would see itself as the overflow user; nothing depends on it.
    with contextlib.suppress(OSError):
        write_file("/proc/self/setgroups", "deny")
        write_file("/proc/self/uid_map", f"{uid} {uid} 1")
        write_file("/proc/self/gid_map", f"{gid} {gid} 1")
    init = os.fork()
    if init != 0:  # the parent, which the kernel template knows: wait, then end the same way
        with contextlib.suppress(OSError):
            drop_capabilities()
        _, status = os.waitpid(init, 0)
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
    end_with_parent()
    _own_pid_namespace = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    return True


def fork_apart() -> int:
    """os.fork(), the child in namespaces of its own (see the module's docstring) when the
    host has them (`own_namespaces`), with no capability left either way. A child that cannot
    be set up so ends at once (exit status 71): no answer cell runs in one half set up. In the
    child, the host's descriptors that it must not keep are for the caller to close."""
    if _own_pid_namespace is None:
        pid = os.fork()
        if pid == 0:
            _set_up_child(_without_capabilities)
        return pid
    needed = _needed_in_tmp()
    check(libc.unshare(CLONE_NEWPID), "unshare pid namespace")
    try:
        pid = os.fork()
    except OSError:
        check(libc.setns(_own_pid_namespace, CLONE_NEWPID), "setns back")
        raise
    if pid == 0:
        _set_up_child(lambda: _enter_own_namespaces(needed))
        return 0
    # Back in its own: a process whose children would start in another pid namespace cannot
    # start a thread, and the next child needs a namespace made afresh from here.
    check(libc.setns(_own_pid_namespace, CLONE_NEWPID), "setns back")
    return pid


def _set_up_child(set_up) -> None:
    try:
        set_up()
    except BaseException:
        os._exit(71)


def _enter_own_namespaces(needed: list[str]) -> None:
    """In a child that is pid 1 of its own pid namespace, before any student code: mount and
    IPC namespaces of its own, a fresh /tmp (with the folders `needed` of the host's shown
    again, read-only), /dev/shm and /proc, then no capability."""
    global _own_pid_namespace
    os.close(_own_pid_namespace)
    _own_pid_namespace = None
    check(libc.unshare(CLONE_NEWNS | CLONE_NEWIPC), "unshare mount and IPC namespaces")
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    held = {path: os.open(path, os.O_PATH | os.O_DIRECTORY) for path in needed}
    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, CHILD_TMP)
    for path, fd in held.items():
        show_again(path, fd)
        os.close(fd)
    if os.path.isdir("/dev/shm"):
        mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, CHILD_SHM)
    # The host's /proc would list the host; this one lists this namespace only. A system that
    # refuses it still keeps the host out of reach (no pid names it from here).
    with contextlib.suppress(OSError):
        mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    os.chdir("/tmp")
    _without_capabilities()


_needed_cache: tuple[tuple, list[str]] = ((), [])


def _needed_in_tmp() -> list[str]:
    """`_needed_under("/tmp")`, found again only when modules were loaded or the import path
    changed since the last time. Not in the child: reading every loaded module there would
    write (reference counts) to hundreds of pages it shares with the host, and so copy them,
    most of a child's set-up time; and not after every fork in the host either."""
    global _needed_cache
    key = (len(sys.modules), tuple(sys.path))
    if _needed_cache[0] != key:
        _needed_cache = (key, _needed_under("/tmp"))
    return _needed_cache[1]


def _needed_under(top: str) -> list[str]:
    """The folders under `top` that this process's Python reads from (its environment, its
    import path, the folders its packages were loaded from, which an editable install's finder
    may know of alone) and the mounts there (what the sandbox shows again), outermost ones."""
    mounts = []
    with contextlib.suppress(OSError), open("/proc/self/mountinfo") as table:
        mounts = [line.split()[4].replace("\\040", " ") for line in table]
    loaded = []
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if "." not in name and isinstance(file, str):
            folder = os.path.dirname(file)
            loaded.append(os.path.dirname(folder) if hasattr(module, "__path__") else folder)
    paths = [*mounts, sys.prefix, sys.base_prefix, sys.exec_prefix, *filter(None, sys.path)]
    paths += loaded
    inside = {
        os.path.realpath(p)
        for p in paths
        if p.startswith(top.rstrip("/") + "/") and os.path.isdir(p)
    }
    return sorted(p for p in inside if not any(p.startswith(q + "/") for q in inside))


def _without_capabilities() -> None:
    """No capability, none to gain back (`no_new_privs`); a no-op where there are none."""
    if SYS_CAPSET is not None:
        libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
        with contextlib.suppress(OSError):
            drop_capabilities()
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
