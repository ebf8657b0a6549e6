"""The course's grading settings (its nbgrader_config.py) and the default number of workers,
read without the engine's heavy imports: a command starts the kernel template with them before
it imports torch itself, so that the two imports run on two cores at once."""

from __future__ import annotations

import copy
import json
import os
import re
from pathlib import Path

from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

from autograder.grade.kernels.warmup import TORCH_PACKAGES

# A worker spends much of its time waiting for its kernel: one more than the cores keeps them busy.
DEFAULT_JOBS = (os.cpu_count() or 1) + 1
USES_TORCH = re.compile(rf"^\s*(?:import|from)\s+(?:{'|'.join(TORCH_PACKAGES)})\b", re.MULTILINE)


def load_config(root: Path, db_url: str | None = None, parsed: Config | None = None) -> Config:
    """The course's configuration, with the root made absolute and the db URL applied: what
    nbgrader's command line and config files gave (`parsed`, grade/app.py), else the course
    folder's nbgrader_config.py."""
    config = Config()
    if parsed is not None:
        config.merge(copy.deepcopy(parsed))
    elif (root / "nbgrader_config.py").exists():
        config.merge(PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config())
    config.CourseDirectory.root = str(root.resolve())
    if db_url:
        config.CourseDirectory.db_url = db_url
    return config


def working_course_root() -> Path:
    """The course folder as nbgrader finds it from the working folder: the root its
    nbgrader_config.py names (`c.CourseDirectory.root`), else the working folder itself."""
    cwd = Path.cwd()
    root = ""
    if (cwd / "nbgrader_config.py").exists():
        try:
            file = PyFileConfigLoader("nbgrader_config.py", path=str(cwd)).load_config()
            root = file.CourseDirectory.get("root", "")
        except Exception:  # a broken file is for nbgrader (the app) to report, in its own words
            root = ""
    return (cwd / root).resolve() if root else cwd


def start_kernel_template(root: Path) -> dict | None:
    """Start this machine's kernel template (zygote.py) with the course's sandbox settings, if
    it is not running yet, without waiting for it; the batches then use it. Returns those
    settings."""
    from autograder.grade.kernels.template_client import Zygote

    config = load_config(root)
    sandbox = sandbox_settings(config)
    Zygote.start_soon(sandbox, torch=course_uses_torch(root, config))
    return sandbox


def course_uses_torch(root: Path, config: Config) -> bool:
    """Whether a notebook of the course's source or release folder imports torch, or Hooklab's
    checks (which use it); True too when neither folder holds a notebook, as nothing says no.
    A course it misses still grades correctly: its kernels import torch themselves."""
    notebooks = [
        path
        for trait, default in (("source_directory", "source"), ("release_directory", "release"))
        for path in sorted((root / config.CourseDirectory.get(trait, default)).glob("*/*.ipynb"))
    ]
    return not notebooks or any(_imports_torch(path) for path in notebooks)


def _imports_torch(notebook: Path) -> bool:
    """Whether a code cell of `notebook` imports TORCH_PACKAGES; True when it cannot be read."""
    try:
        cells = json.loads(notebook.read_text(encoding="utf-8")).get("cells", [])
    except (OSError, ValueError, AttributeError):
        return True
    for cell in cells if isinstance(cells, list) else []:
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            source = cell.get("source", "")
            if USES_TORCH.search("".join(source) if isinstance(source, list) else str(source)):
                return True
    return False


def sandbox_settings(config: Config) -> dict | None:
    return config.WarmKernelManager.get("sandbox")
