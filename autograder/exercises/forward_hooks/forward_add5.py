"""forward_add5: a forward hook registered on `add` makes it return x1 + x2 + 5."""

from __future__ import annotations

import ast
import inspect
import textwrap

import torch

from autograder.exercises.forward_hooks.models import make_add
from autograder.exercises.kit.evidence import random_pairs
from autograder.exercises.kit.judge import expect_close, item
from autograder.exercises.kit.student import Student, is_stub, require_arity
from autograder.feedback import CheckFailed, NotDoneYet, describe
from autograder.i18n import N_, _
from autograder.tolerances import close

HINTS = [
    N_("A forward hook that returns something other than `None` replaces the module's output."),
    N_("Build a new tensor from `output` and return it; assigning to a local name does nothing."),
]
SHAPES = [(1,), (1,), (4,)]  # the hidden check's trials
FIX = "return output + 5"


def _registered(s: Student) -> list:
    """The forward hooks on the notebook's `add`, whatever their names."""
    add = s.get("add")
    hooks = [h for h in s.hooks_on(add, "forward") if not is_stub(h)]
    if not hooks:
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
    return hooks


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
    if returned is None and _assigns(hook, "output"):
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


def _assigns(fn, name: str) -> bool:
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False
    targets = [
        t
        for n in ast.walk(tree)
        if isinstance(n, ast.Assign | ast.AugAssign)
        for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
    ]
    return any(isinstance(t, ast.Name) and t.id == name for t in targets)


def visible(s: Student) -> str:
    hooks = _registered(s)
    a, b = random_pairs(s.rng, [(1,)])[0]
    fresh = _on_fresh_add(s, hooks, a, b)
    x1, x2, output = s.get("x1"), s.get("x2"), s.get("output")
    s.record(x1=x1, x2=x2, output=output)
    if close(output, x1 + x2 + 5):
        return _("the output is x1 + x2 + 5.")
    if close(fresh, a + b):
        raise _why_unchanged(s, hooks)
    for times in range(2, 5):
        if close(output, x1 + x2 + 5 * times):
            raise CheckFailed(
                _(
                    "the output is x1 + x2 + {total}: your hook ran {times} times, so it is "
                    "registered {times} times on `add`. Run the answer cell again: it starts from "
                    "a fresh Add, so only one hook is registered."
                ).format(total=5 * times, times=times)
            )
    raise CheckFailed(
        _("expected output = x1 + x2 + 5 = {expected}, got {got}.").format(
            expected=describe(x1 + x2 + 5), got=describe(output)
        )
    )


def hidden(s: Student) -> str:
    hooks = _registered(s)
    for trial, (x1, x2) in enumerate(random_pairs(s.rng, SHAPES)):
        got = _on_fresh_add(s, hooks, x1, x2)
        s.record(**{f"output{trial}": got})
        if not close(got, x1 + x2 + 5):
            if close(got, x1 + x2):
                raise _why_unchanged(s, hooks)
            raise CheckFailed(
                _(
                    "On a fresh Add with new inputs, the hook registered on `add` gave {got}, "
                    "expected x1 + x2 + 5 = {expected}."
                ).format(got=describe(got), expected=describe(x1 + x2 + 5))
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
