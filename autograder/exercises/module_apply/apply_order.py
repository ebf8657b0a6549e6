"""apply_order: the order in which `model.apply(fn)` visits the modules of Model (post-order),
found by running torch."""

from __future__ import annotations

import torch

from autograder.exercises.kit.judge import expect_equal, item
from autograder.exercises.kit.student import Student
from autograder.exercises.module_apply.models import make_model
from autograder.feedback import CheckFailed, describe
from autograder.i18n import N_, _

HINTS = [
    N_(
        "`apply` is recursive: on each module it first handles all the children, then the "
        "module itself."
    ),
    N_("Children are visited in the order they were assigned in `__init__`."),
    N_("The module you call `apply` on comes last."),
]


def visited() -> list[str]:
    order: list[str] = []
    make_model().apply(lambda module: order.append(type(module).__name__))
    return order


def visible(s: Student) -> str:
    got = s.get(
        "predicted_order", hint=_("Set `predicted_order` in the answer cell above, then run it.")
    )
    s.record(predicted_order=got)
    if not isinstance(got, list | tuple) or not all(isinstance(name, str) for name in got):
        raise CheckFailed(
            _("`predicted_order` should be a list of class names, but it is {got}.").format(
                got=describe(got)
            )
        )
    got, order = list(got), visited()
    if got == order:
        return _("apply visits every child before its parent (post-order); Model comes last.")
    unknown = [name for name in got if name not in order]
    if unknown:
        raise CheckFailed(
            _("{names} are not class names of Model's modules: use {allowed}.").format(
                names=", ".join(repr(name) for name in unknown),
                allowed=", ".join(repr(name) for name in sorted(order)),
            )
        )
    if sorted(got) != sorted(order):
        raise CheckFailed(
            _(
                "list each of the {count} modules exactly once (Model included): apply calls "
                "fn once per module."
            ).format(count=len(order))
        )
    if got == [type(module).__name__ for module in make_model().modules()]:
        raise CheckFailed(
            _(
                "that is the order of `model.modules()`: each parent before its children "
                "(pre-order). apply puts each module after its children instead (post-order): "
                "on each module it first calls `child.apply(fn)` for every child, in the order "
                "they were assigned, and only then `fn` on the module itself. The demo under "
                "this check prints both orders."
            )
        )
    raise CheckFailed(
        _(
            "right modules, wrong order. apply(fn) first calls child.apply(fn) on each child, in "
            "the order they were assigned in `__init__`, and calls fn(self) last. The demo under "
            "this check prints the order."
        )
    )


def judge_visible(rng: torch.Generator, evidence: dict) -> None:
    expect_equal(item(evidence, "predicted_order"), visited(), "predicted_order")
