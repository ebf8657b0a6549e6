"""Checks for the apply notebook: the seed course's four apply tasks, apply's order, nn.init."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator

import torch
from torch import nn
from torch.nn.parameter import Parameter

from autograder.checks.registry import register
from autograder.checks.student import Student
from autograder.feedback import CheckFailed, NotDoneYet, describe
from autograder.models.apply import FUNCTION_PATHS, make_model, make_tiny_lm
from autograder.tolerances import STD_RTOL, close, close_broadcast

FRESH = "On a fresh Model with random parameters"
TRIALS = 3
FUNCTIONS = tuple(FUNCTION_PATHS.values())
ISINSTANCE = "`isinstance(module, (Function_A, Function_B, Function_C, Function_D))`"

# ---- running student code through apply ----------------------------------------------------------

PLAIN_TENSOR = (
    "\n  W and b are registered Parameters, and PyTorch refuses to replace a registered Parameter "
    "by a plain tensor (it would silently drop out of model.parameters()). Change the values in "
    "place instead: `module.W.data.fill_(1.)`, or `with torch.no_grad(): module.W.fill_(1.)`."
)
NO_GRAD = (
    "\n  A Parameter requires grad, and autograd forbids changing it in place while it records "
    "operations. Do it under `with torch.no_grad():` (or on `.data`), e.g. "
    "`with torch.no_grad(): module.W.fill_(1.)`."
)
CHILD_MODULE = (
    "\n  In Layer_AB, `b` is its Function_B submodule, and PyTorch refuses to replace a submodule "
    f"by a tensor. apply calls your function on every module: act only on the Function modules, "
    f"e.g. with {ISINSTANCE}."
)
BIAS_NONE = (
    "\n  Some layers are built with bias=False, so their `bias` is None: test "
    "`if module.bias is not None:` before initialising it."
)
NO_ATTRIBUTE = re.compile(r"'(\w+)' object has no attribute '(\w+)'")


def _error_hint(message: str) -> str:
    if "cannot assign" in message and "as parameter" in message:
        return PLAIN_TENSOR
    if "as child module" in message:
        return CHILD_MODULE
    if "leaf Variable that requires grad" in message:
        return NO_GRAD
    if "'NoneType' object has no attribute" in message:
        return BIAS_NONE
    found = NO_ATTRIBUTE.search(message)
    if found and found.group(1) not in FUNCTIONS:
        cls, attr = found.groups()
        if cls in ("Layer_AB", "Layer_CD", "Model"):
            return (
                f"\n  apply calls your function on every module, Layer_AB, Layer_CD and Model "
                f"too, and those have no `{attr}`. Act only on the Function modules, e.g. with "
                f"{ISINSTANCE}."
            )
        return (
            f"\n  apply calls your function on every module, including {cls}, which has no "
            f"`{attr}`: test the module's type first, e.g. `isinstance(module, nn.Linear)`."
        )
    return ""


def _student_call(s: Student, what: str, fn: Callable[..., object], *args: object) -> object:
    """s.call, with a hint added to the error messages this notebook's mistakes produce."""
    try:
        return s.call(what, fn, *args)
    except NotDoneYet:
        raise
    except CheckFailed as failure:
        raise CheckFailed(failure.message + _error_hint(failure.message)) from None


@contextlib.contextmanager
def _checker_classes(s: Student, fn: Callable[..., object], model: nn.Module) -> Iterator[None]:
    """While `fn` runs, the notebook's classes (Function_A, Head, ...) are replaced by `model`'s.

    The checker's models are built from its own copies of the classes, so an `isinstance` test
    against the notebook's classes would never match them. Every global naming such a class, or a
    tuple holding some (`FUNCTIONS = (Function_A, ...)`), is swapped, and restored afterwards.
    """
    target = getattr(fn, "__func__", fn)
    space = getattr(target, "__globals__", s.namespace)
    mapping = {}
    for cls in {type(module) for module in model.modules()}:
        mine = space.get(cls.__name__)
        if isinstance(mine, type) and mine is not cls:
            mapping[mine] = cls

    def swap(value: object) -> object:
        return mapping.get(value, value) if isinstance(value, type) else value

    with contextlib.ExitStack() as stack:
        for name, value in list(space.items()):
            if isinstance(value, tuple):
                new = tuple(swap(item) for item in value)
                changed = any(a is not b for a, b in zip(new, value, strict=True))
            else:
                new = swap(value)
                changed = new is not value
            if changed:
                stack.enter_context(s.swapped_global([fn], name, new))
        yield


def _apply(s: Student, model: nn.Module, fn_name: str, receiver: str = "model") -> nn.Module:
    """`model.apply(<the student's fn_name>)` on a checker model, run as student code."""
    fn = s.function(fn_name)
    with _checker_classes(s, fn, model):
        return _student_call(s, f"{receiver}.apply({fn_name})", model.apply, fn)


def _run(s: Student, model: nn.Module, x: torch.Tensor, name: str = "x") -> torch.Tensor:
    return _student_call(s, f"model({name})", model, x)


def _on_fresh(failure: CheckFailed) -> CheckFailed:
    return CheckFailed(f"{FRESH}: {failure.message}")


# ---- the seed course's Model ---------------------------------------------------------------------


def _label(path: str, cls_name: str) -> str:
    return f"{cls_name} (model.{path})"


def _functions(model: nn.Module) -> list[tuple[str, nn.Module | None]]:
    """(label, module or None when it is gone) for the four Function modules, in forward order."""
    found = []
    for path, cls_name in FUNCTION_PATHS.items():
        try:
            module = model.get_submodule(path)
        except AttributeError:
            module = None
        found.append((_label(path, cls_name), module))
    return found


def _require_returned(s: Student, model: nn.Module, fn_name: str) -> None:
    returned = s.get("returned_module", hint="Run the solution cell above (it sets it).")
    if returned is model:
        return
    got = (
        f"another {type(returned).__name__}"
        if isinstance(returned, nn.Module)
        else describe(returned)
    )
    raise CheckFailed(
        f"`returned_module` should be `model` itself, got {got}. "
        f"model.apply(fn) returns the module it was called on: write "
        f"`returned_module = model.apply({fn_name})`."
    )


def _require_ones(model: nn.Module, names: tuple[str, ...], fn_name: str) -> None:
    """Every named parameter of every Function module holds only ones."""
    wrong, right = [], []
    for label, module in _functions(model):
        bad = []
        for name in names:
            value = getattr(module, name, None)
            if not (isinstance(value, torch.Tensor) and close_broadcast(value, torch.ones(()))):
                bad.append(f"{name} = {describe(value)}")
        (wrong if bad else right).append(f"{label}: {', '.join(bad)}" if bad else label)
    if not wrong:
        return
    what = " and ".join(names)
    message = f"{fn_name} did not set {what} to 1 in:\n  " + "\n  ".join(wrong)
    if right:
        message += (
            f"\n  It did in {', '.join(right)}, so the test that selects modules misses some "
            f"(a name test is easy to get wrong); {ISINSTANCE} selects exactly the four."
        )
    raise CheckFailed(message)


def _shape_note(model: nn.Module) -> str:
    shapes = [
        tuple(getattr(module, "W", torch.empty(2, 2)).shape) for _, module in _functions(model)
    ]
    changed = [shape for shape in shapes if shape != (2, 2)]
    if not changed:
        return ""
    return (
        f"\n  Note: W changed shape from (2, 2) to {changed[0]} because you assigned a new "
        "Parameter. It works here, but `module.W.data.fill_(1.)` (or "
        "`fill_(1.)` under torch.no_grad()) keeps W's shape and the very Parameter object that "
        "an optimizer may already hold."
    )


def _require_bias_present(model: nn.Module) -> None:
    lacking = [label for label, module in _functions(model) if getattr(module, "b", None) is None]
    if lacking:
        raise CheckFailed(
            f"{', '.join(lacking)} in the notebook's `model` has no b: add_bias (the exercise "
            "above) did not add it. Fix add_bias, then run the cells from there again. (The "
            "hidden test of this exercise prepares its own model, with b added correctly.)"
        )


# ---- apply_order ---------------------------------------------------------------------------------


@register("apply_order")
def apply_order(s: Student) -> str:
    visited: list[str] = []
    make_model().apply(lambda module: visited.append(type(module).__name__))
    got = s.get("predicted_order", hint="Fill in `predicted_order` in the cell above.")
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
    _apply(s, make_model(), "weight_initialization")  # surfaces a stub or an error first
    model = s.get("model")
    _require_returned(s, model, "weight_initialization")
    _require_ones(model, ("W",), "weight_initialization")
    x = s.get("x")
    output = _run(s, model, x)
    if not close_broadcast(output, x):
        raise CheckFailed(
            f"with every W equal to 1, model(x) should be x = {describe(x)}, "
            f"got {describe(output)}."
        )
    return "every W is 1, and model(x) returns x." + _shape_note(model)


@register("apply_init_ones", hidden=True)
def apply_init_ones_hidden(s: Student) -> str:
    for _ in range(TRIALS):
        model = make_model()
        try:
            _apply(s, model, "weight_initialization")
            _require_ones(model, ("W",), "weight_initialization")
            for shape in [(2,), (1, 2)]:
                x = torch.rand(shape)
                output = _run(s, model, x)
                if not close_broadcast(output, x):
                    raise CheckFailed(
                        f"model(x) should be x = {describe(x)}, got {describe(output)}."
                    )
        except NotDoneYet:
            raise
        except CheckFailed as failure:
            raise _on_fresh(failure) from None
    return "weight_initialization sets every W to 1 on fresh models." + _shape_note(model)


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
    functions = _functions(model)
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
    _apply(s, make_model(), "add_bias")
    model = s.get("model")
    _require_returned(s, model, "add_bias")
    _judge_bias(model)
    return "each Function module has its own Parameter b of shape (2,), in named_parameters()."


@register("apply_add_bias", hidden=True)
def apply_add_bias_hidden(s: Student) -> str:
    for _ in range(TRIALS):
        model = make_model()
        weights = [module.W.detach().clone() for _, module in _functions(model)]
        try:
            _apply(s, model, "add_bias")
            _judge_bias(model)
        except NotDoneYet:
            raise
        except CheckFailed as failure:
            raise _on_fresh(failure) from None
        for (label, module), before in zip(_functions(model), weights, strict=True):
            if not close(module.W, before):
                raise CheckFailed(f"{FRESH}, add_bias changed W in {label}: it should only add b.")
    return "add_bias gives every Function module of fresh models its own Parameter b."


# ---- apply_init_bias -----------------------------------------------------------------------------


def _with_bias(model: nn.Module) -> nn.Module:
    """The state add_bias should leave: a random Parameter b of shape (2,) on every Function."""
    for _, module in _functions(model):
        module.b = Parameter(torch.rand(2))
    return model


@register("apply_init_bias")
def apply_init_bias(s: Student) -> str:
    _apply(s, _with_bias(make_model()), "weight_initialization")
    model = s.get("model")
    _require_returned(s, model, "weight_initialization")
    _require_bias_present(model)
    _require_ones(model, ("W", "b"), "weight_initialization")
    return "every W and b is 1." + _shape_note(model)


@register("apply_init_bias", hidden=True)
def apply_init_bias_hidden(s: Student) -> str:
    for _ in range(TRIALS):
        model = _with_bias(make_model())
        try:
            _apply(s, model, "weight_initialization")
            _require_ones(model, ("W", "b"), "weight_initialization")
        except NotDoneYet:
            raise
        except CheckFailed as failure:
            raise _on_fresh(failure) from None
        for label, module in _functions(model):
            if "b" not in module._parameters:
                raise CheckFailed(f"{FRESH}, b of {label} is no longer a registered Parameter.")
    return "weight_initialization sets every W and b to 1 on fresh models." + _shape_note(model)


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
    return [(m.W.detach().clone(), m.b.detach().clone()) for _, m in _functions(model)]


def _untransformed(s: Student, model: nn.Module, params) -> list[str]:
    """The Function modules that, called alone, do not compute x @ W.T + b (nor x @ W + b)."""
    missed = []
    for (label, module), (w, b) in zip(_functions(model), params, strict=True):
        x = torch.rand(2)
        got = _student_call(s, f"{label.split()[0]}(x)", module, x)
        if not (close(got, x @ w.T + b) or close(got, x @ w + b)):
            missed.append(label)
    return missed


def _judge_linear(s: Student, model: nn.Module, params, x: torch.Tensor, name: str) -> None:
    got = _run(s, model, x, name)
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
        for _, module in _functions(model):
            a = torch.rand(2, 2) * 2 - 1
            module.W.copy_((a + a.T) / 2)
            module.b.copy_(torch.rand(2) * 2 - 1)
    return model


@register("apply_linear")
def apply_linear(s: Student) -> str:
    fresh = _symmetric_model()
    _apply(s, fresh, "linear_transformation")
    _run(s, fresh, torch.rand(2))
    model = s.get("model")
    _require_returned(s, model, "linear_transformation")
    _require_bias_present(model)
    for name in ("x", "x_batch"):
        _judge_linear(s, model, _params(model), s.get(name), name)
    return "every Function now computes x @ W.T + b, for inputs of shape (2,) and (1, 2)."


@register("apply_linear", hidden=True)
def apply_linear_hidden(s: Student) -> str:
    for _ in range(TRIALS):
        model = _symmetric_model()
        params = _params(model)
        try:
            _apply(s, model, "linear_transformation")
            for shape in [(2,), (1, 2)]:
                x = torch.rand(shape) * 2 - 1
                _judge_linear(s, model, params, x, "x")
        except NotDoneYet:
            raise
        except CheckFailed as failure:
            raise CheckFailed(
                f"On a fresh Model with a random symmetric W and a random b: {failure.message}"
            ) from None
    return "linear_transformation makes fresh models compute the affine maps, for both shapes."


# ---- apply_nn_init -------------------------------------------------------------------------------

STD = 0.02


def _is_normal_002(weight: torch.Tensor) -> bool:
    w = weight.detach().double()
    return abs(w.std().item() - STD) <= STD_RTOL * STD and abs(w.mean().item()) <= STD_RTOL * STD


def _judge_init(net: nn.Module, before: dict[str, torch.Tensor] | None) -> None:
    """Linear and Embedding weights ~ normal(0, 0.02), Linear biases exactly 0, LayerNorm as built.

    `before` (the parameters before init) tells an untouched layer apart from a wrong init.
    """
    untouched, wrong, bias, norms = [], [], [], []
    for path, module in net.named_modules():
        label = f"{type(module).__name__} (net.{path})"
        if isinstance(module, nn.Linear | nn.Embedding):
            weight = module.weight.detach()
            if before is not None and torch.equal(weight, before[f"{path}.weight"]):
                untouched.append((label, module))
            elif not _is_normal_002(weight):
                stats = f"mean {weight.mean().item():.4f}, std {weight.std().item():.4f}"
                wrong.append((label, module, stats))
            has_bias = isinstance(module, nn.Linear) and module.bias is not None
            if has_bias and not torch.equal(module.bias.detach(), torch.zeros_like(module.bias)):
                bias.append(label)
        elif isinstance(module, nn.LayerNorm) and not (
            torch.equal(module.weight.detach(), torch.ones_like(module.weight))
            and torch.equal(module.bias.detach(), torch.zeros_like(module.bias))
        ):
            norms.append(label)
    subclasses = [label for label, module, *_ in untouched + wrong if _linear_subclass(module)]
    if subclasses and len(subclasses) == len(untouched + wrong):
        raise CheckFailed(
            f"init_weights did not initialise {', '.join(subclasses)}: these are subclasses of "
            "nn.Linear, and the modules were selected by a name test that misses them "
            "(`type(m).__name__ == 'Linear'` or `type(m) is nn.Linear`). "
            "`isinstance(module, nn.Linear)` also matches subclasses; well-known model code uses "
            "it."
        )
    if untouched:
        raise CheckFailed(
            f"init_weights left {', '.join(label for label, _ in untouched)} as PyTorch built "
            "it: give every nn.Linear and nn.Embedding weight normal(0, 0.02)."
        )
    if wrong:
        lines = "\n  ".join(f"{label}: weight {stats}" for label, _, stats in wrong)
        raise CheckFailed(
            "these weights are not normal with mean 0 and std 0.02 "
            f"(nn.init.normal_(module.weight, mean=0.0, std=0.02)):\n  {lines}"
        )
    if bias:
        raise CheckFailed(
            f"the bias of {', '.join(bias)} is not exactly 0: `nn.init.zeros_(module.bias)`."
        )
    if norms:
        raise CheckFailed(
            f"init_weights changed {', '.join(norms)}: leave LayerNorm at weight 1 and bias 0. "
            "Select layers with isinstance(module, nn.Linear) and isinstance(module, nn.Embedding) "
            "rather than, e.g., hasattr(module, 'weight')."
        )


def _linear_subclass(module: nn.Module) -> bool:
    return isinstance(module, nn.Linear) and type(module) is not nn.Linear


@register("apply_nn_init")
def apply_nn_init(s: Student) -> str:
    _apply(s, make_tiny_lm(), "init_weights", "net")
    _judge_init(s.get("net"), None)
    return "Linear and Embedding weights ~ normal(0, 0.02), Linear biases 0, LayerNorm untouched."


@register("apply_nn_init", hidden=True)
def apply_nn_init_hidden(s: Student) -> str:
    for vocab, dim in [(500, 64), (300, 96)]:
        net = make_tiny_lm(vocab, dim)
        before = {name: p.detach().clone() for name, p in net.named_parameters()}
        try:
            _apply(s, net, "init_weights", "net")
            _judge_init(net, before)
        except NotDoneYet:
            raise
        except CheckFailed as failure:
            raise CheckFailed(f"On a fresh TinyLM({vocab}, {dim}): {failure.message}") from None
    return (
        "init_weights initialises fresh TinyLMs of other sizes, subclasses of nn.Linear included."
    )
