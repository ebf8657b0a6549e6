"""Check for the hooks-in-practice notebook's last exercise: GPT-2 style initialisation with
`apply` and `nn.init`, scaled residual projections included."""

from __future__ import annotations

import math

import torch
from torch import nn

from autograder.checks.evidence import built_from, randint, sample
from autograder.checks.practice_common import in_check
from autograder.checks.registry import register
from autograder.checks.student import Student, require_arity
from autograder.exercises.kit.student import checker_classes
from autograder.feedback import CheckFailed
from autograder.models.practice import make_tiny_gpt
from autograder.tolerances import STD_RTOL

STD = 0.02
FRESH = "On a fresh, 'trained' TinyGPT"


def residual_std(n_layer: int) -> float:
    return STD / math.sqrt(2 * n_layer)


def _normal_with(weight: torch.Tensor, std: float) -> bool:
    w = weight.detach().double()
    return abs(w.std().item() - std) <= STD_RTOL * std and abs(w.mean().item()) <= STD_RTOL * std


def pretend_trained(model: nn.Module) -> dict[str, torch.Tensor]:
    """Move every parameter away from any init (as training would); return the values."""
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.3 + 0.1)
    return {name: p.detach().clone() for name, p in model.named_parameters()}


def _same(value: object, old: torch.Tensor | None) -> bool:
    return isinstance(value, torch.Tensor) and old is not None and torch.equal(value, old)


def _stats(weight: torch.Tensor) -> str:
    w = weight.detach()
    return f"mean {w.mean().item():+.4f}, std {w.std().item():.4f}"


def judge_init(model: nn.Module, before: dict[str, torch.Tensor] | None) -> None:
    n_layer = model.n_layer
    untouched, norms, biases, wrong, residual = [], [], [], [], []
    for path, module in model.named_modules():
        label = f"{type(module).__name__} ({path})"
        if isinstance(module, nn.LayerNorm):
            if not (
                torch.equal(module.weight, torch.ones_like(module.weight))
                and torch.equal(module.bias, torch.zeros_like(module.bias))
            ):
                norms.append((label, module))
            continue
        if not isinstance(module, nn.Linear | nn.Embedding):
            continue
        weight, bias = module.weight, getattr(module, "bias", None)
        if before is not None and (
            _same(weight, before.get(f"{path}.weight"))
            or (bias is not None and _same(bias, before.get(f"{path}.bias")))
        ):
            untouched.append((label, module))  # the apply step missed it
            continue
        is_residual = path.endswith("c_proj")
        std = residual_std(n_layer) if is_residual else STD
        if not _normal_with(weight, std):
            (residual if is_residual else wrong).append((label, _stats(weight)))
        if bias is not None and not torch.equal(bias, torch.zeros_like(bias)):
            biases.append(label)
    _raise_first(untouched, norms, wrong, residual, biases, n_layer)


def _raise_first(untouched, norms, wrong, residual, biases, n_layer: int) -> None:
    if untouched:
        subclasses = sorted(
            {type(m).__name__ for _, m in untouched if type(m) not in (nn.Linear, nn.Embedding)}
        )
        names = ", ".join(label for label, _ in untouched)
        if subclasses:
            raise CheckFailed(
                f"init_gpt's apply step did not initialise {names}. {', '.join(subclasses)} is a "
                "subclass of nn.Linear, which a name test (`type(m).__name__ == 'Linear'`) or "
                "`type(m) is nn.Linear` misses: select with isinstance(module, nn.Linear)."
            )
        raise CheckFailed(f"init_gpt left {names} as they were: initialise every one of them.")
    if norms:
        labels = ", ".join(label for label, _ in norms)
        # A normal(0, 0.02) draw stays within 5 std of 0; a LayerNorm weight should be near 1.
        normal = all(m.weight.abs().max().item() <= 5 * STD for _, m in norms)
        raise CheckFailed(
            f"{labels}: LayerNorm must end with weight 1 and bias 0 "
            "(`nn.init.ones_(m.weight)`, `nn.init.zeros_(m.bias)`)."
            + (
                " Its weight was drawn from normal(0, 0.02): a test like hasattr(m, 'weight') "
                "also selects LayerNorm; select layers with isinstance."
                if normal
                else ""
            )
        )
    if wrong:
        lines = "\n  ".join(f"{label}: weight {stats}" for label, stats in wrong)
        raise CheckFailed(
            f"these weights should be normal with mean 0 and std {STD}:\n  {lines}\n  (nn.Linear "
            "and nn.Embedding alike; PyTorch's own default for Embedding is normal(0, 1).)"
        )
    if residual:
        lines = "\n  ".join(f"{label}: weight {stats}" for label, stats in residual)
        want = residual_std(n_layer)
        raise CheckFailed(
            f"the residual projections (every c_proj) should have std 0.02 / sqrt(2 * n_layer) "
            f"= {want:.4f} with n_layer = {n_layer}:\n  {lines}\n  Each block adds to the "
            "residual stream twice (attention and MLP), so GPT-2 shrinks these weights to keep "
            "the stream's variance from growing with depth. After apply, re-draw the parameters "
            "whose name ends with 'c_proj.weight' (model.named_parameters())."
        )
    if biases:
        raise CheckFailed(f"the bias of {', '.join(biases)} is not exactly 0: nn.init.zeros_.")


def _run_init(s: Student, model: nn.Module) -> None:
    fn = s.function("init_gpt")
    require_arity(fn, "init_gpt", "init_gpt(model)", 1)
    with checker_classes(s, fn, model):
        s.call("init_gpt(model)", fn, model)


def _trained_gpt(n_layer: int, dim: int, vocab: int) -> nn.Module:
    model = make_tiny_gpt(n_layer, dim, vocab)
    pretend_trained(model)
    return model


def fresh_cases(rng: torch.Generator, hidden: bool) -> list[tuple[nn.Module, dict]]:
    """The 'trained' TinyGPTs a check initialises, and their parameters before, from `rng`."""
    if hidden:
        depths = [(1, 3, 4)[i] for i in torch.randperm(3, generator=rng)[:2].tolist()]
        configs = [(n, (64, 80)[randint(rng, 0, 1)], (96, 128)[randint(rng, 0, 1)]) for n in depths]
    else:
        configs = [(2, 64, 128)]
    cases = []
    for config in configs:
        model = built_from(rng, _trained_gpt, *config)
        cases.append((model, {name: p.detach().clone() for name, p in model.named_parameters()}))
    return cases


def gpt_evidence(model: nn.Module) -> dict[str, object]:
    """The configuration of a TinyGPT and a sample of each parameter, by name."""
    vocab, dim = model.wte.weight.shape
    return {
        "config": [int(model.n_layer), int(dim), int(vocab), int(model.wpe.weight.shape[0])],
        "samples": {name: sample(p) for name, p in model.named_parameters()},
    }


@register("init_weights")
def init_weights(s: Student) -> str:
    [(model, before)] = fresh_cases(s.rng, hidden=False)
    _run_init(s, model)
    s.record(fresh0=gpt_evidence(model))
    in_check(FRESH, judge_init, model, before)
    gpt = s.get("gpt")
    s.record(gpt=gpt_evidence(gpt))
    in_check("In the notebook, gpt", judge_init, gpt, None)
    return "GPT-2 initialisation: 0.02 everywhere, c_proj scaled, LayerNorm reset, biases 0."


@register("init_weights", hidden=True)
def init_weights_hidden(s: Student) -> str:
    for trial, (model, before) in enumerate(fresh_cases(s.rng, hidden=True)):
        _run_init(s, model)
        s.record(**{f"fresh{trial}": gpt_evidence(model)})
        in_check(f"{FRESH} with n_layer={model.n_layer}", judge_init, model, before)
    return "init_gpt initialises fresh TinyGPTs of other depths and widths."
