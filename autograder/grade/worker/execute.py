"""Run one sanitized notebook in a fresh warm kernel: the only step that runs on workers (local
threads or Dask workers). It uses nbgrader's own Execute preprocessor, so cell execution, time-outs
and error capture are exactly those of `nbgrader autograde`."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
from dataclasses import dataclass
from typing import Any

import nbformat
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat import NotebookNode
from nbgrader.preprocessors import Execute
from traitlets.config import Config

from autograder.grade import run_folders, speedups
from autograder.grade.kernels.provisioner import WarmKernelManager
from autograder.grade.kernels.template_client import Zygote
from autograder.grade.sandbox.limits import Limits
from autograder.grade.speedups import announcements
from autograder.grade.verifier.client import Verification
from autograder.grade.worker import hygiene
from autograder.grade.worker.verify import Guard
from autograder.i18n import N_, notebook_language, translator

# Each kernel would log "running over TCP without encryption" to the grader's terminal; the
# kernel listens on loopback only. Its other messages (errors) still come through. As a number:
# the name "ERROR" is turned into 40 anew each time the kernel applies its command line, and
# each change sets its logging up again (logging.config.dictConfig, 9 times per kernel).
KERNEL_LOG_LEVEL = f"--IPKernelApp.log_level={logging.ERROR}"


@dataclass
class Executed:
    notebook: str  # the executed notebook, as JSON text
    seconds: float
    kernel_peak_rss_mb: float | None  # the largest peak of any kernel this process has run
    weaker: str | None = None  # sandbox: why the kernel ran without it (None when it did)


OUTPUT_CAP = 1_000_000  # characters of output kept per cell; nbgrader's LimitOutput counts lines
TRUNCATED = "[output cut by the grader: this cell printed more than {cap} characters]"


class CappedExecute(Execute):
    """nbgrader's Execute, keeping at most OUTPUT_CAP characters of each cell's output (errors
    always kept), so a cell printing 50 MB does not carry 50 MB into every later step.

    A display update (`update_display`, or a display with the same display_id) replaces the data
    of every output shown with that id, in whichever cell: what it adds to each of those cells
    counts against that cell's cap, and an update that would pass it is replaced by the note."""

    def on_cell_executed(self, **kwargs):
        # Warm kernels put the times of a cell's announcements in its reply (announcements.py).
        cell = kwargs["cell"]
        announcements.write_unsent_times(cell, kwargs["execute_reply"])
        if cell.get("execution_count") is None:
            # A cell that timed out gets nbclient's stand-in reply, not the kernel's (which comes
            # after the interrupt) with its number in it; the kernel numbers every cell it runs,
            # one after the other, as stock's execute_input would have said.
            cell["execution_count"] = getattr(self, "_last_count", 0) + 1
        self._last_count = cell["execution_count"]
        super().on_cell_executed(**kwargs)

    def _budget(self) -> tuple[dict[int, int], dict[str, list[list[int]]]]:
        if not hasattr(self, "_output_used"):
            self._output_used: dict[int, int] = {}  # cell index -> characters kept
            self._shown: dict[str, list[list[int]]] = {}  # display id -> [[cell index, size]]
        return self._output_used, self._shown

    def process_message(self, msg, cell, cell_index):
        content = msg.get("content") or {}
        transient = content.get("transient")
        display_id = transient.get("display_id") if isinstance(transient, dict) else None
        if display_id and msg.get("msg_type") in ("display_data", "update_display_data"):
            msg = self._capped_update(msg, display_id)
        return super().process_message(msg, cell, cell_index)

    def _capped_update(self, msg: dict, display_id: str) -> dict:
        """`msg`, or a copy whose data is the note when the update would pass a cell's cap."""
        used, shown = self._budget()
        targets = shown.get(display_id, [])
        size = _size(msg["content"])
        over = any(used.get(c, 0) - old + size > OUTPUT_CAP for c, old in targets)
        if over:
            note = {"text/plain": TRUNCATED.format(cap=OUTPUT_CAP)}
            msg = {**msg, "content": {**msg["content"], "data": note, "metadata": {}}}
            size = _size(msg["content"])
        for target in targets:
            used[target[0]] = used.get(target[0], 0) - target[1] + size
            target[1] = size
        return msg

    def output(self, outs, msg, display_id, cell_index):
        if msg["msg_type"] not in ("stream", "display_data", "execute_result"):
            return super().output(outs, msg, display_id, cell_index)
        used, shown = self._budget()
        content = msg["content"]
        size = _size(content)
        left = OUTPUT_CAP - used.get(cell_index, 0)
        used[cell_index] = used.get(cell_index, 0) + size
        if size <= left:
            if display_id:
                shown.setdefault(display_id, []).append([cell_index, size])
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


def _size(content: dict) -> int:
    """Characters an output's content adds to the notebook (roughly: its text or its data)."""
    if "text" in content:
        return len(content["text"])
    return len(str(content.get("data", ""))) + len(str(content.get("metadata", "")))


class KernelDied(RuntimeError):
    """The kernel ended while a cell ran (a crash, os._exit, a resource limit's signal)."""


@dataclass
class KernelRun:
    death: str  # "" or "kernel died (signal 11, SIGSEGV) while running cell X"
    kernel_peak_rss_mb: float | None  # the largest peak of any kernel this process has run
    weaker: str | None = None  # sandbox: why the kernel ran without it (None when it did)


def run_in_warm_kernel(
    nb: NotebookNode, cwd: str, config: Config, guard: Guard | None = None
) -> KernelRun:
    """Execute `nb` in place in a kernel forked from this machine's zygote, with nbgrader's Execute.

    When the kernel dies, the cells run before keep their outputs (and so their points), the
    cell that was running gets an error saying how it died, and every later graded cell an error
    saying it was not run: nbgrader scores an unrun test cell as passed, which it must not be.
    A cell that ignores the interrupt at its time-out ends the run the same way. With a `guard`,
    the test cells get their seeds before and their trusted verdicts after (verify.py).
    `cwd` is the kernel's working folder; on a worker that cannot see it, a temporary one.
    """
    speedups.install("worker")  # once per process
    settings = Config(config)
    # What nbgrader sets while it executes; given to the kernel only, not to this process.
    settings.WarmKernelManager.extra_env = {"NBGRADER_EXECUTION": "autograde"}
    # Every cell has run and every output is in when the kernel is shut down; a graceful
    # shutdown only adds a round trip to a kernel that is never used again.
    settings.NotebookClient.shutdown_kernel = "immediate"
    extra = list(settings.Execute.get("extra_arguments", []))
    settings.Execute.extra_arguments = [*extra, KERNEL_LOG_LEVEL]
    executor = CappedExecute(config=settings)
    executor.kernel_manager_class = WarmKernelManager
    running: dict = {}
    executor.on_cell_start = lambda cell, cell_index: running.update(
        cell=cell, index=cell_index, kernel=executor.km.provisioner.process
    )
    # One message fewer per cell (cell_ends.py); the kernel client is ready by then.
    executor.on_notebook_start = lambda notebook: executor.kc.end_cells_by_count()
    if guard is not None:  # trusted verification (verify.py): seeds before, verdicts after
        zygote = Zygote.current()
        guard.timeout = float(executor.timeout or 60)
        limits = Limits.from_dict(settings.WarmKernelManager.get("limits")).to_dict()
        wait = guard.timeout * (len(nb.cells) + 2)

        def start(request: dict) -> Verification:
            return Verification(zygote, request, limits, wait).start()

        guard.run_verifier = start
        guard.prepare(nb, executor)
    death = ""
    language = notebook_language(nb)  # the notes written into the notebook are in its language
    # nbgrader runs the kernel in the submission's folder; a folder of its own when that is gone.
    with contextlib.nullcontext(cwd) if os.path.isdir(cwd) else run_folders.folder("run") as path:
        try:
            executor.preprocess(nb, {"metadata": {"path": path}})
        except DeadKernelError:
            death = _death(running)
            _mark_unrun(nb, running.get("index", -1), _death(running, translator(language)))
        except CellTimeoutError:  # interrupted at its time-out, the cell still did not stop
            name, timeout = _cell_name(running), executor.timeout
            death = TIMED_OUT.format(name=name, timeout=timeout)
            note = translator(language)(TIMED_OUT).format(name=name, timeout=timeout)
            _mark_unrun(nb, running.get("index", -1), note)
    if guard is not None:
        guard.verify(nb)
        hygiene.scrub(nb, guard.secrets())
    hygiene.sanitize(nb)
    zygote = Zygote.current()
    return KernelRun(death, zygote.peak_rss_mb or None, zygote.weaker)


def execute_notebook(notebook: str, cwd: str, config: dict | None = None) -> Executed:
    """Execute `notebook` (JSON text) in a warm kernel; raises KernelDied if the kernel died."""
    start = time.perf_counter()
    nb = nbformat.reads(notebook, as_version=nbformat.NO_CONVERT)
    run = run_in_warm_kernel(nb, cwd, Config(config or {}))
    if run.death:
        raise KernelDied(run.death)
    seconds = time.perf_counter() - start
    return Executed(nbformat.writes(nb), seconds, run.kernel_peak_rss_mb, run.weaker)


def _error(text: str) -> NotebookNode:
    return nbformat.v4.new_output("error", ename="KernelDied", evalue=text, traceback=[text])


TIMED_OUT = N_("cell {name} timed out after {timeout} s and ignored the interrupt")


def _mark_unrun(nb: NotebookNode, died_at: int, death: str) -> None:
    """Write `death` (in the notebook's language) where it happened and into every later test
    cell, which nbgrader would otherwise score as passed."""
    tr = translator(notebook_language(nb))
    if 0 <= died_at < len(nb.cells):
        nb.cells[died_at].outputs.append(_error(death))
    for cell in nb.cells[died_at + 1 :]:
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade"):
            cell.outputs = [_error(tr(N_("not run: {death}")).format(death=death))]


def _death(running: dict, tr: Any = str) -> str:
    """'kernel died (signal 11, SIGSEGV) while running cell <grade id or cell id>', in English
    or, with `tr`, in a notebook's language."""
    how = ""
    if running.get("kernel"):
        status = running["kernel"].status()
        code = status.get("returncode")
        if status.get("reason"):  # the zygote killed it (wall-clock limit)
            how = f" ({status['reason']})"
        elif code is not None and code < 0:
            how = tr(N_(" (signal {number}, {name})")).format(
                number=-code, name=signal.Signals(-code).name
            )
        elif code is not None:
            how = tr(N_(" (exit code {code})")).format(code=code)
    if running.get("cell") is None:
        return tr(N_("the kernel died{how} before running any cell")).format(how=how)
    return tr(N_("the kernel died{how} while running cell {name}")).format(
        how=how, name=_cell_name(running)
    )


def _cell_name(running: dict) -> str:
    cell = running.get("cell") or {}
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") or cell.get("id", "?")
