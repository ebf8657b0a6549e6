"""Checks for the backward notebook's quizzes: what the deprecated hook reports, and the order
of hook events in one forward and one backward pass, both found by running torch."""

from __future__ import annotations

import warnings

import torch

from autograder.checks.backward import random_inputs, random_w
from autograder.checks.registry import register
from autograder.checks.student import Student
from autograder.checks.trusted import Suspicious, expect_equal, item, verifies
from autograder.feedback import CheckFailed, describe
from autograder.models.backward import make_model
from autograder.tolerances import close

# ---- deprecated_quiz -----------------------------------------------------------------------------

QUIZ_NAMES = ("x1", "x2", "W", "x1 * x2", "output")


def _named_gradients(w, x1, x2) -> dict[str, torch.Tensor]:
    """Autograd's gradient of the output w.r.t. each tensor of forward, the product included."""
    a, b = x1.detach().clone().requires_grad_(), x2.detach().clone().requires_grad_()
    weight = w.detach().clone().requires_grad_()
    product = a * b  # forward's two steps, written out to name the intermediate tensor
    output = product * weight
    grads = torch.autograd.grad(output, [a, b, weight, product, output])
    return dict(zip(QUIZ_NAMES, grads, strict=True))


def _deprecated_grad_input() -> tuple[list[str], list[str]]:
    """What the deprecated hook's grad_input holds on a fresh Model, named, and torch's warnings."""
    while True:
        w, (x1, x2) = random_w(), random_inputs()
        named = _named_gradients(w, x1, x2)
        values = list(named.values())
        if not any(close(p, q) for i, p in enumerate(values) for q in values[i + 1 :]):
            break
    seen = []
    model = make_model(w)
    # The deprecation warning is what this part of the notebook is about: record it here so it
    # does not show up as a note under the student's answer.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with model.register_backward_hook(lambda module, gi, go: seen.append(gi)):
            model(x1, x2).backward()
    names = []
    for grad in seen[0]:
        match = [name for name, t in named.items() if grad is not None and close(grad, t)]
        names.append(match[0] if match else "?")
    return names, sorted({warning.category.__name__ for warning in caught})


def _squash(name: str) -> str:
    return "".join(name.split()).lower()


def _names(s: Student, variable: str, allowed: str) -> list[str]:
    """The student's answer to a quiz answered with a list of names (strings)."""
    got = s.get(variable, hint=f"Fill in `{variable}` in the cell above.")
    s.record(**{variable: got})
    if not isinstance(got, list | tuple) or not all(isinstance(g, str) for g in got):
        raise CheckFailed(
            f"`{variable}` should be a list of names from {allowed}, but it is {describe(got)}."
        )
    return list(got)


@register("deprecated_quiz")
def deprecated_quiz(s: Student) -> str:
    allowed = ", ".join(repr(n) for n in QUIZ_NAMES)
    got = _names(s, "deprecated_grad_input", allowed)
    known = {_squash(n): n for n in QUIZ_NAMES}
    for entry in got:
        if _squash(entry) not in known:
            raise CheckFailed(f"{entry!r} is not one of the names to choose from: {allowed}.")
    expected, warned = _deprecated_grad_input()
    if len(got) != len(expected):
        raise CheckFailed(
            f"the deprecated hook's grad_input has {len(expected)} entries on this Model (print "
            f"it in the demo above), but you listed {len(got)}."
        )
    for index, (entry, want) in enumerate(zip(got, expected, strict=True)):
        if known[_squash(entry)] != want:
            raise CheckFailed(
                f"grad_input[{index}] is not the gradient w.r.t. {known[_squash(entry)]!r}. The "
                "old hook sits on the last operation of forward, `output * self.W`: its grad_input "
                "holds the gradients w.r.t. that operation's inputs. Compare the values printed "
                "in the demo with x1, x2 and W."
            )
    return (
        f"the deprecated hook's grad_input holds the gradients w.r.t. {expected}, not x1 and x2 "
        f"(and torch warned: {', '.join(warned) or 'nothing'})."
    )


@verifies("deprecated_quiz", independent=True)
def verify_deprecated_quiz(rng: torch.Generator, evidence: dict) -> None:
    got = item(evidence, "deprecated_grad_input")
    known = {_squash(n): n for n in QUIZ_NAMES}
    if type(got) is not list or not all(type(g) is str and _squash(g) in known for g in got):
        raise Suspicious("deprecated_grad_input is not a list of the quiz's names")
    expect_equal([known[_squash(g)] for g in got], _deprecated_grad_input()[0], "the answer")


# ---- event_order ---------------------------------------------------------------------------------

EVENTS = {
    "pre_hook": "the forward pre-hook runs inside model(...) before forward.",
    "forward": "forward itself runs between the forward pre-hook and the forward hook.",
    "forward_hook": "the forward hook runs inside model(...) right after forward returns.",
    "output_hook": "backward starts from `output`: its tensor hook sees the first gradient.",
    "backward_pre_hook": "the full backward pre-hook runs as soon as the gradient w.r.t. the "
    "module's output is known, before any gradient inside the module.",
    "W_hook": "W's gradient is computed inside the module, by the last operation of forward, "
    "before the gradients w.r.t. the module's inputs.",
    "backward_hook": "the full backward hook runs once the gradients w.r.t. the module's inputs "
    "are ready, and before they reach x1, since it may replace them.",
    "x1_hook": "x1's tensor hook sees what the full backward hook passed on, so it comes after it.",
}


def _actual_order() -> list[str]:
    """Run the notebook's event setup on a fresh checker Model and record what torch does."""
    events: list[str] = []
    model = make_model(log=events.append)
    model.register_forward_pre_hook(lambda module, args: events.append("pre_hook"))
    model.register_forward_hook(lambda module, args, output: events.append("forward_hook"))
    model.register_full_backward_pre_hook(lambda module, go: events.append("backward_pre_hook"))
    model.register_full_backward_hook(lambda module, gi, go: events.append("backward_hook"))
    model.W.register_hook(lambda grad: events.append("W_hook"))
    x1, x2 = random_inputs()
    x1.register_hook(lambda grad: events.append("x1_hook"))
    output = model(x1, x2)
    output.register_hook(lambda grad: events.append("output_hook"))
    output.backward()
    return events


@register("event_order")
def event_order(s: Student) -> str:
    allowed = ", ".join(repr(n) for n in EVENTS)
    got = _names(s, "predicted_order", allowed)
    unknown = [g for g in got if g not in EVENTS]
    if unknown:
        raise CheckFailed(f"{unknown[0]!r} is not an event name; choose from {allowed}.")
    missing = [name for name in EVENTS if name not in got]
    doubled = sorted({g for g in got if got.count(g) > 1})
    if missing or doubled:
        parts = [f"list every event exactly once ({len(EVENTS)} names)."]
        if missing:
            parts.append(f"Missing: {', '.join(missing)}.")
        if doubled:
            parts.append(f"More than once: {', '.join(doubled)}.")
        raise CheckFailed(" ".join(parts))
    actual = _actual_order()
    for step, (predicted, happened) in enumerate(zip(got, actual, strict=True), start=1):
        if predicted != happened:
            right = f" Steps 1–{step - 1} are right." if step > 1 else ""
            raise CheckFailed(
                f"step {step} is wrong: you predicted {predicted!r}, but torch ran "
                f"{happened!r} there: {EVENTS[happened]}{right}"
            )
    return "your prediction matches what torch does: " + " → ".join(actual) + "."


@verifies("event_order", independent=True)
def verify_event_order(rng: torch.Generator, evidence: dict) -> None:
    expect_equal(item(evidence, "predicted_order"), _actual_order(), "predicted_order")
