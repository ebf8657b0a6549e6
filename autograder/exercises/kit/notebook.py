"""`check()` as a notebook's test cells call it: the outcome of an exercise's check, shown to the
student, and an error when the cell must score zero.

In a student's own Jupyter, an unfinished exercise is a notice, not an error, so that Run All
goes through the whole notebook; a wrong answer is an error whose message is shown as formatted
text (code in code style, wrapping at words). When nbgrader runs the notebook (autograde or
validate: NBGRADER_EXECUTION is set), both are errors carrying the whole message, which is what
nbgrader scores and what its feedback shows. Once the same check has failed REPEATS times in a
row, its message adds the code-level fix the failure carries or, for a mistake without one, the
exercise's hints, one more at each further failure.
"""

from __future__ import annotations

import html
import re
import sys
from collections.abc import MutableMapping
from typing import Any

from autograder.exercises.kit import cell_errors, exercise_objects, quiet_stubs
from autograder.exercises.kit.run import FAILED, NOT_DONE, PASSED, Outcome, run_check
from autograder.feedback import CheckFailed, NotDoneYet
from autograder.i18n import _
from autograder.widgets import progress
from autograder.widgets.frontend import graded, kernel_shell
from autograder.widgets.hints import exercise_hints

REPEATS = 3
_failures: dict[tuple[str, bool], int] = {}  # failures in a row, per check
_CODE = re.compile(r"`([^`]+)`")
# The set-up cell's `from autograder import check` imports this module first in every notebook:
# from then on each exercise's cells see its own objects (exercise_objects.py).
_objects = exercise_objects.follow_cells()
# ...an error that PyTorch raised from a hook in any cell says its cause (cell_errors.py), and
# an untouched stub's `...` shows no `Ellipsis` (quiet_stubs.py).
_shell = kernel_shell()
cell_errors.explain_in(_shell)
quiet_stubs.quiet_in(_shell)


def check(
    grade_id: str,
    namespace: MutableMapping[str, Any],
    *,
    hidden: bool = False,
    seed: int | None = None,
) -> None:
    """Run the check for `grade_id` against a notebook's namespace (pass `globals()`)."""
    following = _objects is not None and namespace is _objects.namespace
    swapped = _objects.before_check(grade_id) if following else {}
    try:
        outcome = run_check(grade_id, namespace, hidden=hidden, seed=seed)
    finally:
        if swapped:
            _objects.after_check(swapped)
    progress.record(grade_id, hidden, outcome.status)
    key = (grade_id, hidden)
    _failures[key] = _failures.get(key, 0) + 1 if outcome.status == FAILED else 0
    message = outcome.message + _notes(outcome)
    if outcome.status == PASSED:
        print(f"✓ {grade_id}: {message}", file=sys.stdout)
        return
    if _failures[key] >= REPEATS:
        message += _repeated(grade_id, outcome, _failures[key])
    kind = NotDoneYet if outcome.status == NOT_DONE else CheckFailed
    failure = kind(message, grade_id=grade_id)
    if graded():
        raise failure from None
    _show(failure)
    if outcome.status == NOT_DONE:
        return  # a notice: Run All goes on
    raise _Shown(failure) from None


def _repeated(grade_id: str, outcome: Outcome, count: int) -> str:
    """What a failure adds once it repeats: its code-level fix, or, for a mistake without one,
    the exercise's hints, one more at each further failure ("" when it has none)."""
    if outcome.fix:
        return "\n" + _("This check failed {count} times in a row; here is the fix: {fix}").format(
            count=count, fix=outcome.fix
        )
    try:
        hints = exercise_hints(grade_id)
    except ValueError:  # no such exercise (its failure says so already), or no hints
        return ""
    shown = hints[: count - REPEATS + 1]
    lines = [
        _("This check failed {count} times in a row; hints ({shown} of {total}):").format(
            count=count, shown=len(shown), total=len(hints)
        )
    ]
    lines += [f"  {number}. {hint}" for number, hint in enumerate(shown, 1)]
    return "\n" + "\n".join(lines)


class _Shown(CheckFailed):
    """A failure whose message is already on screen: its error output is one line."""

    def __init__(self, failure: CheckFailed) -> None:
        super().__init__(failure.message, grade_id=failure.grade_id)

    def _render_traceback_(self) -> list[str]:
        return [
            _("✗ {grade_id}: not passed yet (see the message above)").format(grade_id=self.grade_id)
        ]


def _notes(outcome: Outcome) -> str:
    if not outcome.notes:
        return ""
    shown = "\n".join("  " + _("note: {line}").format(line=line) for line in outcome.notes)
    return "\n" + _("(warnings while your code ran; they do not cost points)") + "\n" + shown


def as_html(failure: CheckFailed) -> str:
    """The message as HTML: code spans for `backticks`, line breaks kept, wrapped at words."""
    body = _CODE.sub(r"<code>\1</code>", html.escape(failure.message)).replace("\n", "<br>")
    colour = "#9a6700" if isinstance(failure, NotDoneYet) else "#cf222e"
    return (
        f"<div style='white-space:normal;overflow-wrap:break-word;line-height:1.45'>"
        f"<b style='color:{colour}'>{html.escape(failure.headline())}</b>: {body}</div>"
    )


def _show(failure: CheckFailed) -> None:
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        get_ipython = None
    if get_ipython is None or get_ipython() is None:
        print(str(failure), file=sys.stdout)
        return
    display({"text/html": as_html(failure), "text/plain": str(failure)}, raw=True)
