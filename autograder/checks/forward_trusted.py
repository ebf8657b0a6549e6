"""Trusted verifiers of the forward notebook's seed 004 / 003 / 000 checks (forward_api.py): the
quizzes run torch's experiments again, the hidden checks rebuild their inputs from the seed."""

from __future__ import annotations

from types import SimpleNamespace

import torch

from autograder.checks import forward_api as api
from autograder.checks.evidence import random_pairs
from autograder.checks.trusted import Suspicious, expect_close, expect_equal, item, verifies


@verifies("pre_hook_replace")
def verify_pre_hook_replace(rng: torch.Generator, evidence: dict) -> None:
    x1, x2 = item(evidence, "x1"), item(evidence, "x2")
    expect_close(x1, x1, "x1")
    expect_close(x2, x2, "x2")
    expect_close(item(evidence, "output"), 2 * x1 + x2, "output")


@verifies("pre_hook_replace", hidden=True)
def verify_pre_hook_replace_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial, (x1, x2) in enumerate(random_pairs(rng, api.REPLACE_SHAPES)):
        expect_close(item(evidence, f"output{trial}"), 2 * x1 + x2, f"output of trial {trial}")


def _capture_verifier(hidden: bool):
    # Proves the captured values; that a hook did it and was removed is judged in the kernel.
    def verify(rng: torch.Generator, evidence: dict) -> None:
        for trial, (x1, x2) in enumerate(random_pairs(rng, api.CAPTURE_SHAPES[hidden])):
            expect_close(item(evidence, f"output{trial}"), x1 + x2, f"output of trial {trial}")

    return verify


for _hidden in (False, True):
    verifies("remove_handle", hidden=_hidden, independent=True)(_capture_verifier(_hidden))


# ---- method_hook: that save_output is a method registered in __init__ is judged in the kernel


@verifies("method_hook")
def verify_method_hook(rng: torch.Generator, evidence: dict) -> None:
    x, weight, bias = item(evidence, "x"), item(evidence, "weight"), item(evidence, "bias")
    for value, name in ((x, "x"), (weight, "probe.linear.weight"), (bias, "probe.linear.bias")):
        expect_close(value, value, name)
    expect_close(item(evidence, "output"), x @ weight.T + bias, "probe.last_output")


@verifies("method_hook", hidden=True)
def verify_method_hook_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial, (weight, bias, x) in enumerate(api.probe_cases(rng)):
        expect_close(item(evidence, f"output{trial}"), x @ weight.T + bias, f"Probe {trial}")


# ---- mlp_report


def _expect_report(got: object, net, x: torch.Tensor, what: str) -> None:
    if type(got) is not dict:
        raise Suspicious(f"{what} is {type(got).__name__}, not a dict")
    for key, want in api._expected_report(net, x).items():
        value = item(got, key)
        if isinstance(want, torch.Tensor):
            value = torch.tensor(value) if type(value) is float else value
            expect_close(value, want, f"{what}[{key!r}]")
        elif isinstance(want, type):
            expect_equal(value, f"<type {want.__module__}.{want.__qualname__}>", key)
        else:
            expect_equal(value, list(want), f"{what}[{key!r}]")


@verifies("mlp_report")
def verify_mlp_report(rng: torch.Generator, evidence: dict) -> None:
    layers, x = item(evidence, "layers"), item(evidence, "x")
    expect_close(x, x, "x")
    for name in ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"):
        expect_close(item(layers, name), item(layers, name), f"net.{name}")
    net = SimpleNamespace(
        **{
            fc: SimpleNamespace(weight=layers[f"{fc}.weight"], bias=layers[f"{fc}.bias"])
            for fc in ("fc1", "fc2")
        }
    )
    try:
        _expect_report(item(evidence, "report"), net, x, "report")
    except RuntimeError:  # shapes that do not multiply: not the notebook's network
        raise Suspicious("net's layers and x do not fit together") from None


@verifies("mlp_report", hidden=True)
def verify_mlp_report_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial, (net, x) in enumerate(api._report_trials(rng)):
        _expect_report(item(evidence, f"report{trial}"), net, x, f"the report of trial {trial}")


# ---- the quizzes' answers are compared with what torch does, run again here

QUIZZES = {
    "hook_effects": {"changes_output": api._actual_effects},
    "hook_order": {"predicted_order": api._actual_order},
    "forward_bypass": {"fire_count": api._fire_count},
    "find_the_bug": {
        "bug_exception": lambda: api._outcome(api._buggy),
        "bug_fix": api._working_fix,
    },
}


def _quiz_verifier(answers: dict):
    def verify(rng: torch.Generator, evidence: dict) -> None:
        for name, actual in answers.items():
            expect_equal(item(evidence, name), actual(), name)

    return verify


for _grade_id, _answers in QUIZZES.items():
    verifies(_grade_id, independent=True)(_quiz_verifier(_answers))
