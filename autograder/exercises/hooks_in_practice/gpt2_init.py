"""gpt2_init: `init_gpt(model)` initialises a TinyGPT as GPT-2 does, with `model.apply`:
every Linear and Embedding weight normal(0, 0.02), Linear biases 0, LayerNorms 1 and 0, and the
residual projections (every `c_proj`) at std 0.02 / sqrt(2 * n_layer)."""

from __future__ import annotations

import math
from unittest import mock

import torch
from torch import nn

from autograder.exercises.hooks_in_practice.common import ints
from autograder.exercises.hooks_in_practice.models import make_tiny_gpt
from autograder.exercises.kit.cases import in_case
from autograder.exercises.kit.evidence import built_from, randint, sample
from autograder.exercises.kit.judge import Suspicious, expect_equal, expect_sampled_init, item
from autograder.exercises.kit.student import Student, checker_classes, require_arity
from autograder.feedback import CheckFailed
from autograder.i18n import N_, _
from autograder.tolerances import STD_RTOL

HINTS = [
    N_(
        "Write a function of one module and pass it to `model.apply`, which calls it on every "
        "submodule and on `model`; `isinstance` decides what happens to each."
    ),
    N_(
        "`isinstance` with `nn.Linear` also matches `CastedLinear`, and a tuple of classes tests "
        "several at once. Every `nn.Linear` and `nn.Embedding` weight gets `nn.init.normal_` "
        "with mean 0 and std 0.02."
    ),
    N_(
        "A Linear's bias may be `None` (`lm_head` has none): zero it only when it exists. A "
        "`LayerNorm` gets `nn.init.ones_` on its weight and `nn.init.zeros_` on its bias."
    ),
    N_(
        "After `apply`, loop over `model.named_parameters()` and draw again each parameter whose "
        "name ends with `c_proj.weight`, now with std `0.02 / math.sqrt(2 * model.n_layer)`."
    ),
]
STD = 0.02
NOTEBOOK_N_LAYER = 2  # the notebook's gpt
# The fresh models' n_layer: where 0.02 / sqrt(2 * n_layer) differs from the std a hard-coded
# depth (the notebook's), a missing factor 2 and no scaling give (n_layer not 1, 2 or 4).
FRESH_DEPTHS = (3, 5, 6)
LAYER_NORM_FIX = "nn.init.ones_(module.weight); nn.init.zeros_(module.bias)"


def residual_std(n_layer: int) -> float:
    return STD / math.sqrt(2 * n_layer)


def _normal_with(weight: torch.Tensor, std: float) -> bool:
    w = weight.detach().double()
    return abs(w.std().item() - std) <= STD_RTOL * std and abs(w.mean().item()) <= STD_RTOL * std


def _same(value: object, old: torch.Tensor | None) -> bool:
    return isinstance(value, torch.Tensor) and old is not None and torch.equal(value, old)


def _stats(weight: torch.Tensor) -> str:
    w = weight.detach()
    return _("mean {mean:+.4f}, std {std:.4f}").format(mean=w.mean().item(), std=w.std().item())


def judge_init(model: nn.Module, before: dict[str, torch.Tensor] | None) -> None:
    """Fail with the first mistake in how `model` (initialised by the student) looks."""
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
            (residual if is_residual else wrong).append((label, module.weight))
        if bias is not None and not torch.equal(bias, torch.zeros_like(bias)):
            biases.append(label)
    _untouched(untouched)
    _norms(norms)
    if wrong:
        lines = "\n".join(f"{label}: {_stats(weight)}" for label, weight in wrong)
        raise CheckFailed(
            _(
                "these weights should be normal with mean 0 and std {std}:\n{lines}\n(nn.Linear "
                "and nn.Embedding alike; PyTorch's own default for Embedding is normal(0, 1).)"
            ).format(std=STD, lines=lines)
        )
    _residual(residual, n_layer)
    if biases:
        raise CheckFailed(
            _("the bias of {names} is not exactly 0, as every Linear's bias must be.").format(
                names=", ".join(biases)
            )
        )


def _untouched(untouched: list) -> None:
    if not untouched:
        return
    names = ", ".join(label for label, _module in untouched)
    subclasses = sorted(
        {type(m).__name__ for _, m in untouched if type(m) not in (nn.Linear, nn.Embedding)}
    )
    if subclasses:
        raise CheckFailed(
            _(
                "`init_gpt` did not initialise {names}. {classes} is a subclass of nn.Linear, "
                "which a test of the class name (`type(m).__name__ == 'Linear'`) or "
                "`type(m) is nn.Linear` misses; `isinstance` also matches subclasses."
            ).format(names=names, classes=", ".join(subclasses))
        )
    raise CheckFailed(
        _("`init_gpt` left {names} as they were: every one of them is initialised.").format(
            names=names
        )
    )


def _norms(norms: list) -> None:
    if not norms:
        return
    labels = ", ".join(label for label, _module in norms)
    message = _("{labels}: a LayerNorm must end with weight 1 and bias 0.").format(labels=labels)
    # A normal(0, 0.02) draw stays within 5 std of 0; a LayerNorm weight should be near 1.
    if all(m.weight.abs().max().item() <= 5 * STD for _, m in norms):
        message += " " + _(
            "Its weight was drawn from normal(0, 0.02): a test like `hasattr(m, 'weight')` "
            "selects LayerNorm too; `isinstance` selects exactly the layer types you name."
        )
    else:
        message += " " + _(
            "The model stands for a trained one, so its LayerNorms are not at 1 and 0 any more: "
            "set them explicitly."
        )
    raise CheckFailed(message, fix=LAYER_NORM_FIX)


def _residual(residual: list, n_layer: int) -> None:
    if not residual:
        return
    lines = "\n".join(f"{label}: {_stats(weight)}" for label, weight in residual)
    message = _(
        "the residual projections (every c_proj) should have std 0.02 / sqrt(2 * n_layer) = "
        "{want:.4f} with n_layer = {n_layer}:\n{lines}"
    ).format(want=residual_std(n_layer), n_layer=n_layer, lines=lines)
    notebook = residual_std(NOTEBOOK_N_LAYER)
    if n_layer != NOTEBOOK_N_LAYER and all(_normal_with(w, notebook) for _, w in residual):
        message += "\n" + _(
            "Their std is {got:.4f}, right for the notebook's gpt (n_layer = {notebook}) but not "
            "for this model: the depth comes from `model.n_layer`, not from a number."
        ).format(got=notebook, notebook=NOTEBOOK_N_LAYER)
    elif all(_normal_with(w, STD / math.sqrt(n_layer)) for _, w in residual):
        message += "\n" + _(
            "Their std is 0.02 / sqrt(n_layer): the factor 2 is missing. Each block adds to the "
            "residual stream twice (attention and MLP), so there are 2 * n_layer additions."
        )
    else:
        message += "\n" + _(
            "Each block adds to the residual stream twice (attention and MLP), so GPT-2 shrinks "
            "these weights to keep the stream's variance from growing with depth: after "
            "`apply`, the parameters whose name ends with 'c_proj.weight' are drawn again."
        )
    raise CheckFailed(message)


def _run_init(s: Student, model: nn.Module) -> list:
    """Run the student's init_gpt on `model`; the modules `apply` was called on."""
    fn = s.function("init_gpt")
    require_arity(fn, "init_gpt", "init_gpt(model)", 1)
    # Every call of Module.apply, on any module and however it is made, is counted.
    original = nn.Module.apply
    counting = mock.patch.object(nn.Module, "apply", autospec=True, side_effect=original)
    with checker_classes(s, fn, model), counting as apply:
        s.call("`init_gpt(model)`", fn, model)
    return apply.call_args_list


def _require_apply(calls: list) -> None:
    if not calls:
        raise CheckFailed(
            _(
                "the values are right, but `init_gpt` never calls `model.apply`, which the "
                "exercise asks for: `apply(fn)` calls `fn` on every submodule and on the model "
                "itself, so the function decides what happens to one module at a time."
            )
        )


def _trained_gpt(n_layer: int, dim: int, vocab: int) -> nn.Module:
    model = make_tiny_gpt(n_layer, dim, vocab)
    with torch.no_grad():  # move every parameter away from any init, as training would
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.3 + 0.1)
    return model


def fresh_cases(rng: torch.Generator, hidden: bool) -> list[tuple[nn.Module, dict]]:
    """The 'trained' TinyGPTs a check initialises, and their parameters before, from `rng`:
    the visible check's one and the hidden check's two have depths other than the notebook's."""
    order = torch.randperm(len(FRESH_DEPTHS), generator=rng).tolist()
    depths = [FRESH_DEPTHS[i] for i in order[: 2 if hidden else 1]]
    configs = [(n, (64, 80)[randint(rng, 0, 1)], (96, 128)[randint(rng, 0, 1)]) for n in depths]
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


def _fresh_where(model: nn.Module) -> str:
    return _("On a fresh, 'trained' TinyGPT with n_layer = {n_layer}").format(n_layer=model.n_layer)


def visible(s: Student) -> str:
    [(model, before)] = fresh_cases(s.rng, hidden=False)
    calls = _run_init(s, model)
    s.record(fresh0=gpt_evidence(model))
    in_case(_fresh_where(model), judge_init, model, before)
    _require_apply(calls)
    gpt = s.get("gpt")
    s.record(gpt=gpt_evidence(gpt))
    in_case(_("In the notebook, `gpt`"), judge_init, gpt, None)
    return _("GPT-2 initialisation: 0.02 everywhere, c_proj scaled, LayerNorm reset, biases 0.")


def hidden(s: Student) -> str:
    for trial, (model, before) in enumerate(fresh_cases(s.rng, hidden=True)):
        calls = _run_init(s, model)
        s.record(**{f"fresh{trial}": gpt_evidence(model)})
        in_case(_fresh_where(model), judge_init, model, before)
        _require_apply(calls)
    return _("`init_gpt` initialises fresh TinyGPTs of other depths and widths.")


def _expect_init(evidence: object, before: dict[str, torch.Tensor] | None, what: str) -> None:
    if type(evidence) is not dict:
        raise Suspicious(f"{what} is not a dict")
    n_layer, dim, vocab, block_size = ints(item(evidence, "config"), f"the size of {what}")
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
        std = residual_std(n_layer) if name.endswith("c_proj.weight") else STD
        expect_sampled_init(got, param, label, std=std)
        if before is not None and torch.equal(got, sample(before[name])):
            raise Suspicious(f"{label} was not initialised")


def judge_visible(rng: torch.Generator, evidence: dict) -> None:
    [(_model, before)] = fresh_cases(rng, hidden=False)
    _expect_init(item(evidence, "fresh0"), before, "the fresh TinyGPT")
    _expect_init(item(evidence, "gpt"), None, "the notebook's gpt")


# The expected result is a distribution, not values: weights that pass can be drawn without
# running init_gpt, so the evidence only shows a right-looking init.
def judge_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial, (_model, before) in enumerate(fresh_cases(rng, hidden=True)):
        _expect_init(item(evidence, f"fresh{trial}"), before, f"fresh TinyGPT {trial}")
