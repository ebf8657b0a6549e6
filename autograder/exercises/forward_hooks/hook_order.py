"""hook_order: in which order three forward hooks run when the third is registered with
`prepend=True` (seed 004: hooks of one kind run in registration order); answered in
`predicted_order`."""

from __future__ import annotations

import torch

from autograder.exercises.forward_hooks.common import quiz_answer
from autograder.exercises.forward_hooks.models import make_double
from autograder.exercises.kit.judge import expect_equal, item
from autograder.exercises.kit.student import Student
from autograder.feedback import CheckFailed, describe
from autograder.i18n import N_, _

HINTS = [
    N_("Hooks of one kind run in the order they were registered."),
    N_("`prepend=True` puts a hook in front of every hook registered before it."),
    N_("Add a third hook with `prepend=True` to the demo cell and see where it lands."),
]
NAMES = ("A", "B", "C")


def actual_order() -> list[str]:
    """The order the question's three hooks run in, as PyTorch runs them."""
    module, order = make_double(), []
    module.register_forward_hook(lambda m, i, o: order.append("A"))
    module.register_forward_hook(lambda m, i, o: order.append("B"))
    module.register_forward_hook(lambda m, i, o: order.append("C"), prepend=True)
    module(torch.rand(2))
    return order


def visible(s: Student) -> str:
    got = quiz_answer(s, "predicted_order")
    if not isinstance(got, list | tuple) or sorted(map(str, got)) != sorted(NAMES):
        raise CheckFailed(
            _(
                '`predicted_order` should be a list of "A", "B" and "C", each once, in the order '
                "the hooks run; it is {got}."
            ).format(got=describe(got))
        )
    got = list(got)
    s.record(predicted_order=got)
    if got != actual_order():
        raise CheckFailed(
            _(
                "{got} is not the order PyTorch runs these hooks in. The demo above the question "
                "prints the order of two hooks registered one after the other: register a third "
                "one there with `prepend=True`, run it, and see where it lands."
            ).format(got=got)
        )
    return _("the hooks run in the order you predicted.")


def judge_visible(rng: torch.Generator, evidence: dict) -> None:
    expect_equal(item(evidence, "predicted_order"), actual_order(), "predicted_order")
