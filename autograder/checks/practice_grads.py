"""Checks for the hooks-in-practice notebook's gradient exercises: clipping gradients with tensor
hooks, and an optimizer step inside backward with post-accumulate-grad hooks."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from autograder.checks.evidence import built_from, randint, uniform
from autograder.checks.practice_common import (
    handles_of,
    in_check,
    mlp_evidence,
    random_sizes,
    sizes_of,
)
from autograder.checks.registry import register
from autograder.checks.student import Student, require_arity
from autograder.feedback import CheckFailed, NotDoneYet
from autograder.models.practice import make_mlp
from autograder.tolerances import close

FRESH = "On a fresh MLP with random sizes, weights and data"


def fresh_case(
    rng: torch.Generator, batches: int = 1
) -> tuple[nn.Module, list[tuple[torch.Tensor, torch.Tensor]]]:
    """A fresh MLP and `batches` (x, y) pairs, all drawn from `rng`."""
    sizes = random_sizes(rng)
    model = built_from(rng, make_mlp, sizes)
    rows = randint(rng, 4, 10)
    return model, [
        (torch.randn(rows, sizes[0], generator=rng), torch.randn(rows, sizes[-1], generator=rng))
        for _ in range(batches)
    ]


def grads_of(model: nn.Module) -> dict[str, torch.Tensor | None]:
    return {name: p.grad for name, p in model.named_parameters()}


def params_of(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.detach() for name, p in model.named_parameters()}


def copy_of(model: nn.Module, state: dict[str, torch.Tensor] | None = None) -> nn.Module:
    """A hook-free MLP with `model`'s parameters (or the given state)."""
    copy = make_mlp(sizes_of(model))
    copy.load_state_dict(state if state is not None else model.state_dict())
    return copy


def reference_grads(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> dict[str, torch.Tensor]:
    copy = copy_of(model)
    names, params = zip(*copy.named_parameters(), strict=True)
    grads = torch.autograd.grad(F.mse_loss(copy(x), y), params)
    return dict(zip(names, grads, strict=True))


def backward(s: Student, model: nn.Module, x: torch.Tensor, y: torch.Tensor, hooks: str) -> None:
    loss = F.mse_loss(model(x), y)
    s.call(f"loss.backward(), which runs your {hooks},", loss.backward)


# ---- grad_clip_hook ------------------------------------------------------------------------------

IN_PLACE = (
    "your hook changed the gradient in place (e.g. grad.clamp_(...)). PyTorch's documentation "
    "says a tensor hook must not modify its argument; it happens to work today but is not "
    "guaranteed. Return a new tensor instead: `return grad.clamp(-clip_value, clip_value)`."
)


def _judge_clipping(s: Student, trial: str, rng: torch.Generator) -> None:
    model, [(x, y)] = fresh_case(rng)
    clip = clip_below_every_max(rng, model, x, y)
    fn = s.function("add_grad_clipping")
    require_arity(fn, "add_grad_clipping", "add_grad_clipping(model, clip_value)", 2)
    ref = reference_grads(model, x, y)
    seen: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}

    def witness(name: str) -> Callable[[torch.Tensor], None]:
        # Registered before the student's hooks, so it sees autograd's own gradient object.
        def keep(grad: torch.Tensor) -> None:
            seen[name] = (grad, grad.clone())

        return keep

    params = dict(model.named_parameters())
    witnesses = [p.register_hook(witness(name)) for name, p in params.items()]
    what = "add_grad_clipping(model, clip_value)"
    handles = handles_of(s.call(what, fn, model, clip), "add_grad_clipping")
    backward(s, model, x, y, "clipping hooks")
    for handle in witnesses:
        handle.remove()
    if any(not torch.equal(grad, before) for grad, before in seen.values()):
        raise CheckFailed(IN_PLACE)
    s.record(**{f"grads{trial}": grads_of(model)})
    _judge_clipped(params, ref, clip)
    for handle in handles:
        handle.remove()
    left = [name for name, p in params.items() if p._backward_hooks]
    if left:
        raise CheckFailed(
            f"after removing the handles add_grad_clipping returned, {', '.join(left)} still "
            "have hooks: return the handle of every hook you register."
        )


def _judge_clipped(params: dict[str, nn.Parameter], ref: dict[str, torch.Tensor], clip: float):
    unclipped, other = [], []
    for name, p in params.items():
        if close(p.grad, ref[name].clamp(-clip, clip)):
            continue
        (unclipped if close(p.grad, ref[name]) else other).append(name)
    if not unclipped and not other:
        return
    hooked = [name for name, p in params.items() if p._backward_hooks]
    if unclipped and not other and set(unclipped) <= set(hooked):
        raise CheckFailed(
            f"the gradients of {', '.join(unclipped)} are autograd's, unclipped, although "
            "they have your hook: it returns None. A tensor hook changes a gradient only by "
            "returning the new one (`grad = grad.clamp(...)` alone rebinds a local name)."
        )
    if unclipped and not other:
        raise CheckFailed(
            f"the gradients of {', '.join(unclipped)} are not clipped: register the hook on "
            "every parameter, `for p in model.parameters(): p.register_hook(...)` (biases too)."
        )
    raise CheckFailed(
        f"the gradients of {', '.join(other)} are neither autograd's nor autograd's clipped to "
        f"[-{clip:.4g}, {clip:.4g}]: the hook sits on another tensor (an activation or the "
        "loss?), and clipping there changes every gradient computed from it. Hook the "
        "parameters themselves, and clip with grad.clamp(-clip_value, clip_value)."
    )


def clip_below_every_max(rng: torch.Generator, model: nn.Module, x, y) -> float:
    """A clip value below the largest |gradient| of every parameter, so that each parameter has
    entries to clip and a parameter without the hook always shows."""
    largest = min(g.abs().max().item() for g in reference_grads(model, x, y).values())
    return largest * uniform(rng, 0.3, 0.9)


@register("grad_clip_hook")
def grad_clip_hook(s: Student) -> str:
    in_check(FRESH, _judge_clipping, s, "_fresh", s.rng)
    clip_model, clip, x, y = s.get("clip_model"), s.get("clip_value"), s.get("x"), s.get("y")
    ref = reference_grads(clip_model, x, y)
    if any(p.grad is None for p in clip_model.parameters()):
        raise NotDoneYet("clip_model has no gradients yet: run the cell that calls backward().")
    s.record(model=mlp_evidence(clip_model), x=x, y=y, clip_value=clip, grads=grads_of(clip_model))
    in_check("In the notebook", _judge_clipped, dict(clip_model.named_parameters()), ref, clip)
    return "every parameter's gradient is clipped by a hook, and the hooks can be removed."


@register("grad_clip_hook", hidden=True)
def grad_clip_hook_hidden(s: Student) -> str:
    for trial in range(3):
        in_check(FRESH, _judge_clipping, s, str(trial), s.rng)
    return "add_grad_clipping clips every gradient on fresh models, data and clip values."


# ---- optimizer_in_backward -----------------------------------------------------------------------

Factory = Callable[..., torch.optim.Optimizer]
PROBE_LR = 0.1
FACTORIES: dict[str, Factory] = {
    "SGD with momentum": lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.9),
    "Adam": lambda params: torch.optim.Adam(params, lr=0.01),
}


def plain_steps(model: nn.Module, state, make_optimizer: Factory, batches) -> list[dict]:
    """The parameters after each step of a normal loop: zero_grad, backward, step."""
    copy = copy_of(model, state)
    optimizer = make_optimizer(copy.parameters())
    after = []
    for x, y in batches:
        optimizer.zero_grad()
        F.mse_loss(copy(x), y).backward()
        optimizer.step()
        after.append({name: p.detach().clone() for name, p in copy.named_parameters()})
    return after


def _attach(s: Student, model: nn.Module, make_optimizer: Factory) -> list[object]:
    fn = s.function("attach_optimizer_in_backward")
    signature = "attach_optimizer_in_backward(model, make_optimizer)"
    require_arity(fn, "attach_optimizer_in_backward", signature, 2)
    try:
        result = s.call(signature, fn, model, make_optimizer)
    except NotDoneYet:
        raise
    except CheckFailed as failure:
        if "non-leaf" in failure.message:
            failure.message += " Register on the parameters: model.parameters() are leaves."
        raise
    return handles_of(result, "attach_optimizer_in_backward")


def _judge_probe(s: Student) -> None:
    """One backward with plain SGD: did every parameter take exactly one step, grad freed?"""
    model, [(x, y)] = fresh_case(s.rng)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    ref = reference_grads(model, x, y)
    _attach(s, model, lambda params: torch.optim.SGD(params, lr=PROBE_LR))
    backward(s, model, x, y, "post-accumulate-grad hooks")
    s.record(probe=params_of(model))
    moves = {}
    for name, p in model.named_parameters():
        step = -PROBE_LR * ref[name]
        moves[name] = ((p.detach() - before[name]) * step).sum().item() / (step**2).sum().item()
    wrong = {name: k for name, k in moves.items() if abs(k - 1) > 1e-3}
    if wrong and all(abs(k) <= 1e-3 for k in wrong.values()):
        raise CheckFailed(
            f"{', '.join(wrong)} did not change during backward: no optimizer step moved "
            "them. Register p.register_post_accumulate_grad_hook(hook) on every parameter and "
            "call step() before zero_grad() in the hook: zero_grad() sets p.grad to None, and "
            "step() skips a parameter whose grad is None."
        )
    if wrong:
        lines = "\n  ".join(f"{name}: {k:.2f} steps" for name, k in wrong.items())
        raise CheckFailed(
            "with plain SGD, one backward should move every parameter by exactly one step "
            f"(-lr * grad), but these moved as far as this many steps:\n  {lines}\n  The step "
            "ran more than once: is the hook registered more than once per parameter (e.g. "
            "looping over model.modules() and then each module's parameters(), which includes "
            "its children's), or does one optimizer over all parameters step in every hook?"
        )
    kept = [name for name, p in model.named_parameters() if p.grad is not None]
    if kept:
        raise CheckFailed(
            f"after backward, {', '.join(kept)} still hold a .grad: zero_grad is missing. The "
            "next backward would add its gradient to the old one, and the next step would use "
            "both. Call the optimizer's zero_grad() after step() in the hook: it sets p.grad to "
            "None, which frees the gradient right away (the point of stepping inside backward)."
        )


def _judge_steps(s: Student, make_optimizer: Factory, name: str) -> None:
    model, batches = fresh_case(s.rng, batches=3)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    handles = _attach(s, model, make_optimizer)
    expected = plain_steps(model, state, make_optimizer, batches)
    for step, (x, y) in enumerate(batches):
        backward(s, model, x, y, "post-accumulate-grad hooks")
        s.record(**{f"{name}{step}": params_of(model)})
        wrong = [n for n, p in model.named_parameters() if not close(p, expected[step][n])]
        if wrong:
            raise CheckFailed(
                f"with {name}, after backward number {step + 1}, the parameters "
                f"{', '.join(wrong)} differ from a normal loop (zero_grad, backward, step) with "
                "one optimizer. Give every parameter its own optimizer, made once with "
                "make_optimizer([p]), so its state (momentum, Adam's averages) carries over."
            )
    for handle in handles:
        handle.remove()
    kept = [n for n, p in model.named_parameters() if p._post_accumulate_grad_hooks]
    if kept:
        raise CheckFailed(
            f"after removing the handles, {', '.join(kept)} still have post-accumulate-grad "
            "hooks: return the handle of every hook you register."
        )


def _judge_notebook(s: Student) -> None:
    model, state, make_sgd = s.get("opt_model"), s.get("initial_state"), s.get("make_sgd")
    x, y, steps = s.get("x"), s.get("y"), int(s.get("steps"))
    expected = plain_steps(model, state, make_sgd, [(x, y)] * steps)[-1]
    made = s.call("make_sgd(params)", make_sgd, [nn.Parameter(torch.zeros(1))])
    s.record(sizes=list(sizes_of(model)), initial_state=dict(state), x=x, y=y, steps=steps)
    s.record(optimizer=type(made).__name__, defaults=dict(made.defaults), params=params_of(model))
    wrong = [n for n, p in model.named_parameters() if not close(p, expected[n])]
    if not wrong:
        return
    message = (
        f"in the notebook, opt_model's {', '.join(wrong)} differ from a normal SGD loop of the "
        "same steps from initial_state."
    )
    counts = {n: len(p._post_accumulate_grad_hooks or {}) for n, p in model.named_parameters()}
    if max(counts.values()) > 1:
        message += (
            f" Its parameters have {max(counts.values())} post-accumulate-grad hooks each: the "
            "cell that attaches them ran more than once. Restart the kernel and run all cells."
        )
    raise CheckFailed(message)


@register("optimizer_in_backward")
def optimizer_in_backward(s: Student) -> str:
    in_check(FRESH, _judge_probe, s)
    _judge_notebook(s)
    return "every parameter takes its step inside backward, exactly like a normal SGD step."


@register("optimizer_in_backward", hidden=True)
def optimizer_in_backward_hidden(s: Student) -> str:
    in_check(FRESH, _judge_probe, s)
    for name, factory in FACTORIES.items():
        in_check(FRESH, _judge_steps, s, factory, name)
    return "the in-backward steps match normal SGD-with-momentum and Adam loops on fresh models."
