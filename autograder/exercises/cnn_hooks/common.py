"""What the cnn_hooks exercises share: a hook-free forward of the DigitCNN (the ground truth),
fresh random models and inputs, the notebook's model as evidence, and the messages about a
result's keys and about a notebook result that is stale."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from autograder.exercises.cnn_hooks.models import make_digit_cnn
from autograder.exercises.kit.cases import in_case
from autograder.exercises.kit.evidence import built_from, randint
from autograder.exercises.kit.hooks import hooks_left
from autograder.exercises.kit.judge import Suspicious, expect_close, expect_equal, item
from autograder.exercises.kit.student import Student
from autograder.feedback import CheckFailed, NotDoneYet, describe
from autograder.i18n import N_, _

CLONE_NAMES = {"block1.0": "block1.1", "block2.0": "block2.1"}  # conv -> the in-place ReLU after it


def manual_forward(model: nn.Module, x: torch.Tensor):
    """Every named layer's outputs (one per call) and inputs, computed with functional ops only.

    No module is called, so no hook can run. The ReLUs here are not in place, so each conv output
    stays its own tensor; the graph is kept, for torch.autograd.grad.
    """
    conv1, conv2, fc = model.block1[0], model.block2[0], model.fc
    c1 = F.conv2d(x, conv1.weight, conv1.bias, padding=conv1.padding)
    r1 = torch.relu(c1)
    p1 = F.max_pool2d(r1, 2)
    c2 = F.conv2d(p1, conv2.weight, conv2.bias, padding=conv2.padding)
    r2 = torch.relu(c2)
    p2 = F.max_pool2d(r2, 2)
    logits = F.linear(p2.flatten(1), fc.weight, fc.bias)
    outputs = {
        "block1.0": [c1], "block1.1": [r1], "block1": [r1], "pool": [p1, p2],
        "block2.0": [c2], "block2.1": [r2], "block2": [r2], "fc": [logits],
    }  # fmt: skip
    inputs = {"block1.0": x, "block1": x, "block2.0": p1, "block2": p1, "fc": p2.flatten(1)}
    return outputs, inputs, logits


def fresh_case(rng: torch.Generator, batch_max: int = 3, size: int | None = None):
    """A fresh DigitCNN of random width (and image size, unless given), with a random input
    batch, all drawn from `rng` (the grader's judge builds the same ones again)."""
    if size is None:
        size = (8, 12, 16)[randint(rng, 0, 2)]
    channels = (randint(rng, 2, 6), randint(rng, 3, 8))
    model = built_from(rng, make_digit_cnn, channels, size)
    return model, torch.randn(randint(rng, 1, batch_max), 1, size, size, generator=rng)


WRONG_CHANNELS = N_("an input with 3 colour channels where the model takes 1")


def failing_input(x: torch.Tensor) -> torch.Tensor:
    """An input like `x` that makes a DigitCNN's first conv raise (3 channels, not 1)."""
    return torch.zeros(x.shape[0], 3, *x.shape[2:])


def check_dict_keys(got: object, names: list[str], fn: str, values: str) -> None:
    if not isinstance(got, dict):
        raise CheckFailed(
            _(
                "`{fn}` should return a dict {{layer name: {values}}}, but it returned {got}."
            ).format(fn=fn, values=values, got=describe(got))
        )
    missing = [name for name in names if name not in got]
    extra = [repr(name) for name in got if name not in names]
    if missing or extra:
        parts = [
            _("`{fn}` returned the keys {got}, expected exactly {names}.").format(
                fn=fn, got=sorted(map(str, got)), names=names
            )
        ]
        if missing:
            parts.append(_("Missing: {names}.").format(names=missing))
        if extra:
            parts.append(_("Not asked for: {names}.").format(names=", ".join(extra)))
        parts.append(
            _("The keys are the layer names as given, the names `model.get_submodule` takes.")
        )
        raise CheckFailed(" ".join(parts))


def same_model(model: nn.Module) -> nn.Module:
    """A fresh DigitCNN with `model`'s sizes and parameters, and no hook on it."""
    channels = (model.block1[0].out_channels, model.block2[0].out_channels)
    size = 4 * round((model.fc.in_features / channels[1]) ** 0.5)
    copy = make_digit_cnn(channels, size)
    copy.load_state_dict(model.state_dict())
    return copy


def digit_cause(
    s: Student,
    fn_name: str,
    x: torch.Tensor,
    step: Callable[[], object],
    attempt: Callable[[Callable[..., object]], None],
) -> object:
    """`step()`'s result. When it fails, and `attempt(fn)` (the student's function run and judged
    again on a fresh copy of the case, whose input is `x`) passes once the notebook's `digit` is
    `x`, the failure's cause is that the function reads `digit` instead of its argument."""
    try:
        return step()
    except NotDoneYet:
        raise
    except CheckFailed as failure:
        fn = s.namespace.get(fn_name)
        has_digit = isinstance(s.namespace.get("digit"), torch.Tensor)
        if callable(fn) and has_digit and passes(lambda: _with_digit(s, fn, x, attempt)):
            raise CheckFailed(
                _(
                    "your function works on the notebook's `digit`, not on the `x` it is given: "
                    "with `digit` pointed at this case's input it gives the right result. A "
                    "function uses its arguments, so that it works for any model and input."
                )
            ) from None
        raise failure from None


def _with_digit(s: Student, fn, x: torch.Tensor, attempt) -> None:
    with s.swapped_global([fn], "digit", x):
        try:
            attempt(fn)
        except CheckFailed:
            raise
        except Exception as error:  # the student's code, run directly
            raise CheckFailed(str(error)) from None


def passes(compare: Callable[[], None]) -> bool:
    try:
        compare()
    except CheckFailed:
        return False
    return True


def notebook_result(compare: Callable[[], None], fresh_passed: bool, model: nn.Module) -> None:
    """Judge the notebook's result. When it is wrong although the function passed on a fresh
    case (`fresh_passed`), the notebook's result is stale: say why."""
    try:
        in_case(_("In the notebook"), compare)
    except CheckFailed as failure:
        if not fresh_passed:
            raise
        raise CheckFailed(failure.message + " " + _stale_why(model), fix=failure.fix) from None


def _stale_why(model: nn.Module) -> str:
    left = hooks_left(model)
    if left:
        return _(
            "Your function is right on a fresh model, but the notebook's `model` still carries "
            "hooks an earlier version of it left there ({left}), and they run on every call. "
            "Run the cell that loads the trained model (`model = DigitCNN()`) again, then this "
            "exercise's cells."
        ).format(left="; ".join(left))
    return _(
        "Your function is right on a fresh model: the notebook's result comes from an earlier "
        "version of it. Run the cell under your answer again."
    )


def fresh_where() -> str:
    return _("On a fresh DigitCNN with new random weights and inputs")


# ---- for the judges ------------------------------------------------------------------------------


def cnn_evidence(model: nn.Module) -> dict:
    """The notebook's DigitCNN as evidence: its channels, image size and parameters."""
    channels = [model.block1[0].out_channels, model.block2[0].out_channels]
    size = 4 * round((model.fc.in_features / channels[1]) ** 0.5)
    return {"channels": channels, "size": size, "state": dict(model.state_dict())}


def notebook_case(evidence: dict) -> tuple[nn.Module, torch.Tensor]:
    """The notebook's model (as the checker's DigitCNN with its parameters) and image."""
    spec, x = item(evidence, "model"), item(evidence, "x")
    channels, size = item(spec, "channels"), item(spec, "size")
    if type(channels) is not list or len(channels) != 2 or type(size) is not int:
        raise Suspicious("the model's sizes are not integers")
    if any(type(c) is not int for c in channels):
        raise Suspicious("the model's channels are not integers")
    try:
        model = make_digit_cnn(tuple(channels), size)
        model.load_state_dict(item(spec, "state"))
    except (RuntimeError, TypeError, ValueError) as error:
        raise Suspicious(f"the model's parameters do not fit a DigitCNN ({error})"[:200]) from None
    expect_close(x, x, "the image")
    return model, x


def names_in(value: object) -> list[str]:
    if type(value) is not list or any(type(name) is not str for name in value):
        raise Suspicious("the layer names are not a list of strings")
    return value


def class_in(value: object, what: str) -> int:
    if type(value) is not int or not 0 <= value < 10:
        raise Suspicious(f"{what} is not a class index")
    return value


def tensor_dict(got: object, names: list[str], what: str) -> dict:
    if type(got) is not dict:
        raise Suspicious(f"{what} is {type(got).__name__}, not a dict")
    expect_equal(sorted(got), sorted(names), f"the keys of {what}")
    return got
