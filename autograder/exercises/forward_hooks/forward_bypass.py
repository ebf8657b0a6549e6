"""forward_bypass: how many times a forward hook fires when a module is called twice as
`module(x)` and once as `module.forward(x)` (seed 004: hooks fire only through `__call__`);
answered in `fire_count`."""

from __future__ import annotations

import torch

from autograder.exercises.forward_hooks.common import quiz_answer
from autograder.exercises.forward_hooks.models import make_double
from autograder.exercises.kit.judge import expect_equal, item
from autograder.exercises.kit.student import Student
from autograder.feedback import CheckFailed
from autograder.i18n import N_, _, ngettext

HINTS = [
    N_("Hooks are run by `nn.Module.__call__`, which is what `module(x)` invokes."),
    N_("`module.forward(x)` runs the computation only: no hook fires."),
    N_("Count the calls in the snippet that go through `__call__`."),
]


def fire_count() -> int:
    """How many times the question's hook fires, as PyTorch runs it."""
    module, fired = make_double(), []
    module.register_forward_hook(lambda m, i, o: fired.append(1))
    x = torch.rand(2)
    module(x)
    module.forward(x)
    module(x)
    return len(fired)


def visible(s: Student) -> str:
    got = quiz_answer(s, "fire_count")
    if type(got) is not int:
        raise CheckFailed(
            _("`fire_count` should be an integer, a number of times; it is {got!r}.").format(
                got=got
            )
        )
    if got != fire_count():
        raise CheckFailed(
            ngettext(
                "the hook does not fire {got} time in this snippet. Run it in the demo cell "
                "under the question and count the lines it prints.",
                "the hook does not fire {got} times in this snippet. Run it in the demo cell "
                "under the question and count the lines it prints.",
                got,
            ).format(got=got)
        )
    return _("fire_count = {count}: hooks fire only through `module(x)`.").format(count=got)


def judge_visible(rng: torch.Generator, evidence: dict) -> None:
    expect_equal(item(evidence, "fire_count"), fire_count(), "fire_count")
