"""dead_relu_stats: `relu_stats(model, x)` measures, with a forward hook on every nn.ReLU, the
fraction of each ReLU's units that are 0 for every example of the batch, and leaves no hook
behind, even when the forward raises."""

from __future__ import annotations

import torch
from torch import nn

from autograder.exercises.hooks_in_practice.common import (
    hook_free_outputs,
    mlp_evidence,
    number,
    random_sizes,
    rebuilt_mlp,
)
from autograder.exercises.hooks_in_practice.models import make_mlp
from autograder.exercises.kit.cases import in_case
from autograder.exercises.kit.evidence import built_from, randint, uniform
from autograder.exercises.kit.hooks import require_no_hooks, require_removed_on_error
from autograder.exercises.kit.judge import Suspicious, expect_close, expect_equal, item
from autograder.exercises.kit.student import Student, require_arity
from autograder.feedback import CheckFailed, describe
from autograder.i18n import N_, _
from autograder.tolerances import ATOL

HINTS = [
    N_(
        "`model.named_modules()` yields a `(name, module)` pair for every submodule; "
        "`isinstance(module, nn.ReLU)` tells which of them are ReLUs."
    ),
    N_(
        "Each hook must know the name of its ReLU: write a small function that takes a name and "
        "builds the hook, and let the hook write into a dict that `relu_stats` returns."
    ),
    N_(
        "`output` has shape `(batch, units)`: `(output == 0).all(dim=0)` marks the dead units, "
        "and the mean of that mask as floats is the fraction. `.item()` makes it a number."
    ),
    N_(
        "Keep every handle. Run the model in a `try` block and remove all the handles in its "
        "`finally:` block."
    ),
]
TRIALS = 3  # the hidden check's fresh models
SIGNATURE = "relu_stats(model, x)"


def dead_fractions(model: nn.Module, x: torch.Tensor) -> dict[str, float]:
    """Hook-free: for each ReLU, the fraction of its units that are 0 for every example."""
    return _fractions(model, x, lambda out: (out == 0).all(dim=0))


def _fractions(model: nn.Module, x: torch.Tensor, mask) -> dict[str, float]:
    with torch.no_grad():
        return {
            name: mask(out).float().mean().item()
            for name, out in hook_free_outputs(model, x).items()
            if isinstance(model.get_submodule(name), nn.ReLU)
        }


# Wrong measures a student may have taken, and why each is not the dead fraction.
WRONG_MEASURES = [
    (
        lambda out: out == 0,
        N_(
            "these are the fractions of output *entries* that are 0, over all examples and "
            "units together. A unit is dead when it is 0 for *every* example of the batch: the "
            "test runs along the batch dimension, one answer per unit."
        ),
    ),
    (
        lambda out: (out > 0).any(dim=0),
        N_(
            "these are the fractions of units that are alive (1 minus the dead fraction): count "
            "the units that are 0 for every example."
        ),
    ),
    (
        lambda out: (out == 0).all(dim=1),
        N_(
            "these are the fractions of *examples* whose units are all 0: the test ran along "
            "the units (dim=1). `output` has shape (batch, units); a unit is dead when it is 0 "
            "along the batch dimension (dim=0)."
        ),
    ),
]


def fresh_dead_mlp(rng: torch.Generator) -> tuple[nn.Module, torch.Tensor]:
    """A fresh MLP whose hidden biases are pushed down, so some of its units die on the batch."""
    sizes = random_sizes(rng)
    model = built_from(rng, _dead_mlp, sizes, uniform(rng, 0.2, 1.0))
    return model, torch.randn(randint(rng, 6, 12), sizes[0], generator=rng)


def _dead_mlp(sizes: tuple[int, ...], shift: float) -> nn.Module:
    model = make_mlp(sizes)
    with torch.no_grad():
        for layer in model.layers:
            if isinstance(layer, nn.Linear):
                layer.bias.sub_(shift)
    return model


def _as_number(value: object) -> float | None:
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return value.item()
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _judge_keys(got: dict, expected: dict[str, float]) -> None:
    if set(got) == set(expected):
        return
    relative = {name.split(".", 1)[-1] for name in expected}
    if all(isinstance(key, nn.Module) for key in got):
        why = _(
            "the keys are the ReLU modules themselves; key the result by their names, the "
            "first element of each pair `model.named_modules()` yields."
        )
    elif {str(key) for key in got} == relative:
        why = _(
            "these are the names inside `model.layers` (what `model.layers.named_children()` "
            "gives); `model.named_modules()`, called on the model, names each module by its "
            "whole path from the model, such as 'layers.1'."
        )
    else:
        why = _(
            "the dict needs one entry per nn.ReLU of the model, keyed by the name "
            "`model.named_modules()` gives it."
        )
    raise CheckFailed(
        _("the keys should be {expected}, but they are {got}: {why}").format(
            expected=sorted(expected), got=sorted(map(str, got)), why=why
        )
    )


def _judge_stats(got: object, model: nn.Module, x: torch.Tensor) -> None:
    expected = dead_fractions(model, x)
    if not isinstance(got, dict):
        raise CheckFailed(
            _("`relu_stats` should return a dict {{ReLU name: dead fraction}}, got {got}.").format(
                got=describe(got)
            )
        )
    _judge_keys(got, expected)
    numbers = {name: _as_number(value) for name, value in got.items()}
    for name, value in numbers.items():
        if value is None:
            raise CheckFailed(
                _(
                    "the value for {name!r} should be a number (a fraction between 0 and 1), "
                    "got {got}."
                ).format(name=name, got=describe(got[name]))
            )
    wrong = [name for name in expected if abs(numbers[name] - expected[name]) > ATOL]
    if not wrong:
        return
    lines = "\n".join(
        _("{name}: expected {expected:.4f}, got {got:.4f}").format(
            name=name, expected=expected[name], got=numbers[name]
        )
        for name in wrong
    )
    for measure, why in WRONG_MEASURES:
        other = _fractions(model, x, measure)
        if all(abs(numbers[name] - other[name]) <= ATOL for name in wrong):
            raise CheckFailed(
                _("wrong dead fractions:\n{lines}\n{why}").format(lines=lines, why=_(why))
            )
    raise CheckFailed(_("wrong dead fractions:\n{lines}").format(lines=lines))


def _run(s: Student, model: nn.Module, x: torch.Tensor) -> object:
    fn = s.function("relu_stats")
    require_arity(fn, "relu_stats", SIGNATURE, 2)
    return s.call(f"`{SIGNATURE}`", fn, model, x)


def _removes_hooks_when_forward_fails(s: Student, model: nn.Module) -> None:
    fn = s.function("relu_stats")
    bad = torch.zeros(2, model.layers[0].in_features + 1)
    require_removed_on_error(
        lambda: fn(model, bad), model, "relu_stats", _("an input with one feature too many")
    )


def _fresh_where() -> str:
    return _("On a fresh MLP with random sizes, weights and inputs")


def visible(s: Student) -> str:
    fresh, fresh_x = fresh_dead_mlp(s.rng)
    got_fresh = in_case(_fresh_where(), _run, s, fresh, fresh_x)
    in_case(_fresh_where(), require_no_hooks, fresh, "relu_stats")
    model, x, stats = s.get("model"), s.get("x"), s.get("stats")
    s.record(model=mlp_evidence(model), x=x, stats=stats, fresh=got_fresh)
    in_case(_("In the notebook, `stats`"), _judge_stats, stats, model, x)
    in_case(_fresh_where(), _judge_stats, got_fresh, fresh, fresh_x)
    in_case(_fresh_where(), _removes_hooks_when_forward_fails, s, fresh)
    return _("`stats` holds the dead fraction of every ReLU, and no hook is left behind.")


def hidden(s: Student) -> str:
    for trial in range(TRIALS):
        model, x = fresh_dead_mlp(s.rng)
        got = in_case(_fresh_where(), _run, s, model, x)
        s.record(**{f"stats{trial}": got})
        in_case(_fresh_where(), require_no_hooks, model, "relu_stats")
        in_case(_fresh_where(), _judge_stats, got, model, x)
    in_case(_fresh_where(), _removes_hooks_when_forward_fails, s, model)
    return _("`relu_stats` measures the dead units of fresh models and batches.")


def _expect_stats(got: object, model: nn.Module, x: torch.Tensor, what: str) -> None:
    expected = dead_fractions(model, x)
    if type(got) is not dict:
        raise Suspicious(f"{what} is {type(got).__name__}, not a dict")
    expect_equal(sorted(got), sorted(expected), f"the keys of {what}")
    for name, want in expected.items():
        if abs(number(got[name], f"{what}[{name!r}]") - want) > ATOL:
            raise Suspicious(f"{what}[{name!r}] is not the dead fraction")


def judge_visible(rng: torch.Generator, evidence: dict) -> None:
    fresh, fresh_x = fresh_dead_mlp(rng)
    _expect_stats(item(evidence, "fresh"), fresh, fresh_x, "the fresh model's stats")
    x = item(evidence, "x")
    expect_close(x, x, "x")
    _expect_stats(item(evidence, "stats"), rebuilt_mlp(item(evidence, "model")), x, "stats")


def judge_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial in range(TRIALS):
        model, x = fresh_dead_mlp(rng)
        _expect_stats(item(evidence, f"stats{trial}"), model, x, f"the stats of trial {trial}")
