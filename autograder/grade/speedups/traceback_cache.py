"""The parsed source of the torch files student tracebacks pass through, kept between runs.

The kernel template parses those files once per run for IPython's traceback formatter
(warmup.warm_traceback_caches): a third of its start-up, on the run's longest path,
before the first kernel. The parse depends only on a file's text and on the versions of the
libraries that make it, so the template keeps what it parsed in a file, and the next run's
template reads it back instead of parsing again.

Where it lives: in the grader's cache folder ($XDG_CACHE_HOME/hooklab or ~/.cache/hooklab).
The sandboxed template cannot see that folder, so the grader copies the file into the run
folder before the template needs it (bring_in) and keeps a new one the template wrote there once
the template has stopped (keep). Kernels never see the run folder outside their own corner of
it, and the file is only ever read by the template before any kernel exists. Without the sandbox
a submission runs as the grader's user and could change any of the grader's files anyway (see
docs/threat-model.md); the file is nevertheless only taken from a folder and a file that belong
to the grader and that nobody else may write.

A file from other library versions is ignored; a parsed file whose text has changed since is
dropped on reading (a source is stored under its file's lines, as the formatter looks it up).
"""

from __future__ import annotations

import contextlib
import linecache
import os
import pickle
import shutil
import stat
import sys
from pathlib import Path

from autograder.grade.speedups.base import need

FILE_NAME = "traceback-sources.pickle"
WRITTEN = FILE_NAME + ".new"  # what the template wrote in this run, for the grader to keep
FORMAT = 1


def cache_folder() -> Path:
    """The grader's cache folder for hooklab (as matplotlib picks its own)."""
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(home) / "hooklab"


def _trusted(path: Path) -> bool:
    """A regular file and its folder, both ours and writable by nobody else."""
    try:
        for info in (os.stat(path.parent), os.lstat(path)):
            if info.st_uid != os.geteuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                return False
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def bring_in(control_dir: str) -> None:
    """In the grader: copy the kept file, if there is a trustworthy one, to where the template
    (in `control_dir`, which only it and the grader see) looks for it."""
    kept = cache_folder() / FILE_NAME
    if not _trusted(kept):
        return
    partial = os.path.join(control_dir, FILE_NAME + ".partial")
    with contextlib.suppress(OSError):
        shutil.copyfile(kept, partial)
        os.replace(partial, os.path.join(control_dir, FILE_NAME))  # whole or not at all


def keep(control_dir: str) -> None:
    """In the grader, once the template has stopped: keep the file it wrote, if it wrote one."""
    written = os.path.join(control_dir, WRITTEN)
    if not os.path.isfile(written):
        return
    folder = cache_folder()
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        partial = folder / f"{FILE_NAME}.{os.getpid()}.partial"
        shutil.copyfile(written, partial)
        os.chmod(partial, 0o600)
        os.replace(partial, folder / FILE_NAME)


_installed = False


def install() -> None:
    """In the template: read() and write_if_new() may now put sources in stack_data's cache."""
    global _installed
    from stack_data.core import Source

    need(Source, "_class_local")
    _installed = True


def installed() -> bool:
    return _installed


def _versions() -> tuple:
    """What the parsed sources depend on besides the files' text."""
    import executing
    import IPython
    import pygments
    import stack_data
    from asttokens import version as asttokens

    libraries = (asttokens, executing, IPython, pygments, stack_data)
    return (FORMAT, sys.version, *(library.__version__ for library in libraries))


def _sources() -> dict:
    """The traceback formatter's parsed sources in this process: {(file, its lines): source}."""
    from stack_data.core import Source

    return Source._class_local("__source_cache_with_lines", {})


def read(control_dir: str) -> set:
    """In the template, before its traceback warm-up: take in the parsed sources of the file
    the grader brought in, those whose files still read the same. Returns their keys."""
    path = os.path.join(control_dir, FILE_NAME)
    try:
        with open(path, "rb") as file:
            if pickle.load(file) != _versions():
                return set()
            stored = pickle.load(file)
    except (OSError, EOFError, ValueError, pickle.UnpicklingError):  # missing or cut short
        return set()
    sources = _sources()
    taken = set()
    for key, source in stored.items():
        filename, lines = key
        if tuple(linecache.getlines(filename)) == lines:
            sources[key] = source
            taken.add(key)
    return taken


def write_if_new(control_dir: str, read_keys: set) -> bool:
    """In the template, after its warm-up: if it parsed files the kept file lacks, write them
    all for the next run, in a forked child (pickling takes a tenth of a second or two, which
    the template spends forking kernels instead). Returns whether it started writing."""
    sources = _sources()
    if set(sources) <= read_keys:
        return False
    try:
        if os.fork() != 0:
            return True
    except OSError:  # no process to spare: this run keeps nothing, the next one parses again
        return False
    try:
        # A parsed tree links every node to its parent: pickling recurses as deep as the trees.
        sys.setrecursionlimit(100_000)
        partial = os.path.join(control_dir, WRITTEN + ".partial")
        with open(partial, "wb") as file:
            pickle.dump(_versions(), file, protocol=pickle.HIGHEST_PROTOCOL)
            pickle.dump(dict(sources), file, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(partial, os.path.join(control_dir, WRITTEN))
    finally:
        os._exit(0)
