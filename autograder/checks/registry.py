"""The check registry: grade id -> visible and hidden check, and `check()`, which notebooks call."""

from __future__ import annotations

import contextlib
import io
import sys
import warnings
from collections.abc import Callable, MutableMapping
from typing import Any

from autograder.checks.evidence import Evidence
from autograder.checks.student import Student
from autograder.feedback import CheckFailed
from autograder.widgets import progress

CheckFunction = Callable[[Student], str]
_CHECKS: dict[tuple[str, bool], CheckFunction] = {}


def register(grade_id: str, *, hidden: bool = False) -> Callable[[CheckFunction], CheckFunction]:
    """Register `fn(student) -> pass message` as the (visible or hidden) check for `grade_id`."""

    def decorate(fn: CheckFunction) -> CheckFunction:
        key = (grade_id, hidden)
        if key in _CHECKS:
            raise ValueError(f"two checks registered for {key}")
        _CHECKS[key] = fn
        return fn

    return decorate


def grade_ids() -> list[str]:
    """Every grade id that has a visible check."""
    return sorted(grade_id for grade_id, hidden in _CHECKS if not hidden)


def has_hidden(grade_id: str) -> bool:
    return (grade_id, True) in _CHECKS


def check(
    grade_id: str,
    namespace: MutableMapping[str, Any],
    *,
    hidden: bool = False,
    seed: int | None = None,
) -> None:
    """Run the check for `grade_id` against a notebook's namespace (pass `globals()`).

    Prints a pass message and emits the check's evidence (evidence.py), or raises CheckFailed
    with a message for the student. `seed` (written into hidden test cells by the grader) fixes
    the random inputs, so the grader can rebuild them when it verifies the evidence. Warnings and
    stderr output raised while the student's code runs are shown on stdout instead: nbgrader
    scores any stderr output in a test cell as zero, and a warning must not zero a correct answer.
    """
    try:
        fn = _CHECKS[(grade_id, hidden)]
    except KeyError:
        kind = "hidden check" if hidden else "check"
        raise CheckFailed(f"there is no {kind} named {grade_id!r}") from None
    evidence = Evidence(grade_id, hidden, seed)
    stderr = io.StringIO()
    with (
        warnings.catch_warnings(record=True) as caught,
        contextlib.redirect_stderr(stderr),
        progress.recording(grade_id, hidden=hidden),  # the notebook's progress panel
    ):
        warnings.simplefilter("always")
        try:
            message = fn(Student(namespace, grade_id, evidence))
        except CheckFailed as failure:
            failure.grade_id = grade_id
            failure.message += _notes(caught, stderr.getvalue())
            raise failure from None
        except Exception as bug:  # a checker bug must still reach the student as a message
            raise CheckFailed(
                f"the checker could not evaluate this answer ({type(bug).__name__}: {bug}). "
                "Please tell your instructor.",
                grade_id=grade_id,
            ) from None
    print(f"✓ {grade_id}: {message}{_notes(caught, stderr.getvalue())}", file=sys.stdout)
    evidence.emit()


def _notes(caught: list[warnings.WarningMessage], stderr_text: str) -> str:
    lines = sorted({f"{w.category.__name__}: {w.message}" for w in caught})
    lines += [line for line in stderr_text.splitlines() if line.strip()]
    if not lines:
        return ""
    shown = "\n".join(f"  note: {line[:200]}" for line in lines[:5])
    return "\n  (warnings while your code ran; they do not cost points)\n" + shown
