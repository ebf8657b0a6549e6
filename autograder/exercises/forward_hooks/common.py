"""What several forward_hooks exercises check alike: that the notebook's `Add` still only adds,
which hooks on a module an earlier run of a cell left there, and a quiz's answer variable."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from autograder.exercises.kit.student import Student, is_stub, redefined
from autograder.feedback import CheckFailed, NotDoneYet, describe
from autograder.i18n import N_, _
from autograder.tolerances import close

RESTORE_ADD = N_(
    "Run the cell that defines `class Add` (under \u201cThe `Add` module\u201d) to restore it, "
    "then your answer cell again and the cells under it."
)


def require_original_add(s: Student, module_name: str = "add") -> None:
    """Fail when the notebook's `Add` no longer only adds: a new `Add()` with no hook already
    changes the output or fills `answer` (the class was changed), or the notebook's module has a
    `forward` of its own (replaced on the instance)."""
    module = s.namespace.get(module_name)
    if isinstance(module, nn.Module) and "forward" in vars(module):
        raise CheckFailed(
            _(
                "`{module}.forward` has been replaced on the module itself, so `{module}(x1, x2)` "
                "no longer runs the forward of the `Add` class: this exercise changes what the "
                "module computes with hooks only. Take that assignment out of your answer cell, "
                "then run the cell again: its first line `{module} = Add()` makes a fresh module."
            ).format(module=module_name)
        )
    classes = [s.get("Add")]
    if isinstance(module, nn.Module) and type(module).__name__ == "Add":
        classes.append(type(module))
    for cls in {id(c): c for c in classes}.values():
        if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
            continue
        fresh = s.call(_("`Add()`"), cls)
        one, two = torch.tensor([1.0]), torch.tensor([2.0])
        with s.swapped_global([cls.forward], "answer", []) as answer_now:
            got = s.call(_("a new `Add()` with no hook"), fresh, one, two)
            filled = answer_now()
        if not close(got, one + two):
            did = _("returns {got} for the inputs 1 and 2 (an `Add` returns 3)").format(
                got=describe(got)
            )
        elif not (isinstance(filled, list) and not filled):
            did = _("already puts {got} into `answer`").format(got=describe(filled))
        else:
            continue
        raise CheckFailed(
            _(
                "the `Add` class itself has been changed: a new `Add()`, with no hook registered, "
                "{did}. The checks run your hooks on the module as the notebook defines it, and a "
                "change to a class stays until the cell that defines it runs again. "
            ).format(did=did)
            + _(RESTORE_ADD)
        )


def split_hooks(s: Student, module: nn.Module, kind: str) -> tuple[list, list]:
    """(current, stale): the hooks of `kind` on `module` that do something, in the order they
    run, split into those of the latest run of their cell and those an earlier run left there
    (their names now name other functions). Stubs are left out: they do nothing."""
    registered = [h for h in s.hooks_on(module, kind) if not is_stub(h)]
    return [h for h in registered if not redefined(h)], [h for h in registered if redefined(h)]


def left_by_an_earlier_run(module: str, stale: list[Callable[..., Any]], fresh: str) -> CheckFailed:
    """The failure for hooks that an earlier run of the answer cell left on `module`."""
    names = ", ".join(sorted({f"`{getattr(h, '__name__', 'hook')}`" for h in stale}))
    return CheckFailed(
        _(
            "`{module}` still carries hooks that an earlier run registered ({names}, as they were "
            "then: the functions now under those names are new ones). They keep running beside "
            "your new hooks, so what you see is not your current code's result. That happens when "
            "the answer cell runs without its first line `{fresh}`, which gives it a new module "
            "each time: put that line back at the top of the answer cell, run the cell again, "
            "then the cells under it."
        ).format(module=module, names=names, fresh=fresh)
    )


def registered_repeatedly(module: str, hooks: list[Callable[..., Any]]) -> CheckFailed | None:
    """The failure for a hook registered more than once on `module` by one run of a cell."""
    counts = Counter(id(h) for h in hooks)
    for hook in hooks:
        if counts[id(hook)] > 1:
            return CheckFailed(
                _(
                    "`{name}` is registered {times} times on `{module}`, so it runs {times} times "
                    "on every call: each registration adds one more run. Register it once."
                ).format(
                    name=getattr(hook, "__name__", "hook"), times=counts[id(hook)], module=module
                )
            )
    return None


def quiz_answer(s: Student, name: str) -> Any:
    """The value of the quiz variable `name`; NotDoneYet while it is missing or `...`."""
    value = s.get(
        name,
        hint=_("Write your answer as `{name} = ...` in the answer cell above, then run it.").format(
            name=name
        ),
    )
    if value is ...:
        raise NotDoneYet(
            _("`{name}` is still `...`: replace it with your answer.").format(name=name)
        )
    s.record(**{name: value})
    return value


def run_cell_not_run_since(module: str, name: str, call: str) -> NotDoneYet:
    """The answer works on a fresh module, but the notebook's `name` does not show it: the cell
    under the answer cell, which makes `name`, has not run since the answer cell did."""
    return NotDoneYet(
        _(
            "your answer works on a fresh `{module}`, but `{name}` does not show it yet: run "
            "the cell under your answer cell (it calls `{call}`), then this check again."
        ).format(module=module, name=name, call=call)
    )
