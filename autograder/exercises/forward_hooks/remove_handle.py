"""remove_handle: `capture_output(module, *inputs)` captures a module's output with a forward hook
and removes the hook before it returns (seed 004: `register_*` returns a handle)."""

from __future__ import annotations

import torch

from autograder.exercises.forward_hooks.models import make_probe_add
from autograder.exercises.kit.evidence import random_pairs
from autograder.exercises.kit.judge import expect_close, item
from autograder.exercises.kit.student import Student, registered_hooks
from autograder.feedback import CheckFailed, describe
from autograder.i18n import N_, _, ngettext
from autograder.tolerances import close

HINTS = [
    N_("Keep the output in a list created inside `capture_output`; the hook appends to it."),
    N_(
        "The handle that `register_forward_hook` returns works in a `with` block: the hook is "
        "removed when the block ends, even after an error."
    ),
    N_("Call `module(*inputs)` inside the `with` block and return the stored output after it."),
]
SHAPES = {False: [(1,)], True: [(2,), (3, 1)]}  # the visible and the hidden check's trials
FIX_CODE = "with module.register_forward_hook(hook):\n    module(*inputs)"
FIX_NOTE = N_("the hook runs here, and is removed when the block ends")


def _fix() -> str:
    """The fix, its comment in the notebook's language."""
    return f"{FIX_CODE}   # {_(FIX_NOTE)}"


def _how_it_was_used(module, raised: bool) -> CheckFailed | None:
    """What the probe module saw that explains a missing or wrong capture, if anything (after
    an error, a hook never registered is no cause: the error may have come first)."""
    if not module.registered and not raised:
        return CheckFailed(
            _(
                "`capture_output` never registers a forward hook: the exercise is to get the "
                "output through one, as you would for a layer deep inside a model whose output "
                "the caller never sees. Register a hook that stores the output, call the module, "
                "then remove the hook."
            )
        )
    if module.direct_forwards and not module.calls:
        return CheckFailed(
            _(
                "`capture_output` calls `module.forward(...)`, which runs the computation alone: "
                "hooks run only when the module is called as `module(...)`, through "
                "`nn.Module.__call__`, which calls the pre-hooks, `forward` and then the forward "
                "hooks. So a forward hook never runs there and stores nothing."
            )
        )
    if module.calls and not module.hooks_seen:
        return CheckFailed(
            _(
                "the module ran while no forward hook was registered on it: `capture_output` "
                "calls it after the hook was removed (or before registering it), so the hook "
                "never saw an output. Call the module while the hook is registered."
            ),
            fix=_fix(),
        )
    return None


def _capture(s: Student, x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
    capture_output = s.function("capture_output")
    module = make_probe_add()
    try:
        got = s.call(_("`capture_output(module, x1, x2)`"), capture_output, module, x1, x2)
    except CheckFailed as failure:
        cause = _how_it_was_used(module, raised=True)
        if cause is None:
            raise
        raise CheckFailed(
            _("{failure} The cause: {cause}").format(failure=failure.message, cause=cause.message),
            fix=cause.fix,
        ) from None
    if cause := _how_it_was_used(module, raised=False):
        raise cause
    left = len(registered_hooks(module, "forward"))
    if left:
        raise CheckFailed(
            ngettext(
                "{count} forward hook is still registered on the module after "
                "`capture_output` returned. A hook left behind runs again on every later call "
                "(and keeps alive whatever it stores) for as long as the module exists: remove "
                "it before returning, with the handle that `register_forward_hook` gave you.",
                "{count} forward hooks are still registered on the module after "
                "`capture_output` returned. A hook left behind runs again on every later call "
                "(and keeps alive whatever it stores) for as long as the module exists: remove "
                "it before returning, with the handle that `register_forward_hook` gave you.",
                left,
            ).format(count=left),
            fix=_fix(),
        )
    if not close(got, x1 + x2):
        if isinstance(got, list | tuple) and len(got) == 1 and close(got[0], x1 + x2):
            raise CheckFailed(
                _(
                    "`capture_output` returned the {kind} your hook filled ({got}), not the "
                    "output itself: return the entry it holds."
                ).format(kind=type(got).__name__, got=describe(got))
            )
        raise CheckFailed(
            _("expected the output {expected}, got {got}.").format(
                expected=describe(x1 + x2), got=describe(got)
            )
        )
    return got


def visible(s: Student) -> str:
    for trial, (x1, x2) in enumerate(random_pairs(s.rng, SHAPES[False])):
        s.record(**{f"output{trial}": _capture(s, x1, x2)})
    return _("capture_output captures the output with a hook and removes it afterwards.")


def hidden(s: Student) -> str:
    for trial, (x1, x2) in enumerate(random_pairs(s.rng, SHAPES[True])):
        s.record(**{f"output{trial}": _capture(s, x1, x2)})
    return _("capture_output works on fresh modules and inputs, and leaves no hook behind.")


def _judge(rng: torch.Generator, evidence: dict, hidden: bool) -> None:
    # Proves the captured values; that a hook did it and was removed is judged in the kernel.
    for trial, (x1, x2) in enumerate(random_pairs(rng, SHAPES[hidden])):
        expect_close(item(evidence, f"output{trial}"), x1 + x2, f"output of trial {trial}")


def judge_visible(rng: torch.Generator, evidence: dict) -> None:
    _judge(rng, evidence, hidden=False)


def judge_hidden(rng: torch.Generator, evidence: dict) -> None:
    _judge(rng, evidence, hidden=True)
