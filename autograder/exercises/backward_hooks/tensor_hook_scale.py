"""tensor_hook_scale: a hook registered on the tensor `x1` doubles x1's gradient and leaves
x2's alone."""

from __future__ import annotations

import torch

from autograder.exercises.backward_hooks.common import (
    IN_PLACE,
    grad_of,
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
from autograder.exercises.kit.student import Student, assigns, is_stub, require_arity
from autograder.feedback import CheckFailed, NotDoneYet, describe
from autograder.i18n import N_, _
from autograder.tolerances import close

HINTS = [
    N_("A tensor hook that returns a tensor replaces the gradient with it."),
    N_("Build a new tensor from `grad`; never change `grad` in place."),
    N_("Only `x1` carries the hook, so `x2.grad` is left as autograd computes it."),
]
FIX = "return grad * 2"


def _registered(s: Student) -> tuple[list, list]:
    """The hooks on the notebook's `x1` and `x2`, whatever their names."""
    x1, x2 = s.get("x1"), s.get("x2")
    on_x1 = [hook for hook in s.tensor_hooks_on(x1) if not is_stub(hook)]
    on_x2 = [hook for hook in s.tensor_hooks_on(x2) if not is_stub(hook)]
    if not on_x1:
        if on_x2:
            raise CheckFailed(
                _(
                    "your hook is registered on `x2`, not on `x1`. A tensor hook changes only "
                    "the gradient of the tensor it is registered on, so x2.grad is the one that "
                    "changes while x1.grad stays as autograd computes it."
                )
            )
        fn = s.namespace.get("double_grad")
        stubs = s.tensor_hooks_on(x1) or s.tensor_hooks_on(x2)
        if stubs or not callable(fn) or is_stub(fn):
            raise NotDoneYet(
                _(
                    "`double_grad` does nothing yet: write its body, then run the answer cell "
                    "and the cells under it."
                )
            )
        raise CheckFailed(
            _(
                "no hook is registered on `x1`: a tensor hook runs only for the tensor it is "
                "registered on, with `x1.register_hook(...)`."
            )
        )
    for hook in on_x1 + on_x2:
        require_arity(hook, getattr(hook, "__name__", "double_grad"), "double_grad(grad)", 1)
    return on_x1, on_x2


def _probe(s: Student, hooks: list, *, must_return: bool) -> None:
    """Call each hook directly: it must leave its argument alone and (on x1) return a value."""
    for hook in hooks:
        name = getattr(hook, "__name__", "double_grad")
        grad = torch.rand(1) + 0.5
        before = grad.clone()
        result = s.call(_("`{name}(grad)`").format(name=name), hook, grad)
        if not torch.equal(grad, before):
            raise CheckFailed(_(IN_PLACE).format(name=name), fix=FIX)
        if result is None and must_return:
            if assigns(hook, "grad"):
                raise CheckFailed(
                    _(
                        "`{name}` returns None, so x1's gradient stays as it was. Assigning to "
                        "`grad` inside the hook only points the hook's own local name at a new "
                        "tensor; a tensor hook changes a gradient only by returning the new one."
                    ).format(name=name),
                    fix=FIX,
                )
            raise CheckFailed(
                _(
                    "`{name}` returns None, so x1's gradient stays as it was: a tensor hook "
                    "changes a gradient only by returning the new one."
                ).format(name=name),
                fix=FIX,
            )


def _registered_and_probed(s: Student) -> tuple[list, list]:
    on_x1, on_x2 = _registered(s)
    _probe(s, on_x1, must_return=True)
    _probe(s, on_x2, must_return=False)
    return on_x1, on_x2


def _on_fresh_model(s: Student, on_x1: list, on_x2: list, w, x1, x2):
    """x1.grad and x2.grad after backward on a fresh Model, with the hooks on fresh inputs."""
    model = make_model(w)
    handles = [x1.register_hook(hook) for hook in on_x1]
    handles += [x2.register_hook(hook) for hook in on_x2]
    try:
        s.call(_("`output.backward()` with your hook registered"), model(x1, x2).backward)
    finally:
        for handle in handles:
            handle.remove()
    return x1.grad, x2.grad


def _judge(gx1: torch.Tensor, gx2: torch.Tensor, ref: dict[str, torch.Tensor]) -> None:
    if close(gx1, 2 * ref["x1"]) and close(gx2, ref["x2"]):
        return
    if close(gx1, 2 * ref["x1"]):
        raise CheckFailed(
            _(
                "x1.grad is twice autograd's gradient, but x2.grad = {got} is not autograd's "
                "{expected}: only x1 should carry a hook that changes its gradient."
            ).format(got=describe(gx2), expected=describe(ref["x2"]))
        )
    if close(gx1, ref["x1"]):
        raise CheckFailed(
            _(
                "x1.grad = {got} is autograd's gradient, unchanged: your hook returns the "
                "gradient it receives as it is, and it should return twice that gradient."
            ).format(got=describe(gx1))
        )
    for times in range(2, 5):
        if close(gx1, 2**times * ref["x1"]):
            raise CheckFailed(
                _(
                    "x1.grad is {factor} times autograd's gradient: your hook ran {times} times, "
                    "so it is registered {times} times on `x1`. Run the answer cell again: it "
                    "makes fresh x1 and x2, so only one hook is registered."
                ).format(factor=2**times, times=times)
            )
    raise CheckFailed(
        _(
            "expected x1.grad = 2 × autograd's gradient = {expected1} and x2.grad unchanged = "
            "{expected2}; got x1.grad = {got1}, x2.grad = {got2}."
        ).format(
            expected1=describe(2 * ref["x1"]),
            expected2=describe(ref["x2"]),
            got1=describe(gx1),
            got2=describe(gx2),
        )
    )


def visible(s: Student) -> str:
    on_x1, on_x2 = _registered_and_probed(s)
    _on_fresh_model(s, on_x1, on_x2, random_w(s.rng), *random_inputs(s.rng))  # errors first
    ref = notebook_reference(s)
    gx1, gx2 = grad_of(s, "x1"), grad_of(s, "x2")
    s.record(**{"x1.grad": gx1, "x2.grad": gx2})
    _judge(gx1, gx2, ref)
    return _("x1.grad is twice autograd's gradient, x2.grad is unchanged.")


def hidden(s: Student) -> str:
    on_x1, on_x2 = _registered_and_probed(s)
    for trial, (w, x1, x2) in enumerate(trials(s.rng)):
        gx1, gx2 = _on_fresh_model(s, on_x1, on_x2, w, x1, x2)
        s.record(**{f"x1.grad{trial}": gx1, f"x2.grad{trial}": gx2})
        try:
            _judge(gx1, gx2, reference(w, x1, x2))
        except CheckFailed as failure:
            raise on_fresh(failure) from None
    return _("your hook doubles x1's gradient on fresh models and inputs.")


def _expect_scaled(evidence: dict, ref: dict[str, torch.Tensor], suffix: str) -> None:
    expect_close(item(evidence, f"x1.grad{suffix}"), 2 * ref["x1"], f"x1.grad{suffix}")
    expect_close(item(evidence, f"x2.grad{suffix}"), ref["x2"], f"x2.grad{suffix}")


def judge_visible(rng: torch.Generator, evidence: dict) -> None:
    _expect_scaled(evidence, recorded_reference(evidence), "")


def judge_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial, (w, x1, x2) in enumerate(trials(rng)):
        _expect_scaled(evidence, reference(w, x1, x2), str(trial))
