"""apply_nn_init: `net.apply(init_weights)` initialises a TinyLM as GPT-2 style models do:
Linear and Embedding weights ~ normal(0, 0.02), Linear biases 0, LayerNorm left as built."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch import nn

from autograder.exercises.kit.evidence import built_from, sample
from autograder.exercises.kit.judge import Suspicious, expect_equal, expect_sampled_init, item
from autograder.exercises.kit.student import Student
from autograder.exercises.module_apply.common import apply_to, explained
from autograder.exercises.module_apply.models import make_tiny_lm
from autograder.feedback import CheckFailed, NotDoneYet
from autograder.i18n import N_, _
from autograder.tolerances import STD_RTOL

HINTS = [
    N_("`isinstance(module, nn.Linear)` also matches the subclasses: `Head` and `out_proj`."),
    N_(
        "`nn.init.normal_(tensor, mean, std)` and `nn.init.zeros_(tensor)` change a tensor in "
        "place."
    ),
    N_(
        "A layer built with `bias=False` has `bias` set to `None`: skip it. Leave `nn.LayerNorm` "
        "as it is."
    ),
]
STD = 0.02
FN = "init_weights"


def _is_normal_002(weight: torch.Tensor) -> bool:
    w = weight.detach().double()
    return abs(w.std().item() - STD) <= STD_RTOL * STD and abs(w.mean().item()) <= STD_RTOL * STD


def judge_init(net: nn.Module, before: dict[str, torch.Tensor] | None) -> None:
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
            _(
                "`init_weights` did not initialise {layers}: these are subclasses of nn.Linear, "
                "and the modules were selected by a name test that misses them "
                "(`type(m).__name__ == 'Linear'` or `type(m) is nn.Linear`). "
                "`isinstance(module, nn.Linear)` also matches subclasses; well-known model code "
                "uses it."
            ).format(layers=", ".join(subclasses))
        )
    if untouched:
        raise CheckFailed(
            _(
                "`init_weights` left {layers} as PyTorch built it: give every nn.Linear and "
                "nn.Embedding weight normal(0, 0.02)."
            ).format(layers=", ".join(label for label, _module in untouched))
        )
    if wrong:
        lines = "\n  ".join(f"{label}: weight {stats}" for label, _module, stats in wrong)
        raise CheckFailed(
            _(
                "these weights are not normal with mean 0 and std 0.02 (`nn.init.normal_` "
                "takes the mean and the std as arguments):\n  {lines}"
            ).format(lines=lines),
            fix="nn.init.normal_(module.weight, mean=0.0, std=0.02)",
        )
    if bias:
        raise CheckFailed(
            _("the bias of {layers} is not exactly 0 (`nn.init.zeros_` sets it).").format(
                layers=", ".join(bias)
            ),
            fix="nn.init.zeros_(module.bias)",
        )
    if norms:
        raise CheckFailed(
            _(
                "`init_weights` changed {layers}: leave LayerNorm at weight 1 and bias 0. Select "
                "layers with isinstance(module, nn.Linear) and isinstance(module, nn.Embedding) "
                "rather than, e.g., hasattr(module, 'weight')."
            ).format(layers=", ".join(norms))
        )


def _linear_subclass(module: nn.Module) -> bool:
    return isinstance(module, nn.Linear) and type(module) is not nn.Linear


def judged_parameters(net: nn.Module) -> dict[str, tuple[torch.Tensor, float | None]]:
    """The parameters judge_init judges, by name, each with the value it must hold exactly
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
    samples = {name: sample(p) for name, (p, _fill) in judged_parameters(net).items()}
    return {"config": [int(n) for n in size], "samples": samples}


def fresh_lms(rng: torch.Generator, hidden: bool) -> list[nn.Module]:
    """The fresh TinyLMs a check initialises, built from `rng` so that the judge can tell
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
        raise CheckFailed(
            _("On a fresh TinyLM({vocab}, {dim}): {message}").format(
                vocab=vocab, dim=dim, message=failure.message
            ),
            fix=failure.fix,
        ) from None


def _snapshot(net: nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in net.named_parameters()}


def _initialised(s: Student, net: nn.Module) -> None:
    """`net.apply(init_weights)` on a fresh TinyLM, judged."""
    before = _snapshot(net)
    _result, selection = apply_to(s, net, FN, "net")
    try:
        judge_init(net, before)
    except CheckFailed as failure:
        raise explained(failure, selection, FN) from None


def visible(s: Student) -> str:
    [fresh] = fresh_lms(s.rng, hidden=False)
    before = _snapshot(fresh)
    _result, selection = apply_to(s, fresh, FN, "net")  # errors and their causes first
    s.record(fresh0=lm_evidence(fresh))
    net = s.get("net")
    try:
        judge_init(net, None)  # first: its messages name the notebook's own layers
    except CheckFailed as failure:
        raise explained(failure, selection, FN) from None
    s.record(net=lm_evidence(net))
    with _on_fresh(fresh):
        try:
            judge_init(fresh, before)
        except CheckFailed as failure:
            raise explained(failure, selection, FN) from None
    return _(
        "Linear and Embedding weights ~ normal(0, 0.02), Linear biases 0, LayerNorm untouched."
    )


def hidden(s: Student) -> str:
    for trial, net in enumerate(fresh_lms(s.rng, hidden=True)):
        with _on_fresh(net):
            _initialised(s, net)
            s.record(**{f"fresh{trial}": lm_evidence(net)})
    return _(
        "your function initialises fresh TinyLMs of other sizes, subclasses of nn.Linear included."
    )


def _expect_lm_init(evidence: object, fresh: nn.Module | None, what: str) -> None:
    """`evidence` (lm_evidence) shows a TinyLM initialised as the task says; `fresh`, rebuilt from
    the seed, is the model before init, which it must be of the size of and differ from."""
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
    want = judged_parameters(model)
    if type(samples) is not dict:
        raise Suspicious(f"the samples of {what} are not a dict")
    expect_equal(sorted(samples), sorted(want), f"the parameters of {what}")
    for name, (param, fill) in want.items():
        got, label = samples[name], f"{what}: {name}"
        if fill is not None:
            expect_sampled_init(got, param, label, fill=fill)
            continue
        expect_sampled_init(got, param, label, std=STD)
        if fresh is not None and torch.equal(got, sample(fresh.get_parameter(name))):
            raise Suspicious(f"{label} was not initialised")


# Both are consistency only: the expected result is a distribution, not values, so weights that
# pass can be drawn without running init_weights; the seed fixes only the models' sizes and the
# default weights an init must have changed.
def judge_visible(rng: torch.Generator, evidence: dict) -> None:
    [fresh] = fresh_lms(rng, hidden=False)
    _expect_lm_init(item(evidence, "fresh0"), fresh, "the fresh TinyLM")
    _expect_lm_init(item(evidence, "net"), None, "the notebook's net")


def judge_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial, fresh in enumerate(fresh_lms(rng, hidden=True)):
        _expect_lm_init(item(evidence, f"fresh{trial}"), fresh, f"fresh TinyLM {trial}")
