"""apply_linear: after `model.apply(linear_transformation)` every Function module computes the
affine map x @ W.T + b; it continues Exercise 4's model (the seed course's last apply task).

Any route that makes the modules compute the map passes (a forward hook, as the original does,
or a replaced `forward`); the task's "x @ W + b" reading too, which the W the checks use (all
ones, or symmetric) cannot tell apart.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import torch
from torch import nn

from autograder.exercises.kit.evidence import built_from
from autograder.exercises.kit.judge import Suspicious, expect_close, item
from autograder.exercises.kit.student import Student
from autograder.exercises.module_apply.common import (
    TRIALS,
    apply_to,
    chain_note,
    continued,
    explained,
    function_modules,
    lacking_bias,
    parameters_of,
    require_returned,
    run_model,
    student_call,
    with_bias,
)
from autograder.exercises.module_apply.models import make_model
from autograder.feedback import CheckFailed, NotDoneYet, describe
from autograder.i18n import N_, _, ngettext
from autograder.tolerances import close

HINTS = [
    N_(
        "`linear_transformation` registers a forward hook on each `Function` module, and on no "
        "other module."
    ),
    N_("The hook returns the new output, computed from `input[0]`, `module.W` and `module.b`."),
    N_("`x @ W.T + b` works for inputs of shape `(2,)` and `(1, 2)` alike."),
]
FN = "linear_transformation"
SHAPES = [(2,), (1, 2)]
FIX = "return input[0] @ module.W.T + module.b"

Params = list[tuple[torch.Tensor, torch.Tensor]]


def prepare(namespace: MutableMapping[str, Any]) -> None:
    """Exercise 4's model, as correct answers to Exercises 3 and 4 leave it: b added, W and b
    all ones (the grader runs this answer cell on its own)."""
    continued(namespace, ones=True)


def affine_chain(params: Params, x: torch.Tensor, *, transpose: bool = True) -> torch.Tensor:
    """Four affine maps in a row, y = y @ W.T + b (or y @ W + b), computed without any module."""
    y = x.detach()
    for w, b in params:
        y = y @ (w.T if transpose else w) + b
    return y


def _original_chain(params: Params, x: torch.Tensor) -> torch.Tensor:
    """What the Function modules compute without hooks: ((x + Wa) - Wb) * Wc / Wd."""
    (wa, _), (wb, _), (wc, _), (wd, _) = params
    return (x + wa - wb) * wc / wd


def params_of(model: nn.Module) -> Params:
    return [(m.W.detach().clone(), m.b.detach().clone()) for _l, m in function_modules(model)]


def _untransformed(s: Student, model: nn.Module, params: Params) -> list[str]:
    """The Function modules that, called alone, do not compute x @ W.T + b (nor x @ W + b)."""
    missed = []
    for (label, module), (w, b) in zip(function_modules(model), params, strict=True):
        x = torch.rand(2)
        got = student_call(s, _("`{module}(x)`").format(module=label.split()[0]), module, x)
        if not (close(got, x @ w.T + b) or close(got, x @ w + b)):
            missed.append(label)
    return missed


def judge_linear(s: Student, model: nn.Module, params: Params, x: torch.Tensor, name: str):
    """model(x) is the four affine maps in a row; the output."""
    got = run_model(s, model, x, name)
    expected = affine_chain(params, x)
    if close(got, expected) or close(got, affine_chain(params, x, transpose=False)):
        return got
    missed = _untransformed(s, model, params)
    if missed and len(missed) < len(params):
        raise CheckFailed(
            ngettext(
                "{missed} still computes its own operation, not x @ W.T + b, while the other "
                "Function modules are right: the modules were selected by a test that misses "
                "some.",
                "{missed} still compute their own operations, not x @ W.T + b, while the other "
                "Function modules are right: the modules were selected by a test that misses "
                "some.",
                len(missed),
            ).format(missed=", ".join(missed))
        )
    if close(got, _original_chain(params, x)):
        raise CheckFailed(
            _(
                "model({name}) = {got} is what the original Function modules compute: nothing "
                "replaced their outputs. A forward hook replaces a module's output only by "
                "returning the new value, and it must be registered on all four Function "
                "modules."
            ).format(name=name, got=describe(got)),
            fix=FIX,
        )
    raise CheckFailed(
        _(
            "model({name}) should be four affine maps in a row, y = y @ W.T + b for Function_A, "
            "B, C and D: expected {expected}, got {got}."
        ).format(name=name, expected=describe(expected), got=describe(got))
    )


def symmetric_model() -> nn.Module:
    """A fresh Model with b added, a random symmetric W and a random b in every Function.

    A symmetric W makes x @ W.T + b and x @ W + b agree, so neither reading of the task is punished,
    while random values make an answer that assumes ones fail.
    """
    model = with_bias(make_model())
    with torch.no_grad():
        for _label, module in function_modules(model):
            a = torch.rand(2, 2) * 2 - 1
            module.W.copy_((a + a.T) / 2)
            module.b.copy_(torch.rand(2) * 2 - 1)
    return model


def _ones_model() -> nn.Module:
    model = with_bias(make_model())
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.fill_(1.0)
    return model


def linear_trials(rng: torch.Generator):
    """Per trial: a fresh symmetric model (drawn from `rng`), its parameters, and its inputs."""
    trials = []
    for _trial in range(TRIALS):
        model = built_from(rng, symmetric_model)
        inputs = [torch.rand(shape, generator=rng) * 2 - 1 for shape in SHAPES]
        trials.append((model, params_of(model), inputs))
    return trials


def _judged_on(s: Student, model: nn.Module, selection, inputs: dict[str, torch.Tensor]) -> None:
    """Judge `model` (the student's function applied) on the named inputs; record what it gave."""
    params = params_of(model)
    s.record(**parameters_of(model, ("W", "b")))
    for name, x in inputs.items():
        try:
            output = judge_linear(s, model, params, x, name)
        except CheckFailed as failure:
            raise explained(failure, selection, FN) from None
        s.record(**{name: x, f"output {name}": output})


def visible(s: Student) -> str:
    fresh = symmetric_model()
    _result, selection = apply_to(s, fresh, FN)  # errors and their causes first
    run_model(s, fresh, torch.rand(2))
    notebook = require_returned(s, FN)
    inputs = {"x": s.get("x"), "x_batch": s.get("x_batch")}
    lacking = lacking_bias(notebook)
    if lacking:  # Exercise 3 went wrong: this exercise is judged on its own
        model = _ones_model()
        _result, selection = apply_to(s, model, FN)
        _judged_on(s, model, selection, inputs)
        return _("every Function computes x @ W.T + b.") + chain_note(lacking, FN)
    _judged_on(s, notebook, selection, inputs)
    return _("every Function now computes x @ W.T + b, for inputs of shape (2,) and (1, 2).")


def hidden(s: Student) -> str:
    require_returned(s, FN)
    for trial, (model, params, inputs) in enumerate(linear_trials(s.rng)):
        try:
            _result, selection = apply_to(s, model, FN)
            for k, x in enumerate(inputs):
                try:
                    output = judge_linear(s, model, params, x, "x")
                except CheckFailed as failure:
                    raise explained(failure, selection, FN) from None
                s.record(**{f"output{trial}.{k}": output})
        except NotDoneYet:
            raise
        except CheckFailed as failure:
            raise CheckFailed(
                _("On a fresh Model with a random symmetric W and a random b: {message}").format(
                    message=failure.message
                ),
                fix=failure.fix,
            ) from None
    return _("your function makes fresh models compute the affine maps, for both shapes.")


def judge_visible(rng: torch.Generator, evidence: dict) -> None:
    params = []
    for index in range(4):
        w, b = item(evidence, f"W.{index}"), item(evidence, f"b.{index}")
        expect_close(w, w, f"W of Function {index}")
        expect_close(b, b, f"b of Function {index}")
        params.append((w, b))
    for name in ("x", "x_batch"):
        x, got = item(evidence, name), item(evidence, f"output {name}")
        expect_close(x, x, name)
        try:
            readings = [affine_chain(params, x), affine_chain(params, x, transpose=False)]
        except RuntimeError:  # shapes that do not multiply
            raise Suspicious(f"the parameters and {name} do not fit together") from None
        try:  # the check accepts both readings of "x @ W + b", as the task allows
            expect_close(got, readings[0], f"model({name})")
        except Suspicious:
            expect_close(got, readings[1], f"model({name})")


def judge_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial, (_model, params, inputs) in enumerate(linear_trials(rng)):
        for k, x in enumerate(inputs):
            got, what = item(evidence, f"output{trial}.{k}"), f"model(x) of trial {trial}"
            expect_close(got, affine_chain(params, x), what)
