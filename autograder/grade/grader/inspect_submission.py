"""Say in plain words what is wrong with a submitted notebook file when nbgrader fails on it, and
refuse a submission folder holding anything but plain files and folders."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from autograder.course import COURSE_ORDER

SUPPORTED_NBFORMAT = 4


def submission_problems(folder: Path, assignment: str, graded: set[str] | None = None) -> list[str]:
    """What is wrong with the notebooks handed in under `folder` (submitted/<s>/<a>/), if
    anything: one plain sentence per problem, empty when the files look gradable. Only the
    notebooks named in `graded` (all, when None) are read: --notebook grades some."""
    expected = f"{assignment}.ipynb"
    found = sorted(folder.glob("*.ipynb"))
    if not found:
        return [f"no notebook was handed in (expected {expected})"]
    problems = [notebook_problem(p) for p in found if graded is None or p.name in graded]
    names = [path.name for path in found]
    # Only this course's assignments are one notebook named as the assignment.
    if assignment in COURSE_ORDER and expected not in names:
        problems.insert(0, f"the notebook is named {', '.join(names)}, not {expected}")
    return [p for p in problems if p]


def unsafe_entries(submitted: Path, student: str, assignment: str) -> list[str]:
    """Why the submission submitted/<student>/<assignment>/ must not be read, one sentence per
    entry that is not a plain file or folder: a symbolic link (to another student's notebook, to
    /etc/shadow), a file with other hard links, a device, a FIFO or a socket. nbgrader would
    follow a link and copy what it points to into autograded/ (world-readable); a FIFO would
    block the reader. Nothing is followed or opened here."""
    problems = []
    student_folder = submitted / student
    for folder in (student_folder, student_folder / assignment):
        if folder.is_symlink() or not folder.is_dir():
            where = folder.relative_to(submitted.parent)
            problems.append(f"{where} is {_kind(folder)}, not a folder; it is not graded")
    if problems:
        return problems
    top = student_folder / assignment
    for folder, folders, files in os.walk(top, followlinks=False):
        for name in sorted(folders + files):
            path = Path(folder) / name
            where = path.relative_to(top)
            info = path.lstat()
            if stat.S_ISDIR(info.st_mode):
                continue
            if not stat.S_ISREG(info.st_mode):
                problems.append(
                    f"{where} is {_kind(path)}; hand in plain files only (nothing is graded)"
                )
            elif info.st_nlink > 1:
                others = _other_names(submitted, path, info)
                problems.append(
                    f"{where} {others}; hand in a copy of the file itself (nothing is graded)"
                )
    return problems


def _other_names(submitted: Path, path: Path, info: os.stat_result) -> str:
    """Where else the file `path` (with other hard links) is among the submissions: both
    submissions are refused, since neither name can be told to be the original."""
    others = []
    for folder, _folders, files in os.walk(submitted, followlinks=False):
        for name in files:
            other = Path(folder) / name
            if other != path and _same_file(other, info):
                others.append(str(other.relative_to(submitted.parent)))
    links = info.st_nlink - 1
    if not others:
        return f"has {links} other hard link(s), outside the submissions"
    return f"is the same file as {', '.join(sorted(others)[:3])} (hard links)"


def _same_file(path: Path, info: os.stat_result) -> bool:
    try:
        other = path.lstat()
    except OSError:
        return False
    return (other.st_dev, other.st_ino) == (info.st_dev, info.st_ino)


def _kind(path: Path) -> str:
    """What a file system entry is, in words ("a symbolic link", "a FIFO", ...)."""
    try:
        mode = path.lstat().st_mode
    except OSError:
        return "missing"
    kinds = [
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISREG, "a file"),
        (stat.S_ISDIR, "a folder"),
    ]
    return next((words for test, words in kinds if test(mode)), "an unknown kind of file")


def read_plain_file(path: Path) -> bytes:
    """The bytes of a submitted file, never through a symbolic link (O_NOFOLLOW) and never from
    anything but a regular file (a FIFO would block)."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise OSError(f"{path.name} is not a regular file")
        with os.fdopen(descriptor, "rb", closefd=False) as file:
            return file.read()
    finally:
        os.close(descriptor)


def notebook_problem(path: Path) -> str | None:
    """What makes `path` not a gradable notebook, in one sentence, or None when nothing does."""
    name = path.name
    try:
        data = read_plain_file(path)
    except OSError as error:
        return f"{name} cannot be read ({error.strerror or error})"
    if not data.strip():
        return f"{name} is empty"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        byte = data[error.start]
        return f"{name} is not UTF-8 text (byte 0x{byte:02x} at position {error.start})"
    try:
        nb = json.loads(text)
    except json.JSONDecodeError as error:
        return f"{name} is not valid JSON (line {error.lineno}, column {error.colno})"
    except RecursionError:
        return f"{name} is nested too deeply to be a notebook"
    if not isinstance(nb, dict) or "nbformat" not in nb:
        return f"{name} is JSON but not a notebook (no nbformat version)"
    version = nb["nbformat"]
    if version != SUPPORTED_NBFORMAT:
        return f"{name} is nbformat version {version}; the grader needs version 4"
    cells = nb.get("cells")
    if not isinstance(cells, list):
        return f"{name} has no list of cells"
    if not any(isinstance(c, dict) and "nbgrader" in c.get("metadata", {}) for c in cells):
        return (
            f"{name} has no nbgrader cell metadata (it was not made from the released notebook,"
            " so no answer or test cell can be found)"
        )
    return None
