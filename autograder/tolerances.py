"""The one place where numeric tolerances live: every tensor comparison in the checks uses these."""

import torch

RTOL = 1e-5
ATOL = 1e-6
# A standard deviation estimated from a few tens of thousands of samples is only this accurate.
STD_RTOL = 0.1


def close(got: object, expected: torch.Tensor) -> bool:
    """True when `got` is a tensor of exactly `expected`'s shape holding the same values."""
    return (
        isinstance(got, torch.Tensor)
        and got.shape == expected.shape
        and torch.allclose(got.detach().double(), expected.detach().double(), rtol=RTOL, atol=ATOL)
    )


def close_broadcast(got: object, expected: torch.Tensor) -> bool:
    """Like `close`, but `expected` may broadcast to `got`'s shape."""
    if not isinstance(got, torch.Tensor):
        return False
    try:
        target = expected.expand_as(got)
    except RuntimeError:
        return False
    return close(got, target)
