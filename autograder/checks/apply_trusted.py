"""Trusted verifiers of the apply notebook's checks (apply.py, apply_init.py): the hidden checks'
models and inputs are rebuilt from the seed; the visible checks' are the notebook's, from the
evidence."""

from __future__ import annotations

import torch

from autograder.checks import apply
from autograder.checks import apply_init as nn_init
from autograder.checks.apply_runner import TRIALS
from autograder.checks.evidence import sample
from autograder.checks.trusted import (
    Suspicious,
    expect_close,
    expect_equal,
    expect_sampled_init,
    item,
    verifies,
)
from autograder.models.apply import make_tiny_lm


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


# ---- apply_nn_init -------------------------------------------------------------------------------


def _expect_lm_init(evidence: object, fresh: torch.nn.Module | None, what: str) -> None:
    """`evidence` (apply_init.lm_evidence) shows a TinyLM initialised as the task says; `fresh`,
    rebuilt from the seed, is the model before init, which it must be of the size of and differ
    from."""
    if type(evidence) is not dict:
        raise Suspicious(f"{what} is not a dict")
    config, samples = item(evidence, "config"), item(evidence, "samples")
    if type(config) is not list or len(config) != 2 or any(type(n) is not int for n in config):
        raise Suspicious(f"the size of {what} is not two integers")
    if fresh is not None:
        expect_equal(config, list(fresh.embed.weight.shape), f"the size of {what}")
    vocab, dim = config
    try:  # TinyLM's attention has 4 heads: a dim they do not divide does not build
        model = make_tiny_lm(vocab, dim) if 0 < vocab <= 4096 and 0 < dim <= 1024 else None
    except (AssertionError, RuntimeError, ValueError):
        model = None
    if model is None:
        raise Suspicious(f"{what} has an unlikely size {config}")
    want = nn_init.judged_parameters(model)
    if type(samples) is not dict:
        raise Suspicious(f"the samples of {what} are not a dict")
    expect_equal(sorted(samples), sorted(want), f"the parameters of {what}")
    for name, (param, fill) in want.items():
        got, label = samples[name], f"{what}: {name}"
        if fill is not None:
            expect_sampled_init(got, param, label, fill=fill)
            continue
        expect_sampled_init(got, param, label, std=nn_init.STD)
        if fresh is not None and torch.equal(got, sample(fresh.get_parameter(name))):
            raise Suspicious(f"{label} was not initialised")


# Both are consistency only: the expected result is a distribution, not values, so weights that
# pass can be drawn without running init_weights; the seed fixes only the models' sizes and the
# default weights an init must have changed.
@verifies("apply_nn_init")
def verify_apply_nn_init(rng: torch.Generator, evidence: dict) -> None:
    [fresh] = nn_init.fresh_lms(rng, hidden=False)
    _expect_lm_init(item(evidence, "fresh0"), fresh, "the fresh TinyLM")
    _expect_lm_init(item(evidence, "net"), None, "the notebook's net")


@verifies("apply_nn_init", hidden=True, independent=False)
def verify_apply_nn_init_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial, fresh in enumerate(nn_init.fresh_lms(rng, hidden=True)):
        _expect_lm_init(item(evidence, f"fresh{trial}"), fresh, f"fresh TinyLM {trial}")
