"""In a student's own kernel, each exercise's cells see that exercise's objects.

Exercises reuse names (`add`, `model`, `answer`, `x`), so once a later exercise rebinds one, an
earlier exercise's check, run again, would read the later exercise's object and fail a correct
answer. JupyterLab tells the kernel which cell runs: its id, which names the exercise (`<id>`,
`<id>_setup`, `<id>_run`, `<id>_test`, ...). Before a cell of exercise G that uses its answer
(its run, check, hint and demo cells), every name that G's own cells bound and another
exercise's cells rebound since is bound to G's object again. Its answer and set-up cells run on
the globals as they are, so an exercise that goes on with an earlier one's objects
(module_apply's Exercises 4 and 5) gets them as they are now. A name the student rebinds in a
cell of their own stays as they left it.

Front ends that send no such id (Colab, VS Code, the classic Notebook) are followed by the
checks instead: what the cells run since the last check bound belongs to the exercise whose
check runs next (in a notebook run top to bottom, and in the loop of answer, run, check, that is
the exercise they belong to). While G's check runs, every name G's cells bound that a later
exercise's cells rebound holds G's object again; afterwards the notebook's globals are as they
were.
Grading (NBGRADER_EXECUTION is set) sees the notebook's globals as they are.
"""

from __future__ import annotations

from collections.abc import Iterable, MutableMapping
from typing import Any

from autograder.widgets.frontend import graded

# The cells of exercise G besides its answer cell `G`, by the suffix of their ids; those that
# start the exercise, and so see the globals as they are.
SUFFIXES = ("_setup", "_demo", "_hints", "_run", "_test", "_hidden")
STARTS = ("", "_setup")
_IPYTHON_NAMES = {"In", "Out", "exit", "quit", "get_ipython"}
_MISSING = object()
# Without cell ids: the exercise of the cells run since the last check, until a check says it.
PENDING = "<cells since the last check>"


class ExerciseObjects:
    """The names each exercise's cells bound, and which exercise bound each name last."""

    def __init__(self, namespace: MutableMapping[str, Any], grade_ids: Iterable[str]) -> None:
        self.namespace = namespace
        self.grade_ids = set(grade_ids)
        self.own: dict[str, dict[str, Any]] = {}  # grade id -> name -> what its cells bound
        self.bound_by: dict[str, str | None] = {}  # name -> grade id, None for other cells
        self._before: dict[str, Any] | None = None
        self._running: str | None = None
        self.ids_seen = False  # the front end names the cells (JupyterLab)
        self.checked: dict[str, int] = {}  # grade id -> the order its check first ran in

    def exercise_of(self, cell_id: str | None) -> tuple[str | None, str]:
        """(the grade id of the exercise the cell belongs to, or None; the cell's suffix)."""
        if not cell_id:
            return None, ""
        if cell_id in self.grade_ids:
            return cell_id, ""
        for suffix in SUFFIXES:
            if cell_id.endswith(suffix) and cell_id[: -len(suffix)] in self.grade_ids:
                return cell_id[: -len(suffix)], suffix
        return None, ""

    def before_cell(self, cell_id: str | None) -> None:
        grade_id, suffix = self.exercise_of(cell_id)
        self.ids_seen = self.ids_seen or grade_id is not None
        if not self.ids_seen:
            grade_id = PENDING
        elif grade_id is not None and suffix not in STARTS:
            for name, value in self.own.get(grade_id, {}).items():
                if self.bound_by.get(name) not in (None, grade_id) and name in self.namespace:
                    self.namespace[name] = value
                    self.bound_by[name] = grade_id
        self._running = grade_id
        self._before = _names(self.namespace)

    def after_cell(self) -> None:
        if self._before is None:
            return
        before, grade_id = self._before, self._running
        self._before = None
        for name, value in _names(self.namespace).items():
            if before.get(name, _MISSING) is not value:
                self.bound_by[name] = grade_id
                if grade_id is not None:
                    self.own.setdefault(grade_id, {})[name] = value

    def before_check(self, grade_id: str) -> dict[str, tuple[Any, Any]]:
        """Without cell ids, as G's check starts: count the cells run since the last check as
        G's, and bind again, for the time of the check, G's objects that a later exercise's
        cells rebound. Returns what after_check puts back: name -> (G's object, the one now)."""
        if self.ids_seen:
            return {}
        rank = self.checked.setdefault(grade_id, len(self.checked))
        pending = self.own.pop(PENDING, {})
        for name, value in pending.items():
            self.own.setdefault(grade_id, {})[name] = value
            if self.bound_by.get(name) == PENDING:
                self.bound_by[name] = grade_id
        swapped = {}
        for name, value in self.own.get(grade_id, {}).items():
            by, now = self.bound_by.get(name), self.namespace.get(name, _MISSING)
            # An earlier exercise's object stays: an exercise done after it goes on with what
            # it left (its run cell, run before this check, used it).
            if by not in self.checked or self.checked[by] <= rank or now is _MISSING:
                continue
            swapped[name] = (value, now)
            self.namespace[name] = value
        return swapped

    def after_check(self, swapped: dict[str, tuple[Any, Any]]) -> None:
        """Put back what before_check bound for the check (unless the check rebound it)."""
        for name, (value, now) in swapped.items():
            if self.namespace.get(name, _MISSING) is value:
                self.namespace[name] = now


def _names(namespace: MutableMapping[str, Any]) -> dict[str, Any]:
    """The notebook's own names: not IPython's (`_`, `_i3`, `In`, ...)."""
    return {
        name: value
        for name, value in namespace.items()
        if not name.startswith("_") and name not in _IPYTHON_NAMES
    }


def follow_cells() -> ExerciseObjects | None:
    """Start following the cells of the IPython kernel this runs in; None outside one, or when
    the notebook is being graded."""
    import sys

    if graded() or "IPython" not in sys.modules:
        return None
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None or not hasattr(shell, "events"):
        return None
    from autograder.exercises.kit import registry

    objects = ExerciseObjects(shell.user_ns, registry.grade_ids())
    shell.events.register(
        "pre_run_cell", lambda info: objects.before_cell(getattr(info, "cell_id", None))
    )
    shell.events.register("post_run_cell", lambda result: objects.after_cell())
    return objects
