"""The course's grading settings (its nbgrader_config.py) and the default number of workers,
read without the engine's heavy imports: a command starts the kernel template with them before
it imports torch itself, so that the two imports run on two cores at once."""

from __future__ import annotations

import os
from pathlib import Path

from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

# A worker spends much of its time waiting for its kernel: one more than the cores keeps them busy.
DEFAULT_JOBS = (os.cpu_count() or 1) + 1


def load_config(root: Path, db_url: str | None = None) -> Config:
    """The course's nbgrader_config.py, with the root made absolute and the db URL applied."""
    config = Config()
    if (root / "nbgrader_config.py").exists():
        config.merge(PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config())
    config.CourseDirectory.root = str(root.resolve())
    if db_url:
        config.CourseDirectory.db_url = db_url
    return config


def start_kernel_template(root: Path) -> None:
    """Start this machine's kernel template (zygote.py) with the course's sandbox settings, if
    it is not running yet, without waiting for it; the batches then use it."""
    from autograder.grade.kernels.template_client import Zygote

    Zygote.start_soon(load_config(root).WarmKernelManager.get("sandbox"))
