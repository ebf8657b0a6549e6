"""Execute notebooks on a Dask distributed cluster instead of local worker processes.

A notebook goes out as a job (its text, a snapshot of the gradebook's cells, the course config)
and comes back graded (pipeline.py); every gradebook and file write stays in the grading process.
Each Dask worker process starts its own zygote on first use.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from autograder.grade.worker.pipeline import NotebookJob, NotebookResult, grade_notebook


@contextlib.contextmanager
def dask_workers(scheduler: str) -> Iterator[Callable[[NotebookJob], NotebookResult]]:
    from distributed import Client

    from autograder.grade.problems import CannotGrade

    try:
        client = Client(scheduler)
    except (OSError, ValueError) as error:  # refused, timed out, or not an address at all
        raise CannotGrade(f"cannot reach the Dask scheduler at {scheduler}: {error}") from None
    with client:

        def dispatch(job: NotebookJob) -> NotebookResult:
            return client.submit(grade_notebook, job, pure=False).result()

        yield dispatch
