"""Execute notebooks on a Dask distributed cluster instead of local worker processes.

Only the execution step travels: the notebook goes out as JSON and comes back executed, while
sanitizing, scoring and every gradebook write stay in the grading process. Each Dask worker
process starts its own zygote on first use.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from traitlets.config import Config

from autograder.engine.execute import Executed, execute_notebook


@contextlib.contextmanager
def dask_workers(config: Config, scheduler: str) -> Iterator[Callable[[str, str], Executed]]:
    from distributed import Client

    from autograder.engine.batch import execution_settings

    settings = execution_settings(config)
    with Client(scheduler) as client:

        def dispatch(notebook: str, cwd: str) -> Executed:
            future = client.submit(execute_notebook, notebook, cwd, settings, pure=False)
            return future.result()

        yield dispatch
