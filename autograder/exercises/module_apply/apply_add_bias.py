"""apply_add_bias: `model.apply(add_bias)` gives each of the four Function modules a Parameter
`b` of its own, of shape (2,), and no other module."""

from __future__ import annotations

import torch
from torch import nn

from autograder.exercises.kit.judge import Suspicious, expect_close, expect_equal, item
from autograder.exercises.kit.student import Student
from autograder.exercises.module_apply.common import (
    FUNCTIONS,
    ISINSTANCE,
    TRIALS,
    apply_to,
    explained,
    function_modules,
    on_fresh,
    require_returned,
)
from autograder.exercises.module_apply.models import make_model
from autograder.feedback import CheckFailed, NotDoneYet, describe
from autograder.i18n import N_, _
from autograder.tolerances import close

HINTS = [
    N_(
        "Assigning a `Parameter` to a module attribute registers it; a plain tensor is not "
        "registered."
    ),
    N_("Only `Function` modules get a `b`: `Layer_AB` already has a child called `b`."),
    N_(
        "Make a new `Parameter` for each module, inside your function, so no two modules share one."
    ),
]
FIX = "module.b = Parameter(torch.rand(2))"


def _registered(module: nn.Module) -> bool:
    return dict(module.named_parameters(recurse=False)).get("b") is getattr(module, "b", None)


def judge_bias(model: nn.Module) -> None:
    """Each Function module, and no other, has a registered Parameter b of shape (2,), its own."""
    extra = [
        f"{type(module).__name__} ({'model.' + path if path else 'model'})"
        for path, module in model.named_modules()
        if type(module).__name__ not in FUNCTIONS
        and isinstance(getattr(module, "b", None), torch.Tensor)
    ]
    if extra:
        lost = (
            ""
            if isinstance(getattr(getattr(model, "ab", None), "b", None), nn.Module)
            else " "
            + _(
                "In Layer_AB, `b` was the Function_B submodule: assigning a Parameter to it "
                "replaced Function_B, so the model no longer computes what it did."
            )
        )
        raise CheckFailed(
            _(
                "add_bias also gave a b to modules that are not Function modules: {extra}. apply "
                "calls your function on every module, so select the Function modules, e.g. with "
                "{isinstance}.{lost}"
            ).format(extra=", ".join(extra), isinstance=ISINSTANCE, lost=lost)
        )
    functions = function_modules(model)
    missing = [label for label, module in functions if getattr(module, "b", None) is None]
    if len(missing) == len(functions):
        raise CheckFailed(
            _(
                "no Function module has a b: add_bias should give each of them a new Parameter "
                "`b` of shape (2,), assigned as an attribute of the module."
            ),
            fix=FIX,
        )
    if missing:
        raise CheckFailed(
            _(
                "add_bias missed {missing}: no b there, while the other Function modules have "
                "one. The modules were selected by a test that misses some; {isinstance} "
                "selects exactly the four."
            ).format(missing=", ".join(missing), isinstance=ISINSTANCE)
        )
    plain = [label for label, module in functions if not _registered(module)]
    if plain:
        raise CheckFailed(
            _(
                "b is a plain tensor, not a Parameter, in {plain}. A module registers an "
                "attribute as a parameter only when it is a Parameter, so this b is missing from "
                "named_parameters() and an optimizer would never train it."
            ).format(plain=", ".join(plain)),
            fix=FIX,
        )
    shapes = [
        f"{label}: {describe(module.b)}" for label, module in functions if module.b.shape != (2,)
    ]
    if shapes:
        raise CheckFailed(
            _(
                "b should have shape (2,), one value per output feature (added to x @ W.T, which "
                "has 2 features), but:\n  {shapes}"
            ).format(shapes="\n  ".join(shapes))
        )
    if len({id(module.b) for _label, module in functions}) < len(functions):
        raise CheckFailed(
            _(
                "the Function modules share one Parameter object as b, so named_parameters() "
                "lists it only once and they can never learn different biases. Create a new "
                "Parameter inside add_bias, once per module."
            )
        )


def summary(model: nn.Module, trial: object = "") -> dict:
    """What the verdict rests on, as evidence: each Function's b and whether it is registered as
    a parameter of its own, and the other modules that have a b."""
    functions = function_modules(model)
    found = {
        f"extra{trial}": [
            path
            for path, module in model.named_modules()
            if type(module).__name__ not in FUNCTIONS
            and isinstance(getattr(module, "b", None), torch.Tensor)
        ],
        f"distinct{trial}": len({id(getattr(module, "b", None)) for _l, module in functions}),
    }
    for index, (_label, module) in enumerate(functions):
        found[f"b{trial}.{index}"] = getattr(module, "b", None)
        found[f"registered{trial}.{index}"] = module is not None and _registered(module)
    return found


def visible(s: Student) -> str:
    _result, selection = apply_to(s, make_model(), "add_bias")  # errors and their causes first
    model = require_returned(s, "add_bias")
    s.record(**summary(model))
    try:
        judge_bias(model)
    except CheckFailed as failure:
        raise explained(failure, selection, "add_bias") from None
    return _("each Function module has its own Parameter b of shape (2,), in named_parameters().")


def hidden(s: Student) -> str:
    require_returned(s, "add_bias")
    for trial in range(TRIALS):
        model = make_model()
        weights = [module.W.detach().clone() for _label, module in function_modules(model)]
        try:
            _result, selection = apply_to(s, model, "add_bias")
            s.record(**summary(model, trial))
            try:
                judge_bias(model)
            except CheckFailed as failure:
                raise explained(failure, selection, "add_bias") from None
            for (label, module), before in zip(function_modules(model), weights, strict=True):
                if not close(module.W, before):
                    raise CheckFailed(
                        _("add_bias changed W in {label}: it should only add b.").format(
                            label=label
                        )
                    )
        except NotDoneYet:
            raise
        except CheckFailed as failure:
            raise on_fresh(failure) from None
    return _("add_bias gives every Function module of fresh models its own Parameter b.")


def _expect_biases(evidence: dict, trial: object) -> None:
    # Consistency only: the check judged objects (registration, identity), which the evidence
    # can only report.
    expect_equal(item(evidence, f"extra{trial}"), [], "the other modules with a b")
    expect_equal(item(evidence, f"distinct{trial}"), 4, "the number of distinct b")
    for index in range(4):
        b = item(evidence, f"b{trial}.{index}")
        expect_close(b, b, f"b of Function {index}")
        if b.shape != (2,):
            raise Suspicious(f"b of Function {index} has shape {tuple(b.shape)}")
        expect_equal(item(evidence, f"registered{trial}.{index}"), True, f"b {index} registered")


def judge_visible(rng: torch.Generator, evidence: dict) -> None:
    _expect_biases(evidence, "")


def judge_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial in range(TRIALS):
        _expect_biases(evidence, trial)
