"""Run one exercise's check against a namespace and say how it ended, without printing anything.

The notebook's `check()` (kit/notebook.py) shows the outcome to the student; the grader's
verifier runs the same function on an answer cell run on its own and judges the evidence.
Warnings and stderr output raised while the student's code runs become notes of the outcome:
nbgrader scores any stderr output in a test cell as zero, and a warning must not cost points.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from typing import Any

from autograder.exercises.kit import registry
from autograder.exercises.kit.evidence import Evidence
from autograder.exercises.kit.student import Student
from autograder.feedback import CheckFailed, NotDoneYet
from autograder.i18n import _

PASSED, FAILED, NOT_DONE = "passed", "failed", "not done yet"


@dataclass
class Outcome:
    grade_id: str
    hidden: bool
    status: str  # PASSED, FAILED or NOT_DONE
    message: str  # the pass message, or what is wrong
    fix: str = ""  # the code-level fix a failure may carry (shown after repeated failures)
    notes: list[str] = field(default_factory=list)  # warnings and stderr while the code ran
    evidence: Any = None  # the recorded values, encoded (evidence.encode)
    # Set by the verifier when the outcome comes from its circumstances (a child that timed
    # out or was killed), not from the code: its verdict is then not reused.
    transient: bool = False

    @property
    def passed(self) -> bool:
        return self.status == PASSED


def run_check(
    grade_id: str,
    namespace: MutableMapping[str, Any],
    *,
    hidden: bool = False,
    seed: int | None = None,
) -> Outcome:
    """The outcome of the (visible or hidden) check of `grade_id` on `namespace`."""
    evidence = Evidence(grade_id, hidden, seed)
    try:
        module = registry.exercise(grade_id)
    except KeyError:
        return Outcome(
            grade_id,
            hidden,
            FAILED,
            _("there is no exercise named {grade_id!r}").format(grade_id=grade_id),
        )
    fn = getattr(module, "hidden" if hidden else "visible", None)
    if fn is None:
        kind = _("hidden check") if hidden else _("check")
        return Outcome(
            grade_id,
            hidden,
            FAILED,
            _("{grade_id} has no {kind}").format(grade_id=grade_id, kind=kind),
        )
    stderr = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stderr(stderr):
        warnings.simplefilter("always")
        try:
            message = fn(Student(namespace, grade_id, evidence))
            status, fix = PASSED, ""
        except NotDoneYet as failure:
            status, message, fix = NOT_DONE, failure.message, ""
        except CheckFailed as failure:
            status, message, fix = FAILED, failure.message, failure.fix
        except Exception as bug:  # a checker bug must still reach the student as a message
            status, fix = FAILED, ""
            message = _(
                "the checker could not evaluate this answer ({error}). Please tell your instructor."
            ).format(error=f"{type(bug).__name__}: {bug}")
    notes = sorted({f"{w.category.__name__}: {w.message}" for w in caught})
    notes += [line for line in stderr.getvalue().splitlines() if line.strip()]
    data = None
    if status == PASSED:
        try:
            data = evidence.data()
        except Exception as error:  # unencodable evidence cannot be judged: a failure
            status = FAILED
            message = _("the checker could not record this answer ({error}).").format(
                error=type(error).__name__
            )
    return Outcome(grade_id, hidden, status, message, fix, [n[:200] for n in notes[:5]], data)
