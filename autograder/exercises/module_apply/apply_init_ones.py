"""apply_init_ones: `model.apply(weight_initialization)` sets every W of the four Function
modules to 1, so that model(x) returns x (the seed course's first apply task)."""

from __future__ import annotations

import torch

from autograder.exercises.kit.judge import Suspicious, expect_close, item
from autograder.exercises.kit.student import Student
from autograder.exercises.module_apply.common import (
    TRIALS,
    apply_to,
    expect_ones,
    explained,
    on_fresh,
    parameters_of,
    require_ones,
    require_registered,
    require_returned,
    run_model,
    shape_note,
)
from autograder.exercises.module_apply.models import make_model
from autograder.feedback import CheckFailed, NotDoneYet, describe
from autograder.i18n import N_, _
from autograder.tolerances import close_broadcast

HINTS = [
    N_(
        "`apply` hands your function every module, containers included: test with `isinstance` "
        "whether it is one of the four `Function` classes."
    ),
    N_(
        "Change the parameters in place inside `with torch.no_grad():`; `module.parameters()` "
        "yields them."
    ),
    N_("A tensor's `fill_` method sets every element to one value."),
]
SHAPES = [(2,), (1, 2)]  # the hidden check's inputs, per trial


def judge_model(s: Student, model, x: torch.Tensor) -> torch.Tensor:
    """W is a registered Parameter of ones in all four Function modules, and model(x) is x."""
    require_registered(model, ("W",))
    require_ones(model, ("W",), "weight_initialization")
    output = run_model(s, model, x)
    if not close_broadcast(output, x):
        raise CheckFailed(
            _("with every W equal to 1, model(x) should be x = {x}, got {got}.").format(
                x=describe(x), got=describe(output)
            )
        )
    return output


def visible(s: Student) -> str:
    _result, selection = apply_to(s, make_model(), "weight_initialization")  # errors first
    model = require_returned(s, "weight_initialization")
    x = s.get("x")
    try:
        output = judge_model(s, model, x)
    except CheckFailed as failure:
        raise explained(failure, selection, "weight_initialization") from None
    s.record(x=x, output=output, **parameters_of(model, ("W",)))
    return _("every W is 1, and model(x) returns x.") + shape_note(model)


def hidden(s: Student) -> str:
    require_returned(s, "weight_initialization")
    for trial in range(TRIALS):
        model = make_model()
        try:
            _result, selection = apply_to(s, model, "weight_initialization")
            s.record(**parameters_of(model, ("W",), trial))
            for k, shape in enumerate(SHAPES):
                x = torch.rand(shape, generator=s.rng)
                try:
                    output = judge_model(s, model, x)
                except CheckFailed as failure:
                    raise explained(failure, selection, "weight_initialization") from None
                s.record(**{f"output{trial}.{k}": output})
        except NotDoneYet:
            raise
        except CheckFailed as failure:
            raise on_fresh(failure) from None
    return _("your function sets every W to 1 on fresh models.") + shape_note(model)


def _expect_broadcast(got: object, want: torch.Tensor, what: str) -> None:
    if type(got) is not torch.Tensor:
        raise Suspicious(f"{what} is {type(got).__name__}, not a tensor")
    try:
        want = want.expand_as(got)
    except RuntimeError:
        raise Suspicious(f"{what} has shape {tuple(got.shape)}") from None
    expect_close(got, want, what)


def judge_visible(rng: torch.Generator, evidence: dict) -> None:
    expect_ones(evidence, ("W",), "")
    x = item(evidence, "x")
    expect_close(x, x, "x")
    _expect_broadcast(item(evidence, "output"), x, "model(x)")


def judge_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial in range(TRIALS):
        expect_ones(evidence, ("W",), trial)
        for k, shape in enumerate(SHAPES):
            x = torch.rand(shape, generator=rng)
            _expect_broadcast(item(evidence, f"output{trial}.{k}"), x, f"model(x) of trial {trial}")
