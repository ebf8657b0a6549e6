"""Hooks a student's function left on a model: after it returned, and after a forward that
raised inside it (which only a `finally:` block cleans up after)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from torch import nn

from autograder.exercises.kit.student import HOOK_DICTS, registered_hooks
from autograder.feedback import CheckFailed
from autograder.i18n import _


def hooks_left(model: nn.Module) -> list[str]:
    """'<count> on <class> (<path>)' for every module of `model` that holds module hooks."""
    left = []
    for path, module in model.named_modules():
        count = sum(len(registered_hooks(module, kind)) for kind in HOOK_DICTS)
        if count:
            where = path or _("the model itself")
            left.append(
                _("{count} on {kind} ({where})").format(
                    count=count, kind=type(module).__name__, where=where
                )
            )
    return left


def require_no_hooks(model: nn.Module, fn_name: str) -> None:
    """Fail when `fn_name`, which just returned, left module hooks on `model`."""
    left = hooks_left(model)
    if left:
        raise CheckFailed(
            _(
                "hooks are still registered after `{fn}` returned: {left}. They would keep "
                "running on every later call of the model. Keep every handle that "
                "`register_*_hook` returns, and remove each one before the function returns."
            ).format(fn=fn_name, left="; ".join(left))
        )


def require_removed_on_error(
    call: Callable[[], object], model: nn.Module, fn_name: str, bad_input: str
) -> None:
    """`call()` runs the student's `fn_name` with an input (`bad_input` says which) that makes
    `model`'s forward raise; no hook may be left on `model` afterwards."""
    with contextlib.suppress(Exception):  # the forward's error, which the function passes on
        call()
    left = hooks_left(model)
    if left:
        raise CheckFailed(
            _(
                "when the model's forward raises inside `{fn}` (here: {bad_input}), hooks stay "
                "registered: {left}. The lines that remove them never ran: the error left the "
                "function before it got there. Code in a `finally:` block runs whether or not "
                "its `try:` block raised."
            ).format(fn=fn_name, bad_input=bad_input, left="; ".join(left))
        )
