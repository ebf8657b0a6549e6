"""What the hooks-in-practice checks share: fresh random models, hook-free references, and
messages about hooks left behind."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from autograder.checks.evidence import randint
from autograder.feedback import CheckFailed, NotDoneYet

_HOOK_DICTS = ("_forward_pre_hooks", "_forward_hooks", "_backward_hooks", "_backward_pre_hooks")


def random_sizes(rng: torch.Generator) -> tuple[int, ...]:
    """Layer sizes of a fresh MLP: 2 to 4 hidden layers, unlike the notebook's."""
    hidden = [randint(rng, 8, 24) for _ in range(randint(rng, 2, 4))]
    return (randint(rng, 5, 12), *hidden, randint(rng, 2, 4))


def sizes_of(model: nn.Module) -> tuple[int, ...]:
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    return (linears[0].in_features, *(m.out_features for m in linears))


def mlp_evidence(model: nn.Module) -> dict[str, object]:
    """A notebook MLP as evidence: its layer sizes and parameters (practice_trusted rebuilds it)."""
    return {"sizes": list(sizes_of(model)), "state": dict(model.state_dict())}


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


def module_hooks_left(model: nn.Module) -> list[str]:
    left = []
    for path, module in model.named_modules():
        count = sum(len(getattr(module, attr)) for attr in _HOOK_DICTS)
        if count:
            left.append(f"{count} on {type(module).__name__} ({path or 'the model'})")
    return left


def require_no_module_hooks(model: nn.Module, where: str, fn_name: str) -> None:
    left = module_hooks_left(model)
    if left:
        raise CheckFailed(
            f"{where}, hooks are still registered after {fn_name} returned: {'; '.join(left)}. "
            "Keep every handle that register_*_hook returns and call handle.remove() in a "
            "`finally:` block, so the hooks stop firing on later calls, even when forward fails."
        )


def in_check(where: str, fn: Callable[..., object], *args: object) -> object:
    """Run `fn(*args)` (student code or a comparison); prefix a failure with where it happened."""
    try:
        return fn(*args)
    except NotDoneYet:
        raise
    except CheckFailed as failure:
        raise CheckFailed(f"{where}: {failure.message}") from None


def handles_of(result: object, fn_name: str) -> list[object]:
    """The handles a function returned: a list or tuple of objects with a .remove() method."""
    items = list(result) if isinstance(result, list | tuple) else None
    if items is None or not all(callable(getattr(h, "remove", None)) for h in items):
        raise CheckFailed(
            f"{fn_name} should return the list of handles that register_*_hook gave you "
            f"(so the caller can remove the hooks), but it returned {type(result).__name__}."
        )
    return items
