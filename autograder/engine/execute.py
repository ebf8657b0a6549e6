"""Run one sanitized notebook in a fresh warm kernel: the only step that runs on workers (local
threads or Dask workers). It uses nbgrader's own Execute preprocessor, so cell execution, time-outs
and error capture are exactly those of `nbgrader autograde`."""

from __future__ import annotations

import os
import signal
import tempfile
import time
from dataclasses import dataclass

import nbformat
from nbclient.exceptions import DeadKernelError
from nbgrader.preprocessors import Execute
from traitlets.config import Config

from autograder.engine.verify import Guard
from autograder.engine.warm_kernel import WarmKernelManager, Zygote


@dataclass
class Executed:
    notebook: str  # the executed notebook, as JSON text
    seconds: float
    kernel_peak_rss_mb: float | None  # the largest peak of any kernel this process has run


OUTPUT_CAP = 1_000_000  # characters of output kept per cell; nbgrader's LimitOutput counts lines
TRUNCATED = "[output cut by the grader: this cell printed more than {cap} characters]"


class CappedExecute(Execute):
    """nbgrader's Execute, keeping at most OUTPUT_CAP characters of each cell's output (errors
    always kept), so a cell printing 50 MB does not carry 50 MB into every later step."""

    def output(self, outs, msg, display_id, cell_index):
        if msg["msg_type"] not in ("stream", "display_data", "execute_result"):
            return super().output(outs, msg, display_id, cell_index)
        used = getattr(self, "_output_used", {})
        self._output_used = used
        content = msg["content"]
        size = len(content["text"]) if "text" in content else len(str(content.get("data", "")))
        left = OUTPUT_CAP - used.get(cell_index, 0)
        used[cell_index] = used.get(cell_index, 0) + size
        if size <= left:
            return super().output(outs, msg, display_id, cell_index)
        if left > 0 and "text" in content:
            short = {**msg, "content": {**content, "text": content["text"][:left]}}
            super().output(outs, short, display_id, cell_index)
        if left >= 0:  # once per cell
            used[cell_index] = OUTPUT_CAP + 1
            text = "\n" + TRUNCATED.format(cap=OUTPUT_CAP) + "\n"
            header = {**msg["header"], "msg_type": "stream"}
            note = {**msg, "header": header, "msg_type": "stream"}
            note["content"] = {"name": "stdout", "text": text}
            return super().output(outs, note, None, cell_index)
        return None


class KernelDied(RuntimeError):
    """The kernel ended while a cell ran (a crash, os._exit, a resource limit's signal)."""


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
    # Each kernel would log "running over TCP without encryption" to the grader's terminal; the
    # kernel listens on loopback only. Its other messages (errors) still come through.
    extra = list(settings.Execute.get("extra_arguments", []))
    settings.Execute.extra_arguments = [*extra, "--IPKernelApp.log_level=ERROR"]
    executor = CappedExecute(config=settings)
    executor.kernel_manager_class = WarmKernelManager
    running: dict = {}
    executor.on_cell_start = lambda cell, cell_index: running.update(
        cell=cell, pid=executor.km.provisioner.pid
    )
    # Trusted verification (verify.py): seeds into hidden test cells before, verdicts after.
    guard = Guard.for_run(cwd, config)
    guard.prepare(nb, executor)
    with tempfile.TemporaryDirectory(prefix="hooklab-run-") as scratch:
        path = cwd if os.path.isdir(cwd) else scratch
        resources = {"metadata": {"path": path}}
        try:
            executor.preprocess(nb, resources)
        except DeadKernelError:
            raise KernelDied(_death(running)) from None
    guard.verify(nb)
    peak = Zygote.current().peak_rss_mb or None
    return Executed(nbformat.writes(nb), time.perf_counter() - start, peak)


def _death(running: dict) -> str:
    """'kernel died (signal 11, SIGSEGV) while running cell <grade id or cell id>'."""
    how = ""
    if running.get("pid"):
        code = Zygote.current().request(op="status", pid=running["pid"]).get("returncode")
        if code is not None and code < 0:
            how = f" (signal {-code}, {signal.Signals(-code).name})"
        elif code is not None:
            how = f" (exit code {code})"
    cell = running.get("cell")
    if cell is None:
        return f"kernel died{how} before running any cell"
    name = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") or cell.get("id")
    return f"kernel died{how} while running cell {name}"
