"""The worker processes on this machine that grade notebooks (pipeline.py) for the grading
process, and how it hands them one."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor

from autograder.grade import collector
from autograder.grade.kernels.template_client import ZYGOTE_ENV, Zygote
from autograder.grade.sandbox.limits import end_with_parent
from autograder.grade.worker import verdict_cache
from autograder.grade.worker.pipeline import NotebookJob, NotebookResult, grade_notebook, warm_up


@contextlib.contextmanager
def local_workers(
    jobs: int, sandbox: dict | None = None, modules: list[str] | None = None
) -> Iterator[LocalDispatch]:
    """Worker processes on this machine that grade notebooks, sharing one zygote.

    They are forked before any grading thread exists (fork copies only the calling thread), and
    they keep nbconvert's and nbclient's work off this process, whose single core then serves
    nbgrader's bookkeeping for every submission.
    """
    zygote = Zygote.current(sandbox)
    os.environ[ZYGOTE_ENV] = zygote.path
    # The template imports every batch's modules while this process warms up and the first
    # notebooks run, rather than when each batch's first notebook asks (the cores would idle).
    zygote.preload_soon(modules or [])
    # warm_up imports IPython (to find the kernel spec). The pause ends by freezing what this
    # process holds: the workers' garbage collections then skip the (many) objects they
    # inherit, which would otherwise cost time in every full collection and copy the shared
    # pages they sit on.
    with collector.paused_for_imports():
        warm_up()  # here, once, instead of in every worker on its first notebook
    context = multiprocessing.get_context("fork")
    workers = ProcessPoolExecutor(
        max_workers=max(1, jobs),
        mp_context=context,
        initializer=_end_with_grader,
        initargs=(os.getpid(),),
    )
    with verdict_cache.shared_folder(), workers as pool:
        # The first task starts every worker (fork start method), from this thread, before the
        # grading threads exist.
        pool.submit(int).result()
        yield LocalDispatch(pool)


class LocalDispatch:
    """Hands a notebook to the local worker processes and waits for it; `cancel_waiting` drops
    the notebooks no worker has taken yet (their callers get a CancelledError)."""

    def __init__(self, pool: ProcessPoolExecutor) -> None:
        self.pool, self.lock, self.waiting = pool, threading.Lock(), set()

    def __call__(self, job: NotebookJob) -> NotebookResult:
        future = self.pool.submit(grade_notebook, job)
        with self.lock:
            self.waiting.add(future)
        try:
            return future.result()
        finally:
            with self.lock:
                self.waiting.discard(future)

    def cancel_waiting(self) -> None:
        with self.lock:
            for future in self.waiting:
                future.cancel()  # only those not yet in a worker's queue are cancelled


def _end_with_grader(grader: int) -> None:
    """In a worker, first: end with the grading process. A worker waits for its next notebook
    on a pipe whose writing end every worker holds too, so it would not notice a grader killed
    on its own. The thread that forks the workers is the one that entered local_workers, which
    outlives the pool."""
    # Ctrl-C reaches the whole process group: the grading process says what it means in one
    # line and ends the workers; each printing its own traceback would bury that line.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    end_with_parent(grader)
    Zygote.only_shared()
