"""backward_normalize: a full backward hook returns a new grad_input, scaled so that
x1.grad + x2.grad == 1 while their ratio stays autograd's (the seed course's harder extra)."""

from __future__ import annotations

import torch

from autograder.exercises.backward_hooks.common import (
    IN_PLACE,
    backward_through,
    changed_in_place,
    grad_of,
    module_hooks,
    notebook_reference,
    on_fresh,
    random_inputs,
    random_w,
    recorded_reference,
    reference,
    trials,
)
from autograder.exercises.backward_hooks.models import make_model
from autograder.exercises.kit.judge import expect_close, item
from autograder.exercises.kit.student import Student, assigns
from autograder.feedback import CheckFailed, describe
from autograder.i18n import N_, _
from autograder.tolerances import close

HINTS = [
    N_("`grad_input[0]` is the gradient for `x1`, `grad_input[1]` the one for `x2`."),
    N_("Dividing both by the same number keeps their ratio. Which number makes them add up to 1?"),
    N_("Return a new tuple with as many entries as `grad_input`; do not change it in place."),
]
SIGNATURE = "normalize_hook(module, grad_input, grad_output)"
FIX = "total = grad_input[0] + grad_input[1]; return (grad_input[0] / total, grad_input[1] / total)"


def _call(s: Student, hook):
    """Call the hook directly on gradients of its own; (what it returned, whether it changed
    the grad_input it was given in place)."""
    name = getattr(hook, "__name__", "normalize_hook")
    before = [torch.rand(1) + 0.5, torch.rand(1) + 0.5]
    grad_input = tuple(g.clone() for g in before)
    what = _("`{name}(module, grad_input, grad_output)`").format(name=name)
    result = s.call(what, hook, make_model(), grad_input, (torch.ones(1),))
    return result, changed_in_place(before, list(grad_input))


def _probe(s: Student, hooks: list) -> None:
    """Each hook must leave grad_input alone and return something."""
    for hook in hooks:
        name = getattr(hook, "__name__", "normalize_hook")
        result, in_place = _call(s, hook)
        if in_place:
            raise CheckFailed(_(IN_PLACE).format(name=name), fix=FIX)
        if result is None and assigns(hook, "grad_input"):
            raise CheckFailed(
                _(
                    "`{name}` returns None, so the gradients stay as autograd computed them. "
                    "Assigning to `grad_input` inside the hook only points the hook's own local "
                    "name at a new tuple; a full backward hook replaces grad_input only with the "
                    "value it returns."
                ).format(name=name),
                fix=FIX,
            )
        if result is None:
            raise CheckFailed(
                _(
                    "`{name}` returns None, so the gradients stay as autograd computed them: a "
                    "full backward hook replaces grad_input only with the value it returns."
                ).format(name=name),
                fix=FIX,
            )


def _why_refused(s: Student, hooks: list) -> CheckFailed | None:
    """PyTorch refused what a hook returned: say what it returned and what grad_input holds."""
    for hook in hooks:
        name = getattr(hook, "__name__", "normalize_hook")
        result, _in_place = _call(s, hook)
        if isinstance(result, torch.Tensor):
            return CheckFailed(
                _(
                    "`{name}` returns one tensor, {got}. PyTorch reads a returned tensor as a "
                    "tuple of its rows, one per input, and grad_input has 2 entries (one per "
                    "input of forward(x1, x2)): return one new gradient per input, in a tuple."
                ).format(name=name, got=describe(result))
            )
        if isinstance(result, tuple | list) and len(result) != 2:
            return CheckFailed(
                _(
                    "`{name}` returns {count} value(s), but grad_input has one entry per input "
                    "of forward(x1, x2), so 2, and PyTorch refuses a different number. Return a "
                    "new gradient for x1 and one for x2."
                ).format(name=name, count=len(result))
            )
    return None


def _on_fresh_model(s: Student, hooks: list, w, x1, x2):
    try:
        backward_through(s, hooks, w, x1, x2)
    except CheckFailed as failure:
        raise _why_refused(s, hooks) or failure from None
    return x1.grad, x2.grad


def _require_gradients(gx1, gx2) -> None:
    if not (isinstance(gx1, torch.Tensor) and isinstance(gx2, torch.Tensor)):
        raise CheckFailed(
            _(
                "after backward x1.grad = {got1} and x2.grad = {got2}: your hook returned None "
                "in place of a gradient. Return a new gradient for each input."
            ).format(got1=describe(gx1), got2=describe(gx2))
        )


def _judge(gx1, gx2, ref: dict[str, torch.Tensor]) -> None:
    _require_gradients(gx1, gx2)
    if close(gx1, ref["x1"]) and close(gx2, ref["x2"]):
        raise CheckFailed(
            _(
                "x1.grad and x2.grad are autograd's gradients, unchanged ({got1}, {got2}): "
                "your hook returns the gradients it receives as they are."
            ).format(got1=describe(gx1), got2=describe(gx2))
        )
    total = gx1 + gx2
    if not close(total, torch.ones_like(ref["x1"])):
        raise CheckFailed(
            _(
                "x1.grad + x2.grad = {total}, expected 1: the new gradients have to add up to "
                "1, which dividing both by the same number can do while it keeps their ratio."
            ).format(total=describe(total))
        )
    ratio, want = gx1 / gx2, ref["x1"] / ref["x2"]
    if not close(ratio, want):
        raise CheckFailed(
            _(
                "x1.grad + x2.grad is 1, but x1.grad / x2.grad = {ratio} while autograd's "
                "ratio is {want}: scale both gradients by the same factor, so that their ratio "
                "stays what autograd computed."
            ).format(ratio=describe(ratio), want=describe(want))
        )


def _hooks(s: Student) -> list:
    hooks = module_hooks(s, "normalize_hook", SIGNATURE)
    _probe(s, hooks)
    return hooks


def visible(s: Student) -> str:
    hooks = _hooks(s)
    x1, x2 = random_inputs(s.rng)
    gx1, gx2 = _on_fresh_model(s, hooks, random_w(s.rng), x1, x2)  # errors and causes first
    _require_gradients(gx1, gx2)
    ref = notebook_reference(s)
    gx1, gx2 = grad_of(s, "x1"), grad_of(s, "x2")
    s.record(**{"x1.grad": gx1, "x2.grad": gx2})
    _judge(gx1, gx2, ref)
    return _("x1.grad + x2.grad is 1 and their ratio is autograd's.")


def hidden(s: Student) -> str:
    hooks = _hooks(s)
    for trial, (w, x1, x2) in enumerate(trials(s.rng)):
        gx1, gx2 = _on_fresh_model(s, hooks, w, x1, x2)
        s.record(**{f"x1.grad{trial}": gx1, f"x2.grad{trial}": gx2})
        try:
            _judge(gx1, gx2, reference(w, x1, x2))
        except CheckFailed as failure:
            raise on_fresh(failure) from None
    return _("your hook normalizes the input gradients on fresh models and inputs.")


def _expect_normalized(evidence: dict, ref: dict[str, torch.Tensor], suffix: str) -> None:
    total = ref["x1"] + ref["x2"]
    expect_close(item(evidence, f"x1.grad{suffix}"), ref["x1"] / total, f"x1.grad{suffix}")
    expect_close(item(evidence, f"x2.grad{suffix}"), ref["x2"] / total, f"x2.grad{suffix}")


def judge_visible(rng: torch.Generator, evidence: dict) -> None:
    _expect_normalized(evidence, recorded_reference(evidence), "")


def judge_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial, (w, x1, x2) in enumerate(trials(rng)):
        _expect_normalized(evidence, reference(w, x1, x2), str(trial))
