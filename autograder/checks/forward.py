"""Checks for the forward-hook notebook: the seed course's tasks and seed 004's forward points."""

from __future__ import annotations

import torch

from autograder.checks.compare import compare_tensor_list
from autograder.checks.evidence import random_pairs
from autograder.checks.registry import register
from autograder.checks.student import Student, require_arity
from autograder.checks.trusted import expect_close, expect_list, item, verifies
from autograder.feedback import CheckFailed, describe
from autograder.models.forward import make_add
from autograder.tolerances import close

FRESH = "On a fresh Add module with new random inputs"
COLLECT_SHAPES = [(1,), (1,), (3,)]
ADD5_SHAPES = [(1,), (1,), (4,)]


def _collect_on_fresh_add(s: Student, x1: torch.Tensor, x2: torch.Tensor):
    """Run the student's pre_hook and hook on a fresh Add; return (output, what `answer` got)."""
    pre_hook, hook = s.function("pre_hook"), s.function("hook")
    require_arity(pre_hook, "pre_hook", "pre_hook(module, input)", 2)
    require_arity(hook, "hook", "hook(module, input, output)", 3)
    add = make_add()
    with s.swapped_global([pre_hook, hook], "answer", []) as answer_now:
        handles = [add.register_forward_pre_hook(pre_hook), add.register_forward_hook(hook)]
        try:
            output = s.call("add(x1, x2) with your hooks registered", add, x1, x2)
        finally:
            for handle in handles:
                handle.remove()
        return output, answer_now()


@register("forward_collect")
def forward_collect(s: Student) -> str:
    _collect_on_fresh_add(s, torch.rand(1), torch.rand(1))  # surfaces stubs and errors first
    x1, x2 = s.get("x1"), s.get("x2")
    expected = [("x1", x1), ("x2", x2), ("output", torch.add(x1, x2))]
    s.record(x1=x1, x2=x2, answer=s.get("answer"))
    compare_tensor_list(s.get("answer"), expected)
    return "answer holds [x1, x2, output], in that order."


@verifies("forward_collect")
def verify_forward_collect(rng: torch.Generator, evidence: dict) -> None:
    x1, x2 = item(evidence, "x1"), item(evidence, "x2")
    expect_close(x1, x1, "x1")  # plain tensors, not look-alikes
    expect_close(x2, x2, "x2")
    expect_list(item(evidence, "answer"), [x1, x2, x1 + x2], "answer")


@register("forward_collect", hidden=True)
def forward_collect_hidden(s: Student) -> str:
    for trial, (x1, x2) in enumerate(random_pairs(s.rng, COLLECT_SHAPES)):
        output, answer = _collect_on_fresh_add(s, x1, x2)
        s.record(**{f"output{trial}": output, f"answer{trial}": answer})
        if not close(output, x1 + x2):
            raise CheckFailed(
                f"{FRESH}, your hooks changed the output to {describe(output)}; "
                "collecting values must leave it at x1 + x2."
            )
        try:
            compare_tensor_list(answer, [("x1", x1), ("x2", x2), ("output", x1 + x2)])
        except CheckFailed as failure:
            raise CheckFailed(f"{FRESH}: {failure.message}") from None
    return "your hooks collect [x1, x2, output] on fresh modules and inputs."


@verifies("forward_collect", hidden=True)
def verify_forward_collect_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial, (x1, x2) in enumerate(random_pairs(rng, COLLECT_SHAPES)):
        expect_close(item(evidence, f"output{trial}"), x1 + x2, f"output of trial {trial}")
        expect_list(item(evidence, f"answer{trial}"), [x1, x2, x1 + x2], f"answer of trial {trial}")


def _add5_on_fresh_add(s: Student, x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
    hook = s.function("hook")
    require_arity(hook, "hook", "hook(module, input, output)", 3)
    add = make_add()
    with add.register_forward_hook(hook):
        return s.call("add(x1, x2) with your hook registered", add, x1, x2)


@register("forward_add5")
def forward_add5(s: Student) -> str:
    a, b = torch.rand(1), torch.rand(1)
    fresh = _add5_on_fresh_add(s, a, b)
    x1, x2, output = s.get("x1"), s.get("x2"), s.get("output")
    s.record(x1=x1, x2=x2, output=output)
    if close(output, x1 + x2 + 5):
        return "the output is x1 + x2 + 5."
    if close(fresh, a + b):
        raise CheckFailed(
            "your hook does not change the output. Rebinding `output = output + 5` inside the "
            "hook only changes a local name; a forward hook changes the output by returning the "
            "new value: `return output + 5`."
        )
    for times in range(2, 5):
        if close(output, x1 + x2 + 5 * times):
            raise CheckFailed(
                f"the output is x1 + x2 + {5 * times}: your hook ran {times} times, so it was "
                f"registered {times} times (its cell ran more than once). Restart the kernel and "
                "run all cells, or remove the old hook with the handle register_forward_hook "
                "returned."
            )
    raise CheckFailed(
        f"expected output = x1 + x2 + 5 = {describe(x1 + x2 + 5)}, got {describe(output)}."
    )


@register("forward_add5", hidden=True)
def forward_add5_hidden(s: Student) -> str:
    for trial, (x1, x2) in enumerate(random_pairs(s.rng, ADD5_SHAPES)):
        got = _add5_on_fresh_add(s, x1, x2)
        s.record(**{f"output{trial}": got})
        if not close(got, x1 + x2 + 5):
            raise CheckFailed(
                f"{FRESH}, add(x1, x2) gave {describe(got)}, expected x1 + x2 + 5 = "
                f"{describe(x1 + x2 + 5)}. The 5 has to come from the hook itself, not from a "
                "change to the Add class or to the notebook's variables."
            )
    return "your hook adds 5 on fresh modules and inputs."


@verifies("forward_add5")
def verify_forward_add5(rng: torch.Generator, evidence: dict) -> None:
    x1, x2 = item(evidence, "x1"), item(evidence, "x2")
    expect_close(x1, x1, "x1")
    expect_close(x2, x2, "x2")
    expect_close(item(evidence, "output"), x1 + x2 + 5, "output")


@verifies("forward_add5", hidden=True)
def verify_forward_add5_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial, (x1, x2) in enumerate(random_pairs(rng, ADD5_SHAPES)):
        expect_close(item(evidence, f"output{trial}"), x1 + x2 + 5, f"output of trial {trial}")
