"""Checks for the apply notebook: the seed course's four apply tasks and the order apply visits."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.parameter import Parameter

from autograder.checks.apply_runner import (
    FRESH,
    FUNCTIONS,
    ISINSTANCE,
    TRIALS,
    apply_to,
    function_modules,
    on_fresh,
    require_bias_present,
    require_ones,
    require_returned,
    run_model,
    shape_note,
    student_call,
)
from autograder.checks.evidence import built_from
from autograder.checks.registry import register
from autograder.checks.student import Student
from autograder.feedback import CheckFailed, NotDoneYet, describe
from autograder.models.apply import make_model
from autograder.tolerances import close, close_broadcast


def _visited() -> list[str]:
    visited: list[str] = []
    make_model().apply(lambda module: visited.append(type(module).__name__))
    return visited


@register("apply_order")
def apply_order(s: Student) -> str:
    visited = _visited()
    got = s.get("predicted_order", hint="Fill in `predicted_order` in the cell above.")
    s.record(predicted_order=got)
    if not isinstance(got, list | tuple) or ... in got:
        raise CheckFailed(
            f"`predicted_order` should be a list of class names, got {describe(got)}."
        )
    got = list(got)
    if got == visited:
        return "apply visits every child before its parent (post-order); Model comes last."
    unknown = [name for name in got if name not in visited]
    if unknown:
        raise CheckFailed(
            f"{unknown} are not class names of Model's modules: use {sorted(visited)}."
        )
    if sorted(got) != sorted(visited):
        raise CheckFailed(
            f"list each of the {len(visited)} modules exactly once (Model included): apply calls "
            "fn once per module."
        )
    if got == [type(module).__name__ for module in make_model().modules()]:
        raise CheckFailed(
            "that is the order of model.modules(): each parent before its children (pre-order). "
            "apply does it the other way round: it first applies fn to every child (recursively), "
            "and only then calls fn on the module itself."
        )
    raise CheckFailed(
        "right modules, wrong order. apply(fn) first calls child.apply(fn) on each child, in the "
        "order they were assigned in __init__, and calls fn(self) last."
    )


# ---- apply_init_ones -----------------------------------------------------------------------------


@register("apply_init_ones")
def apply_init_ones(s: Student) -> str:
    apply_to(s, make_model(), "weight_initialization")  # surfaces a stub or an error first
    model = s.get("model")
    require_returned(s, model, "weight_initialization")
    require_ones(model, ("W",), "weight_initialization")
    x = s.get("x")
    output = run_model(s, model, x)
    _record_parameters(s, model, ("W",), "")
    s.record(x=x, output=output)
    if not close_broadcast(output, x):
        raise CheckFailed(
            f"with every W equal to 1, model(x) should be x = {describe(x)}, "
            f"got {describe(output)}."
        )
    return "every W is 1, and model(x) returns x." + shape_note(model)


INIT_SHAPES = [(2,), (1, 2)]


def _record_parameters(s: Student, model: nn.Module, names: tuple[str, ...], trial) -> None:
    for index, (_, module) in enumerate(function_modules(model)):
        s.record(**{f"{name}{trial}.{index}": getattr(module, name, None) for name in names})


@register("apply_init_ones", hidden=True)
def apply_init_ones_hidden(s: Student) -> str:
    for trial in range(TRIALS):
        model = make_model()
        try:
            apply_to(s, model, "weight_initialization")
            require_ones(model, ("W",), "weight_initialization")
            _record_parameters(s, model, ("W",), trial)
            for k, shape in enumerate(INIT_SHAPES):
                x = torch.rand(shape, generator=s.rng)
                output = run_model(s, model, x)
                s.record(**{f"output{trial}.{k}": output})
                if not close_broadcast(output, x):
                    raise CheckFailed(
                        f"model(x) should be x = {describe(x)}, got {describe(output)}."
                    )
        except NotDoneYet:
            raise
        except CheckFailed as failure:
            raise on_fresh(failure) from None
    return "weight_initialization sets every W to 1 on fresh models." + shape_note(model)


# ---- apply_add_bias ------------------------------------------------------------------------------


def _judge_bias(model: nn.Module) -> None:
    extra = [
        f"{type(module).__name__} ({'model.' + path if path else 'model'})"
        for path, module in model.named_modules()
        if type(module).__name__ not in FUNCTIONS
        and isinstance(getattr(module, "b", None), torch.Tensor)
    ]
    if extra:
        lost = (
            ""
            if isinstance(getattr(model.ab, "b", None), nn.Module)
            else (
                " In Layer_AB, `b` was the Function_B submodule: assigning a Parameter to it "
                "replaced Function_B, so the model no longer runs."
            )
        )
        raise CheckFailed(
            f"add_bias also gave a b to modules that are not Function modules: {', '.join(extra)}. "
            f"apply calls your function on every module, so select the Function modules, e.g. "
            f"with {ISINSTANCE}.{lost}"
        )
    functions = function_modules(model)
    missing = [label for label, module in functions if getattr(module, "b", None) is None]
    if len(missing) == len(functions):
        raise CheckFailed(
            "no Function module has a b. add_bias should give each Function module its own "
            "Parameter: `module.b = Parameter(torch.rand(2))`."
        )
    if missing:
        they = "it has" if len(missing) == 1 else "they have"
        raise CheckFailed(
            f"add_bias missed {', '.join(missing)}: {they} no b, while the other Function "
            "modules have one. The modules were selected by a name test that misses some; "
            f"{ISINSTANCE} selects exactly the four."
        )
    plain = [label for label, module in functions if "b" not in module._parameters]
    if plain:
        raise CheckFailed(
            f"b is a plain tensor, not a Parameter, in {', '.join(plain)}. A module registers an "
            "attribute as a parameter only when it is a Parameter, so this b is missing from "
            "named_parameters() and an optimizer would never train it. Wrap it: "
            "`module.b = Parameter(torch.rand(2))`."
        )
    shapes = [
        f"{label}: {describe(module.b)}" for label, module in functions if module.b.shape != (2,)
    ]
    if shapes:
        raise CheckFailed(
            "b should have shape (2,), one value per output feature (added to x @ W.T, which has "
            "2 features), but:\n  " + "\n  ".join(shapes)
        )
    if len({id(module.b) for _, module in functions}) < len(functions):
        raise CheckFailed(
            "the Function modules share one Parameter object as b, so named_parameters() lists "
            "it only once and they can never learn different biases. Create a new Parameter "
            "inside add_bias, once per module."
        )


@register("apply_add_bias")
def apply_add_bias(s: Student) -> str:
    apply_to(s, make_model(), "add_bias")
    model = s.get("model")
    require_returned(s, model, "add_bias")
    _judge_bias(model)
    return "each Function module has its own Parameter b of shape (2,), in named_parameters()."


@register("apply_add_bias", hidden=True)
def apply_add_bias_hidden(s: Student) -> str:
    for _ in range(TRIALS):
        model = make_model()
        weights = [module.W.detach().clone() for _, module in function_modules(model)]
        try:
            apply_to(s, model, "add_bias")
            _judge_bias(model)
        except NotDoneYet:
            raise
        except CheckFailed as failure:
            raise on_fresh(failure) from None
        for (label, module), before in zip(function_modules(model), weights, strict=True):
            if not close(module.W, before):
                raise CheckFailed(f"{FRESH}, add_bias changed W in {label}: it should only add b.")
    return "add_bias gives every Function module of fresh models its own Parameter b."


# ---- apply_init_bias -----------------------------------------------------------------------------


def _with_bias(model: nn.Module) -> nn.Module:
    """The state add_bias should leave: a random Parameter b of shape (2,) on every Function."""
    for _, module in function_modules(model):
        module.b = Parameter(torch.rand(2))
    return model


@register("apply_init_bias")
def apply_init_bias(s: Student) -> str:
    apply_to(s, _with_bias(make_model()), "weight_initialization")
    model = s.get("model")
    require_returned(s, model, "weight_initialization")
    require_bias_present(model)
    require_ones(model, ("W", "b"), "weight_initialization")
    _record_parameters(s, model, ("W", "b"), "")
    return "every W and b is 1." + shape_note(model)


@register("apply_init_bias", hidden=True)
def apply_init_bias_hidden(s: Student) -> str:
    for trial in range(TRIALS):
        model = _with_bias(make_model())
        try:
            apply_to(s, model, "weight_initialization")
            require_ones(model, ("W", "b"), "weight_initialization")
            _record_parameters(s, model, ("W", "b"), trial)
        except NotDoneYet:
            raise
        except CheckFailed as failure:
            raise on_fresh(failure) from None
        for label, module in function_modules(model):
            if "b" not in module._parameters:
                raise CheckFailed(f"{FRESH}, b of {label} is no longer a registered Parameter.")
    return "weight_initialization sets every W and b to 1 on fresh models." + shape_note(model)


# ---- apply_linear --------------------------------------------------------------------------------


def _affine_chain(
    params: list[tuple[torch.Tensor, torch.Tensor]], x: torch.Tensor, *, transpose: bool = True
):
    """Four affine maps in a row, y = y @ W.T + b (or y @ W + b), computed without any module."""
    y = x.detach()
    for w, b in params:
        y = y @ (w.T if transpose else w) + b
    return y


def _original_chain(params: list[tuple[torch.Tensor, torch.Tensor]], x: torch.Tensor):
    """What the Function modules compute without hooks: ((x + Wa) - Wb) * Wc / Wd."""
    (wa, _), (wb, _), (wc, _), (wd, _) = params
    return (x + wa - wb) * wc / wd


def _params(model: nn.Module) -> list[tuple[torch.Tensor, torch.Tensor]]:
    return [(m.W.detach().clone(), m.b.detach().clone()) for _, m in function_modules(model)]


def _untransformed(s: Student, model: nn.Module, params) -> list[str]:
    """The Function modules that, called alone, do not compute x @ W.T + b (nor x @ W + b)."""
    missed = []
    for (label, module), (w, b) in zip(function_modules(model), params, strict=True):
        x = torch.rand(2)
        got = student_call(s, f"{label.split()[0]}(x)", module, x)
        if not (close(got, x @ w.T + b) or close(got, x @ w + b)):
            missed.append(label)
    return missed


def _judge_linear(s: Student, model: nn.Module, params, x: torch.Tensor, name: str) -> None:
    got = run_model(s, model, x, name)
    expected = _affine_chain(params, x)
    if close(got, expected) or close(got, _affine_chain(params, x, transpose=False)):
        return  # with the W used in grading both readings of "X @ W + b" agree
    missed = _untransformed(s, model, params)
    if missed and len(missed) < len(params):
        verb = "computes its" if len(missed) == 1 else "compute their"
        raise CheckFailed(
            f"{', '.join(missed)} still {verb} own operation, not x @ W.T + b, while "
            "the other Function modules are right: the modules were selected by a name test "
            f"that misses some; {ISINSTANCE} selects exactly the four."
        )
    if close(got, _original_chain(params, x)):
        raise CheckFailed(
            f"model({name}) = {describe(got)} is what the original Function modules compute: "
            "nothing replaced their outputs. A forward hook replaces the output only by "
            "returning the new value (`return input[0] @ module.W.T + module.b`), and it must be "
            "registered on all four Function modules."
        )
    raise CheckFailed(
        f"model({name}) should be four affine maps in a row, y = y @ W.T + b for Function_A, "
        f"B, C and D: expected {describe(expected)}, got {describe(got)}."
    )


def _symmetric_model() -> nn.Module:
    """A fresh Model with b added, a random symmetric W and a random b in every Function.

    A symmetric W makes x @ W.T + b and x @ W + b agree, so neither reading of the task is punished,
    while random values make an answer that assumes ones fail.
    """
    model = _with_bias(make_model())
    with torch.no_grad():
        for _, module in function_modules(model):
            a = torch.rand(2, 2) * 2 - 1
            module.W.copy_((a + a.T) / 2)
            module.b.copy_(torch.rand(2) * 2 - 1)
    return model


@register("apply_linear")
def apply_linear(s: Student) -> str:
    fresh = _symmetric_model()
    apply_to(s, fresh, "linear_transformation")
    run_model(s, fresh, torch.rand(2))
    model = s.get("model")
    require_returned(s, model, "linear_transformation")
    require_bias_present(model)
    _record_parameters(s, model, ("W", "b"), "")
    for name in ("x", "x_batch"):
        x = s.get(name)
        s.record(**{name: x, f"output {name}": run_model(s, model, x, name)})
        _judge_linear(s, model, _params(model), x, name)
    return "every Function now computes x @ W.T + b, for inputs of shape (2,) and (1, 2)."


def _linear_trials(rng: torch.Generator):
    """Per trial: a fresh symmetric model (drawn from `rng`), its parameters, and its inputs."""
    trials = []
    for _ in range(TRIALS):
        model = built_from(rng, _symmetric_model)
        inputs = [torch.rand(shape, generator=rng) * 2 - 1 for shape in INIT_SHAPES]
        trials.append((model, _params(model), inputs))
    return trials


@register("apply_linear", hidden=True)
def apply_linear_hidden(s: Student) -> str:
    for trial, (model, params, inputs) in enumerate(_linear_trials(s.rng)):
        try:
            apply_to(s, model, "linear_transformation")
            for k, x in enumerate(inputs):
                s.record(**{f"output{trial}.{k}": run_model(s, model, x)})
                _judge_linear(s, model, params, x, "x")
        except NotDoneYet:
            raise
        except CheckFailed as failure:
            raise CheckFailed(
                f"On a fresh Model with a random symmetric W and a random b: {failure.message}"
            ) from None
    return "linear_transformation makes fresh models compute the affine maps, for both shapes."
