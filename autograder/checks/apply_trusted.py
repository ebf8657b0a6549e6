"""Trusted verifiers of the apply notebook's checks (apply.py): the hidden checks' models and
inputs are rebuilt from the seed; the visible checks' are the notebook's, from the evidence."""

from __future__ import annotations

import torch

from autograder.checks import apply
from autograder.checks.apply_runner import TRIALS
from autograder.checks.trusted import Suspicious, expect_close, expect_equal, item, verifies


@verifies("apply_order", independent=True)
def verify_apply_order(rng: torch.Generator, evidence: dict) -> None:
    expect_equal(item(evidence, "predicted_order"), apply._visited(), "predicted_order")


def _verify_ones(evidence: dict, names: tuple[str, ...], trial: object) -> None:
    for index in range(4):
        for name in names:
            value, what = item(evidence, f"{name}{trial}.{index}"), f"{name} of Function {index}"
            if type(value) is not torch.Tensor or value.numel() == 0:
                raise Suspicious(f"{what} is not a tensor")
            expect_close(value, torch.ones_like(value), what)


def _expect_broadcast(got: object, want: torch.Tensor, what: str) -> None:
    if type(got) is not torch.Tensor:
        raise Suspicious(f"{what} is {type(got).__name__}, not a tensor")
    try:
        want = want.expand_as(got)
    except RuntimeError:
        raise Suspicious(f"{what} has shape {tuple(got.shape)}") from None
    expect_close(got, want, what)


@verifies("apply_init_ones")
def verify_apply_init_ones(rng: torch.Generator, evidence: dict) -> None:
    _verify_ones(evidence, ("W",), "")
    x = item(evidence, "x")
    expect_close(x, x, "x")
    _expect_broadcast(item(evidence, "output"), x, "model(x)")


@verifies("apply_init_ones", hidden=True)
def verify_apply_init_ones_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial in range(TRIALS):
        _verify_ones(evidence, ("W",), trial)
        for k, shape in enumerate(apply.INIT_SHAPES):
            x = torch.rand(shape, generator=rng)
            _expect_broadcast(item(evidence, f"output{trial}.{k}"), x, f"model(x) of trial {trial}")


@verifies("apply_init_bias")
def verify_apply_init_bias(rng: torch.Generator, evidence: dict) -> None:
    _verify_ones(evidence, ("W", "b"), "")


@verifies("apply_init_bias", hidden=True)
def verify_apply_init_bias_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial in range(TRIALS):
        _verify_ones(evidence, ("W", "b"), trial)


@verifies("apply_linear")
def verify_apply_linear(rng: torch.Generator, evidence: dict) -> None:
    params = []
    for index in range(4):
        w, b = item(evidence, f"W.{index}"), item(evidence, f"b.{index}")
        expect_close(w, w, f"W of Function {index}")
        expect_close(b, b, f"b of Function {index}")
        params.append((w, b))
    for name in ("x", "x_batch"):
        x, got = item(evidence, name), item(evidence, f"output {name}")
        expect_close(x, x, name)
        try:  # the check accepts both readings of "x @ W + b", as the task allows
            expect_close(got, apply._affine_chain(params, x, transpose=False), f"model({name})")
        except Suspicious:
            expect_close(got, apply._affine_chain(params, x), f"model({name})")
        except RuntimeError:  # shapes that do not multiply
            raise Suspicious(f"the parameters and {name} do not fit together") from None


@verifies("apply_linear", hidden=True)
def verify_apply_linear_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial, (_, params, inputs) in enumerate(apply._linear_trials(rng)):
        for k, x in enumerate(inputs):
            got, what = item(evidence, f"output{trial}.{k}"), f"model(x) of trial {trial}"
            expect_close(got, apply._affine_chain(params, x), what)
