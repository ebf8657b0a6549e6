"""Grade a batch: discover submissions, grade them in parallel threads of this process (the only
gradebook user), executing notebooks in warm kernels here or on a Dask cluster."""

from __future__ import annotations

import contextlib
import fnmatch
import json
import multiprocessing
import os
import shutil
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

from autograder.engine.converter import EngineAutograde, bind_thread
from autograder.engine.execute import TRUNCATED, Executed, KernelDied, execute_notebook
from autograder.engine.inspect_submission import submission_problems
from autograder.engine.limits import Limits
from autograder.engine.warm_kernel import ZYGOTE_ENV, Zygote

EXECUTION_SECTIONS = (
    "Execute",
    "ExecutePreprocessor",
    "NotebookClient",
    "WarmKernelManager",
    "Verify",  # the trusted verification's course secret (verify.py)
)
# A worker spends much of its time waiting for its kernel: one more than the cores keeps them busy.
DEFAULT_JOBS = (os.cpu_count() or 1) + 1


@dataclass
class SubmissionResult:
    student: str
    assignment: str
    status: str  # graded | failed | skipped (already graded, no --force)
    seconds: float
    # Why it failed, or what went wrong in a graded one (timed-out cells, MemoryError, cut
    # output, a notebook that is not the released one): plain sentences joined by "; ".
    message: str = ""
    kernel_peak_rss_mb: float | None = None


def load_config(root: Path, db_url: str | None = None) -> Config:
    """The course's nbgrader_config.py, with the root made absolute and the db URL applied."""
    config = Config()
    if (root / "nbgrader_config.py").exists():
        config.merge(PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config())
    config.CourseDirectory.root = str(root.resolve())
    if db_url:
        config.CourseDirectory.db_url = db_url
    return config


def submitted_students(coursedir: CourseDirectory, assignment: str, pattern: str) -> list[str]:
    """Students with a submitted/<student>/<assignment>/ folder, filtered like nbgrader's
    --student (a glob)."""
    folder = Path(coursedir.root) / coursedir.submitted_directory
    found = [p.parent.name for p in folder.glob(f"*/{assignment}") if p.is_dir()]
    return sorted(s for s in found if fnmatch.fnmatchcase(s, pattern))


def execution_settings(config: Config) -> dict:
    """The part of the course config that the workers' Execute step needs, as plain dicts."""
    return {name: dict(config[name]) for name in EXECUTION_SECTIONS if name in config}


@contextlib.contextmanager
def local_workers(config: Config, jobs: int) -> Iterator[Callable[[str, str], Executed]]:
    """Worker processes on this machine that execute notebooks, sharing one zygote.

    They are forked before any grading thread exists (fork copies only the calling thread), and
    they keep the nbclient work off this process, whose single core then serves nbgrader's
    bookkeeping for every submission.
    """
    settings = execution_settings(config)
    os.environ[ZYGOTE_ENV] = Zygote.current().path
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=max(1, jobs), mp_context=context) as pool:
        yield lambda notebook, cwd: pool.submit(execute_notebook, notebook, cwd, settings).result()


class Batch:
    """One `autograde` run over the submissions of one assignment."""

    def __init__(
        self,
        root: Path,
        assignment: str,
        *,
        students: str = "*",
        force: bool = False,
        db_url: str | None = None,
        dispatch: Callable[[str, str], Executed] | None = None,
        scheduler: str | None = None,
    ) -> None:
        self.config = load_config(root, db_url)
        self.coursedir = CourseDirectory(config=self.config)
        self.coursedir.assignment_id = assignment
        self.assignment, self.force = assignment, force
        self.students = submitted_students(self.coursedir, assignment, students)
        self.dispatch, self.scheduler = dispatch, scheduler
        self.gradebook_lock = threading.Lock()

    def run(self, jobs: int) -> Iterator[SubmissionResult]:
        """Grade every submission; yields results as they finish (in completion order)."""
        with contextlib.ExitStack() as stack:
            if self.dispatch is None and self.scheduler:
                from autograder.engine.cluster import dask_workers

                self.dispatch = stack.enter_context(dask_workers(self.config, self.scheduler))
            elif self.dispatch is None:
                self.dispatch = stack.enter_context(local_workers(self.config, jobs))
            # More grading threads than workers, so a worker never waits for bookkeeping.
            threads = stack.enter_context(ThreadPoolExecutor(max_workers=2 * max(1, jobs)))
            futures = [threads.submit(self.grade, student) for student in self.students]
            for future in as_completed(futures):
                yield future.result()

    def grade(self, student: str) -> SubmissionResult:
        """Grade one submission the way `nbgrader autograde` does; never raises."""
        start = time.perf_counter()
        executed = bind_thread(self.dispatch, self.gradebook_lock)
        converter = EngineAutograde(coursedir=self.coursedir, config=self.config)
        converter.force = self.force
        source = Path(converter._format_source(self.assignment, student))
        converter.prepare(sorted(str(p) for p in source.glob("*.ipynb")))
        status, message = "graded", ""
        with self.gradebook_lock:
            try:
                if not converter.init_destination(self.assignment, student):
                    status = "skipped"
                else:
                    converter.init_assignment(self.assignment, student)
                    for notebook in converter.notebooks:
                        converter.convert_single_notebook(notebook)
                    converter.set_permissions(self.assignment, student)
            except Exception as error:  # one submission never stops the batch
                status, message = "failed", self._explain(error, source)
                shutil.rmtree(converter._format_dest(self.assignment, student), ignore_errors=True)
        if status == "graded":
            notes = submission_problems(source, self.assignment)
            notes += [note for e in executed for note in self._execution_notes(e)]
            message = "; ".join(notes)
        peaks = [e.kernel_peak_rss_mb for e in executed if e.kernel_peak_rss_mb]
        return SubmissionResult(
            student,
            self.assignment,
            status,
            time.perf_counter() - start,
            message,
            max(peaks) if peaks else None,
        )

    def _explain(self, error: Exception, source: Path) -> str:
        """Why a submission failed, in plain words where the cause is known."""
        if isinstance(error, KernelDied):
            return str(error)
        problems = submission_problems(source, self.assignment)
        return "; ".join(problems) if problems else _describe(error)

    def _execution_notes(self, executed: Executed) -> list[str]:
        """Faults nbgrader recorded as cell errors and graded anyway, one sentence each."""
        timeout = self.config.Execute.get("timeout", 30)
        memory = Limits.from_dict(self.config.WarmKernelManager.get("limits")).address_space_mb
        executed_nb = json.loads(executed.notebook)
        notes = list(executed_nb.get("metadata", {}).get("hooklab", {}).get("flags", []))
        for cell in executed_nb.get("cells", []):
            name = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") or cell.get("id")
            outputs = cell.get("outputs", [])
            errors = {o.get("ename") for o in outputs if o.get("output_type") == "error"}
            if "CellTimeoutError" in errors:
                notes.append(f"cell {name} timed out after {timeout} s and was interrupted")
            if "MemoryError" in errors:
                notes.append(f"cell {name} ran out of memory (MemoryError, limit {memory} MiB)")
            if any(TRUNCATED[:20] in "".join(o.get("text", "")) for o in outputs):
                notes.append(f"cell {name} printed too much; its output was cut")
        return notes


def _describe(error: BaseException) -> str:
    lines = traceback.format_exception_only(type(error), error)
    return lines[-1].strip()[:500]
