"""backward_collect: a full backward hook on `model` collects x1.grad, x2.grad and output.grad
into `answer`, in that order (the seed course's first backward task)."""

from __future__ import annotations

import torch

from autograder.exercises.backward_hooks.common import (
    backward_through,
    module_hooks,
    notebook_reference,
    on_fresh,
    random_inputs,
    random_w,
    recorded_reference,
    reference,
    trials,
)
from autograder.exercises.kit.compare import compare_tensor_list
from autograder.exercises.kit.judge import expect_close, expect_list, item
from autograder.exercises.kit.student import Student
from autograder.feedback import CheckFailed, describe
from autograder.i18n import N_, _
from autograder.tolerances import close

HINTS = [
    N_(
        "`grad_input` is the tuple `(gradient w.r.t. x1, gradient w.r.t. x2)`; `grad_output` "
        "is a tuple with one entry."
    ),
    N_(
        "Add the elements of both tuples to `answer`: the inputs' gradients first, then the "
        "output's."
    ),
    N_(
        "A list's `extend` adds each element of a tuple; `append` would add the tuple as one entry."
    ),
]
SIGNATURE = "module_hook(module, grad_input, grad_output)"
EMPTY = N_(
    "Your hook ran during `output.backward()` but added nothing to `answer`: it receives the "
    "gradients as its arguments `grad_input` and `grad_output`, and has to put them there."
)


def _expected(ref: dict[str, torch.Tensor]) -> list[tuple[str, torch.Tensor]]:
    return [("x1.grad", ref["x1"]), ("x2.grad", ref["x2"]), ("output.grad", ref["output"])]


def _swapped(found: list[str]) -> str | None:
    if found.index("output.grad") < 2:
        return _(
            "grad_output came before grad_input. PyTorch calls a full backward hook as "
            "`hook(module, grad_input, grad_output)`: grad_input holds the gradients w.r.t. the "
            "module's inputs (x1.grad, x2.grad), grad_output the gradient w.r.t. its output "
            "(output.grad), and `answer` lists the inputs' gradients first."
        )
    return None


def _collect(s: Student, hooks: list, w, x1, x2):
    """Run the hooks on a fresh Model; return (what `answer` got, x1.grad, x2.grad)."""
    with s.swapped_global(hooks, "answer", []) as answer_now:
        backward_through(s, hooks, w, x1, x2)
        return answer_now(), x1.grad, x2.grad


def _compare(answer, ref) -> None:
    compare_tensor_list(answer, _expected(ref), order_hint=_swapped, empty_hint=_(EMPTY))


def visible(s: Student) -> str:
    hooks = module_hooks(s, "module_hook", SIGNATURE)
    _collect(s, hooks, random_w(s.rng), *random_inputs(s.rng))  # errors and their causes first
    ref = notebook_reference(s)
    answer = s.get("answer")
    s.record(answer=answer)
    _compare(answer, ref)
    return _("`answer` holds [x1.grad, x2.grad, output.grad], in that order.")


def hidden(s: Student) -> str:
    hooks = module_hooks(s, "module_hook", SIGNATURE)
    for trial, (w, x1, x2) in enumerate(trials(s.rng)):
        answer, gx1, gx2 = _collect(s, hooks, w, x1, x2)
        s.record(**{f"answer{trial}": answer, f"x1.grad{trial}": gx1, f"x2.grad{trial}": gx2})
        ref = reference(w, x1, x2)
        if not (close(gx1, ref["x1"]) and close(gx2, ref["x2"])):
            raise on_fresh(
                CheckFailed(
                    _(
                        "your hook changed the gradients: x1.grad = {got}, autograd gives "
                        "{expected}. A hook that only collects must return None."
                    ).format(got=describe(gx1), expected=describe(ref["x1"]))
                )
            )
        try:
            _compare(answer, ref)
        except CheckFailed as failure:
            raise on_fresh(failure) from None
    return _("your hook collects [x1.grad, x2.grad, output.grad] on fresh models and inputs.")


def judge_visible(rng: torch.Generator, evidence: dict) -> None:
    ref = recorded_reference(evidence)
    expect_list(item(evidence, "answer"), [t for _n, t in _expected(ref)], "answer")


def judge_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial, (w, x1, x2) in enumerate(trials(rng)):
        ref = reference(w, x1, x2)
        expect_close(item(evidence, f"x1.grad{trial}"), ref["x1"], f"x1.grad of trial {trial}")
        expect_close(item(evidence, f"x2.grad{trial}"), ref["x2"], f"x2.grad of trial {trial}")
        want = [t for _n, t in _expected(ref)]
        expect_list(item(evidence, f"answer{trial}"), want, f"answer of trial {trial}")
