"""Trusted verifiers of the CNN notebook's checks (cnn.py): hidden cases are rebuilt from the
seed; the visible checks' notebook model is rebuilt from its evidence (consistency only)."""

from __future__ import annotations

import torch
from torch import nn

from autograder.checks import cnn
from autograder.checks.cnn_reference import expected_cam, manual_forward
from autograder.checks.evidence import randint
from autograder.checks.trusted import Suspicious, expect_close, expect_equal, item, verifies
from autograder.exercises.cnn_hooks.models import make_digit_cnn


def _tensor_dict(got: object, names: list[str], what: str) -> dict:
    if type(got) is not dict:
        raise Suspicious(f"{what} is {type(got).__name__}, not a dict")
    expect_equal(sorted(got), sorted(names), f"the keys of {what}")
    return got


def _notebook_case(evidence: dict) -> tuple[nn.Module, torch.Tensor]:
    """The notebook's model (as the checker's DigitCNN with its parameters) and image."""
    spec, x = item(evidence, "model"), item(evidence, "x")
    channels, size = item(spec, "channels"), item(spec, "size")
    if type(channels) is not list or len(channels) != 2 or type(size) is not int:
        raise Suspicious("the model's sizes are not integers")
    try:
        model = make_digit_cnn(tuple(channels), size)
        model.load_state_dict(item(spec, "state"))
    except (RuntimeError, TypeError, ValueError) as error:
        raise Suspicious(f"the model's parameters do not fit a DigitCNN ({error})"[:200]) from None
    expect_close(x, x, "the image")
    return model, x


def _names(value: object) -> list[str]:
    if type(value) is not list or any(type(name) is not str for name in value):
        raise Suspicious("the layer names are not a list of strings")
    return value


def _expect_activations(got: object, names: list[str], model: nn.Module, x, what: str) -> None:
    with torch.no_grad():
        outputs, _, _ = manual_forward(model, x)
    got = _tensor_dict(got, names, what)
    for name in names:
        items, want = got[name], outputs[name]
        if type(items) is not list or len(items) != len(want):
            raise Suspicious(f"{what}: {name!r} does not hold one tensor per call")
        for index, (entry, expected) in enumerate(zip(items, want, strict=True)):
            expect_close(entry, expected, f"{what}: {name!r}[{index}]")


def _expect_gradients(got: object, names: list[str], model, x, target: int, what: str) -> None:
    outputs, _, logits = manual_forward(model, x)
    grads = torch.autograd.grad(logits[:, target].sum(), [outputs[name][0] for name in names])
    got = _tensor_dict(got, names, what)
    for name, want in zip(names, grads, strict=True):
        expect_close(got[name], want, f"{what}: the gradient of {name!r}")


def _class(value: object, what: str) -> int:
    if type(value) is not int or not 0 <= value < 10:
        raise Suspicious(f"{what} is not a class index")
    return value


@verifies("activation_recorder")
def verify_activation_recorder(rng: torch.Generator, evidence: dict) -> None:
    model, x = _notebook_case(evidence)
    names = _names(item(evidence, "names"))
    _expect_activations(item(evidence, "activations"), names, model, x, "activations")


@verifies("activation_recorder", hidden=True)
def verify_activation_recorder_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial, names in enumerate(cnn.ACTIVATION_NAMES):
        model, x = cnn.fresh_case(rng)
        got = item(evidence, f"activations{trial}")
        _expect_activations(got, names, model, x, f"trial {trial}")


@verifies("gradient_recorder")
def verify_gradient_recorder(rng: torch.Generator, evidence: dict) -> None:
    model, x = _notebook_case(evidence)
    names = _names(item(evidence, "names"))
    target = _class(item(evidence, "target"), "target_class")
    _expect_gradients(item(evidence, "gradients"), names, model, x, target, "gradients")


@verifies("gradient_recorder", hidden=True)
def verify_gradient_recorder_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial, names in enumerate(cnn.GRADIENT_NAMES):
        model, x = cnn.fresh_case(rng)
        target = randint(rng, 0, 9)
        got = item(evidence, f"gradients{trial}")
        _expect_gradients(got, names, model, x, target, f"trial {trial}")


@verifies("grad_cam")
def verify_grad_cam(rng: torch.Generator, evidence: dict) -> None:
    model, x = _notebook_case(evidence)
    class_index = _class(item(evidence, "class_index"), "predicted_class")
    cam, _ = expected_cam(model, "block2", x, class_index, variants=False)
    expect_close(item(evidence, "cam"), cam, "cam")


@verifies("grad_cam", hidden=True)
def verify_grad_cam_hidden(rng: torch.Generator, evidence: dict) -> None:
    cases = cnn._cam_cases(rng)
    if not cases:
        raise Suspicious("no case to verify")
    for trial, (*_, cam) in enumerate(cases):
        expect_close(item(evidence, f"cam{trial}"), cam, f"the map of trial {trial}")
