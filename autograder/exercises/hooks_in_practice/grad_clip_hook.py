"""grad_clip_hook: `add_grad_clipping(model, clip_value)` registers on every parameter a tensor
hook that returns its gradient clipped to [-clip_value, clip_value], without changing the
gradient it was given, and returns the handles."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from autograder.exercises.hooks_in_practice.common import (
    fresh_case,
    handles_of,
    mlp_evidence,
    number,
    rebuilt_mlp,
    reference_grads,
    tensor_dict,
)
from autograder.exercises.kit.cases import in_case
from autograder.exercises.kit.evidence import uniform
from autograder.exercises.kit.judge import expect_close, item
from autograder.exercises.kit.student import Student, require_arity
from autograder.feedback import CheckFailed, NotDoneYet
from autograder.i18n import N_, _
from autograder.tolerances import close

HINTS = [
    N_(
        "`model.parameters()` yields every weight and every bias; each of them is a leaf tensor "
        "with its own `register_hook`."
    ),
    N_(
        "The hook gets one argument, the gradient, and what it returns replaces that gradient: "
        "return a new tensor, and leave `grad` itself unchanged (no `clamp_`)."
    ),
    N_(
        "Define the hook inside `add_grad_clipping`: it then sees `clip_value` without taking "
        "it as an argument. `grad.clamp(min, max)` clips every entry."
    ),
    N_("`register_hook` returns a handle: collect one per parameter in a list and return it."),
]
FIX = "return grad.clamp(-clip_value, clip_value)"
TRIALS = 3  # the hidden check's fresh models
SIGNATURE = "add_grad_clipping(model, clip_value)"


def clip_below_every_max(rng: torch.Generator, model: nn.Module, x, y) -> float:
    """A clip value below the largest |gradient| of every parameter, so that each parameter has
    entries to clip and a parameter without the hook always shows."""
    largest = min(g.abs().max().item() for g in reference_grads(model, x, y).values())
    return largest * uniform(rng, 0.3, 0.9)


def grads_of(model: nn.Module) -> dict[str, torch.Tensor | None]:
    return {name: p.grad for name, p in model.named_parameters()}


def _fresh_where() -> str:
    return _("On a fresh MLP with random sizes, weights, data and clip value")


def _judge_fresh(s: Student, trial: str) -> None:
    """add_grad_clipping on a fresh model: its hooks clip, change nothing in place, and go
    away with the handles it returned."""
    model, [(x, y)] = fresh_case(s.rng)
    clip = clip_below_every_max(s.rng, model, x, y)
    fn = s.function("add_grad_clipping")
    require_arity(fn, "add_grad_clipping", SIGNATURE, 2)
    ref = reference_grads(model, x, y)
    seen: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}

    def witness(name: str) -> Callable[[torch.Tensor], None]:
        # Registered before the student's hooks, so it sees autograd's own gradient object.
        def keep(grad: torch.Tensor) -> None:
            seen[name] = (grad, grad.clone())

        return keep

    params = dict(model.named_parameters())
    witnesses = [p.register_hook(witness(name)) for name, p in params.items()]
    handles = handles_of(s.call(f"`{SIGNATURE}`", fn, model, clip), "add_grad_clipping")
    loss = F.mse_loss(s.call(_("`model(x)` with your hooks registered"), model, x), y)
    s.call(_("`loss.backward()`, which runs your clipping hooks,"), loss.backward)
    for handle in witnesses:
        handle.remove()
    changed = [n for n in params if n in seen and not torch.equal(seen[n][0], seen[n][1])]
    if changed:
        raise CheckFailed(
            _(
                "your hook changed the gradient it was given in place (methods whose name ends "
                "with `_`, such as `clamp_`, do that): the gradients of {names} were modified. "
                "PyTorch's documentation says a tensor hook must not modify its argument; it "
                "happens to work today, but nothing guarantees it. A hook changes a gradient by "
                "returning a new tensor, which PyTorch then uses instead."
            ).format(names=", ".join(changed)),
            fix=FIX,
        )
    s.record(**{f"grads{trial}": grads_of(model)})
    _judge_clipped(params, ref, clip)
    for handle in handles:
        handle.remove()
    left = [name for name, p in params.items() if p._backward_hooks]
    if left:
        raise CheckFailed(
            _(
                "after removing the handles `add_grad_clipping` returned, {names} still have "
                "hooks: return the handle of every hook you register, so that the caller can "
                "turn the clipping off."
            ).format(names=", ".join(left))
        )


def _judge_clipped(params: dict[str, nn.Parameter], ref: dict[str, torch.Tensor], clip: float):
    unclipped, other = [], []
    for name, p in params.items():
        if p.grad is not None and close(p.grad, ref[name].clamp(-clip, clip)):
            continue
        (unclipped if p.grad is not None and close(p.grad, ref[name]) else other).append(name)
    if not unclipped and not other:
        return
    # Tensor hooks live in Tensor._backward_hooks (torch has no public way to list them).
    hooked = [name for name, p in params.items() if p._backward_hooks]
    if unclipped and not other and set(unclipped) <= set(hooked):
        raise CheckFailed(
            _(
                "the gradients of {names} are autograd's own, unclipped, although each of "
                "these parameters has your hook: the hook returns None, and a tensor hook that "
                "returns None leaves the gradient as it was. Assigning to `grad` inside the "
                "hook only rebinds the hook's own local name."
            ).format(names=", ".join(unclipped)),
            fix=FIX,
        )
    if unclipped and not other:
        raise CheckFailed(
            _(
                "the gradients of {names} are not clipped: these parameters have no hook. Every "
                "parameter needs one, biases too (`model.parameters()` yields them all)."
            ).format(names=", ".join(unclipped))
        )
    raise CheckFailed(
        _(
            "the gradients of {names} are neither autograd's nor autograd's clipped to "
            "[-{clip:.4g}, {clip:.4g}]: a hook that sits on another tensor (an activation, or "
            "the loss) changes every gradient computed from it. The hooks belong on the "
            "parameters themselves, each clipping its own gradient."
        ).format(names=", ".join(other), clip=clip)
    )


def visible(s: Student) -> str:
    in_case(_fresh_where(), _judge_fresh, s, "_fresh")
    clip_model, clip = s.get("clip_model"), s.get("clip_value")
    x, y = s.get("x"), s.get("y")
    if any(p.grad is None for p in clip_model.parameters()):
        raise NotDoneYet(
            _("`clip_model` has no gradients yet: run the cell that calls `backward()`.")
        )
    ref = reference_grads(clip_model, x, y)
    s.record(model=mlp_evidence(clip_model), x=x, y=y, clip_value=clip, grads=grads_of(clip_model))
    in_case(
        _("In the notebook, `clip_model`"),
        _judge_clipped,
        dict(clip_model.named_parameters()),
        ref,
        clip,
    )
    return _("every parameter's gradient is clipped by a hook, and the hooks can be removed.")


def hidden(s: Student) -> str:
    for trial in range(TRIALS):
        in_case(_fresh_where(), _judge_fresh, s, str(trial))
    return _("`add_grad_clipping` clips every gradient of fresh models, data and clip values.")


def _clipped(model: nn.Module, x: torch.Tensor, y: torch.Tensor, clip: float) -> dict:
    return {n: g.clamp(-clip, clip) for n, g in reference_grads(model, x, y).items()}


def _expect_fresh(rng: torch.Generator, evidence: dict, key: str) -> None:
    model, [(x, y)] = fresh_case(rng)
    clip = clip_below_every_max(rng, model, x, y)
    tensor_dict(item(evidence, f"grads{key}"), _clipped(model, x, y, clip), f"grads of {key}")


def judge_visible(rng: torch.Generator, evidence: dict) -> None:
    _expect_fresh(rng, evidence, "_fresh")
    x, y = item(evidence, "x"), item(evidence, "y")
    expect_close(x, x, "x")
    expect_close(y, y, "y")
    clip = number(item(evidence, "clip_value"), "clip_value")
    want = _clipped(rebuilt_mlp(item(evidence, "model")), x, y, clip)
    tensor_dict(item(evidence, "grads"), want, "clip_model's gradients")


def judge_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial in range(TRIALS):
        _expect_fresh(rng, evidence, str(trial))
