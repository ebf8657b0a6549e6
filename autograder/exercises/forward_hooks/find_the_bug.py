"""find_the_bug: seed 000's "+5" hook `hook(module, output)` has the wrong signature; the student
names the exception `add(x1, x2)` raises and the one change among three that makes it run."""

from __future__ import annotations

import torch

from autograder.exercises.forward_hooks.common import quiz_answer
from autograder.exercises.forward_hooks.models import make_add
from autograder.exercises.kit.judge import expect_equal, item
from autograder.exercises.kit.student import Student
from autograder.feedback import CheckFailed
from autograder.i18n import N_, _

HINTS = [
    N_("Run the demo cell: the exception's class name is printed before the colon."),
    N_(
        "Compare the buggy hook's parameters with the forward hook signature in the table at the "
        "top of the notebook."
    ),
    N_("Try each option in the demo cell: only one of them makes the call run."),
]
OPTIONS = ("a", "b", "c")


def _buggy(module, output):  # seed 000's hook, the question's experiment
    output += 5


def _options():
    def a(module, output):
        output = output + 5  # option (a) keeps the two-argument signature
        return None

    def b(module, input, output):
        output += 5

    def c(module, output):
        return output + 5

    return {"a": a, "b": b, "c": c}


def outcome(hook) -> str:
    """The name of the exception `add(x1, x2)` raises with `hook` registered, or "no error"."""
    add = make_add()
    with add.register_forward_hook(hook):
        try:
            add(torch.rand(1), torch.rand(1))
        except Exception as error:
            return type(error).__name__
    return "no error"


def raised() -> str:
    return outcome(_buggy)


def working_fix() -> str:
    return next(key for key, fix in _options().items() if outcome(fix) == "no error")


def _check_exception(value: object) -> None:
    if isinstance(value, type) and issubclass(value, BaseException):
        raise CheckFailed(
            _(
                "`bug_exception` is an exception class itself; write its name as a string, in "
                "quotes."
            )
        )
    if not isinstance(value, str):
        raise CheckFailed(
            _(
                "`bug_exception` should be a string, the exception's class name; it is {got!r}."
            ).format(got=value)
        )
    actual = raised()
    if value.strip() == actual:
        return
    if ":" in value:
        raise CheckFailed(
            _(
                "`bug_exception` should hold only the exception's class name, the part before "
                "the colon in what the demo prints."
            )
        )
    if value.strip().lower() == actual.lower():
        raise CheckFailed(
            _(
                "`bug_exception` is {got!r}: Python's names are case-sensitive; write it exactly "
                "as the demo prints it."
            ).format(got=value)
        )
    raise CheckFailed(
        _(
            "`bug_exception` is {got!r}, but that is not the exception `add(x1, x2)` raises with "
            "this hook. Run the demo cell under the question: it prints the exception's class "
            "name, then a colon and its message."
        ).format(got=value)
    )


def _check_fix(value: object) -> None:
    if value not in OPTIONS:
        raise CheckFailed(
            _('`bug_fix` should be one of "a", "b" or "c", as a string; it is {got!r}.').format(
                got=value
            )
        )
    if value == working_fix():
        return
    still = outcome(_options()[value])
    raise CheckFailed(
        _(
            "with option {option!r} the call still raises {error}: that option changes only the "
            "hook's body, and the error is raised when PyTorch calls the hook, before its body "
            "runs. Read the error's message in the demo cell, then try option {option!r} there."
        ).format(option=value, error=still)
    )


def visible(s: Student) -> str:
    exception, fix = quiz_answer(s, "bug_exception"), quiz_answer(s, "bug_fix")
    _check_exception(exception)
    _check_fix(fix)
    return _("you found the bug: the exception and the one change that fixes it.")


def judge_visible(rng: torch.Generator, evidence: dict) -> None:
    expect_equal(item(evidence, "bug_exception"), raised(), "bug_exception")
    expect_equal(item(evidence, "bug_fix"), working_fix(), "bug_fix")
