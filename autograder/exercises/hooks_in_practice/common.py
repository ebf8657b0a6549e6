"""What the hooks_in_practice exercises share: fresh random MLPs, hook-free references, the
handles a function returns, and (for the judges) models rebuilt from evidence."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from autograder.exercises.hooks_in_practice.models import make_mlp
from autograder.exercises.kit.evidence import built_from, randint
from autograder.exercises.kit.judge import Suspicious, expect_close, expect_equal, item
from autograder.feedback import CheckFailed, describe
from autograder.i18n import _


def random_sizes(rng: torch.Generator) -> tuple[int, ...]:
    """Layer sizes of a fresh MLP: 2 to 4 hidden layers, unlike the notebook's."""
    hidden = [randint(rng, 8, 24) for _ in range(randint(rng, 2, 4))]
    return (randint(rng, 5, 12), *hidden, randint(rng, 2, 4))


def sizes_of(model: nn.Module) -> tuple[int, ...]:
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    return (linears[0].in_features, *(m.out_features for m in linears))


def fresh_case(
    rng: torch.Generator, batches: int = 1
) -> tuple[nn.Module, list[tuple[torch.Tensor, torch.Tensor]]]:
    """A fresh MLP and `batches` (x, y) pairs, all drawn from `rng`."""
    sizes = random_sizes(rng)
    model = built_from(rng, make_mlp, sizes)
    rows = randint(rng, 4, 10)
    return model, [
        (torch.randn(rows, sizes[0], generator=rng), torch.randn(rows, sizes[-1], generator=rng))
        for _ in range(batches)
    ]


def hook_free_outputs(model: nn.Module, x: torch.Tensor) -> dict[str, torch.Tensor]:
    """{name: output} of every child of `model.layers`, computed functionally (no hook can run)."""
    outputs, h = {}, x
    for name, layer in model.layers.named_children():
        if isinstance(layer, nn.Linear):
            h = F.linear(h, layer.weight, layer.bias)
        elif isinstance(layer, nn.ReLU):
            h = torch.relu(h)
        else:
            raise TypeError(f"unexpected layer {type(layer).__name__}")
        outputs[f"layers.{name}"] = h
    return outputs


def reference_grads(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> dict[str, torch.Tensor]:
    """d mse_loss(model(x), y) / d p for every parameter, from a hook-free copy of `model`."""
    copy = copy_of(model)
    names, params = zip(*copy.named_parameters(), strict=True)
    grads = torch.autograd.grad(F.mse_loss(copy(x), y), params)
    return dict(zip(names, grads, strict=True))


def copy_of(model: nn.Module, state: dict[str, torch.Tensor] | None = None) -> nn.Module:
    """A hook-free MLP with `model`'s parameters (or the given state)."""
    copy = make_mlp(sizes_of(model))
    copy.load_state_dict(state if state is not None else model.state_dict())
    return copy


def handles_of(result: object, fn_name: str) -> list[object]:
    """The handles a function returned: a list or tuple of objects with a .remove() method."""
    items = list(result) if isinstance(result, list | tuple) else None
    if items is None or not all(callable(getattr(h, "remove", None)) for h in items):
        raise CheckFailed(
            _(
                "`{fn}` should return the list of handles that `register_*_hook` gave you (so "
                "that the caller can remove the hooks), but it returned {got}."
            ).format(fn=fn_name, got=describe(result))
        )
    return items


# ---- for the judges: values and models rebuilt from evidence -----------------------------------


def mlp_evidence(model: nn.Module) -> dict[str, object]:
    """A notebook MLP as evidence: its layer sizes and parameters (`rebuilt_mlp` rebuilds it)."""
    return {"sizes": list(sizes_of(model)), "state": dict(model.state_dict())}


def rebuilt_mlp(evidence: object) -> nn.Module:
    """The notebook's MLP, rebuilt as the checker's own MLP from its sizes and parameters."""
    sizes = ints(item(evidence, "sizes"), "the model's sizes")
    return loaded(make_mlp, (tuple(sizes),), item(evidence, "state"))


def loaded(factory: Callable[..., nn.Module], args: tuple, state: object) -> nn.Module:
    """`factory(*args)` with the parameters `state` (strict: no other names or shapes)."""
    try:
        model = factory(*args)
        model.load_state_dict(state)
    except (RuntimeError, TypeError, ValueError, AttributeError) as error:
        raise Suspicious(f"the model's parameters do not fit its sizes ({error})"[:200]) from None
    return model


def number(value: object, what: str) -> float:
    if type(value) is torch.Tensor and value.numel() == 1:
        return float(value.item())
    if type(value) in (int, float):
        return float(value)
    raise Suspicious(f"{what} is {type(value).__name__}, not a number")


def ints(value: object, what: str) -> list[int]:
    if type(value) is not list or not value or any(type(v) is not int for v in value):
        raise Suspicious(f"{what} is not a list of integers")
    return value


def tensor_dict(got: object, want: dict[str, torch.Tensor], what: str) -> None:
    if type(got) is not dict:
        raise Suspicious(f"{what} is {type(got).__name__}, not a dict")
    expect_equal(sorted(got), sorted(want), f"the keys of {what}")
    for name, expected in want.items():
        expect_close(got[name], expected, f"{what}[{name!r}]")
