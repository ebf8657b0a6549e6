"""A sandboxed kernel's working folder: the files nbgrader would run the notebook beside.

nbgrader runs a submission's kernel in its autograded folder, where the files handed in with
the notebook (a data file the notebook opens, a helper module it imports) have been copied, and
what the notebook writes there stays there. A sandboxed kernel sees no course folder: it runs
in KERNEL_CWD, a folder of its private /tmp. So the worker copies those files into the kernel's
own folder (`ship`), and the kernel copies them into KERNEL_CWD before it runs anything
(`unpack`); once the kernel has ended, the template reads what is in KERNEL_CWD then from the
kernel's mount namespace (isolation.files_in) into a folder beside the kernel's (`keep`), and the
worker copies what is new or changed into the autograded folder (`bring_back`). Only regular
files and folders, never through a link, at most MAX_BYTES each way.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from pathlib import Path

SHIPPED = "working-folder"  # inside the kernel's own folder: what the kernel starts with
KERNEL_CWD = "/tmp/work"
MAX_BYTES = 64 << 20


def ship(source: str, kernel_dir: str, uid: int | None = None) -> str:
    """Copy the regular files and folders under `source` into `kernel_dir`, owned by the
    kernel's `uid`; returns the copy's path, or "" when there is nothing to ship."""
    if not os.path.isdir(source):
        return ""
    target = Path(kernel_dir) / SHIPPED
    budget = MAX_BYTES
    for folder, folders, files in os.walk(source, followlinks=False):
        relative = Path(folder).relative_to(source)
        folders[:] = [f for f in folders if not os.path.islink(os.path.join(folder, f))]
        for name in sorted(files):
            path = os.path.join(folder, name)
            info = os.lstat(path)
            if not stat.S_ISREG(info.st_mode) or info.st_size > budget:
                continue
            budget -= info.st_size
            destination = target / relative / name
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, destination, follow_symlinks=False)
    if not target.is_dir():
        return ""
    if uid is not None:  # the kernel, another user, reads them
        for folder, _folders, files in os.walk(target):
            os.chown(folder, uid, uid)
            for name in files:
                os.chown(os.path.join(folder, name), uid, uid)
    return str(target)


def unpack(shipped: str, into: str) -> None:
    """In the kernel, before any of the notebook runs: the shipped files into its working
    folder. Best effort: a private /tmp that is full ends the copy, not the kernel."""
    with contextlib.suppress(OSError, shutil.Error):
        shutil.copytree(shipped, into, symlinks=True, dirs_exist_ok=True)


def written_path(kernel_dir: str) -> str:
    """Where the template keeps what the kernel leaves in its working folder: beside the
    kernel's own folder, so the kernel never sees it, and outside that folder (the kernel's
    user's), which the template may not enter."""
    return kernel_dir.rstrip("/") + ".written"


def written_folder(kernel_dir: str) -> str:
    """In the worker, before the kernel starts: the (empty) folder written_path names."""
    folder = written_path(kernel_dir)
    os.makedirs(folder, mode=0o755, exist_ok=True)
    return folder


def keep(files: list[tuple[str, bytes]], folder: str) -> None:
    """In the template, once the kernel has ended: `files` (isolation.files_in) into `folder`."""
    for relative, content in files:
        destination = os.path.join(folder, relative)
        os.makedirs(os.path.dirname(destination), exist_ok=True)
        with open(destination, "wb") as file:
            file.write(content)


def bring_back(kernel_dir: str, cwd: str) -> list[str]:
    """In the worker, once the kernel has ended: the files it left in its working folder that
    are new or not as shipped, copied into `cwd` (the autograded folder) as nbgrader's kernel
    would have left them there; never through a link in `cwd`. Returns their relative paths."""
    kept, shipped = Path(written_path(kernel_dir)), Path(kernel_dir) / SHIPPED
    if not kept.is_dir() or not os.path.isdir(cwd):
        return []
    brought = []
    for path in sorted(p for p in kept.rglob("*") if p.is_file() and not p.is_symlink()):
        relative = path.relative_to(kept)
        content = path.read_bytes()
        original = shipped / relative
        if original.is_file() and original.read_bytes() == content:
            continue
        if _write_inside(cwd, relative, content):
            brought.append(str(relative))
    return brought


def _write_inside(root: str, relative: Path, content: bytes) -> bool:
    """Write `content` at `root`/`relative` unless a part of that path is a link or not a
    folder (what nbgrader copied from a submission is not trusted to be plain)."""
    folder = root
    for part in relative.parts[:-1]:
        folder = os.path.join(folder, part)
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder)
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            return False
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK  # a FIFO: ENXIO
    try:
        fd = os.open(os.path.join(folder, relative.name), flags, 0o644)
    except OSError:
        return False
    with os.fdopen(fd, "wb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        file.truncate(0)
        file.write(content)
    return True
