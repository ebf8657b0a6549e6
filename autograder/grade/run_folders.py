"""The temporary folders a grading run makes (the kernel template's run folder, the workers'
shared verdicts, a notebook's fallback working folder), and the removal, when the next run
starts, of those that a run ended by SIGKILL, the OOM killer or a power cut left behind.

A run folder holds a lock file that the process which made the folder keeps locked (`flock`,
shared) until it removes the folder; the processes it forks (the grading workers) hold the
same lock. The operating system releases it when the last of them ends, however it ends, so
`sweep` needs no process ids (which are reused): a folder whose lock it can take exclusively,
and whose lock file says it was locked once, belongs to no living process.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator

PREFIX = "hooklab-"
KINDS = ("zygote", "verdicts", "run")
NAMES = tuple(f"{PREFIX}{kind}-" for kind in KINDS)  # what a run folder's name starts with
LOCK = ".in-use"
READY = b"locked"  # written once the maker holds the lock
# A lock file still empty: its maker is between creating and locking it (microseconds), or died
# right there. Only a folder that old is taken for a dead one.
UNLOCKED_FOR = 24 * 3600.0

# The kernels' and verifiers' sockets lie in the zygote's folder (kernels/k*/ipc-<n>, the longest
# kernels/v*/verifier.sock), and a Unix socket's path holds at most 107 bytes: under a long
# temporary folder (a deep TMPDIR) they would not fit.
SOCKET_PATH_MAX = 107
BELOW_ZYGOTE_FOLDER = len("/hooklab-zygote-12345678/kernels/v12345678/verifier.sock")
SHORT = "/tmp"

_held: dict[str, int] = {}  # folder -> the open lock file that keeps it in use


def make(kind: str) -> str:
    """A new folder hooklab-<kind>-* in the temporary folder (a zygote's in /tmp when that one's
    path is too long for its sockets), kept in use until `remove` or this process ends."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind of run folder: {kind!r}")
    path = tempfile.mkdtemp(prefix=f"{PREFIX}{kind}-", dir=_parent(kind))
    try:
        flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC
        descriptor = os.open(os.path.join(path, LOCK), flags, 0o600)
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)  # without a lock file no sweep would remove it
        raise
    fcntl.flock(descriptor, fcntl.LOCK_SH)
    os.write(descriptor, READY)
    _held[path] = descriptor
    return path


def remove(path: str) -> None:
    """Remove a folder `make` made (what is in it too), then let go of its lock."""
    shutil.rmtree(path, ignore_errors=True)
    descriptor = _held.pop(path, None)
    if descriptor is not None:
        os.close(descriptor)


@contextlib.contextmanager
def folder(kind: str) -> Iterator[str]:
    """A run folder for the block, removed after it."""
    path = make(kind)
    try:
        yield path
    finally:
        remove(path)


def _parent(kind: str) -> str:
    where = tempfile.gettempdir()
    if kind != "zygote" or len(os.fsencode(where)) + BELOW_ZYGOTE_FOLDER <= SOCKET_PATH_MAX:
        return where
    if os.path.isdir(SHORT) and os.access(SHORT, os.W_OK | os.X_OK):
        return SHORT
    raise RuntimeError(
        f"the temporary folder {where} has too long a path for the kernels' sockets (at most "
        f"{SOCKET_PATH_MAX - BELOW_ZYGOTE_FOLDER} characters): set TMPDIR to a shorter one"
    )


def sweep(where: str | None = None) -> list[str]:
    """Remove this user's run folders in `where` (else in the temporary folder and /tmp) that
    no living process holds; returns them. Folders of other users, of other names and those in
    use are left."""
    removed = []
    for parent in [where] if where else dict.fromkeys([tempfile.gettempdir(), SHORT]):
        try:
            entries = list(os.scandir(parent))
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith(NAMES) and _left(entry):
                shutil.rmtree(entry.path, ignore_errors=True)
                removed.append(entry.path)
    return removed


def _left(entry: os.DirEntry) -> bool:
    """Whether the run that made this folder has ended (nothing holds its lock)."""
    try:
        info = entry.stat(follow_symlinks=False)
    except OSError:
        return False
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        return False
    try:
        descriptor = os.open(os.path.join(entry.path, LOCK), os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:  # no lock file: being made (or not one of ours)
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # in use
        os.close(descriptor)
        return False
    try:
        if os.read(descriptor, len(READY)) == READY:
            return True
        return time.time() - os.fstat(descriptor).st_mtime > UNLOCKED_FOR
    finally:
        os.close(descriptor)
