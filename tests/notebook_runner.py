"""Run a notebook's code cells in-process, top to bottom, the way a grading kernel would.

Answers use the same `# %% <grade_id>` format as the submission folder. As under nbgrader, the test
cells are first restored from the solution notebook (so hidden tests run too), and an error in a
cell is recorded and execution goes on.
"""

from __future__ import annotations

import contextlib
import io
import linecache
import os
import sys
from pathlib import Path
from typing import Any

from autograder import CheckFailed, notebooks
from autograder.exercises.kit import notebook as kit_notebook

ROOT = Path(__file__).resolve().parents[1]


def notebook_path(folder: str, assignment: str) -> Path:
    return ROOT / folder / assignment / f"{assignment}.ipynb"


class Run(dict):
    """The notebook's namespace after the run, plus what happened in each cell."""

    def __init__(self) -> None:
        super().__init__(__name__="__main__")
        self.errors: dict[str, BaseException] = {}  # non-graded cells that raised
        self.results: dict[str, BaseException | None] = {}  # graded cells: None means passed
        self.stdout = ""
        self["_errors"] = self.errors

    @property
    def namespace(self) -> dict[str, Any]:
        return self

    def passed(self) -> set[str]:
        return {cell_id for cell_id, error in self.results.items() if error is None}


def run_notebook(
    assignment: str,
    answers: dict[str, str] | str = "",
    *,
    until: str | None = None,
    rerun: tuple[str, ...] = (),
    solutions: bool = False,
) -> Run:
    """Execute the student notebook (or, with `solutions=True`, the solution one).

    Stops before the cell whose id is `until`. Cells named in `rerun` run twice, like a student
    who ran a cell again.
    """
    source = notebooks.read(notebook_path("solutions", assignment))
    if solutions:
        nb = source
    else:
        if isinstance(answers, str):
            answers = notebooks.parse_answers(answers)
        nb = notebooks.fill_answers(notebooks.read(notebook_path("notebooks", assignment)), answers)
        test_sources = {c.id: c.source for c in source.cells if _is_graded(c)}
        for cell in nb.cells:
            if cell.id in test_sources:
                cell.source = test_sources[cell.id]
    run = Run()
    out = io.StringIO()
    # A fresh kernel: no check has failed yet (after repeated failures a message carries the fix).
    kit_notebook._failures.clear()
    # As when nbgrader runs it: an unfinished exercise is then a failure, not a notice.
    with contextlib.redirect_stdout(out), _graded():
        for cell in nb.cells:
            if cell.get("id") == until:
                break
            if cell.cell_type == "code":
                for _ in range(2 if cell.id in rerun else 1):
                    _execute(cell, run)
    run.stdout = out.getvalue()
    if "matplotlib.pyplot" in sys.modules:  # a kernel would free its figures when it ends
        sys.modules["matplotlib.pyplot"].close("all")
    return run


@contextlib.contextmanager
def _graded():
    saved = os.environ.get("NBGRADER_EXECUTION")
    os.environ["NBGRADER_EXECUTION"] = "autograde"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("NBGRADER_EXECUTION", None)
        else:
            os.environ["NBGRADER_EXECUTION"] = saved


def _is_graded(cell) -> bool:
    return bool(cell.get("metadata", {}).get("nbgrader", {}).get("grade"))


def _execute(cell, run: Run) -> None:
    filename = f"<cell {cell.id}>"
    # As IPython does, so that checks can read the source of the functions a cell defines.
    linecache.cache[filename] = (len(cell.source), None, cell.source.splitlines(True), filename)
    code = compile(cell.source, filename, "exec")
    error = None
    try:
        exec(code, run.namespace)
    except Exception as caught:
        error = caught
    if _is_graded(cell):
        run.results[cell.id] = error
    elif error is not None:
        run.errors[cell.id] = error


def failure(run: Run, cell_id: str) -> str:
    """The message of the check that failed in graded cell `cell_id` (the test fails if it passed
    or raised something other than a check failure)."""
    error = run.results[cell_id]
    assert isinstance(error, CheckFailed), f"{cell_id} passed or crashed: {error!r}"
    return error.message
