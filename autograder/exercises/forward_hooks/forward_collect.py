"""forward_collect: a pre-hook and a forward hook on `add` collect x1, x2 and the output into
`answer`, in that order (the seed course's first task)."""

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
from autograder.exercises.kit.compare import compare_tensor_list
from autograder.exercises.kit.evidence import random_pairs
from autograder.exercises.kit.judge import expect_close, expect_list, item
from autograder.exercises.kit.student import Student, is_stub, require_arity
from autograder.feedback import CheckFailed, NotDoneYet, describe
from autograder.i18n import N_, _
from autograder.tolerances import close

HINTS = [
    N_("`input` is a tuple `(x1, x2)`: `answer` needs its two elements, not the tuple itself."),
    N_(
        "A list has a method that adds every element of an iterable at once; `append` adds one "
        "object."
    ),
    N_("The forward hook gets the output as its third argument: add it after the two inputs."),
]
SHAPES = [(1,), (1,), (3,)]  # the hidden check's trials
FRESH = "add = Add()"


def _registered(s: Student) -> tuple[list, list, list]:
    """(pre-hooks, forward hooks, stale hooks) on the notebook's `add`, whatever their names;
    stale ones are those an earlier run of a cell left there."""
    add = s.get("add")
    pres, stale_pres = split_hooks(s, add, "forward_pre")
    hooks, stale_hooks = split_hooks(s, add, "forward")
    stale = stale_pres + stale_hooks
    if not pres and not hooks:
        if stale:
            raise left_by_an_earlier_run("add", stale, FRESH)
        stubs_registered = s.hooks_on(add, "forward_pre") or s.hooks_on(add, "forward")
        named = [s.namespace.get(name) for name in ("pre_hook", "hook")]
        written = [fn for fn in named if callable(fn) and not is_stub(fn)]
        if stubs_registered or not written:
            raise NotDoneYet(
                _(
                    "`pre_hook` and `hook` do nothing yet: write their bodies, then "
                    "run the answer cell and the cells under it."
                )
            )
        raise CheckFailed(
            _(
                "no hook is registered on `add`, the module the next cell "
                "calls: hooks run only on the module they are registered on."
            )
        )
    if (not pres or not hooks) and stale:
        raise left_by_an_earlier_run("add", stale, FRESH)
    if not pres:
        raise CheckFailed(
            _(
                "`add` has a forward hook but no pre-hook: x1 and x2 reach a "
                "pre-hook, registered with `register_forward_pre_hook`."
            )
        )
    if not hooks:
        raise CheckFailed(
            _(
                "`add` has a pre-hook but no forward hook: the output reaches a "
                "forward hook, registered with `register_forward_hook`."
            )
        )
    for fn in pres:
        require_arity(fn, getattr(fn, "__name__", "pre_hook"), "pre_hook(module, input)", 2)
    for fn in hooks:
        require_arity(fn, getattr(fn, "__name__", "hook"), "hook(module, input, output)", 3)
    return pres, hooks, stale


def _collect(s: Student, pres: list, hooks: list, x1: torch.Tensor, x2: torch.Tensor):
    """Run these hooks on a fresh Add; return (its output, what `answer` got)."""
    add = make_add()
    with s.swapped_global([*pres, *hooks], "answer", []) as answer_now:
        handles = [add.register_forward_pre_hook(fn) for fn in pres]
        handles += [add.register_forward_hook(fn) for fn in hooks]
        try:
            output = s.call(_("`add(x1, x2)` with your hooks registered"), add, x1, x2)
        finally:
            for handle in handles:
                handle.remove()
        return output, answer_now()


def _repeats_each_value(answer: object, x1: torch.Tensor, x2: torch.Tensor) -> None:
    """Fail when one call with each hook registered once adds every value several times."""
    if not isinstance(answer, list) or len(answer) <= 3 or len(answer) % 3:
        return
    times = len(answer) // 3
    values = (x1, x2, x1 + x2)
    found = [next((i for i, v in enumerate(values) if close(got, v)), None) for got in answer]
    if all(found.count(i) == times for i in range(3)):
        raise CheckFailed(
            _(
                "one call of `add`, with each of your hooks registered once, puts every value "
                "into `answer` {times} times ({count} entries, expected 3): each hook runs once "
                "per call, so it should add its values once."
            ).format(times=times, count=len(answer))
        )


def _calls_piled_up(answer: object, x1: torch.Tensor, x2: torch.Tensor) -> None:
    """Fail when `answer` holds the values of several calls: the run cell ran again."""
    if not isinstance(answer, list) or len(answer) <= 3 or len(answer) % 3:
        return
    if not all(isinstance(v, torch.Tensor) and v.shape == x1.shape for v in answer):
        return
    triples = [answer[i : i + 3] for i in range(0, len(answer), 3)]
    last = triples[-1]
    if close(last[0], x1) and close(last[1], x2) and all(close(c, a + b) for a, b, c in triples):
        raise CheckFailed(
            _(
                "`answer` holds the values of {calls} calls of `add` ({count} entries): the cell "
                "under your answer cell ran {calls} times since the answer cell last ran, and "
                "each call adds three entries. Run the answer cell again (it starts `answer` "
                "empty), then the cell under it once."
            ).format(calls=len(triples), count=len(answer))
        )


def _holds(answer: object, x1: torch.Tensor, x2: torch.Tensor) -> bool:
    """Whether `answer` is [x1, x2, x1 + x2]."""
    try:
        compare_tensor_list(answer, [("x1", x1), ("x2", x2), ("output", torch.add(x1, x2))])
    except CheckFailed:
        return False
    return True


def _registered_once(pres: list, hooks: list) -> None:
    for kind in (pres, hooks):
        if failure := registered_repeatedly("add", kind):
            raise failure


def visible(s: Student) -> str:
    require_original_add(s)
    pres, hooks, stale = _registered(s)
    a, b = random_pairs(s.rng, [(1,)])[0]
    _output, fresh = _collect(s, pres, hooks, a, b)  # errors and their causes first
    x1, x2, answer = s.get("x1"), s.get("x2"), s.get("answer")
    s.record(x1=x1, x2=x2, answer=answer)
    try:
        compare_tensor_list(answer, [("x1", x1), ("x2", x2), ("output", torch.add(x1, x2))])
    except CheckFailed:
        if stale:
            raise left_by_an_earlier_run("add", stale, FRESH) from None
        _registered_once(pres, hooks)
        _repeats_each_value(fresh, a, b)
        _calls_piled_up(answer, x1, x2)
        if _holds(fresh, a, b):
            raise run_cell_not_run_since("Add", "answer", "add(x1, x2)") from None
        raise
    return _("`answer` holds [x1, x2, output], in that order.")


def hidden(s: Student) -> str:
    require_original_add(s)
    pres, hooks, _stale = _registered(s)
    for trial, (x1, x2) in enumerate(random_pairs(s.rng, SHAPES)):
        output, answer = _collect(s, pres, hooks, x1, x2)
        s.record(**{f"output{trial}": output, f"answer{trial}": answer})
        fresh = _("On a fresh Add with new inputs of shape {shape}").format(shape=tuple(x1.shape))
        if not close(output, x1 + x2):
            raise CheckFailed(
                _(
                    "{fresh}, your hooks changed the output to {got}; collecting values must "
                    "leave it at x1 + x2."
                ).format(fresh=fresh, got=describe(output))
            )
        try:
            compare_tensor_list(answer, [("x1", x1), ("x2", x2), ("output", x1 + x2)])
        except CheckFailed as failure:
            _registered_once(pres, hooks)
            _repeats_each_value(answer, x1, x2)
            raise CheckFailed(f"{fresh}: {failure.message}") from None
    return _("your hooks collect [x1, x2, output] on fresh modules and inputs.")


def judge_visible(rng: torch.Generator, evidence: dict) -> None:
    x1, x2 = item(evidence, "x1"), item(evidence, "x2")
    expect_close(x1, x1, "x1")  # plain tensors, not look-alikes
    expect_close(x2, x2, "x2")
    expect_list(item(evidence, "answer"), [x1, x2, x1 + x2], "answer")


def judge_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial, (x1, x2) in enumerate(random_pairs(rng, SHAPES)):
        expect_close(item(evidence, f"output{trial}"), x1 + x2, f"output of trial {trial}")
        expect_list(item(evidence, f"answer{trial}"), [x1, x2, x1 + x2], f"answer of trial {trial}")
