"""activation_recorder: `record_activations(model, x, layer_names)` runs the model once with a
forward hook on each named layer and returns {name: [its output at each call, detached and
cloned]}, leaving no hook behind, even when the forward raises."""

from __future__ import annotations

import torch
from torch import nn

from autograder.exercises.cnn_hooks.common import (
    CLONE_NAMES,
    WRONG_CHANNELS,
    check_dict_keys,
    cnn_evidence,
    digit_cause,
    failing_input,
    fresh_case,
    fresh_where,
    manual_forward,
    names_in,
    notebook_case,
    notebook_result,
    passes,
    same_model,
    tensor_dict,
)
from autograder.exercises.kit.cases import in_case
from autograder.exercises.kit.hooks import require_no_hooks, require_removed_on_error
from autograder.exercises.kit.judge import Suspicious, expect_close, item
from autograder.exercises.kit.student import Student, require_arity
from autograder.feedback import CheckFailed, describe
from autograder.i18n import N_, _
from autograder.tolerances import close

HINTS = [
    N_(
        "You need one hook per layer name, each knowing its name: write a small function that "
        "takes the name and returns a hook."
    ),
    N_(
        "The hook appends a detached clone of `output` to that layer's list, once per call: "
        "`pool` gets two entries."
    ),
    N_("Register the hooks, run the model, and remove every handle in a `finally:` block."),
]
FN = "record_activations"
SIGNATURE = "record_activations(model, x, layer_names)"
FIX_COPY = "records[name].append(output.detach().clone())"
HIDDEN_NAMES = (["block1.0", "pool"], ["pool", "block2", "fc"], ["block2.0", "block1", "pool"])


def _record(s: Student, model: nn.Module, x: torch.Tensor, names: list[str]):
    fn = s.function("record_activations")
    require_arity(fn, "record_activations", SIGNATURE, 3)
    return s.call(f"`{SIGNATURE}`", fn, model, x, list(names))


def compare_activations(got: object, names: list[str], model: nn.Module, x: torch.Tensor) -> None:
    with torch.no_grad():
        outputs, _inputs, _logits = manual_forward(model, x)
    check_dict_keys(got, names, "record_activations", _("list of tensors"))
    for name in names:
        items, want = got[name], outputs[name]
        if isinstance(items, torch.Tensor) or not isinstance(items, list | tuple):
            raise CheckFailed(
                _(
                    "result[{name!r}] is {got}; it should be a list with one tensor per call of "
                    "the module, since a module can run more than once in one forward."
                ).format(name=name, got=describe(items))
            )
        for index, entry in enumerate(items):
            if not isinstance(entry, torch.Tensor):
                raise CheckFailed(
                    _("result[{name!r}][{index}] is {got}, not a tensor.").format(
                        name=name, index=index, got=describe(entry)
                    )
                )
            if entry.requires_grad:
                raise CheckFailed(
                    _(
                        "result[{name!r}][{index}] is not detached: it still requires grad "
                        "(grad_fn={grad_fn}), so it keeps the whole autograd graph of the "
                        "forward alive, with every tensor the graph saved. The text asks for "
                        "tensors that are detached and cloned."
                    ).format(name=name, index=index, grad_fn=type(entry.grad_fn).__name__),
                    fix=FIX_COPY,
                )
        if len(items) != len(want):
            _wrong_call_count(name, items, want)
        for index, (entry, expected) in enumerate(zip(items, want, strict=True)):
            _compare_entry(name, index, entry, expected, outputs)


def _compare_entry(name: str, index: int, entry, expected, outputs) -> None:
    if entry.shape != expected.shape:
        raise CheckFailed(
            _(
                "result[{name!r}][{index}] has shape {got_shape}, expected {shape}: the module's "
                "whole output, batch dimension included. Expected {expected}, got {got}."
            ).format(
                name=name,
                index=index,
                got_shape=tuple(entry.shape),
                shape=tuple(expected.shape),
                expected=describe(expected),
                got=describe(entry),
            )
        )
    if close(entry, expected):
        return
    if name in CLONE_NAMES and close(entry, outputs[CLONE_NAMES[name]][0]):
        raise CheckFailed(
            _(
                "result[{name!r}] holds the values after the ReLU, not the conv's output: the "
                "next module, ReLU(inplace=True), overwrote the conv's output tensor after your "
                "hook stored it, and `detach()` shares its memory with the tensor it comes "
                "from. What is stored must be a copy, with memory of its own."
            ).format(name=name),
            fix=FIX_COPY,
        )
    raise CheckFailed(
        _(
            "result[{name!r}][{index}] has wrong values: expected {expected}, got {got}. It "
            "should be the `output` the hook receives."
        ).format(name=name, index=index, expected=describe(expected), got=describe(entry))
    )


def _wrong_call_count(name: str, items, want) -> None:
    if len(items) == 1 and len(want) > 1:
        which = _("one")
        if close(items[0], want[0]):
            which = _("the first call's")
        elif close(items[0], want[-1]):
            which = _("the last call's")
        raise CheckFailed(
            _(
                "`{name}` runs {count} times in one forward, so result[{name!r}] needs {count} "
                "entries, one per call, but it holds only {which} output: each call of the hook "
                "must add to the layer's list, not replace what is in it."
            ).format(name=name, count=len(want), which=which)
        )
    raise CheckFailed(
        _(
            "result[{name!r}] has {got} entries, expected {count} (one per call of the module in "
            "one forward). If every value appears twice, a hook was registered twice."
        ).format(name=name, got=len(items), count=len(want))
    )


def _removes_hooks_on_error(s: Student, model: nn.Module, x, names) -> None:
    fn = s.function("record_activations")
    bad = failing_input(x)
    require_removed_on_error(
        lambda: fn(model, bad, list(names)), model, "record_activations", _(WRONG_CHANNELS)
    )


def _fresh(s: Student, model: nn.Module, x: torch.Tensor, names: list[str]):
    """What record_activations returns for a fresh case, and a judge of it; both name a read
    of the notebook's `digit` as the cause of their failure."""

    def attempt(fn):
        copy = same_model(model)
        compare_activations(fn(copy, x, list(names)), names, copy, x)

    got = digit_cause(s, FN, x, lambda: _record(s, model, x, names), attempt)
    return got, lambda: digit_cause(
        s, FN, x, lambda: compare_activations(got, names, model, x), attempt
    )


def visible(s: Student) -> str:
    names = list(s.get("layer_names"))
    fresh, fresh_x = fresh_case(s.rng, size=16)  # 16: the notebook's image size
    got_fresh, judge_fresh = in_case(fresh_where(), _fresh, s, fresh, fresh_x, names)
    in_case(fresh_where(), require_no_hooks, fresh, FN)
    model, x, got = s.get("model"), s.get("digit"), s.get("activations")
    s.record(model=cnn_evidence(model), x=x, names=names, activations=got, fresh=got_fresh)
    notebook_result(lambda: compare_activations(got, names, model, x), passes(judge_fresh), model)
    in_case(fresh_where(), judge_fresh)
    in_case(fresh_where(), _removes_hooks_on_error, s, fresh, fresh_x, names)
    return _("`activations` holds every call's output, detached, and no hook is left behind.")


def hidden(s: Student) -> str:
    for trial, names in enumerate(HIDDEN_NAMES):
        model, x = fresh_case(s.rng)
        where = _("{fresh} and layer_names={names}").format(fresh=fresh_where(), names=names)
        got, judge = in_case(where, _fresh, s, model, x, names)
        s.record(**{f"activations{trial}": got})
        in_case(where, require_no_hooks, model, FN)
        in_case(where, judge)
    in_case(fresh_where(), _removes_hooks_on_error, s, model, x, names)
    return _("`record_activations` works on fresh models, inputs and layer names.")


def _expect_activations(got: object, names: list[str], model: nn.Module, x, what: str) -> None:
    with torch.no_grad():
        outputs, _inputs, _logits = manual_forward(model, x)
    got = tensor_dict(got, names, what)
    for name in names:
        items, want = got[name], outputs[name]
        if type(items) is not list or len(items) != len(want):
            raise Suspicious(f"{what}: {name!r} does not hold one tensor per call")
        for index, (entry, expected) in enumerate(zip(items, want, strict=True)):
            expect_close(entry, expected, f"{what}: {name!r}[{index}]")


def judge_visible(rng: torch.Generator, evidence: dict) -> None:
    names = names_in(item(evidence, "names"))
    fresh, fresh_x = fresh_case(rng, size=16)
    _expect_activations(item(evidence, "fresh"), names, fresh, fresh_x, "the fresh model's")
    model, x = notebook_case(evidence)
    _expect_activations(item(evidence, "activations"), names, model, x, "activations")


def judge_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial, names in enumerate(HIDDEN_NAMES):
        model, x = fresh_case(rng)
        got = item(evidence, f"activations{trial}")
        _expect_activations(got, names, model, x, f"trial {trial}")
