"""optimizer_in_backward: `attach_optimizer_in_backward(model, make_optimizer)` gives every
parameter its own optimizer and a post-accumulate-grad hook that steps it and frees the gradient
during backward, so that `loss.backward()` alone is a training step, exactly like a normal loop.

The first probe makes its optimizers with a recording factory, so a wrong result is explained
by what the student's optimizers were asked to do (which stepped, in what order, when made)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from autograder.exercises.hooks_in_practice.common import (
    copy_of,
    fresh_case,
    handles_of,
    ints,
    loaded,
    reference_grads,
    sizes_of,
    tensor_dict,
)
from autograder.exercises.hooks_in_practice.models import make_mlp
from autograder.exercises.kit.cases import in_case
from autograder.exercises.kit.judge import Suspicious, expect_close, item
from autograder.exercises.kit.student import Student, require_arity
from autograder.feedback import CheckFailed, describe
from autograder.i18n import N_, _
from autograder.tolerances import close

HINTS = [
    N_(
        "Make all the optimizers before any backward runs, one per parameter with "
        "`make_optimizer([p])`, so that each keeps its state (momentum) from step to step."
    ),
    N_(
        "The hook receives the parameter itself. A dict keyed by the parameter (tensors hash by "
        "identity) lets the hook find that parameter's optimizer; a closure made in a loop "
        "would see only the loop variable's last value."
    ),
    N_(
        "In the hook, `step()` comes first, then `zero_grad()`: the other way round `p.grad` is "
        "already `None` and `step()` skips the parameter."
    ),
    N_(
        "Register with `p.register_post_accumulate_grad_hook(...)` on every parameter, exactly "
        "once each, and return the handles as a list."
    ),
]
Factory = Callable[..., torch.optim.Optimizer]
SIGNATURE = "attach_optimizer_in_backward(model, make_optimizer)"
PROBE_LR = 0.1
FACTORIES: dict[str, Factory] = {
    "SGD with momentum": lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.9),
    "Adam": lambda params: torch.optim.Adam(params, lr=0.01),
}


@dataclass
class Recorded:
    """What the optimizers made by a recording factory were asked to do."""

    made: list[tuple[int, bool]] = field(default_factory=list)  # (parameters, made in backward)
    events: list[tuple[int, str, bool]] = field(default_factory=list)  # (optimizer, call, grads)
    in_backward: bool = False


def recording_sgd(log: Recorded, lr: float) -> Factory:
    """A make_optimizer whose plain SGD optimizers note every step() and zero_grad() in `log`,
    and whether the step found a gradient."""

    def make(params):
        params = list(params)
        index = len(log.made)
        log.made.append((len(params), log.in_backward))
        optimizer = torch.optim.SGD(params, lr=lr)
        step, zero_grad = optimizer.step, optimizer.zero_grad

        def recorded_step(*args, **kwargs):
            log.events.append((index, "step", any(p.grad is not None for p in params)))
            return step(*args, **kwargs)

        def recorded_zero_grad(*args, **kwargs):
            log.events.append((index, "zero_grad", True))
            return zero_grad(*args, **kwargs)

        optimizer.step, optimizer.zero_grad = recorded_step, recorded_zero_grad
        return optimizer

    return make


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


def params_of(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.detach() for name, p in model.named_parameters()}


def _attach(s: Student, model: nn.Module, make_optimizer: Factory) -> list[object]:
    fn = s.function("attach_optimizer_in_backward")
    require_arity(fn, "attach_optimizer_in_backward", SIGNATURE, 2)
    result = s.call(f"`{SIGNATURE}`", fn, model, make_optimizer)
    return handles_of(result, "attach_optimizer_in_backward")


def _backward(s: Student, model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> None:
    loss = F.mse_loss(model(x), y)
    s.call(_("`loss.backward()`, which runs your post-accumulate-grad hooks,"), loss.backward)


def _hooks_per_parameter(model: nn.Module) -> dict[str, int]:
    # Tensor._post_accumulate_grad_hooks: torch has no public way to list a tensor's hooks.
    return {n: len(p._post_accumulate_grad_hooks or {}) for n, p in model.named_parameters()}


def _judge_probe(s: Student) -> None:
    """One backward with plain SGD: did every parameter take exactly one step, its gradient
    freed? When not, say why from what the recorded optimizers did."""
    model, [(x, y)] = fresh_case(s.rng)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    ref = reference_grads(model, x, y)
    log = Recorded()
    _attach(s, model, recording_sgd(log, PROBE_LR))
    log.in_backward = True
    try:
        _backward(s, model, x, y)
    except CheckFailed as failure:
        shared = any(count > 1 for count, _in_backward in log.made)
        if shared and "modified by an inplace operation" in failure.message:
            raise CheckFailed(
                _(
                    "{message}\nAn optimizer made over several parameters steps all of them in "
                    "the first hook that calls it, while backward still needs some of them to "
                    "compute the gradients of the others: each parameter needs an optimizer of "
                    "its own, made from `[p]`."
                ).format(message=failure.message)
            ) from None
        raise
    log.in_backward = False
    s.record(probe=params_of(model))
    if not log.made:
        raise CheckFailed(
            _(
                "`attach_optimizer_in_backward` never called `make_optimizer`, so no optimizer "
                "exists to take a step: every parameter needs its own, made with "
                "`make_optimizer([p])`."
            )
        )
    if any(in_backward for _count, in_backward in log.made):
        raise CheckFailed(
            _(
                "`make_optimizer` is called during backward, in the hook: a new optimizer for "
                "every step starts with no state, so momentum (or Adam's running averages) never "
                "carries over from one step to the next. Each parameter's optimizer is made once, "
                "when `attach_optimizer_in_backward` runs."
            )
        )
    moves = {}
    for name, p in model.named_parameters():
        step = -PROBE_LR * ref[name]
        moves[name] = ((p.detach() - before[name]) * step).sum().item() / (step**2).sum().item()
    wrong = {name: k for name, k in moves.items() if abs(k - 1) > 1e-3}
    if wrong and all(abs(k) <= 1e-3 for k in wrong.values()):
        raise CheckFailed(_why_still(model, list(wrong), log))
    if wrong:
        raise CheckFailed(_why_too_far(model, wrong, log))
    kept = [name for name, p in model.named_parameters() if p.grad is not None]
    if kept:
        raise CheckFailed(
            _(
                "after backward, {names} still hold a `.grad`: nothing freed the gradients. The "
                "next backward would add its gradient to the old one, and the next step would "
                "use both. The optimizer's `zero_grad()` sets `p.grad` to None, which frees the "
                "gradient at once (the point of stepping inside backward)."
            ).format(names=", ".join(kept))
        )


def _why_still(model: nn.Module, still: list[str], log: Recorded) -> str:
    """Parameters that did not move at all: why, from the recorded calls."""
    names = ", ".join(still)
    hooks = _hooks_per_parameter(model)
    unhooked = [name for name in still if not hooks[name]]
    if unhooked:
        return _(
            "{names} did not change during backward: they have no post-accumulate-grad hook, "
            "so nothing stepped them. Every parameter needs one, registered with "
            "`register_post_accumulate_grad_hook`."
        ).format(names=", ".join(unhooked))
    steps = [(index, found) for index, call, found in log.events if call == "step"]
    if steps and not any(found for _index, found in steps):
        return _(
            "{names} did not change during backward: each `step()` found no gradient, because "
            "`zero_grad()` had already run. `zero_grad()` sets `p.grad` to None, and `step()` "
            "skips a parameter whose gradient is None: the step comes first, then the "
            "gradient is freed."
        ).format(names=names)
    if len(log.made) > 1 and len({index for index, _found in steps}) == 1:
        return _(
            "{names} did not change during backward: every hook stepped the same optimizer "
            "(the one made last), which holds only its own parameter. A function defined in a "
            "loop looks up a loop variable when it runs, after the loop, so every hook sees "
            "its last value; each hook must find the optimizer of the parameter it is given."
        ).format(names=names)
    if not steps:
        return _(
            "{names} did not change during backward: the hooks ran, but no optimizer's "
            "`step()` was called. The hook calls its parameter's optimizer's `step()`."
        ).format(names=names)
    return _(
        "{names} did not change during backward: no optimizer step moved them. Each "
        "parameter's hook steps the optimizer made for that parameter."
    ).format(names=names)


def _why_too_far(model: nn.Module, wrong: dict[str, float], log: Recorded) -> str:
    lines = "\n".join(
        _("{name}: {steps:.2f} steps").format(name=name, steps=k) for name, k in wrong.items()
    )
    intro = _(
        "with plain SGD, one backward should move every parameter by exactly one step "
        "(-lr * grad), but these moved as far as this many steps:\n{lines}"
    ).format(lines=lines)
    hooks = _hooks_per_parameter(model)
    if max(hooks.values()) > 1:
        why = _(
            "Some parameters have {count} post-accumulate-grad hooks: each one steps again. "
            "(Looping over `model.modules()` and then over each module's `parameters()` meets "
            "a parameter once per module above it, since `parameters()` includes the children's.)"
        ).format(count=max(hooks.values()))
    elif any(count > 1 for count, _in_backward in log.made):
        why = _(
            "An optimizer made over several parameters steps all of them, in every hook that "
            "calls it: each parameter needs an optimizer of its own, made from `[p]`."
        )
    else:
        why = _("Is `step()` called more than once per hook?")
    return f"{intro}\n{why}"


def _judge_steps(s: Student, make_optimizer: Factory, name: str) -> None:
    """Three backwards with a stateful optimizer, against a normal loop from the same start."""
    model, batches = fresh_case(s.rng, batches=3)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    handles = _attach(s, model, make_optimizer)
    expected = plain_steps(model, state, make_optimizer, batches)
    for step, (x, y) in enumerate(batches):
        _backward(s, model, x, y)
        s.record(**{f"{name}{step}": params_of(model)})
        wrong = [n for n, p in model.named_parameters() if not close(p, expected[step][n])]
        if not wrong:
            continue
        message = _(
            "with {optimizer}, after backward number {number}, the parameters {names} differ "
            "from a normal loop (zero_grad, backward, step) with one optimizer."
        ).format(optimizer=name, number=step + 1, names=", ".join(wrong))
        if step:
            message += " " + _(
                "The steps before it matched, so each optimizer's state (momentum, Adam's "
                "running averages) did not carry over from one step to the next."
            )
        raise CheckFailed(message)
    for handle in handles:
        handle.remove()
    kept = [n for n, count in _hooks_per_parameter(model).items() if count]
    if kept:
        raise CheckFailed(
            _(
                "after removing the handles, {names} still have post-accumulate-grad hooks: "
                "return the handle of every hook you register."
            ).format(names=", ".join(kept))
        )


def _judge_notebook(s: Student) -> None:
    model, state, make_sgd = s.get("opt_model"), s.get("initial_state"), s.get("make_sgd")
    x, y, steps = s.get("x"), s.get("y"), int(s.get("steps"))
    expected = plain_steps(model, state, make_sgd, [(x, y)] * steps)[-1]
    made = s.call("`make_sgd(params)`", make_sgd, [nn.Parameter(torch.zeros(1))])
    s.record(sizes=list(sizes_of(model)), initial_state=dict(state), x=x, y=y, steps=steps)
    s.record(optimizer=type(made).__name__, defaults=dict(made.defaults), params=params_of(model))
    wrong = [n for n, p in model.named_parameters() if not close(p, expected[n])]
    if wrong:
        first = wrong[0]
        raise CheckFailed(
            _(
                "in the notebook, `opt_model`'s {names} differ from a normal SGD loop of the "
                "same {steps} steps from `initial_state`: {first} should be {expected}, it is "
                "{got}."
            ).format(
                names=", ".join(wrong),
                steps=steps,
                first=first,
                expected=describe(expected[first]),
                got=describe(dict(model.named_parameters())[first].detach()),
            )
        )


def _fresh_where() -> str:
    return _("On a fresh MLP with random sizes, weights and data")


def visible(s: Student) -> str:
    in_case(_fresh_where(), _judge_probe, s)
    _judge_notebook(s)
    return _("every parameter takes its step inside backward, exactly like a normal SGD step.")


def hidden(s: Student) -> str:
    in_case(_fresh_where(), _judge_probe, s)
    for name, factory in FACTORIES.items():
        in_case(_fresh_where(), _judge_steps, s, factory, name)
    return _("the steps inside backward match normal SGD-with-momentum and Adam loops.")


def _expect_probe(rng: torch.Generator, evidence: dict) -> None:
    model, [(x, y)] = fresh_case(rng)
    ref = reference_grads(model, x, y)
    want = {n: p.detach() - PROBE_LR * ref[n] for n, p in model.named_parameters()}
    tensor_dict(item(evidence, "probe"), want, "the parameters after one backward")


OPTIMIZERS = {"SGD": torch.optim.SGD, "Adam": torch.optim.Adam, "AdamW": torch.optim.AdamW}


def judge_visible(rng: torch.Generator, evidence: dict) -> None:
    _expect_probe(rng, evidence)
    sizes = ints(item(evidence, "sizes"), "opt_model's sizes")
    kind, defaults = item(evidence, "optimizer"), item(evidence, "defaults")
    if kind not in OPTIMIZERS or type(defaults) is not dict:
        raise Suspicious(f"make_sgd makes an optimizer the grader does not rebuild ({kind!r})")
    x, y, steps = item(evidence, "x"), item(evidence, "y"), item(evidence, "steps")
    expect_close(x, x, "x")
    expect_close(y, y, "y")
    if type(steps) is not int or not 0 < steps <= 100:
        raise Suspicious("steps is not a small positive integer")
    state = item(evidence, "initial_state")
    model = loaded(make_mlp, (tuple(sizes),), state)

    def make(params):
        return OPTIMIZERS[kind](params, **defaults)

    try:
        after = plain_steps(model, state, make, [(x, y)] * steps)
    except (TypeError, ValueError) as error:  # settings no optimizer of that kind accepts
        raise Suspicious(f"make_sgd's settings do not make a {kind} ({error})"[:200]) from None
    tensor_dict(item(evidence, "params"), after[-1], "opt_model's parameters")


def judge_hidden(rng: torch.Generator, evidence: dict) -> None:
    _expect_probe(rng, evidence)
    for name, factory in FACTORIES.items():
        model, batches = fresh_case(rng, batches=3)
        state = {k: v.clone() for k, v in model.state_dict().items()}
        for step, want in enumerate(plain_steps(model, state, factory, batches)):
            tensor_dict(item(evidence, f"{name}{step}"), want, f"{name}, step {step + 1}")
