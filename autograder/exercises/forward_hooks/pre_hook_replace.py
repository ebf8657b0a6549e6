"""pre_hook_replace: a forward pre-hook registered on `add` returns new inputs, so that
`add(x1, x2)` computes 2 * x1 + x2 (seed 004: a pre-hook replaces the inputs by returning them)."""

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
from autograder.exercises.kit.student import Student, is_stub, require_arity
from autograder.feedback import CheckFailed, NotDoneYet, describe
from autograder.i18n import N_, _
from autograder.tolerances import close

HINTS = [
    N_("A pre-hook receives `(module, input)`, where `input` is the tuple `(x1, x2)`."),
    N_("Unpack the tuple, make a new tensor for the first entry and keep the second one."),
    N_("Return a tuple with one entry per argument of `forward`, in the same order."),
]
SHAPES = [(1,), (3,)]  # the hidden check's trials
FIX = "return (input[0] * 2, input[1])"
FRESH = "add = Add()"


def _name(fn) -> str:
    return getattr(fn, "__name__", "double_x1")


def _registered(s: Student) -> tuple[list, list]:
    """(pre-hooks, stale pre-hooks) on the notebook's `add`, whatever their names."""
    add = s.get("add")
    pres, stale = split_hooks(s, add, "forward_pre")
    if not pres:
        if stale:
            raise left_by_an_earlier_run("add", stale, FRESH)
        forward, _stale = split_hooks(s, add, "forward")
        if forward:
            raise CheckFailed(
                _(
                    "`{name}` is registered on `add` as a forward hook, which runs after "
                    "`forward` has used the inputs: it can replace the output, not the inputs. "
                    "A pre-hook, registered with `register_forward_pre_hook`, runs before "
                    "`forward` and can hand it new inputs."
                ).format(name=_name(forward[-1]))
            )
        written = s.namespace.get("double_x1")
        if s.hooks_on(add, "forward_pre") or not callable(written) or is_stub(written):
            raise NotDoneYet(
                _(
                    "`double_x1` does nothing yet: write its body, then run the answer cell "
                    "and the cells under it."
                )
            )
        raise CheckFailed(
            _(
                "no pre-hook is registered on `add`, the module the next cell calls: hooks run "
                "only on the module they are registered on."
            )
        )
    for fn in pres:
        require_arity(fn, _name(fn), "double_x1(module, input)", 2)
    return pres, stale


def _returned(s: Student, fn, module, inputs: tuple) -> tuple:
    """The inputs `forward` gets after the pre-hook `fn`; a failure for what PyTorch cannot
    use as two inputs."""
    got = s.call(_("`{name}(module, (x1, x2))`").format(name=_name(fn)), fn, module, inputs)
    if got is None:
        return inputs
    if isinstance(got, tuple) and len(got) == len(inputs):
        return got
    if isinstance(got, tuple):
        why = _(
            "`{name}` returned a tuple of {count}, but `forward` takes two arguments (x1 and "
            "x2): the tuple a pre-hook returns becomes the inputs, one entry per argument."
        ).format(name=_name(fn), count=len(got))
    elif isinstance(got, list):
        why = _(
            "`{name}` returned a list ({got}). PyTorch takes new inputs only as a tuple: it wraps "
            "anything else, a list too, into a one-entry tuple, so `forward` would get your list "
            "as x1 and no x2."
        ).format(name=_name(fn), got=describe(got))
    else:
        why = _(
            "`{name}` returned {got}. PyTorch wraps a value that is not a tuple into a one-entry "
            "tuple, so `forward` would get one argument instead of two (x1 and x2): a pre-hook "
            "returns the inputs as a tuple, one entry per argument of `forward`."
        ).format(name=_name(fn), got=describe(got))
    raise CheckFailed(why, fix=FIX)


def _on_fresh_add(s: Student, pres: list, x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
    """The output of a fresh Add with these pre-hooks, after checking what each returns and
    that the caller's tensors stay as they were."""
    add = make_add()
    inputs = (x1.clone(), x2.clone())
    for fn in pres:
        inputs = _returned(s, fn, add, inputs)
    a, b = x1.clone(), x2.clone()
    handles = [add.register_forward_pre_hook(fn) for fn in pres]
    try:
        output = s.call(_("`add(x1, x2)` with your pre-hook registered"), add, a, b)
    finally:
        for handle in handles:
            handle.remove()
    if not (torch.equal(a, x1) and torch.equal(b, x2)):
        changed = "x1" if not torch.equal(a, x1) else "x2"
        raise CheckFailed(
            _(
                "your pre-hook changed the caller's `{name}` in place: after `add(x1, x2)` the "
                "tensor the caller passed in is itself different, and everything else that uses "
                "it sees the change. A pre-hook hands `forward` new inputs by returning them; "
                "build a new tensor instead of changing the one you received."
            ).format(name=changed),
            fix=FIX,
        )
    return output


def _wrong(pres: list, got: object, x1: torch.Tensor, x2: torch.Tensor) -> CheckFailed:
    """Why `add(x1, x2)` gave `got` rather than 2 * x1 + x2."""
    if failure := registered_repeatedly("add", pres):
        return failure
    if close(got, x1 + x2):
        return CheckFailed(
            _(
                "your pre-hook does not change the inputs: `add(x1, x2)` still returns x1 + x2 "
                "= {got}. A pre-hook changes the inputs only through the tuple it returns: "
                "assigning to `input` or to another name inside the hook changes nothing "
                "outside it."
            ).format(got=describe(got)),
            fix=FIX,
        )
    if close(got, x1 + 2 * x2):
        return CheckFailed(
            _(
                "`add(x1, x2)` returns x1 + 2 * x2: your pre-hook doubles x2, the tuple's second "
                "entry. The entries are in the order of forward's arguments: `input[0]` is x1."
            )
        )
    if close(got, 2 * (x1 + x2)):
        return CheckFailed(
            _(
                "`add(x1, x2)` returns 2 * (x1 + x2): your pre-hook doubles both inputs, but "
                "only x1 should change; x2 goes to `forward` as it came."
            )
        )
    return CheckFailed(
        _("expected 2 * x1 + x2 = {expected}, got {got}.").format(
            expected=describe(2 * x1 + x2), got=describe(got)
        )
    )


def visible(s: Student) -> str:
    require_original_add(s)
    pres, stale = _registered(s)
    a, b = random_pairs(s.rng, [(1,)])[0]
    fresh = _on_fresh_add(s, pres, a, b)  # errors and their causes first
    x1, x2, output = s.get("x1"), s.get("x2"), s.get("output")
    s.record(x1=x1, x2=x2, output=output)
    if close(output, 2 * x1 + x2):
        return _("the pre-hook doubles x1 before forward runs.")
    if stale:
        raise left_by_an_earlier_run("add", stale, FRESH)
    if not close(fresh, 2 * a + b):
        raise _wrong(pres, fresh, a, b)
    raise run_cell_not_run_since("Add", "output", "add(x1, x2)")


def hidden(s: Student) -> str:
    require_original_add(s)
    pres, _stale = _registered(s)
    for trial, (x1, x2) in enumerate(random_pairs(s.rng, SHAPES)):
        got = _on_fresh_add(s, pres, x1, x2)
        s.record(**{f"output{trial}": got})
        if not close(got, 2 * x1 + x2):
            failure = _wrong(pres, got, x1, x2)
            raise CheckFailed(
                _("On a fresh Add with new inputs of shape {shape}: {failure}").format(
                    shape=tuple(x1.shape), failure=failure.message
                ),
                fix=failure.fix,
            )
    return _("your pre-hook doubles x1 on fresh modules and inputs.")


def judge_visible(rng: torch.Generator, evidence: dict) -> None:
    x1, x2 = item(evidence, "x1"), item(evidence, "x2")
    expect_close(x1, x1, "x1")
    expect_close(x2, x2, "x2")
    expect_close(item(evidence, "output"), 2 * x1 + x2, "output")


def judge_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial, (x1, x2) in enumerate(random_pairs(rng, SHAPES)):
        expect_close(item(evidence, f"output{trial}"), 2 * x1 + x2, f"output of trial {trial}")
