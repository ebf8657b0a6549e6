"""gradient_recorder: `record_gradients(model, x, target, layer_names)` returns {name: d score /
d output} for each named layer, where score = model(x)[:, target].sum(), with tensor hooks that
forward hooks register on the outputs (a full backward hook fails next to the in-place ReLU);
no forward hook is left behind."""

from __future__ import annotations

import torch
from torch import nn

from autograder.exercises.cnn_hooks.common import (
    CLONE_NAMES,
    check_dict_keys,
    class_in,
    cnn_evidence,
    digit_cause,
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
from autograder.exercises.kit.evidence import randint
from autograder.exercises.kit.hooks import require_no_hooks
from autograder.exercises.kit.judge import expect_close, item
from autograder.exercises.kit.student import Student, require_arity
from autograder.feedback import CheckFailed, describe
from autograder.i18n import N_, _
from autograder.tolerances import close

HINTS = [
    N_(
        "A full backward hook fails next to the in-place ReLU: register a forward hook that "
        "calls `output.register_hook(...)` instead."
    ),
    N_(
        "The tensor hook receives the gradient w.r.t. that output: keep a detached clone under "
        "the layer's name."
    ),
    N_(
        "Compute the score `model(x)[:, target].sum()`, remove the forward hooks, then call "
        "`backward()` on the score."
    ),
]
FN = "record_gradients"
SIGNATURE = "record_gradients(model, x, target, layer_names)"
HIDDEN_NAMES = (["block1.0", "block2"], ["block2.0", "fc"], ["block1", "block2.0", "block2"])


def _record(s: Student, model: nn.Module, x, target: int, names: list[str]):
    fn = s.function("record_gradients")
    require_arity(fn, "record_gradients", SIGNATURE, 4)
    return s.call(f"`{SIGNATURE}`", fn, model, x, target, list(names))


def expected_gradients(model: nn.Module, x, target: int, names: list[str]) -> dict:
    outputs, _inputs, logits = manual_forward(model, x)
    grads = torch.autograd.grad(logits[:, target].sum(), [outputs[name][0] for name in names])
    return dict(zip(names, grads, strict=True))


def compare_gradients(got: object, names: list[str], model: nn.Module, x, target: int) -> None:
    # x requiring grad: the gradient w.r.t. the first layer's input exists, for a diagnosis.
    outputs, inputs, logits = manual_forward(model, x.detach().requires_grad_())
    expected = expected_gradients(model, x, target, names)
    check_dict_keys(got, names, "record_gradients", _("tensor"))
    for name in names:
        entry, want = got[name], expected[name]
        if entry is None or (isinstance(entry, list | tuple) and not entry):
            raise CheckFailed(
                _(
                    "no gradient recorded for {name!r}: the tensor hook never ran. It runs "
                    "during `backward()`, when the gradient w.r.t. the tensor it is registered "
                    "on is computed: register it on the layer's output inside the forward hook, "
                    "then call `backward()` on the score."
                ).format(name=name)
            )
        if not isinstance(entry, torch.Tensor):
            raise CheckFailed(
                _("result[{name!r}] should be a tensor, but it is {got}.").format(
                    name=name, got=describe(entry)
                )
            )
        if entry.shape != want.shape:
            if _is_input_gradient(name, entry, inputs, logits, target):
                raise CheckFailed(_input_gradient(name))
            raise CheckFailed(
                _(
                    "result[{name!r}] has shape {got_shape}, expected {shape} (the shape of the "
                    "layer's output). Expected {expected}, got {got}."
                ).format(
                    name=name,
                    got_shape=tuple(entry.shape),
                    shape=tuple(want.shape),
                    expected=describe(want),
                    got=describe(entry),
                )
            )
        if not close(entry, want):
            raise CheckFailed(_wrong_gradient(name, entry, want, outputs, inputs, logits, target))


def _is_input_gradient(name: str, entry, inputs, logits, target: int) -> bool:
    if name not in inputs or inputs[name].shape != entry.shape:
        return False
    (wrt_input,) = torch.autograd.grad(logits[:, target].sum(), inputs[name], retain_graph=True)
    return close(entry, wrt_input)


def _input_gradient(name: str) -> str:
    return _(
        "result[{name!r}] is the gradient w.r.t. the layer's input (what a full backward hook "
        "gets as grad_input), but the task asks for the gradient w.r.t. its output: the tensor "
        "hook belongs on the `output` the forward hook receives."
    ).format(name=name)


def _wrong_gradient(name, entry, want, outputs, inputs, logits, target) -> str:
    score = logits[:, target].sum()
    if _is_input_gradient(name, entry, inputs, logits, target):
        return _input_gradient(name)
    if name in CLONE_NAMES:
        after = outputs[CLONE_NAMES[name]][0]
        (wrt_after,) = torch.autograd.grad(score, after, retain_graph=True)
        if close(entry, wrt_after):
            return _(
                "result[{name!r}] is the gradient w.r.t. the ReLU's output: the in-place ReLU "
                "wrote its result into the conv's output tensor, and a tensor hook registered "
                "on that tensor after the ReLU ran belongs to the ReLU's result. The hook must "
                "be registered inside the forward hook, while the tensor still is the conv's "
                "output."
            ).format(name=name)
    (wrt_all,) = torch.autograd.grad(logits.sum(), outputs[name][0], retain_graph=True)
    if close(entry, wrt_all):
        return _(
            "result[{name!r}] is the gradient of the wrong score: the sum of all ten class "
            "scores, not only the target class's. The score to backpropagate is "
            "`model(x)[:, target].sum()`."
        ).format(name=name)
    return _(
        "result[{name!r}] has wrong values: expected the gradient of `model(x)[:, target].sum()` "
        "w.r.t. the layer's output, {expected}, got {got}."
    ).format(name=name, expected=describe(want), got=describe(entry))


def _fresh(s: Student, model: nn.Module, x, target: int, names: list[str]):
    """What record_gradients returns for a fresh case, and a judge of it; both name a read of
    the notebook's `digit` as the cause of their failure."""

    def attempt(fn):
        copy = same_model(model)
        compare_gradients(fn(copy, x, target, list(names)), names, copy, x, target)

    got = digit_cause(s, FN, x, lambda: _record(s, model, x, target, names), attempt)
    return got, lambda: digit_cause(
        s, FN, x, lambda: compare_gradients(got, names, model, x, target), attempt
    )


def visible(s: Student) -> str:
    names = list(s.get("grad_layer_names"))
    fresh, fresh_x = fresh_case(s.rng, size=16)
    fresh_target = randint(s.rng, 0, 9)
    got_fresh, judge_fresh = in_case(fresh_where(), _fresh, s, fresh, fresh_x, fresh_target, names)
    in_case(fresh_where(), require_no_hooks, fresh, FN)
    model, x, target = s.get("model"), s.get("digit"), int(s.get("target_class"))
    got = s.get("gradients")
    s.record(model=cnn_evidence(model), x=x, names=names, target=target, gradients=got)
    s.record(fresh=got_fresh)
    notebook_result(
        lambda: compare_gradients(got, names, model, x, target), passes(judge_fresh), model
    )
    in_case(fresh_where(), judge_fresh)
    return _("`gradients` holds d score / d output for every named layer.")


def hidden(s: Student) -> str:
    for trial, names in enumerate(HIDDEN_NAMES):
        model, x = fresh_case(s.rng)
        target = randint(s.rng, 0, 9)
        where = _("{fresh}, target={target} and layer_names={names}").format(
            fresh=fresh_where(), target=target, names=names
        )
        got, judge = in_case(where, _fresh, s, model, x, target, names)
        s.record(**{f"gradients{trial}": got})
        in_case(where, require_no_hooks, model, FN)
        in_case(where, judge)
    return _("`record_gradients` works on fresh models, inputs, targets and layer names.")


def _expect_gradients(got: object, names: list[str], model, x, target: int, what: str) -> None:
    got = tensor_dict(got, names, what)
    for name, want in expected_gradients(model, x, target, names).items():
        expect_close(got[name], want, f"{what}: the gradient of {name!r}")


def judge_visible(rng: torch.Generator, evidence: dict) -> None:
    names = names_in(item(evidence, "names"))
    fresh, fresh_x = fresh_case(rng, size=16)
    fresh_target = randint(rng, 0, 9)
    _expect_gradients(item(evidence, "fresh"), names, fresh, fresh_x, fresh_target, "fresh")
    model, x = notebook_case(evidence)
    target = class_in(item(evidence, "target"), "target_class")
    _expect_gradients(item(evidence, "gradients"), names, model, x, target, "gradients")


def judge_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial, names in enumerate(HIDDEN_NAMES):
        model, x = fresh_case(rng)
        target = randint(rng, 0, 9)
        got = item(evidence, f"gradients{trial}")
        _expect_gradients(got, names, model, x, target, f"trial {trial}")
