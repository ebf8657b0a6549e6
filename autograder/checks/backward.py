"""Checks for the backward notebook: module and tensor backward hooks that read or change grads."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from autograder.checks.compare import compare_tensor_list
from autograder.checks.registry import register
from autograder.checks.student import Student, require_arity
from autograder.feedback import CheckFailed, NotDoneYet, describe
from autograder.models.backward import make_model
from autograder.tolerances import close

FRESH = "On a fresh Model with a random W and new random inputs"
TRIALS = 3


def random_w(rng: torch.Generator | None = None) -> torch.Tensor:
    # Positive and away from 0 and 1, so that no two gradients of the model can coincide.
    return torch.empty(1).uniform_(2.0, 8.0, generator=rng)


def random_inputs(rng: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    x1 = torch.rand(1, generator=rng) * 0.9 + 0.1
    x2 = torch.rand(1, generator=rng) * 0.9 + 0.1
    return x1.requires_grad_(), x2.requires_grad_()


def trials(rng: torch.Generator) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """The hidden checks' (W, x1, x2) per trial, drawn from the check's generator."""
    return [(random_w(rng), *random_inputs(rng)) for _ in range(TRIALS)]


def _reference(w: torch.Tensor, x1: torch.Tensor, x2: torch.Tensor) -> dict[str, torch.Tensor]:
    """Autograd's gradients of Model(x1, x2) w.r.t. x1, x2, W and output, without any hook."""
    model = make_model(w)
    a, b = x1.detach().clone().requires_grad_(), x2.detach().clone().requires_grad_()
    output = model(a, b)
    ga, gb, gw, gout = torch.autograd.grad(output, [a, b, model.W, output])
    return {"x1": ga, "x2": gb, "W": gw, "output": gout}


def _notebook_reference(s: Student) -> dict[str, torch.Tensor]:
    s.record(W=s.get("model").W, x1=s.get("x1"), x2=s.get("x2"))
    return _reference(s.get("model").W, s.get("x1"), s.get("x2"))


def _grad_of(s: Student, name: str) -> torch.Tensor:
    grad = s.get(name).grad
    if grad is None:
        raise NotDoneYet(
            f"{name}.grad is None: run the cell above that calls output.backward() "
            "(if it raised an error, fix your hook first)."
        )
    return grad


def _backward(s: Student, output: torch.Tensor, hook: str) -> None:
    s.call(f"{hook}, called by output.backward(),", output.backward)


# ---- backward_collect ----------------------------------------------------------------------------

DEPRECATED = (
    "`model` has a hook registered with the deprecated `register_backward_hook`. That old hook is "
    "attached to the last autograd operation inside forward (here `output * self.W`), so its "
    "grad_input holds the gradients of that operation's own inputs, not x1.grad and x2.grad; "
    "PyTorch deprecates it and warns about it. Register with "
    "`model.register_full_backward_hook(module_hook)`, then restart the kernel and run all cells "
    "(one module cannot hold both kinds of backward hook)."
)


def _reject_deprecated(s: Student) -> None:
    model = s.get("model")
    if (
        isinstance(model, nn.Module)
        and model._backward_hooks
        and getattr(model, "_is_full_backward_hook", None) is not True
    ):
        raise CheckFailed(DEPRECATED)


def _swapped_hint(found: list[str]) -> str | None:
    if found.index("output.grad") < 2:
        return (
            "grad_output came before grad_input. PyTorch calls "
            "module_hook(module, grad_input, grad_output): grad_input holds the gradients w.r.t. "
            "the module's inputs (x1.grad, x2.grad), grad_output the gradient w.r.t. its output "
            "(output.grad). Add grad_input's entries first."
        )
    return None


def _collect_expected(ref: dict[str, torch.Tensor]) -> list[tuple[str, torch.Tensor]]:
    return [("x1.grad", ref["x1"]), ("x2.grad", ref["x2"]), ("output.grad", ref["output"])]


def _collect_on_fresh_model(s: Student, w: torch.Tensor, x1: torch.Tensor, x2: torch.Tensor):
    """Run module_hook on a fresh Model; return (what `answer` got, x1.grad, x2.grad)."""
    hook = s.function("module_hook")
    require_arity(hook, "module_hook", "module_hook(module, grad_input, grad_output)", 3)
    model = make_model(w)
    with s.swapped_global([hook], "answer", []) as answer_now:
        with model.register_full_backward_hook(hook):
            output = model(x1, x2)
            output.retain_grad()
            _backward(s, output, "module_hook")
        return answer_now(), x1.grad, x2.grad


@register("backward_collect")
def backward_collect(s: Student) -> str:
    _collect_on_fresh_model(s, random_w(), *random_inputs())  # surfaces stubs and errors first
    _reject_deprecated(s)
    expected = _collect_expected(_notebook_reference(s))
    s.record(answer=s.get("answer"))
    compare_tensor_list(s.get("answer"), expected, order_hint=_swapped_hint)
    return "answer holds [x1.grad, x2.grad, output.grad], in that order."


@register("backward_collect", hidden=True)
def backward_collect_hidden(s: Student) -> str:
    for trial, (w, x1, x2) in enumerate(trials(s.rng)):
        answer, gx1, gx2 = _collect_on_fresh_model(s, w, x1, x2)
        s.record(**{f"answer{trial}": answer, f"x1.grad{trial}": gx1, f"x2.grad{trial}": gx2})
        ref = _reference(w, x1, x2)
        if not (close(gx1, ref["x1"]) and close(gx2, ref["x2"])):
            raise CheckFailed(
                f"{FRESH}, module_hook changed the gradients: x1.grad = {describe(gx1)}, "
                f"autograd gives {describe(ref['x1'])}. A hook that only collects must return None."
            )
        try:
            compare_tensor_list(answer, _collect_expected(ref), order_hint=_swapped_hint)
        except CheckFailed as failure:
            raise CheckFailed(f"{FRESH}: {failure.message}") from None
    _reject_deprecated(s)
    return "module_hook collects [x1.grad, x2.grad, output.grad] on fresh models and inputs."


# ---- tensor_hook_W -------------------------------------------------------------------------------


def _w_hook_on_fresh_model(s: Student, w: torch.Tensor, x1: torch.Tensor, x2: torch.Tensor):
    """Run tensor_hook on a fresh Model's W; return (what `answer` got, W.grad)."""
    hook = s.function("tensor_hook")
    require_arity(hook, "tensor_hook", "tensor_hook(grad)", 1)
    model = make_model(w)
    with s.swapped_global([hook], "answer", []) as answer_now:
        with model.W.register_hook(hook):
            _backward(s, model(x1, x2), "tensor_hook")
        return answer_now(), model.W.grad


@register("tensor_hook_W")
def tensor_hook_w(s: Student) -> str:
    _w_hook_on_fresh_model(s, random_w(), *random_inputs())
    expected = [("model.W.grad", _notebook_reference(s)["W"])]
    s.record(answer=s.get("answer"))
    compare_tensor_list(s.get("answer"), expected)
    return "answer holds [model.W.grad]."


@register("tensor_hook_W", hidden=True)
def tensor_hook_w_hidden(s: Student) -> str:
    for trial, (w, x1, x2) in enumerate(trials(s.rng)):
        answer, w_grad = _w_hook_on_fresh_model(s, w, x1, x2)
        s.record(**{f"answer{trial}": answer, f"W.grad{trial}": w_grad})
        ref = _reference(w, x1, x2)
        if not close(w_grad, ref["W"]):
            raise CheckFailed(
                f"{FRESH}, tensor_hook changed W's gradient to {describe(w_grad)} (autograd gives "
                f"{describe(ref['W'])}). A hook that only stores the gradient must return None."
            )
        try:
            compare_tensor_list(answer, [("model.W.grad", ref["W"])])
        except CheckFailed as failure:
            raise CheckFailed(f"{FRESH}: {failure.message}") from None
    return "tensor_hook stores W's gradient on fresh models and inputs."


# ---- tensor_hook_scale ---------------------------------------------------------------------------

IN_PLACE = (
    "{name} changed its argument in place. PyTorch's documentation says a hook must not modify "
    "its arguments (it happens to work today, but is not guaranteed); build a new value and "
    "return it instead, e.g. {fix}."
)


def _probe_double_grad(s: Student) -> Callable[..., object]:
    """Call double_grad directly: it must return a value and leave its argument alone."""
    hook = s.function("double_grad")
    require_arity(hook, "double_grad", "double_grad(grad)", 1)
    grad = torch.rand(1) + 0.5
    before = grad.clone()
    result = s.call("double_grad(grad)", hook, grad)
    if not torch.equal(grad, before):
        raise CheckFailed(IN_PLACE.format(name="double_grad", fix="`return grad * 2`"))
    if result is None:
        raise CheckFailed(
            "double_grad returns None, so x1's gradient stays as it was. A tensor hook changes a "
            "gradient only by returning the new one: `return grad * 2`."
        )
    return hook


def _judge_scale(gx1: torch.Tensor, gx2: torch.Tensor, ref: dict[str, torch.Tensor], where: str):
    if close(gx1, 2 * ref["x1"]) and close(gx2, ref["x2"]):
        return
    if close(gx2, 2 * ref["x2"]) and close(gx1, ref["x1"]):
        raise CheckFailed(f"{where}x2.grad was doubled instead of x1.grad: register on x1.")
    if close(gx1, ref["x1"]):
        raise CheckFailed(
            f"{where}x1.grad = {describe(gx1)} is autograd's gradient, unchanged: double_grad "
            "must return twice the gradient it receives."
        )
    for times in range(2, 5):
        if close(gx1, 2**times * ref["x1"]):
            raise CheckFailed(
                f"{where}x1.grad is {2**times} times autograd's: double_grad ran {times} times, "
                "so it was registered that many times (its cell ran more than once). Restart the "
                "kernel and run all cells."
            )
    raise CheckFailed(
        f"{where}expected x1.grad = 2 × autograd's = {describe(2 * ref['x1'])} and x2.grad "
        f"unchanged = {describe(ref['x2'])}; got x1.grad = {describe(gx1)}, x2.grad = "
        f"{describe(gx2)}."
    )


def _scale_on_fresh_model(s: Student, hook, w: torch.Tensor, x1: torch.Tensor, x2: torch.Tensor):
    model = make_model(w)
    with x1.register_hook(hook):
        _backward(s, model(x1, x2), "double_grad")
    return x1.grad, x2.grad


@register("tensor_hook_scale")
def tensor_hook_scale(s: Student) -> str:
    _scale_on_fresh_model(s, _probe_double_grad(s), random_w(), *random_inputs())
    ref = _notebook_reference(s)
    s.record(**{"x1.grad": _grad_of(s, "x1"), "x2.grad": _grad_of(s, "x2")})
    _judge_scale(_grad_of(s, "x1"), _grad_of(s, "x2"), ref, "")
    return "x1.grad is twice autograd's gradient, x2.grad is unchanged."


@register("tensor_hook_scale", hidden=True)
def tensor_hook_scale_hidden(s: Student) -> str:
    hook = _probe_double_grad(s)
    for trial, (w, x1, x2) in enumerate(trials(s.rng)):
        gx1, gx2 = _scale_on_fresh_model(s, hook, w, x1, x2)
        s.record(**{f"x1.grad{trial}": gx1, f"x2.grad{trial}": gx2})
        _judge_scale(gx1, gx2, _reference(w, x1, x2), f"{FRESH}, ")
    return "double_grad doubles x1's gradient on fresh models and inputs."


# ---- backward_normalize --------------------------------------------------------------------------


def _probe_normalize(s: Student) -> Callable[..., object]:
    """Call normalize_hook directly: it must return a new 2-tuple and leave grad_input alone."""
    hook = s.function("normalize_hook")
    signature = "normalize_hook(module, grad_input, grad_output)"
    require_arity(hook, "normalize_hook", signature, 3)
    g1, g2 = torch.rand(1) + 0.5, torch.rand(1) + 0.5
    grad_input, grad_output = (g1.clone(), g2.clone()), (torch.ones(1),)
    result = s.call(signature, hook, make_model(), grad_input, grad_output)
    if not (torch.equal(grad_input[0], g1) and torch.equal(grad_input[1], g2)):
        fix = "`return (grad_input[0] / total, grad_input[1] / total)`"
        raise CheckFailed(IN_PLACE.format(name="normalize_hook", fix=fix))
    if result is None:
        raise CheckFailed(
            "normalize_hook returns None, so the gradients stay as autograd computed them. A full "
            "backward hook replaces grad_input only by returning a new tuple."
        )
    if isinstance(result, torch.Tensor) or not isinstance(result, tuple | list):
        raise CheckFailed(
            f"normalize_hook returns {describe(result)}; return a tuple with one new gradient "
            "per input: (new gradient for x1, new gradient for x2)."
        )
    if len(result) != 2:
        raise CheckFailed(
            f"normalize_hook returns {len(result)} value(s), but grad_input has one entry per "
            "input of forward(x1, x2), so 2; PyTorch raises RuntimeError (invalid number of "
            "grad_input). Return (new gradient for x1, new gradient for x2)."
        )
    return hook


def _judge_normalize(gx1: torch.Tensor, gx2: torch.Tensor, ref: dict[str, torch.Tensor], where):
    if close(gx1, ref["x1"]) and close(gx2, ref["x2"]):
        raise CheckFailed(
            f"{where}x1.grad and x2.grad are unchanged ({describe(gx1)}, {describe(gx2)}): the "
            "hook's return value did not replace grad_input. Is it registered on the model?"
        )
    total = gx1 + gx2
    if not close(total, torch.ones_like(ref["x1"])):
        raise CheckFailed(
            f"{where}x1.grad + x2.grad = {describe(total)}, expected 1. Divide both gradients by "
            "their sum."
        )
    ratio, want = gx1 / gx2, ref["x1"] / ref["x2"]
    if not close(ratio, want):
        raise CheckFailed(
            f"{where}x1.grad + x2.grad is 1, but x1.grad / x2.grad = {describe(ratio)} while "
            f"autograd's ratio is {describe(want)}. Scale both gradients by the same factor."
        )


@register("backward_normalize")
def backward_normalize(s: Student) -> str:
    hook = _probe_normalize(s)
    model = make_model(random_w())
    with model.register_full_backward_hook(hook):
        _backward(s, model(*random_inputs()), "normalize_hook")
    ref = _notebook_reference(s)
    s.record(**{"x1.grad": _grad_of(s, "x1"), "x2.grad": _grad_of(s, "x2")})
    _judge_normalize(_grad_of(s, "x1"), _grad_of(s, "x2"), ref, "")
    return "x1.grad + x2.grad is 1 and their ratio is autograd's."


@register("backward_normalize", hidden=True)
def backward_normalize_hidden(s: Student) -> str:
    hook = _probe_normalize(s)
    for trial, (w, x1, x2) in enumerate(trials(s.rng)):
        model = make_model(w)
        with model.register_full_backward_hook(hook):
            _backward(s, model(x1, x2), "normalize_hook")
        s.record(**{f"x1.grad{trial}": x1.grad, f"x2.grad{trial}": x2.grad})
        _judge_normalize(x1.grad, x2.grad, _reference(w, x1, x2), f"{FRESH}, ")
    return "normalize_hook normalizes the input gradients on fresh models and inputs."
