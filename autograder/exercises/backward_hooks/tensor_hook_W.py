"""tensor_hook_W: a hook registered on `model.W` stores W's gradient in `answer` (the seed
course's tensor-hook task)."""

from __future__ import annotations

import torch

from autograder.exercises.backward_hooks.common import (
    notebook_reference,
    on_fresh,
    random_inputs,
    random_w,
    recorded_reference,
    reference,
    trials,
)
from autograder.exercises.backward_hooks.models import make_model
from autograder.exercises.kit.compare import compare_tensor_list
from autograder.exercises.kit.judge import expect_close, expect_list, item
from autograder.exercises.kit.student import Student, is_stub, require_arity
from autograder.feedback import CheckFailed, NotDoneYet, describe
from autograder.i18n import N_, _
from autograder.tolerances import close

HINTS = [
    N_("A tensor hook receives one argument: the gradient, a tensor shaped like `W`."),
    N_("Append it to `answer` and return nothing, so the gradient stays as it is."),
]
EMPTY = N_(
    "Your hook ran during `output.backward()` but added nothing to `answer`: it receives W's "
    "gradient as its one argument, and has to put it there."
)
CHANGED = N_(
    "your hook changed W's gradient: W.grad = {got}, autograd gives {expected}. A hook that only "
    "stores the gradient must return None (whatever a tensor hook returns replaces the gradient)."
)


def _registered(s: Student) -> list:
    """The hooks on the notebook's `model.W`, whatever their names."""
    model = s.get("model")
    registered = s.tensor_hooks_on(getattr(model, "W", None))
    hooks = [hook for hook in registered if not is_stub(hook)]
    if not hooks:
        fn = s.namespace.get("tensor_hook")
        if registered or not callable(fn) or is_stub(fn):
            raise NotDoneYet(
                _(
                    "`tensor_hook` does nothing yet: write its body, then run the answer cell "
                    "and the cells under it."
                )
            )
        on_module = s.hooks_on(model, "backward") if hasattr(model, "_backward_hooks") else []
        where = (
            _(
                " A backward hook is registered on the module `model` itself; a tensor hook "
                "goes on the tensor, `model.W.register_hook(...)`."
            )
            if on_module
            else ""
        )
        raise CheckFailed(
            _(
                "no hook is registered on `model.W`, the parameter whose gradient `answer` "
                "needs: a tensor hook runs only for the tensor it is registered on.{where}"
            ).format(where=where)
        )
    for hook in hooks:
        require_arity(hook, getattr(hook, "__name__", "tensor_hook"), "tensor_hook(grad)", 1)
    return hooks


def _collect(s: Student, hooks: list, w, x1, x2):
    """Run the hooks on a fresh Model's W; return (what `answer` got, W.grad)."""
    model = make_model(w)
    with s.swapped_global(hooks, "answer", []) as answer_now:
        handles = [model.W.register_hook(hook) for hook in hooks]
        try:
            s.call(_("`output.backward()` with your hook registered"), model(x1, x2).backward)
        finally:
            for handle in handles:
                handle.remove()
        return answer_now(), model.W.grad


def visible(s: Student) -> str:
    hooks = _registered(s)
    _collect(s, hooks, random_w(s.rng), *random_inputs(s.rng))  # errors and their causes first
    ref = notebook_reference(s)
    answer, w_grad = s.get("answer"), getattr(s.get("model").W, "grad", None)
    s.record(answer=answer)
    compare_tensor_list(answer, [("model.W.grad", ref["W"])], empty_hint=_(EMPTY))
    if w_grad is not None and not close(w_grad, ref["W"]):
        raise CheckFailed(_(CHANGED).format(got=describe(w_grad), expected=describe(ref["W"])))
    return _("`answer` holds [model.W.grad].")


def hidden(s: Student) -> str:
    hooks = _registered(s)
    for trial, (w, x1, x2) in enumerate(trials(s.rng)):
        answer, w_grad = _collect(s, hooks, w, x1, x2)
        s.record(**{f"answer{trial}": answer, f"W.grad{trial}": w_grad})
        ref = reference(w, x1, x2)
        try:
            compare_tensor_list(answer, [("model.W.grad", ref["W"])], empty_hint=_(EMPTY))
            if not close(w_grad, ref["W"]):
                raise CheckFailed(
                    _(CHANGED).format(got=describe(w_grad), expected=describe(ref["W"]))
                )
        except CheckFailed as failure:
            raise on_fresh(failure) from None
    return _("your hook stores W's gradient on fresh models and inputs.")


def judge_visible(rng: torch.Generator, evidence: dict) -> None:
    expect_list(item(evidence, "answer"), [recorded_reference(evidence)["W"]], "answer")


def judge_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial, (w, x1, x2) in enumerate(trials(rng)):
        ref = reference(w, x1, x2)
        expect_close(item(evidence, f"W.grad{trial}"), ref["W"], f"W.grad of trial {trial}")
        expect_list(item(evidence, f"answer{trial}"), [ref["W"]], f"answer of trial {trial}")
