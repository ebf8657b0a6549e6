"""Grade a batch: discover submissions; for each, this process (the only gradebook user) does
nbgrader's bookkeeping while workers, here or on a Dask cluster, sanitize, execute and score its
notebooks (pipeline.py)."""

from __future__ import annotations

import contextlib
import fnmatch
import json
import queue
import secrets
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import Execute
from traitlets.config import Config

from autograder.course import COURSE_ORDER
from autograder.grade.grader.converter import EngineAutograde, KeptWarnings, warnings_as_notes
from autograder.grade.grader.inspect_submission import (
    read_plain_file,
    submission_problems,
    unsafe_entries,
)
from autograder.grade.grader.notes import SubmissionNotes, write_notes
from autograder.grade.grader.snapshot import GradebookSnapshot
from autograder.grade.grader.workers import local_workers
from autograder.grade.kernels.template_client import Zygote
from autograder.grade.sandbox.limits import Limits
from autograder.grade.settings import load_config
from autograder.grade.verifier.client import VerifierFailed
from autograder.grade.worker.execute import TRUNCATED
from autograder.grade.worker.pipeline import NotebookJob, NotebookResult
from autograder.grade.worker.verify import course_secret

Dispatch = Callable[[NotebookJob], NotebookResult]
WAKE = 0.5  # seconds the main thread waits for results at a time, so that Ctrl-C is acted on


@dataclass
class SubmissionResult:
    student: str
    assignment: str
    # graded | failed | skipped (already graded, no --force) | abandoned (a stopped run's, unsaved)
    status: str
    seconds: float
    # Why it failed, or what went wrong in a graded one (timed-out cells, MemoryError, cut
    # output, a notebook that is not the released one): plain sentences joined by "; ".
    message: str = ""
    kernel_peak_rss_mb: float | None = None
    notes: list[str] = field(default_factory=list)  # the sentences `message` joins


def submitted_students(coursedir: CourseDirectory, assignment: str, pattern: str) -> list[str]:
    """Students with a submitted/<student>/<assignment>/ folder, filtered like nbgrader's
    --student (a glob)."""
    folder = Path(coursedir.root) / coursedir.submitted_directory
    found = [p.parent.name for p in folder.glob(f"*/{assignment}") if p.is_dir()]
    return sorted(s for s in found if fnmatch.fnmatchcase(s, pattern))


def plain_config(config: Config) -> dict:
    """The course config as plain nested dicts, to send to workers."""
    return {name: dict(section) for name, section in config.items() if isinstance(section, dict)}


@dataclass
class Stop:
    """A run stopped by Ctrl-C: once `halted`, no submission starts (those handed to the
    workers already finish); once `abandoned` (Ctrl-C again), the ones in flight are not saved
    either: their kernels are ended and each is unstaged, as if never started."""

    halted: threading.Event = field(default_factory=threading.Event)
    abandoned: threading.Event = field(default_factory=threading.Event)


def run_batches(
    batches: list[Batch], jobs: int, on_stop: Callable[[], None] | None = None
) -> Iterator[SubmissionResult]:
    """Grade the submissions of several batches (assignments of one course) with one set of
    workers: they and the kernel template start once, and the cores stay busy from the first
    submission to the last instead of idling at the end of each assignment. Submissions are
    taken in order, batch by batch; results are yielded as they finish.

    When the caller stops taking results (Ctrl-C), no more submissions start, the ones in flight
    are finished, and `on_stop` is called; a KeyboardInterrupt during that wait (Ctrl-C again)
    abandons them (Stop)."""
    if not batches:
        return
    first = batches[0]
    if first.dispatch is None and not first.scheduler:
        # The kernel template starts importing torch now, while the batches read their
        # gradebooks: kernels wait for it, so it is the start-up's longest path.
        Zygote.current(first.config.WarmKernelManager.get("sandbox"))
    lock = threading.Lock()  # one gradebook: its bookkeeping is serialized across batches too
    stop = Stop()
    for batch in batches:
        batch.prepare()
        batch.gradebook_lock, batch.stop = lock, stop
    end_kernels: Callable[[], None] = lambda: None  # noqa: E731 (Dask's are not ours to end)
    with contextlib.ExitStack() as stack:
        dispatch = first.dispatch
        if dispatch is None and first.scheduler:
            from autograder.grade.cluster import dask_workers

            dispatch = stack.enter_context(dask_workers(first.scheduler))
        elif dispatch is None:
            sandbox = first.config.WarmKernelManager.get("sandbox")
            # In the order the batches are graded: the template imports them in this order.
            modules = list(dict.fromkeys(m for batch in batches for m in batch.preload))
            dispatch = stack.enter_context(local_workers(jobs, sandbox, modules))
            end_kernels = Zygote.stop_started
        borrowing = [batch for batch in batches if batch.dispatch is None]
        for batch in borrowing:
            batch.dispatch = dispatch
        # Handed back when the workers stop, so that a later run starts its own.
        stack.callback(lambda: [setattr(batch, "dispatch", None) for batch in borrowing])
        # More grading threads than workers, so a worker never waits for bookkeeping.
        threads = stack.enter_context(ThreadPoolExecutor(max_workers=2 * max(1, jobs)))

        def abandon() -> None:
            stop.abandoned.set()  # first: a notebook back from now on is not saved
            # Notebooks no worker has taken yet: not even started. (At the first Ctrl-C they
            # are left queued: one may be a later notebook of a submission in flight.)
            getattr(dispatch, "cancel_waiting", lambda: None)()
            end_kernels()

        yield from _stage_ahead(batches, threads, stop, on_stop or (lambda: None), abandon)


def _stage_ahead(
    batches: list[Batch],
    threads: ThreadPoolExecutor,
    stop: Stop,
    on_stop: Callable[[], None],
    abandon: Callable[[], None],
) -> Iterator[SubmissionResult]:
    """Stage every submission (nbgrader's bookkeeping, which needs no kernel), one after another
    in order, on a thread of its own, and hand each to `threads` to grade as soon as it is
    staged; yield results as they finish. Staging runs ahead of grading: most of it is done
    while the kernel template is still importing torch and this process's core would idle,
    instead of later, between kernels. Stopped early, it halts the run (`stop`), tells
    `on_stop` and waits for the submissions in flight, or abandons them on a KeyboardInterrupt
    meanwhile."""
    finished: queue.SimpleQueue[Future] = queue.SimpleQueue()
    grading: dict[Future, tuple[Batch, Staged]] = {}

    def stage_in_order() -> None:
        for batch in batches:
            for student in batch.students:
                if stop.halted.is_set():  # the caller stopped taking results
                    return
                staged = batch.stage(student)
                if isinstance(staged, SubmissionResult):
                    done: Future = Future()
                    done.set_result(staged)
                    finished.put(done)
                else:
                    future = threads.submit(batch.finish, staged)
                    grading[future] = (batch, staged)
                    future.add_done_callback(finished.put)

    def report_crash(stager: Future) -> None:
        if stager.exception() is not None:  # a bug: raised where the caller takes results
            finished.put(stager)

    total = sum(len(batch.students) for batch in batches)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="hooklab-staging") as staging:
        staging.submit(stage_in_order).add_done_callback(report_crash)
        complete = False
        try:
            for _ in range(total):
                yield _next(finished).result()
            complete = True
        finally:
            if not complete:  # Ctrl-C, or the caller stopped: grade no more than is running
                stop.halted.set()  # before the next staging, and before a finish starts
                staging.shutdown(wait=True)  # the submission being staged is the last
                # At once, so that no thread that frees up takes another one meanwhile.
                threads.shutdown(wait=False, cancel_futures=True)
                for future, (batch, staged) in list(grading.items()):
                    if future.cancelled():
                        batch.unstage(staged)
                on_stop()
                running = [future for future in grading if not future.done()]
                try:
                    while wait(running, timeout=WAKE).not_done:
                        pass  # awake for a second Ctrl-C (see _next)
                except KeyboardInterrupt:  # Ctrl-C again: do not wait for them
                    abandon()
                    wait(running)  # each unstages itself (Batch.finish), now quickly
                    raise


def _next(finished: queue.SimpleQueue[Future]) -> Future:
    """The next finished submission, waking every WAKE seconds meanwhile. Python runs a
    signal's handler (Ctrl-C's KeyboardInterrupt) on the main thread, and only when that thread
    runs: blocked in a lock for a notebook that takes minutes, it would not run it if the signal
    had woken another thread."""
    while True:
        with contextlib.suppress(queue.Empty):
            return finished.get(timeout=WAKE)


def _has_submission(db_url: str, assignment: str, student: str) -> bool:
    with Gradebook(db_url) as gradebook:
        try:
            gradebook.find_submission(assignment, student)
        except MissingEntry:
            return False
    return True


class UnsafeSubmission(Exception):
    """A submission folder holding a link, a device or a FIFO (inspect_submission.py)."""


class Abandoned(Exception):
    """The run was stopped while this submission was graded, and it is not to be saved."""


@dataclass
class Staged:
    """A submission whose bookkeeping is done (Batch.stage): its notebooks are next."""

    student: str
    converter: EngineAutograde
    source: Path  # submitted/<student>/<assignment>
    seconds: float = 0.0  # spent staging it
    new: bool = False  # the gradebook had no submission of it before it was staged


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
        dispatch: Dispatch | None = None,
        scheduler: str | None = None,
        config: Config | None = None,
    ) -> None:
        self.config = load_config(root, db_url, config)
        self.coursedir = CourseDirectory(config=self.config)
        self.coursedir.assignment_id = assignment
        self.assignment, self.force = assignment, force
        found = submitted_students(self.coursedir, assignment, students)
        # As nbgrader, which lists no notebook there and so grades nothing: a warning, no row.
        self.without_notebook = [s for s in found if not self._notebooks(s)]
        self.students = [s for s in found if s not in self.without_notebook]
        self.dispatch, self.scheduler = dispatch, scheduler
        self.gradebook_lock = threading.Lock()
        self.stop = Stop()  # shared by the batches of one run (run_batches)
        self.plain_config = plain_config(self.config)
        self.snapshot: GradebookSnapshot | None = None
        self.preload: list[str] = []
        # Only a course of Hooklab's exercises gets a secret file and notes for the reports;
        # another course's notebooks have no seeded checks, and its folder is left as nbgrader
        # would leave it.
        self.hooklabs = assignment in COURSE_ORDER
        configured = self.config.Verify.get("secret", "")
        if self.hooklabs:
            self.secret = course_secret(root, configured)
        else:
            self.secret = configured or secrets.token_hex(32)

    def _notebooks(self, student: str) -> list[str]:
        """The student's notebooks to grade: all of them, or those nbgrader's --notebook names."""
        coursedir = self.coursedir
        folder = Path(
            coursedir.format_path(coursedir.submitted_directory, student, self.assignment)
        )
        return sorted(str(p) for p in folder.glob(f"{coursedir.notebook_id}.ipynb"))

    def prepare(self) -> None:
        """Read the assignment's gradebook snapshot (once) and what its notebooks import."""
        if self.snapshot is not None:
            return
        try:
            self.snapshot = GradebookSnapshot.read(self.coursedir.db_url, self.assignment)
            self.preload = self.snapshot.imported_modules()
        except MissingEntry:
            self.snapshot = None  # each submission then fails with nbgrader's own message

    def run(self, jobs: int) -> Iterator[SubmissionResult]:
        """Grade every submission; yields results as they finish (in completion order)."""
        return run_batches([self], jobs)

    def stage(self, student: str) -> Staged | SubmissionResult:
        """What nbgrader does for a submission before its notebooks are graded: the destination
        folder (here a staging folder), the student and submission records, the copied course
        files. A result instead when it is skipped (graded before, no --force) or fails; never
        raises."""
        start = time.perf_counter()
        staged = None
        try:
            converter = EngineAutograde(
                coursedir=self.coursedir, config=self.config, log=KeptWarnings()
            )
            converter.force = self.force
            source = Path(converter._format_source(self.assignment, student))
            staged = Staged(student, converter, source)
            # nbgrader's init_destination reads them: with --notebook, whether any is new.
            converter.prepare(self._notebooks(student))
            with self.gradebook_lock:
                if not converter.init_destination(self.assignment, student):
                    return SubmissionResult(student, self.assignment, "skipped", 0.0)
                # Before nbgrader copies anything: it follows links.
                submitted = Path(self.coursedir.root) / self.coursedir.submitted_directory
                unsafe = unsafe_entries(submitted, student, self.assignment)
                if unsafe:
                    raise UnsafeSubmission(unsafe)
                converter.start_staging(self.assignment, student)
                staged.new = not _has_submission(self.coursedir.db_url, self.assignment, student)
                converter.init_assignment(self.assignment, student)
        except Exception as error:  # one submission never stops the batch
            seconds = time.perf_counter() - start
            if staged is None:
                message = f"could not be staged: {_describe(error)}"
                result = SubmissionResult(student, self.assignment, "failed", seconds, message)
                result.notes = [message]
                return self._noted(result)
            return self._failed(staged, error, seconds)
        staged.seconds = time.perf_counter() - start
        return staged

    def unstage(self, staged: Staged) -> None:
        """Undo the staging of a submission that will not be graded in this run (the run was
        stopped first): its staging folder goes, and a submission the gradebook did not have
        before goes from it again, so no row of zeros stands for work nobody graded. A regraded
        one keeps its earlier grades, and any earlier autograded folder stays."""
        staged.converter.drop_staging(self.assignment, staged.student)
        if not staged.new:
            return
        # Failing here leaves a row too many, no more: the next run grades it.
        with (
            contextlib.suppress(Exception),
            self.gradebook_lock,
            Gradebook(self.coursedir.db_url) as gradebook,
        ):
            gradebook.remove_submission(self.assignment, staged.student)

    def finish(self, staged: Staged) -> SubmissionResult:
        """Grade a staged submission's notebooks and record them, then put its autograded
        folder in place; never raises."""
        start = time.perf_counter()
        converter, student = staged.converter, staged.student
        if self.stop.halted.is_set():  # the run was stopped before this one started
            return self._abandoned(staged)
        try:
            results = [
                self._grade_notebook(converter, student, notebook)
                for notebook in converter.notebooks
            ]
            graded = {Path(notebook).name for notebook in converter.notebooks}
            notes = _problems(staged.source, self.assignment, graded)
            notes += [note for result in results for note in self._execution_notes(result)]
            with self.gradebook_lock:
                converter.set_permissions(self.assignment, student)
                converter.finish_staging(self.assignment, student)
            notes = warnings_as_notes(converter.log.kept) + notes
        except Exception as error:  # one submission never stops the batch
            # Abandoned, a notebook cancelled in the queue, or a kernel the stop ended: the
            # stop's doing, not the submission's.
            if self.stop.abandoned.is_set():
                return self._abandoned(staged)
            return self._failed(staged, error, staged.seconds + time.perf_counter() - start)
        peaks = [r.kernel_peak_rss_mb for r in results if r.kernel_peak_rss_mb]
        seconds = staged.seconds + time.perf_counter() - start
        peak = max(peaks) if peaks else None
        result = SubmissionResult(
            student, self.assignment, "graded", seconds, "; ".join(notes), peak, notes
        )
        return self._noted(result)

    def _abandoned(self, staged: Staged) -> SubmissionResult:
        self.unstage(staged)
        return SubmissionResult(staged.student, self.assignment, "abandoned", 0.0)

    def _failed(self, staged: Staged, error: Exception, seconds: float) -> SubmissionResult:
        notes = self._explain(error, staged.source)
        try:
            staged.converter.discard(self.assignment, staged.student)
        except Exception as cleanup:  # a folder it could not remove: say so, go on
            notes.append(f"its autograded folder could not be removed ({_describe(cleanup)})")
        message = "; ".join(notes)
        result = SubmissionResult(staged.student, self.assignment, "failed", seconds, message)
        result.notes = notes
        return self._noted(result)

    def _noted(self, result: SubmissionResult) -> SubmissionResult:
        """`result`, its status and notes kept in the course root for the reports (notes.py); a
        file that cannot be written is a note of the result itself. Another course has no such
        reports: its folder is left as nbgrader leaves it."""
        if not self.hooklabs:
            return result
        notes = tuple(result.notes)
        record = SubmissionNotes(result.student, result.assignment, result.status, notes)
        try:
            write_notes(Path(self.coursedir.root), record)
        except Exception as error:
            result.notes.append(f"its notes could not be kept for the reports ({_describe(error)})")
            result.message = "; ".join(result.notes)
        return result

    def _grade_notebook(
        self, converter: EngineAutograde, student: str, notebook: str
    ) -> NotebookResult:
        """One notebook: a worker grades it, then this process records it (under the lock)."""
        resources = converter.notebook_resources(notebook)
        destination = converter.destination(self.assignment, student)
        # The kernel's working folder, as in nbgrader (whose sanitize pass has written it by now).
        destination.mkdir(parents=True, exist_ok=True)
        job = NotebookJob(
            text=read_plain_file(Path(notebook)).decode("utf-8"),
            resources={"nbgrader": dict(resources["nbgrader"])},
            snapshot=self.snapshot,
            config=self.plain_config,
            cwd=str(destination),
            preload=self.preload,
            secret=self.secret,
        )
        result = self.dispatch(job)
        if self.stop.abandoned.is_set():  # back after the stop, which may have ended its kernel
            raise Abandoned  # (a notebook of the same submission saved before stays saved)
        with self.gradebook_lock:
            converter.save(resources, result)
        return result

    def _explain(self, error: Exception, source: Path) -> list[str]:
        """Why a submission failed, in plain words where the cause is known."""
        if isinstance(error, UnsafeSubmission):
            return list(error.args[0])
        if isinstance(error, VerifierFailed):
            return [
                f"grader fault, not the student's: {error}; nothing was graded (grade it "
                "again; if it keeps failing, report it)"
            ]
        problems = _problems(source, self.assignment)
        if not self.hooklabs:  # another course's: nbgrader's error first
            return [_describe(error), *problems]
        return problems or [_describe(error)]

    def _execution_notes(self, result: NotebookResult) -> list[str]:
        """Faults nbgrader recorded as cell errors and graded anyway, one sentence each."""
        # The timeout the worker's executor got: nbgrader's Execute reads ExecutePreprocessor's
        # options too, so only its own configuration knows which applies.
        timeout = Execute(config=self.config).timeout
        limits = Limits.from_dict(self.config.WarmKernelManager.get("limits"))
        executed = json.loads(result.output)
        notes = [result.weaker] if result.weaker else []  # no sandbox: say it every time
        notes += [f"{result.death}; the cells after it were not run"] if result.death else []
        notes += executed.get("metadata", {}).get("hooklab", {}).get("flags", [])
        for cell in executed.get("cells", []):
            name = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") or cell.get("id")
            outputs = cell.get("outputs", [])
            errors = {o.get("ename") for o in outputs if o.get("output_type") == "error"}
            if "CellTimeoutError" in errors:
                notes.append(f"cell {name} timed out after {timeout} s and was interrupted")
            if "MemoryError" in errors:
                notes.append(
                    f"cell {name} ran out of memory (MemoryError, limit "
                    f"{limits.address_space_mb} MiB)"
                )
            values = {o.get("evalue", "") for o in outputs if o.get("output_type") == "error"}
            if any("[Errno 27]" in value for value in values):  # EFBIG, from RLIMIT_FSIZE
                notes.append(
                    f"cell {name} wrote a file over the limit of {limits.file_size_mb} MiB "
                    f"(OSError: File too large)"
                )
            shown = ["".join(o.get("text", "")) for o in outputs]
            shown += ["".join(o.get("data", {}).get("text/plain", "")) for o in outputs]
            if any(TRUNCATED[:20] in text for text in shown):
                notes.append(f"cell {name} printed too much; its output was cut")
        return notes


def _problems(source: Path, assignment: str, graded: set[str] | None = None) -> list[str]:
    """submission_problems, which reads files a student made: their faults are its own."""
    try:
        return submission_problems(source, assignment, graded)
    except (OSError, ValueError, RecursionError, MemoryError) as error:
        return [f"the submitted files could not be inspected ({_describe(error)})"]


def _describe(error: BaseException) -> str:
    try:
        lines = traceback.format_exception_only(type(error), error)
        return lines[-1].strip()[:500]
    except Exception:  # an error whose text cannot be made (RecursionError in its repr, ...)
        return type(error).__name__
