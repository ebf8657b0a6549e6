"""Trusted verifiers of the hooks-in-practice checks (see trusted.py): the fresh cases are rebuilt
from the seed; the notebook's own models, data and results are rebuilt from the evidence."""

from __future__ import annotations

import torch
from torch import nn

from autograder.checks import practice_grads as grads
from autograder.checks import practice_init as init
from autograder.checks import practice_memory as memory
from autograder.checks import practice_modules as modules
from autograder.checks.evidence import sample
from autograder.checks.practice_common import hook_free_outputs
from autograder.checks.trusted import (
    Suspicious,
    expect_close,
    expect_equal,
    expect_sampled_init,
    item,
    verifies,
)
from autograder.models.practice import make_block, make_mlp, make_tiny_gpt
from autograder.tolerances import ATOL


def _number(value: object, what: str) -> float:
    if type(value) is torch.Tensor and value.numel() == 1:
        return float(value.item())
    if type(value) in (int, float):
        return float(value)
    raise Suspicious(f"{what} is {type(value).__name__}, not a number")


def _tensor_dict(got: object, want: dict[str, torch.Tensor], what: str) -> None:
    if type(got) is not dict:
        raise Suspicious(f"{what} is {type(got).__name__}, not a dict")
    expect_equal(sorted(got), sorted(want), f"the keys of {what}")
    for name, expected in want.items():
        expect_close(got[name], expected, f"{what}[{name!r}]")


def _ints(value: object, what: str) -> list[int]:
    if type(value) is not list or not value or any(type(v) is not int for v in value):
        raise Suspicious(f"{what} is not a list of integers")
    return value


def _mlp(evidence: dict) -> nn.Module:
    """The notebook's MLP, rebuilt as the checker's own MLP from the sizes and parameters."""
    sizes = _ints(item(evidence, "sizes"), "the model's sizes")
    return _loaded(make_mlp, (tuple(sizes),), item(evidence, "state"))


def _loaded(factory, args: tuple, state: object) -> nn.Module:
    """`factory(*args)` with the parameters `state` (strict: no other names or shapes)."""
    try:
        model = factory(*args)
        model.load_state_dict(state)
    except (RuntimeError, TypeError, ValueError, AttributeError) as error:
        raise Suspicious(f"the model's parameters do not fit its sizes ({error})"[:200]) from None
    return model


# ---- dead_relu_stats -----------------------------------------------------------------------------


def _expect_stats(got: object, model: nn.Module, x: torch.Tensor, what: str) -> None:
    expected = modules.dead_fractions(model, x)
    if type(got) is not dict:
        raise Suspicious(f"{what} is {type(got).__name__}, not a dict")
    expect_equal(sorted(got), sorted(expected), f"the keys of {what}")
    for name, want in expected.items():
        if abs(_number(got[name], f"{what}[{name!r}]") - want) > ATOL:
            raise Suspicious(f"{what}[{name!r}] is not the dead fraction")


@verifies("dead_relu_stats")
def verify_dead_relu_stats(rng: torch.Generator, evidence: dict) -> None:
    x = item(evidence, "x")
    expect_close(x, x, "x")
    _expect_stats(item(evidence, "stats"), _mlp(item(evidence, "model")), x, "stats")


@verifies("dead_relu_stats", hidden=True)
def verify_dead_relu_stats_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial in range(3):
        model, x = modules.fresh_dead_mlp(rng)
        _expect_stats(item(evidence, f"stats{trial}"), model, x, f"the stats of trial {trial}")


# ---- grad_clip_hook ------------------------------------------------------------------------------


def _clipped(model: nn.Module, x: torch.Tensor, y: torch.Tensor, clip: float) -> dict:
    return {n: g.clamp(-clip, clip) for n, g in grads.reference_grads(model, x, y).items()}


def _verify_fresh_clipping(rng: torch.Generator, evidence: dict, key: str) -> None:
    model, [(x, y)] = grads.fresh_case(rng)
    clip = grads.clip_below_every_max(rng, model, x, y)
    _tensor_dict(item(evidence, f"grads{key}"), _clipped(model, x, y, clip), f"grads of {key}")


@verifies("grad_clip_hook")
def verify_grad_clip_hook(rng: torch.Generator, evidence: dict) -> None:
    _verify_fresh_clipping(rng, evidence, "_fresh")
    x, y = item(evidence, "x"), item(evidence, "y")
    expect_close(x, x, "x")
    expect_close(y, y, "y")
    clip = _number(item(evidence, "clip_value"), "clip_value")
    want = _clipped(_mlp(item(evidence, "model")), x, y, clip)
    _tensor_dict(item(evidence, "grads"), want, "clip_model's gradients")


@verifies("grad_clip_hook", hidden=True)
def verify_grad_clip_hook_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial in range(3):
        _verify_fresh_clipping(rng, evidence, str(trial))


# ---- optimizer_in_backward -----------------------------------------------------------------------


def _verify_probe(rng: torch.Generator, evidence: dict) -> None:
    model, [(x, y)] = grads.fresh_case(rng)
    ref = grads.reference_grads(model, x, y)
    want = {n: p.detach() - grads.PROBE_LR * ref[n] for n, p in model.named_parameters()}
    _tensor_dict(item(evidence, "probe"), want, "the parameters after one backward")


OPTIMIZERS = {"SGD": torch.optim.SGD, "Adam": torch.optim.Adam, "AdamW": torch.optim.AdamW}


@verifies("optimizer_in_backward")
def verify_optimizer_in_backward(rng: torch.Generator, evidence: dict) -> None:
    _verify_probe(rng, evidence)
    sizes = _ints(item(evidence, "sizes"), "opt_model's sizes")
    kind, defaults = item(evidence, "optimizer"), item(evidence, "defaults")
    if kind not in OPTIMIZERS or type(defaults) is not dict:
        raise Suspicious(f"make_sgd makes an optimizer the grader does not rebuild ({kind!r})")
    x, y, steps = item(evidence, "x"), item(evidence, "y"), item(evidence, "steps")
    expect_close(x, x, "x")
    expect_close(y, y, "y")
    if type(steps) is not int or not 0 < steps <= 100:
        raise Suspicious("steps is not a small positive integer")
    state = item(evidence, "initial_state")
    model = _loaded(make_mlp, (tuple(sizes),), state)

    def make(params):
        return OPTIMIZERS[kind](params, **defaults)

    try:
        after = grads.plain_steps(model, state, make, [(x, y)] * steps)
    except (TypeError, ValueError) as error:  # settings no optimizer of that kind accepts
        raise Suspicious(f"make_sgd's settings do not make a {kind} ({error})"[:200]) from None
    _tensor_dict(item(evidence, "params"), after[-1], "opt_model's parameters")


@verifies("optimizer_in_backward", hidden=True)
def verify_optimizer_in_backward_hidden(rng: torch.Generator, evidence: dict) -> None:
    _verify_probe(rng, evidence)
    for name, factory in grads.FACTORIES.items():
        model, batches = grads.fresh_case(rng, batches=3)
        state = {k: v.clone() for k, v in model.state_dict().items()}
        for step, want in enumerate(grads.plain_steps(model, state, factory, batches)):
            _tensor_dict(item(evidence, f"{name}{step}"), want, f"{name}, step {step + 1}")


# ---- kwargs_always_call --------------------------------------------------------------------------


def _expect_trace(log: object, outputs: object, block: nn.Module, calls, x, what: str) -> None:
    want = [[kind, value] for kind, value in modules.expected_entries(block, x, calls)]
    expect_equal(log, want, f"the log of {what}")
    if type(outputs) is not list or len(outputs) != len(calls):
        raise Suspicious(f"the outputs of {what} are not one per call")
    for index, (kwargs, got) in enumerate(zip(calls, outputs, strict=True)):
        if modules.raises_value_error(block, x, kwargs):
            expect_equal(got, None, f"the output of call {index} of {what}")
        else:
            expect_close(got, block(x, **kwargs), f"the output of call {index} of {what}")


def _verify_fresh_trace(rng: torch.Generator, evidence: dict, key: str) -> None:
    block, calls, x = modules.block_case(rng)
    log, outputs = item(evidence, f"log{key}"), item(evidence, f"outputs{key}")
    _expect_trace(log, outputs, modules.hook_free_copy(block), calls, x, f"trial {key}")


def _calls(value: object) -> list[dict]:
    """The notebook's calls: a list of dicts of plain keyword values (a mask, a scale)."""
    if type(value) is not list or any(type(kwargs) is not dict for kwargs in value):
        raise Suspicious("calls is not a list of dicts")
    for kwargs in value:
        for name, argument in kwargs.items():
            if type(argument) not in (torch.Tensor, int, float):
                raise Suspicious(f"the keyword {name} of a call is {type(argument).__name__}")
    return value


@verifies("kwargs_always_call")
def verify_kwargs_always_call(rng: torch.Generator, evidence: dict) -> None:
    _verify_fresh_trace(rng, evidence, "_fresh")
    spec = item(evidence, "block")
    dim = item(spec, "dim")
    if type(dim) is not int:
        raise Suspicious("the block's size is not an integer")
    block = _loaded(make_block, (dim,), item(spec, "state"))
    x, calls = item(evidence, "x_block"), _calls(item(evidence, "calls"))
    expect_close(x, x, "x_block")
    want = [[kind, value] for kind, value in modules.expected_entries(block, x, calls)]
    expect_equal(item(evidence, "log"), want, "the notebook's log")


@verifies("kwargs_always_call", hidden=True)
def verify_kwargs_always_call_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial in range(3):
        _verify_fresh_trace(rng, evidence, str(trial))


# ---- activation_memory ---------------------------------------------------------------------------


def _verify_memory(rng: torch.Generator, evidence: dict, hidden: bool) -> None:
    kinds = memory.HIDDEN_KINDS if hidden else memory.VISIBLE_KINDS
    for trial, kind in enumerate(kinds):
        stored, boxes = memory.stored_case(rng, kind)
        got = _number(item(evidence, f"bytes{trial}"), f"the bytes of trial {trial}")
        # As in the check: the cycle collector (slow in a big process) only when needed.
        if got != memory.kept_alive(stored, boxes) and got != memory.kept_alive(
            stored, boxes, collect=True
        ):
            raise Suspicious(f"the bytes of trial {trial} ({kind}) are not what is kept alive")
    for trial in range(memory.RECORD_TRIALS[hidden]):
        model, name, batches = memory.record_case(rng)
        got = item(evidence, f"recorded{trial}")
        want = [hook_free_outputs(model, x)[name] for x in batches]
        if type(got) is not list or len(got) != len(want):
            raise Suspicious(f"the recorded outputs of trial {trial} are not one per batch")
        for index, (entry, expected) in enumerate(zip(got, want, strict=True)):
            expect_close(entry, expected, f"recorded output {index} of trial {trial}")


# Both checks' values come from the seed alone; that the notebook's `recorded` holds no graph,
# and how much memory the recorded outputs keep alive, are judged in the kernel only.
for _hidden in (False, True):
    verifies("activation_memory", hidden=_hidden, independent=True)(
        lambda rng, evidence, hidden=_hidden: _verify_memory(rng, evidence, hidden)
    )


# ---- init_weights --------------------------------------------------------------------------------


def _expect_init(evidence: object, before: dict[str, torch.Tensor] | None, what: str) -> None:
    if type(evidence) is not dict:
        raise Suspicious(f"{what} is not a dict")
    n_layer, dim, vocab, block_size = _ints(item(evidence, "config"), f"the size of {what}")
    if not (0 < n_layer <= 12 and 0 < dim <= 1024 and 0 < vocab <= 4096 and 0 < block_size <= 4096):
        raise Suspicious(f"{what} has an unlikely size")
    model, samples = make_tiny_gpt(n_layer, dim, vocab, block_size), item(evidence, "samples")
    params = dict(model.named_parameters())
    if type(samples) is not dict:
        raise Suspicious(f"the samples of {what} are not a dict")
    expect_equal(sorted(samples), sorted(params), f"the parameters of {what}")
    for name, param in params.items():
        got, label = samples[name], f"{what}: {name}"
        module = model.get_submodule(name.rsplit(".", 1)[0])
        if isinstance(module, nn.LayerNorm) or name.endswith("bias"):
            fill = 1.0 if isinstance(module, nn.LayerNorm) and name.endswith("weight") else 0.0
            expect_sampled_init(got, param, label, fill=fill)
            continue
        std = init.residual_std(n_layer) if name.endswith("c_proj.weight") else init.STD
        expect_sampled_init(got, param, label, std=std)
        if before is not None and torch.equal(got, sample(before[name])):
            raise Suspicious(f"{label} was not initialised")


@verifies("init_weights")
def verify_init_weights(rng: torch.Generator, evidence: dict) -> None:
    [(_, before)] = init.fresh_cases(rng, hidden=False)
    _expect_init(item(evidence, "fresh0"), before, "the fresh TinyGPT")
    _expect_init(item(evidence, "gpt"), None, "the notebook's gpt")


# The expected result is a distribution, not values: weights that pass can be drawn without
# running init_gpt, so even the hidden check's evidence only shows a right-looking init.
@verifies("init_weights", hidden=True, independent=False)
def verify_init_weights_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial, (_, before) in enumerate(init.fresh_cases(rng, hidden=True)):
        _expect_init(item(evidence, f"fresh{trial}"), before, f"fresh TinyGPT {trial}")
