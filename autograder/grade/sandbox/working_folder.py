"""A sandboxed kernel's working folder: the files nbgrader would run the notebook beside.

nbgrader runs a submission's kernel in its autograded folder, where the files handed in with
the notebook (a data file the notebook opens, a helper module it imports) have been copied. A
sandboxed kernel sees no course folder and runs in its private /tmp, so the worker copies those
files into the kernel's own folder (`ship`), and the kernel copies them into its /tmp before it
runs anything (`unpack`). Only regular files and folders are shipped, never through a link, and
at most MAX_BYTES: what the kernel reads is what nbgrader copied, nothing it points to. What the
kernel writes there stays in its /tmp (nbgrader would keep it in autograded/; not done yet).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from pathlib import Path

SHIPPED = "working-folder"  # inside the kernel's own folder
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
