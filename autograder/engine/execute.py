"""Run one sanitized notebook in a fresh warm kernel: the only step that runs on workers (local
threads or Dask workers). It uses nbgrader's own Execute preprocessor, so cell execution, time-outs
and error capture are exactly those of `nbgrader autograde`."""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass

import nbformat
from nbgrader.preprocessors import Execute
from traitlets.config import Config

from autograder.engine.warm_kernel import WarmKernelManager, Zygote


@dataclass
class Executed:
    notebook: str  # the executed notebook, as JSON text
    seconds: float
    kernel_peak_rss_mb: float | None  # the largest peak of any kernel this process has run


def execute_notebook(notebook: str, cwd: str, config: dict | None = None) -> Executed:
    """Execute `notebook` (JSON text) in a kernel forked from this machine's zygote.

    `cwd` is the kernel's working folder (nbgrader uses the autograded submission folder); on a
    worker that cannot see it, a temporary folder stands in. `config` is traitlets config as a
    plain dict (for example {"Execute": {"timeout": 60}}).
    """
    start = time.perf_counter()
    nb = nbformat.reads(notebook, as_version=nbformat.NO_CONVERT)
    settings = Config(config or {})
    # What nbgrader sets while it executes; given to the kernel only, not to this process.
    settings.WarmKernelManager.extra_env = {"NBGRADER_EXECUTION": "autograde"}
    # Every cell has run and every output is in when the kernel is shut down; a graceful
    # shutdown only adds a round trip to a kernel that is never used again.
    settings.NotebookClient.shutdown_kernel = "immediate"
    executor = Execute(config=settings)
    executor.kernel_manager_class = WarmKernelManager
    with tempfile.TemporaryDirectory(prefix="hooklab-run-") as scratch:
        path = cwd if os.path.isdir(cwd) else scratch
        resources = {"metadata": {"path": path}}
        executor.preprocess(nb, resources)
    peak = Zygote.current().peak_rss_mb or None
    return Executed(nbformat.writes(nb), time.perf_counter() - start, peak)
