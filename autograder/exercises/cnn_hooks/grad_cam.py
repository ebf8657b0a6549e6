"""grad_cam: `grad_cam(model, layer_name, x, class_index)` returns the Grad-CAM map of one image:
relu(sum over channels of (the mean gradient of the class's logit w.r.t. the layer's output) x
(that output)), at the layer's resolution, divided by its maximum when that is positive; no hook
is left behind."""

from __future__ import annotations

import torch
from torch import nn

from autograder.exercises.cnn_hooks.common import (
    class_in,
    cnn_evidence,
    digit_cause,
    fresh_case,
    fresh_where,
    manual_forward,
    notebook_case,
    notebook_result,
    passes,
    same_model,
)
from autograder.exercises.kit.cases import in_case
from autograder.exercises.kit.evidence import randint
from autograder.exercises.kit.hooks import require_no_hooks
from autograder.exercises.kit.judge import Suspicious, expect_close, item
from autograder.exercises.kit.student import Student, require_arity
from autograder.feedback import CheckFailed, describe
from autograder.i18n import N_, _
from autograder.tolerances import close

HINTS = [
    N_(
        "One forward hook on the layer does two jobs: keep its output A, and register a tensor "
        "hook on that output that keeps the gradient G."
    ),
    N_(
        "Call `backward()` on the raw logit `model(x)[0, class_index]`, then average G over "
        "the two spatial dimensions: one weight per channel."
    ),
    N_(
        "Weight the channels of A, sum over the channels, apply ReLU, drop the batch dimension, "
        "and divide by the maximum when it is positive."
    ),
]
FN = "grad_cam"
SIGNATURE = "grad_cam(model, layer_name, x, class_index)"
LAYER = "block2"  # the notebook's layer
# The hidden check's layers, one per fresh case. block1 keeps the image's resolution, so a map
# enlarged to the image's size is right there; block2 (after a pool) must be among them.
HIDDEN_LAYERS = ("block2", "block1", "block2")
TRIALS = len(HIDDEN_LAYERS)


def _cam(s: Student, model: nn.Module, layer: str, x, class_index: int):
    fn = s.function("grad_cam")
    require_arity(fn, "grad_cam", SIGNATURE, 4)
    return s.call(f"`{SIGNATURE}`", fn, model, layer, x, class_index)


def _normalised(cam: torch.Tensor) -> torch.Tensor:
    peak = cam.max()
    return cam / peak if peak > 0 else cam


def expected_cam(
    model: nn.Module, layer: str, x: torch.Tensor, class_index: int, *, variants: bool = True
):
    """The notebook's Grad-CAM definition, from torch.autograd.grad on a hook-free forward.

    Returns the map and the wrong maps of known mistakes (name -> (map, what the mistake is));
    with `variants=False` (a judge, which needs no diagnosis), none.
    """
    outputs, _inputs, logits = manual_forward(model, x)
    activation = outputs[layer][0]  # (1, K, h, w)
    (grad,) = torch.autograd.grad(logits[0, class_index], activation, retain_graph=variants)
    weights = grad.mean(dim=(2, 3), keepdim=True)
    raw = (weights * activation).sum(dim=1)[0].detach()
    cam = _normalised(torch.relu(raw))
    if not variants:
        return cam, {}
    (grad_p,) = torch.autograd.grad(logits.softmax(1)[0, class_index], activation)
    softmax_weights = grad_p.mean(dim=(2, 3), keepdim=True)
    wrong = {
        "not normalised": (
            torch.relu(raw),
            N_("it is not normalised: the map is divided by its maximum (when that is > 0)"),
        ),
        "no relu": (
            raw / raw.abs().max(),
            N_(
                "the ReLU is missing: places whose weighted sum is negative count against the "
                "class, and Grad-CAM keeps only the positive part before normalising"
            ),
        ),
        "no relu max": (
            raw / raw.max(),
            N_(
                "the ReLU is missing: places whose weighted sum is negative count against the "
                "class, and Grad-CAM keeps only the positive part before normalising"
            ),
        ),
        "no mean": (
            _normalised(torch.relu((grad * activation).sum(dim=1)[0].detach())),
            N_(
                "the gradients were not averaged: each channel's weight is one number, the mean "
                "of its gradient over the h x w positions"
            ),
        ),
        "softmax": (
            _normalised(torch.relu((softmax_weights * activation).sum(dim=1)[0].detach())),
            N_(
                "it uses the gradient of the softmax probability; Grad-CAM uses the raw score, "
                "the logit model(x)[0, class_index]"
            ),
        ),
    }
    return cam, wrong


def compare_cam(got: object, model: nn.Module, layer: str, x: torch.Tensor, class_index: int):
    cam, wrong = expected_cam(model, layer, x, class_index)
    if not isinstance(got, torch.Tensor):
        raise CheckFailed(
            _("`grad_cam` should return a tensor, but it returned {got}.").format(got=describe(got))
        )
    if got.shape != cam.shape:
        if got.numel() == cam.numel():
            hint = _("it holds the right number of values, with extra dimensions of size 1")
        elif tuple(got.shape[-2:]) == tuple(x.shape[-2:]):
            hint = _("that is the image's size: the map stays at the layer's resolution")
        else:
            hint = _("the map is one value per position of the layer's output")
        raise CheckFailed(
            _(
                "the map has shape {got_shape}, expected {shape} (the layer's h x w): {hint}. "
                "Expected {expected}, got {got}."
            ).format(
                got_shape=tuple(got.shape),
                shape=tuple(cam.shape),
                hint=hint,
                expected=describe(cam),
                got=describe(got),
            )
        )
    if close(got, cam):
        return
    for variant, why in wrong.values():
        if close(got, variant):
            raise CheckFailed(
                _("the map is wrong: {why}. Expected {expected}, got {got}.").format(
                    why=_(why), expected=describe(cam), got=describe(got)
                )
            )
    raise CheckFailed(
        _(
            "the map has wrong values: expected {expected}, got {got}. Follow the definition "
            "above step by step (activation A and gradient G of the layer's output)."
        ).format(expected=describe(cam), got=describe(got))
    )


def _draw(rng: torch.Generator, layer: str, size: int | None = None):
    """One fresh case at `layer`, (model, layer, x, class_index, expected map), and whether its
    map differs from every wrong map compare_cam names. A case where a mistake gives the right
    map cannot catch it: an all-zero map is its own "not normalised" variant, and a map whose
    raw sum has no negative part is its own "no relu" one."""
    model, x = fresh_case(rng, batch_max=1, size=size)
    class_index = randint(rng, 0, 9)
    cam, wrong = expected_cam(model, layer, x, class_index)
    shows = not any(close(variant, cam) for variant, _why in wrong.values())
    return (model, layer, x, class_index, cam), shows


def cam_cases(rng: torch.Generator):
    """`TRIALS` fresh cases that show every named mistake (_draw), one per layer of
    HIDDEN_LAYERS (with cases that may not, a Grad-CAM without the ReLU passed the hidden check
    for about one seed in 200)."""
    cases = []
    for _attempt in range(30):
        case, shows = _draw(rng, HIDDEN_LAYERS[len(cases)])
        if shows:
            cases.append(case)
        if len(cases) == TRIALS:
            break
    return cases


def _fresh(s: Student, model: nn.Module, layer: str, x, class_index: int):
    """What grad_cam returns for a fresh case, and a judge of it; both name a read of the
    notebook's `digit` as the cause of their failure."""

    def attempt(fn):
        copy = same_model(model)
        compare_cam(fn(copy, layer, x, class_index), copy, layer, x, class_index)

    got = digit_cause(s, FN, x, lambda: _cam(s, model, layer, x, class_index), attempt)
    return got, lambda: digit_cause(
        s, FN, x, lambda: compare_cam(got, model, layer, x, class_index), attempt
    )


def visible_case(rng: torch.Generator):
    """The visible check's fresh case, at the notebook's layer: (model, x, class_index), the
    first drawn that shows every named mistake (_draw). With a case that shows none, a Grad-CAM
    without the ReLU passed there about one time in three, and the notebook's own failing map
    was then blamed on a stale result."""
    for _attempt in range(30):
        (model, _layer, x, class_index, _cam_map), shows = _draw(rng, LAYER, size=16)
        if shows:
            break
    return model, x, class_index


def visible(s: Student) -> str:
    fresh, fresh_x, fresh_class = visible_case(s.rng)
    got_fresh, judge_fresh = in_case(fresh_where(), _fresh, s, fresh, LAYER, fresh_x, fresh_class)
    in_case(fresh_where(), require_no_hooks, fresh, FN)
    model, x, class_index = s.get("model"), s.get("digit"), int(s.get("predicted_class"))
    got = s.get("cam")
    s.record(model=cnn_evidence(model), x=x, class_index=class_index, cam=got, fresh=got_fresh)
    notebook_result(
        lambda: compare_cam(got, model, LAYER, x, class_index), passes(judge_fresh), model
    )
    in_case(fresh_where(), judge_fresh)
    return _("`cam` is the Grad-CAM map of the predicted class.")


def hidden(s: Student) -> str:
    for trial, (model, layer, x, class_index, _cam_map) in enumerate(cam_cases(s.rng)):
        where = _("{fresh}, layer_name={layer!r} and class_index={index}").format(
            fresh=fresh_where(), layer=layer, index=class_index
        )
        got, judge = in_case(where, _fresh, s, model, layer, x, class_index)
        s.record(**{f"cam{trial}": got})
        in_case(where, require_no_hooks, model, FN)
        in_case(where, judge)
    return _("`grad_cam` gives the right map on fresh models, inputs, layers and classes.")


def judge_visible(rng: torch.Generator, evidence: dict) -> None:
    fresh, fresh_x, fresh_class = visible_case(rng)
    want, _variants = expected_cam(fresh, LAYER, fresh_x, fresh_class, variants=False)
    expect_close(item(evidence, "fresh"), want, "the fresh model's map")
    model, x = notebook_case(evidence)
    class_index = class_in(item(evidence, "class_index"), "predicted_class")
    cam, _variants = expected_cam(model, LAYER, x, class_index, variants=False)
    expect_close(item(evidence, "cam"), cam, "cam")


def judge_hidden(rng: torch.Generator, evidence: dict) -> None:
    cases = cam_cases(rng)
    if not cases:
        raise Suspicious("no case to verify")
    for trial, (*_case, cam) in enumerate(cases):
        expect_close(item(evidence, f"cam{trial}"), cam, f"the map of trial {trial}")
