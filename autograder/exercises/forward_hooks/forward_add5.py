"""forward_add5: a forward hook registered on `add` makes it return x1 + x2 + 5."""

from __future__ import annotations

import torch

from autograder.exercises.forward_hooks.common import (
    left_by_an_earlier_run,
    registered_repeatedly,
    require_original_add,
    run_cell_not_run_since,
    split_hooks,
)
from autograder.exercises.forward_hooks.models import make_add
from autograder.exercises.kit.evidence import random_pairs
from autograder.exercises.kit.judge import expect_close, item
from autograder.exercises.kit.student import Student, assigns, is_stub, require_arity
from autograder.feedback import CheckFailed, NotDoneYet, describe
from autograder.i18n import N_, _
from autograder.tolerances import close

HINTS = [
    N_("A forward hook that returns something other than `None` replaces the module's output."),
    N_("Build a new tensor from `output` and return it; assigning to a local name does nothing."),
]
SHAPES = [(1,), (1,), (4,)]  # the hidden check's trials
FIX = "return output + 5"
FRESH = "add = Add()"


def _registered(s: Student) -> tuple[list, list]:
    """(hooks, stale hooks): the forward hooks on the notebook's `add`, whatever their names;
    stale ones are those an earlier run of a cell left there."""
    add = s.get("add")
    hooks, stale = split_hooks(s, add, "forward")
    if not hooks:
        if stale:
            raise left_by_an_earlier_run("add", stale, FRESH)
        pres, _stale = split_hooks(s, add, "forward_pre")
        if pres:
            raise CheckFailed(
                _(
                    "`{name}` is registered on `add` as a pre-hook, which runs before `forward` "
                    "and sees only the inputs: it cannot change the output. A forward hook, "
                    "registered with `register_forward_hook`, runs after `forward` and can "
                    "return a new output."
                ).format(name=getattr(pres[-1], "__name__", "hook"))
            )
        written = s.namespace.get("hook")
        if s.hooks_on(add, "forward") or not callable(written) or is_stub(written):
            raise NotDoneYet(
                _(
                    "`hook` does nothing yet: write its body, then run the answer "
                    "cell and the cells under it."
                )
            )
        raise CheckFailed(
            _(
                "no forward hook is registered on `add`, the module the next cell "
                "calls: hooks run only on the module they are registered on."
            )
        )
    for fn in hooks:
        require_arity(fn, getattr(fn, "__name__", "hook"), "hook(module, input, output)", 3)
    return hooks, stale


def _on_fresh_add(s: Student, hooks: list, x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
    add = make_add()
    handles = [add.register_forward_hook(fn) for fn in hooks]
    try:
        return s.call(_("`add(x1, x2)` with your hook registered"), add, x1, x2)
    finally:
        for handle in handles:
            handle.remove()


def _why_unchanged(s: Student, hooks: list) -> CheckFailed:
    """The output came out unchanged: say why, from what the hook does."""
    hook = hooks[-1]
    x = torch.ones(1)
    returned = s.call(_("your hook"), hook, make_add(), (x, x), x + x)
    if returned is None and assigns(hook, "output"):
        return CheckFailed(
            _(
                "your hook does not change the output: it returns None. Assigning to `output` "
                "inside the hook only points the hook's own local name at a new tensor; what "
                "`add(x1, x2)` returns comes from the hook's return value."
            ),
            fix=FIX,
        )
    if returned is None:
        return CheckFailed(
            _(
                "your hook returns None, so `add` keeps its output: a forward hook replaces the "
                "output only with the value it returns."
            ),
            fix=FIX,
        )
    return CheckFailed(
        _(
            "your hook returns {got} for inputs 1 and 1 (output 2), so the output stays x1 + x2."
        ).format(got=describe(returned))
    )


def _added(got: object, x1: torch.Tensor, x2: torch.Tensor) -> float | None:
    """The constant the hooks add to x1 + x2, when they add one."""
    if not isinstance(got, torch.Tensor) or got.shape != x1.shape:
        return None
    added = (got - (x1 + x2)).detach()
    return float(added.flatten()[0]) if close(added, added.flatten()[0].expand_as(added)) else None


def _wrong(s: Student, hooks: list, got: object, x1: torch.Tensor, x2: torch.Tensor) -> CheckFailed:
    """Why the output is `got` rather than x1 + x2 + 5."""
    if failure := registered_repeatedly("add", hooks):
        return failure
    if close(got, x1 + x2):
        return _why_unchanged(s, hooks)
    added = _added(got, x1, x2)
    if added is not None:
        return CheckFailed(
            _(
                "your hooks add {added:.4g} to x1 + x2, not 5: expected {expected}, got {got}."
            ).format(added=added, expected=describe(x1 + x2 + 5), got=describe(got))
        )
    return CheckFailed(
        _("expected output = x1 + x2 + 5 = {expected}, got {got}.").format(
            expected=describe(x1 + x2 + 5), got=describe(got)
        )
    )


def visible(s: Student) -> str:
    require_original_add(s)
    hooks, stale = _registered(s)
    a, b = random_pairs(s.rng, [(1,)])[0]
    fresh = _on_fresh_add(s, hooks, a, b)  # errors and their causes first
    x1, x2, output = s.get("x1"), s.get("x2"), s.get("output")
    s.record(x1=x1, x2=x2, output=output)
    if close(output, x1 + x2 + 5):
        return _("the output is x1 + x2 + 5.")
    if stale:
        raise left_by_an_earlier_run("add", stale, FRESH)
    if close(fresh, a + b + 5):
        raise run_cell_not_run_since("Add", "output", "add(x1, x2)")
    raise _wrong(s, hooks, output, x1, x2)


def hidden(s: Student) -> str:
    require_original_add(s)
    hooks, _stale = _registered(s)
    for trial, (x1, x2) in enumerate(random_pairs(s.rng, SHAPES)):
        got = _on_fresh_add(s, hooks, x1, x2)
        s.record(**{f"output{trial}": got})
        if not close(got, x1 + x2 + 5):
            failure = _wrong(s, hooks, got, x1, x2)
            raise CheckFailed(
                _("On a fresh Add with new inputs of shape {shape}: {failure}").format(
                    shape=tuple(x1.shape), failure=failure.message
                ),
                fix=failure.fix,
            )
    return _("your hook adds 5 on fresh modules and inputs.")


def judge_visible(rng: torch.Generator, evidence: dict) -> None:
    x1, x2 = item(evidence, "x1"), item(evidence, "x2")
    expect_close(x1, x1, "x1")
    expect_close(x2, x2, "x2")
    expect_close(item(evidence, "output"), x1 + x2 + 5, "output")


def judge_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial, (x1, x2) in enumerate(random_pairs(rng, SHAPES)):
        expect_close(item(evidence, f"output{trial}"), x1 + x2 + 5, f"output of trial {trial}")
