"""hook_effects: which of three forward hooks (return a new tensor, change the output in place,
rebind the local name) changes what `add(x1, x2)` returns; answered in the dict `changes_output`."""

from __future__ import annotations

import torch

from autograder.exercises.forward_hooks.common import quiz_answer
from autograder.exercises.forward_hooks.models import make_add
from autograder.exercises.kit.judge import expect_equal, item
from autograder.exercises.kit.student import Student
from autograder.feedback import CheckFailed, describe
from autograder.i18n import N_, _, ngettext
from autograder.tolerances import close

HINTS = [
    N_("Run the demo cell: it prints what the module returns with each hook."),
    N_(
        "A returned value replaces the output; an in-place change alters the very tensor that "
        "the module returns."
    ),
    N_("Assigning to `output` inside the hook only points a local name at a new tensor."),
]
KEYS = ("returns_new", "in_place", "rebinds")


def _hooks():
    def returns_new(module, input, output):
        return output * 2

    def in_place(module, input, output):
        output.mul_(2)

    def rebinds(module, input, output):
        output = output * 2  # the point of the experiment: this has no effect

    return {"returns_new": returns_new, "in_place": in_place, "rebinds": rebinds}


def actual_effects() -> dict[str, bool]:
    """For each hook, whether `add(x1, x2)` then returns something other than x1 + x2."""
    actual = {}
    for name, hook in _hooks().items():
        add, x1, x2 = make_add(), torch.rand(1), torch.rand(1)
        with add.register_forward_hook(hook):
            actual[name] = not close(add(x1, x2), x1 + x2)
    return actual


def visible(s: Student) -> str:
    got = quiz_answer(s, "changes_output")
    keys = ", ".join(f'"{key}"' for key in KEYS)
    if not isinstance(got, dict):
        raise CheckFailed(
            _("`changes_output` should be a dict with the keys {keys}; it is {got}.").format(
                keys=keys, got=describe(got)
            )
        )
    missing = [key for key in KEYS if key not in got]
    extra = [key for key in got if key not in KEYS]
    if missing or extra:
        raise CheckFailed(
            _(
                "`changes_output` should have exactly the keys {keys}, one per hook; missing: "
                "{missing}, not expected: {extra}."
            ).format(keys=keys, missing=missing or "-", extra=extra or "-")
        )
    for key in KEYS:
        if type(got[key]) is not bool:
            raise CheckFailed(
                _("`changes_output[{key!r}]` should be True or False; it is {got!r}.").format(
                    key=key, got=got[key]
                )
            )
    actual = actual_effects()
    wrong = [key for key in KEYS if got[key] != actual[key]]
    if wrong:
        mismatch = ngettext(
            "your prediction for {keys} does not match what PyTorch does.",
            "your predictions for {keys} do not match what PyTorch does.",
            len(wrong),
        ).format(keys=", ".join(f"`{key}`" for key in wrong))
        raise CheckFailed(
            mismatch
            + " "
            + _(
                "Run the demo cell under the question: it prints what `add` returns with each "
                "hook for the inputs 1 and 2, so `tensor([3.])` means the output is unchanged."
            )
        )
    return _("your predictions match what PyTorch does with each hook.")


def judge_visible(rng: torch.Generator, evidence: dict) -> None:
    expect_equal(item(evidence, "changes_output"), actual_effects(), "changes_output")
