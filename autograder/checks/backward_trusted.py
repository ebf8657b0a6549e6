"""Trusted verifiers of the backward notebook's hook checks (backward.py): hidden cases rebuilt
from the seed, visible ones recomputed from the notebook values their evidence carries."""

from __future__ import annotations

import torch

from autograder.checks.backward import _collect_expected, _reference, trials
from autograder.checks.trusted import Suspicious, expect_close, expect_list, item, verifies


def _recorded_reference(evidence: dict) -> dict[str, torch.Tensor]:
    """Autograd's gradients for the W, x1 and x2 a visible check recorded from the notebook."""
    values = [item(evidence, name) for name in ("W", "x1", "x2")]
    for name, value in zip(("W", "x1", "x2"), values, strict=True):
        expect_close(value, value, name)  # plain tensors, not look-alikes
        if value.shape != (1,):
            raise Suspicious(f"{name} has shape {tuple(value.shape)}, expected (1,)")
    return _reference(*values)


@verifies("backward_collect")
def verify_backward_collect(rng: torch.Generator, evidence: dict) -> None:
    ref = _recorded_reference(evidence)
    want = [tensor for _, tensor in _collect_expected(ref)]
    expect_list(item(evidence, "answer"), want, "answer")


@verifies("backward_collect", hidden=True)
def verify_backward_collect_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial, (w, x1, x2) in enumerate(trials(rng)):
        ref = _reference(w, x1, x2)
        expect_close(item(evidence, f"x1.grad{trial}"), ref["x1"], f"x1.grad of trial {trial}")
        expect_close(item(evidence, f"x2.grad{trial}"), ref["x2"], f"x2.grad of trial {trial}")
        want = [tensor for _, tensor in _collect_expected(ref)]
        expect_list(item(evidence, f"answer{trial}"), want, f"answer of trial {trial}")


@verifies("tensor_hook_W")
def verify_tensor_hook_w(rng: torch.Generator, evidence: dict) -> None:
    expect_list(item(evidence, "answer"), [_recorded_reference(evidence)["W"]], "answer")


@verifies("tensor_hook_W", hidden=True)
def verify_tensor_hook_w_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial, (w, x1, x2) in enumerate(trials(rng)):
        ref = _reference(w, x1, x2)
        expect_close(item(evidence, f"W.grad{trial}"), ref["W"], f"W.grad of trial {trial}")
        expect_list(item(evidence, f"answer{trial}"), [ref["W"]], f"answer of trial {trial}")


def _verify_scale(evidence: dict, ref: dict[str, torch.Tensor], suffix: str) -> None:
    expect_close(item(evidence, f"x1.grad{suffix}"), 2 * ref["x1"], f"x1.grad{suffix}")
    expect_close(item(evidence, f"x2.grad{suffix}"), ref["x2"], f"x2.grad{suffix}")


@verifies("tensor_hook_scale")
def verify_tensor_hook_scale(rng: torch.Generator, evidence: dict) -> None:
    _verify_scale(evidence, _recorded_reference(evidence), "")


@verifies("tensor_hook_scale", hidden=True)
def verify_tensor_hook_scale_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial, (w, x1, x2) in enumerate(trials(rng)):
        _verify_scale(evidence, _reference(w, x1, x2), str(trial))


def _verify_normalize(evidence: dict, ref: dict[str, torch.Tensor], suffix: str) -> None:
    total = ref["x1"] + ref["x2"]
    expect_close(item(evidence, f"x1.grad{suffix}"), ref["x1"] / total, f"x1.grad{suffix}")
    expect_close(item(evidence, f"x2.grad{suffix}"), ref["x2"] / total, f"x2.grad{suffix}")


@verifies("backward_normalize")
def verify_backward_normalize(rng: torch.Generator, evidence: dict) -> None:
    _verify_normalize(evidence, _recorded_reference(evidence), "")


@verifies("backward_normalize", hidden=True)
def verify_backward_normalize_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial, (w, x1, x2) in enumerate(trials(rng)):
        _verify_normalize(evidence, _reference(w, x1, x2), str(trial))
