"""What the backward_hooks exercises share: the seeded models and inputs, autograd's reference
gradients, and the hooks a notebook registered, found by what is registered."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from autograder.exercises.backward_hooks.models import make_model
from autograder.exercises.kit.judge import Suspicious, expect_close, item
from autograder.exercises.kit.student import Student, is_stub, require_arity
from autograder.feedback import CheckFailed, NotDoneYet, describe
from autograder.i18n import N_, _

TRIALS = 3  # fresh models per hidden check
FRESH = N_("On a fresh Model with a random W and new random inputs")
IN_PLACE = N_(
    "`{name}` changes its argument in place. PyTorch's documentation says a hook must not modify "
    "its arguments: today this happens to work, but nothing guarantees it. Build a new tensor "
    "from the argument and return it instead."
)


def random_w(rng: torch.Generator) -> torch.Tensor:
    # Positive and away from 0 and 1, so that no two gradients of the model can coincide.
    return torch.empty(1).uniform_(2.0, 8.0, generator=rng)


def random_inputs(rng: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    x1 = torch.rand(1, generator=rng) * 0.9 + 0.1
    x2 = torch.rand(1, generator=rng) * 0.9 + 0.1
    return x1.requires_grad_(), x2.requires_grad_()


def trials(rng: torch.Generator) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """The hidden checks' (W, x1, x2) per trial, drawn from the check's generator."""
    return [(random_w(rng), *random_inputs(rng)) for _ in range(TRIALS)]


def reference(w: torch.Tensor, x1: torch.Tensor, x2: torch.Tensor) -> dict[str, torch.Tensor]:
    """Autograd's gradients of Model(x1, x2) w.r.t. x1, x2, W and output, without any hook."""
    model = make_model(w.detach())
    a, b = x1.detach().clone().requires_grad_(), x2.detach().clone().requires_grad_()
    output = model(a, b)
    ga, gb, gw, gout = torch.autograd.grad(output, [a, b, model.W, output])
    return {"x1": ga, "x2": gb, "W": gw, "output": gout}


def notebook_reference(s: Student) -> dict[str, torch.Tensor]:
    """Autograd's gradients for the notebook's own W, x1 and x2 (recorded for the judge)."""
    model, x1, x2 = s.get("model"), s.get("x1"), s.get("x2")
    w = getattr(model, "W", None)
    for name, value in (("model.W", w), ("x1", x1), ("x2", x2)):
        if not isinstance(value, torch.Tensor) or value.shape != (1,):
            raise CheckFailed(
                _(
                    "`{name}` should be a tensor of shape (1,), as the locked cells make it, but "
                    "it is {got}. Run the exercise's answer cell and the cells under it again."
                ).format(name=name, got=describe(value))
            )
    s.record(W=w, x1=x1, x2=x2)
    return reference(w, x1, x2)


def recorded_reference(evidence: dict) -> dict[str, torch.Tensor]:
    """For a judge: autograd's gradients for the W, x1 and x2 a visible check recorded."""
    values = [item(evidence, name) for name in ("W", "x1", "x2")]
    for name, value in zip(("W", "x1", "x2"), values, strict=True):
        expect_close(value, value, name)  # plain tensors, not look-alikes
        if value.shape != (1,):
            raise Suspicious(f"{name} has shape {tuple(value.shape)}, expected (1,)")
    return reference(*values)


def grad_of(s: Student, name: str) -> torch.Tensor:
    tensor = s.get(name)
    grad = getattr(tensor, "grad", None)
    if grad is None:
        raise NotDoneYet(
            _(
                "`{name}.grad` is None: run the cell under the answer cell, which calls "
                "`output.backward()` (if it raised an error, the check says why once it runs)."
            ).format(name=name)
        )
    return grad


def module_hooks(s: Student, written: str, signature: str) -> list[Callable[..., Any]]:
    """The full backward hooks registered on the notebook's `model`, whatever their names.

    `written` names the function the answer cell defines, to tell an unwritten stub from a
    function that was written but never registered.
    """
    model = s.get("model")
    if not isinstance(model, nn.Module):
        raise CheckFailed(
            _("`model` should be a Model, but it is {got}.").format(got=describe(model))
        )
    registered = s.hooks_on(model, "backward")
    # torch keeps the kind of backward hook a module holds in this flag (no public way to ask).
    if registered and getattr(model, "_is_full_backward_hook", None) is False:
        name = getattr(registered[-1], "__name__", written)
        raise CheckFailed(
            _(
                "`{name}` is registered with the deprecated `register_backward_hook`. That old "
                "hook is attached to the last autograd operation inside `forward` (here "
                "`output * self.W`), so its grad_input holds the gradients of that operation's "
                "own inputs, not x1.grad and x2.grad; PyTorch deprecates it and warns about it. "
                "Register it with `model.register_full_backward_hook({name})`, then run the "
                "answer cell again: it starts from a fresh Model (one module cannot hold both "
                "kinds of backward hook)."
            ).format(name=name)
        )
    hooks = [hook for hook in registered if not is_stub(hook)]
    if not hooks:
        fn = s.namespace.get(written)
        if registered or not callable(fn) or is_stub(fn):
            raise NotDoneYet(
                _(
                    "`{name}` does nothing yet: write its body, then run the answer cell and "
                    "the cells under it."
                ).format(name=written)
            )
        raise CheckFailed(
            _(
                "no full backward hook is registered on `model`, the module the run cell "
                "calls: a module hook runs only on the module it is registered on, with "
                "`model.register_full_backward_hook(...)`."
            )
        )
    for hook in hooks:
        require_arity(hook, getattr(hook, "__name__", written), signature, 3)
    return hooks


def backward_through(
    s: Student, hooks: list, w: torch.Tensor, x1: torch.Tensor, x2: torch.Tensor
) -> torch.Tensor:
    """`output.backward()` on a fresh Model carrying `hooks` as full backward hooks; the output
    (its gradient kept). The hooks are removed again, so the check leaves nothing behind."""
    model = make_model(w)
    handles = [model.register_full_backward_hook(hook) for hook in hooks]
    try:
        output = model(x1, x2)
        output.retain_grad()
        s.call(_("`output.backward()` with your hook registered"), output.backward)
    finally:
        for handle in handles:
            handle.remove()
    return output


def changed_in_place(before: list[torch.Tensor], after: list[torch.Tensor]) -> bool:
    return any(not torch.equal(a, b) for a, b in zip(before, after, strict=True))


def on_fresh(failure: CheckFailed) -> CheckFailed:
    """A hidden check's failure, said of the fresh Model and new inputs it happened on."""
    message = _("{fresh}: {message}").format(fresh=_(FRESH), message=failure.message)
    return CheckFailed(message, fix=failure.fix)
