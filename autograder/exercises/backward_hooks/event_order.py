"""event_order: the order in which every kind of hook runs in one forward and one backward
pass, found by running torch."""

from __future__ import annotations

import torch

from autograder.exercises.backward_hooks.models import make_model
from autograder.exercises.kit.judge import expect_equal, item
from autograder.exercises.kit.student import Student
from autograder.feedback import CheckFailed, describe
from autograder.i18n import N_, _

HINTS = [
    N_("The forward pass comes first: pre-hook, `forward`, forward hook."),
    N_(
        "Backward starts at `output`, so the hook on `output` runs before anything inside the "
        "model."
    ),
    N_(
        "A full backward hook may replace `grad_input`, so whatever reads the gradient of `x1` "
        "waits for it; the gradient of `W` does not."
    ),
]
# When each event runs, said of the event itself: a wrong step is told when the event the
# student put there runs, not which event does.
WHEN = {
    "pre_hook": N_("The forward pre-hook runs inside `model(...)`, before `forward`."),
    "forward": N_("`forward` itself runs between the forward pre-hook and the forward hook."),
    "forward_hook": N_("The forward hook runs inside `model(...)`, right after `forward` returns."),
    "output_hook": N_(
        "The tensor hook on `output` runs when the gradient w.r.t. `output` is computed, and "
        "backward starts from `output`."
    ),
    "backward_pre_hook": N_(
        "The full backward pre-hook runs once the gradient w.r.t. the module's output is "
        "known, before any gradient inside the module is computed."
    ),
    "W_hook": N_(
        "The tensor hook on W runs when W's gradient is computed, inside the module, by the last "
        "operation of `forward`."
    ),
    "backward_hook": N_(
        "The full backward hook runs once the gradients w.r.t. the module's inputs are ready, "
        "before they are passed on, since it may replace them."
    ),
    "x1_hook": N_(
        "The tensor hook on x1 sees the gradient that the full backward hook passed on to x1."
    ),
}


def actual_order() -> list[str]:
    """Run the notebook's event set-up on a fresh checker Model and record what torch does."""
    events: list[str] = []
    model = make_model(log=events.append)
    model.register_forward_pre_hook(lambda module, args: events.append("pre_hook"))
    model.register_forward_hook(lambda module, args, output: events.append("forward_hook"))
    model.register_full_backward_pre_hook(lambda module, go: events.append("backward_pre_hook"))
    model.register_full_backward_hook(lambda module, gi, go: events.append("backward_hook"))
    model.W.register_hook(lambda grad: events.append("W_hook"))
    # Inputs of its own: the notebook's random numbers stay as the notebook left them.
    x1, x2 = torch.full((1,), 0.5, requires_grad=True), torch.full((1,), 0.25, requires_grad=True)
    x1.register_hook(lambda grad: events.append("x1_hook"))
    output = model(x1, x2)
    output.register_hook(lambda grad: events.append("output_hook"))
    output.backward()
    return events


def visible(s: Student) -> str:
    allowed = ", ".join(repr(name) for name in WHEN)
    got = s.get(
        "predicted_order", hint=_("Set `predicted_order` in the answer cell above, then run it.")
    )
    s.record(predicted_order=got)
    if not isinstance(got, list | tuple) or not all(isinstance(g, str) for g in got):
        raise CheckFailed(
            _("`predicted_order` should be a list of event names, but it is {got}.").format(
                got=describe(got)
            )
        )
    got = list(got)
    unknown = [name for name in got if name not in WHEN]
    if unknown:
        raise CheckFailed(
            _("{name!r} is not an event name; choose from {allowed}.").format(
                name=unknown[0], allowed=allowed
            )
        )
    missing = [name for name in WHEN if name not in got]
    doubled = sorted({name for name in got if got.count(name) > 1})
    if missing or doubled:
        parts = [_("list every event exactly once ({count} names).").format(count=len(WHEN))]
        if missing:
            parts.append(_("Missing: {names}.").format(names=", ".join(missing)))
        if doubled:
            parts.append(_("More than once: {names}.").format(names=", ".join(doubled)))
        raise CheckFailed(" ".join(parts))
    actual = actual_order()
    for step, (predicted, happened) in enumerate(zip(got, actual, strict=True), start=1):
        if predicted != happened:
            right = _(" Steps 1–{last} are right.").format(last=step - 1) if step > 1 else ""
            raise CheckFailed(
                _(
                    "step {step} is wrong: {predicted!r} does not run there. When does it run? "
                    "{when}{right} Think it through again; the cell under this check prints "
                    "what torch does, once you have made up your mind."
                ).format(step=step, predicted=predicted, when=_(WHEN[predicted]), right=right)
            )
    return _("your prediction matches what torch does: {order}.").format(order=" → ".join(actual))


def judge_visible(rng: torch.Generator, evidence: dict) -> None:
    expect_equal(item(evidence, "predicted_order"), actual_order(), "predicted_order")
