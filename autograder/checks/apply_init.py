"""Check for the apply notebook's last exercise: real weight initialisation with nn.init."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch import nn

from autograder.checks.apply_runner import apply_to
from autograder.checks.evidence import built_from, sample
from autograder.checks.registry import register
from autograder.checks.student import Student
from autograder.feedback import CheckFailed, NotDoneYet
from autograder.models.apply import make_tiny_lm
from autograder.tolerances import STD_RTOL

STD = 0.02


def _is_normal_002(weight: torch.Tensor) -> bool:
    w = weight.detach().double()
    return abs(w.std().item() - STD) <= STD_RTOL * STD and abs(w.mean().item()) <= STD_RTOL * STD


def _judge_init(net: nn.Module, before: dict[str, torch.Tensor] | None) -> None:
    """Linear and Embedding weights ~ normal(0, 0.02), Linear biases exactly 0, LayerNorm as built.

    `before` (the parameters before init) tells an untouched layer apart from a wrong init.
    """
    untouched, wrong, bias, norms = [], [], [], []
    for path, module in net.named_modules():
        label = f"{type(module).__name__} (net.{path})"
        if isinstance(module, nn.Linear | nn.Embedding):
            weight = module.weight.detach()
            if before is not None and torch.equal(weight, before[f"{path}.weight"]):
                untouched.append((label, module))
            elif not _is_normal_002(weight):
                stats = f"mean {weight.mean().item():.4f}, std {weight.std().item():.4f}"
                wrong.append((label, module, stats))
            has_bias = isinstance(module, nn.Linear) and module.bias is not None
            if has_bias and not torch.equal(module.bias.detach(), torch.zeros_like(module.bias)):
                bias.append(label)
        elif isinstance(module, nn.LayerNorm) and not (
            torch.equal(module.weight.detach(), torch.ones_like(module.weight))
            and torch.equal(module.bias.detach(), torch.zeros_like(module.bias))
        ):
            norms.append(label)
    subclasses = [label for label, module, *_ in untouched + wrong if _linear_subclass(module)]
    if subclasses and len(subclasses) == len(untouched + wrong):
        raise CheckFailed(
            f"init_weights did not initialise {', '.join(subclasses)}: these are subclasses of "
            "nn.Linear, and the modules were selected by a name test that misses them "
            "(`type(m).__name__ == 'Linear'` or `type(m) is nn.Linear`). "
            "`isinstance(module, nn.Linear)` also matches subclasses; well-known model code uses "
            "it."
        )
    if untouched:
        raise CheckFailed(
            f"init_weights left {', '.join(label for label, _ in untouched)} as PyTorch built "
            "it: give every nn.Linear and nn.Embedding weight normal(0, 0.02)."
        )
    if wrong:
        lines = "\n  ".join(f"{label}: weight {stats}" for label, _, stats in wrong)
        raise CheckFailed(
            "these weights are not normal with mean 0 and std 0.02 "
            f"(nn.init.normal_(module.weight, mean=0.0, std=0.02)):\n  {lines}"
        )
    if bias:
        raise CheckFailed(
            f"the bias of {', '.join(bias)} is not exactly 0: `nn.init.zeros_(module.bias)`."
        )
    if norms:
        raise CheckFailed(
            f"init_weights changed {', '.join(norms)}: leave LayerNorm at weight 1 and bias 0. "
            "Select layers with isinstance(module, nn.Linear) and isinstance(module, nn.Embedding) "
            "rather than, e.g., hasattr(module, 'weight')."
        )


def _linear_subclass(module: nn.Module) -> bool:
    return isinstance(module, nn.Linear) and type(module) is not nn.Linear


def judged_parameters(net: nn.Module) -> dict[str, tuple[torch.Tensor, float | None]]:
    """The parameters _judge_init judges, by name, each with the value it must hold exactly
    (Linear bias 0, LayerNorm 1 and 0), or None for a weight drawn from normal(0, STD)."""
    found: dict[str, tuple[torch.Tensor, float | None]] = {}
    for path, module in net.named_modules():
        prefix = f"{path}." if path else ""
        if isinstance(module, nn.Linear | nn.Embedding):
            found[prefix + "weight"] = (module.weight, None)
        fills = {"bias": 0.0} if isinstance(module, nn.Linear) else {}
        if isinstance(module, nn.LayerNorm):
            fills = {"weight": 1.0, "bias": 0.0}
        for name, fill in fills.items():
            if isinstance(getattr(module, name, None), torch.Tensor):
                found[prefix + name] = (getattr(module, name), fill)
    return found


def lm_evidence(net: nn.Module) -> dict[str, object]:
    """A TinyLM's size (vocab, dim) and a sample of each parameter the check judges, by name."""
    embed = getattr(net, "embed", None)
    size = list(embed.weight.shape) if isinstance(embed, nn.Embedding) else []
    samples = {name: sample(p) for name, (p, _) in judged_parameters(net).items()}
    return {"config": [int(n) for n in size], "samples": samples}


def fresh_lms(rng: torch.Generator, hidden: bool) -> list[nn.Module]:
    """The fresh TinyLMs a check initialises, built from `rng` so that the verifier can tell
    their default weights (which an init must change) again."""
    sizes = [(500, 64), (300, 96)] if hidden else [(500, 64)]
    return [built_from(rng, make_tiny_lm, vocab, dim) for vocab, dim in sizes]


@contextlib.contextmanager
def _on_fresh(net: nn.Module) -> Iterator[None]:
    """Failures inside name the fresh TinyLM they happened on."""
    vocab, dim = net.embed.weight.shape
    try:
        yield
    except NotDoneYet:
        raise
    except CheckFailed as failure:
        raise CheckFailed(f"On a fresh TinyLM({vocab}, {dim}): {failure.message}") from None


def _snapshot(net: nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in net.named_parameters()}


@register("apply_nn_init")
def apply_nn_init(s: Student) -> str:
    [fresh] = fresh_lms(s.rng, hidden=False)
    before = _snapshot(fresh)
    apply_to(s, fresh, "init_weights", "net")  # surfaces a stub or an error first
    s.record(fresh0=lm_evidence(fresh))
    net = s.get("net")
    _judge_init(net, None)  # first: its messages name the notebook's own layers
    s.record(net=lm_evidence(net))
    with _on_fresh(fresh):
        _judge_init(fresh, before)
    return "Linear and Embedding weights ~ normal(0, 0.02), Linear biases 0, LayerNorm untouched."


@register("apply_nn_init", hidden=True)
def apply_nn_init_hidden(s: Student) -> str:
    for trial, net in enumerate(fresh_lms(s.rng, hidden=True)):
        before = _snapshot(net)
        with _on_fresh(net):
            apply_to(s, net, "init_weights", "net")
            s.record(**{f"fresh{trial}": lm_evidence(net)})
            _judge_init(net, before)
    return (
        "init_weights initialises fresh TinyLMs of other sizes, subclasses of nn.Linear included."
    )
