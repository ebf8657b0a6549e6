"""Evidence: what a check saw the student's code produce, handed to a trusted verifier.

A check runs in the student's kernel, so its verdict can be forged there (a patched
`torch.allclose`, a swallowed exception, a replaced `check`). So that the verdict does not rest
on it, a passing check also emits its *evidence*: plain data (tensors, lists, dicts, numbers,
strings) recording what the student's code produced, as a display output with the private
mimetype MIMETYPE. After execution, in the grading worker (a process student code never runs in),
autograder/engine/verify.py loads it with `torch.load(weights_only=True)`, rebuilds the inputs
from the same seed, recomputes the expected values with torch itself and compares (trusted.py).

Converting a check is mechanical:

1. Draw every random input of a hidden check from `s.rng` (a torch.Generator seeded from the
   seed the grader writes into the test cell), in a function of `rng` alone that the
   verifier can call again, e.g. `def _trials(rng): return [torch.rand(3, generator=rng), ...]`.
2. `s.record("name", value)` every value the verdict depends on (the student's outputs, and for a
   visible check the notebook values it compared them with).
3. Next to the check, register the verifier: `@verifies("grade_id", hidden=True)` on
   `fn(rng, evidence)` that calls the same input function with `rng`, recomputes what is expected
   and compares with `expect_close` / `expect_list` from trusted.py (raise `Suspicious` on a
   mismatch). A verifier only confirms a pass: it need not explain mistakes, the check did that.
"""

from __future__ import annotations

import base64
import io
import os
from collections.abc import Callable
from typing import Any, TypeVar

import torch

MIMETYPE = "application/vnd.hooklab.evidence+json"
T = TypeVar("T")


class Evidence:
    """The seeded generator a check draws its inputs from, and the values it recorded."""

    def __init__(self, grade_id: str, hidden: bool, seed: int | None) -> None:
        self.grade_id, self.hidden, self.seed = grade_id, hidden, seed
        self.rng = self.generator(seed)
        self.items: dict[str, Any] = {}

    @staticmethod
    def generator(seed: int | None) -> torch.Generator:
        """The generator for `seed`; without one (a student running the notebook, or stock
        nbgrader), one seeded from torch's own generator, which the notebooks seed: a rerun then
        draws the same cases (Python's `random` is reseeded by the OS in every kernel)."""
        if seed is None:
            seed = int(torch.randint(2**62, ()))
        return torch.Generator().manual_seed(seed)

    def record(self, name: str, value: Any) -> None:
        self.items[name] = plain(value)

    def output(self) -> dict[str, Any]:
        """The evidence as a display output's data: {MIMETYPE: json}."""
        buffer = io.BytesIO()
        torch.save(self.items, buffer)
        payload = {
            "grade_id": self.grade_id,
            "hidden": self.hidden,
            "seed": self.seed,
            "data": base64.b64encode(buffer.getvalue()).decode("ascii"),
        }
        return {MIMETYPE: payload}

    def emit(self) -> None:
        """Show the evidence as an output of the running cell, only when nbgrader executes the
        notebook (a student's own Jupyter has no renderer for it and need not see it)."""
        if not os.environ.get("NBGRADER_EXECUTION"):
            return
        try:
            from IPython import get_ipython
            from IPython.display import display
        except ImportError:
            return
        if get_ipython() is not None:
            display(self.output(), raw=True)


def random_pairs(rng: torch.Generator, shapes: list[tuple[int, ...]]):
    """A pair of uniform random tensors (x1, x2) per shape, drawn from `rng`."""
    return [(torch.rand(s, generator=rng), torch.rand(s, generator=rng)) for s in shapes]


def randint(rng: torch.Generator, low: int, high: int) -> int:
    """A random integer in [low, high], drawn from `rng`."""
    return int(torch.randint(low, high + 1, (1,), generator=rng))


def uniform(rng: torch.Generator, low: float, high: float) -> float:
    """A random float in [low, high), drawn from `rng`."""
    return low + (high - low) * float(torch.rand((), generator=rng, dtype=torch.float64))


def built_from(rng: torch.Generator, factory: Callable[..., T], *args: Any) -> T:
    """`factory(*args)` with torch's global generator seeded from `rng`, so the verifier can
    build the same model (its random initial weights) again; the caller's RNG state is kept."""
    seed = int(torch.randint(2**62, (1,), generator=rng))
    with torch.random.fork_rng(devices=[]):
        # The CPU generator only, which fork_rng restores: torch.manual_seed would also seed
        # (and not restore) any GPU's, and records a stack trace for their lazy start each call.
        torch.default_generator.manual_seed(seed)
        return factory(*args)


SAMPLE = 2048  # values kept as evidence per parameter: a whole model would exceed the output cap


def sample(tensor: torch.Tensor) -> torch.Tensor:
    """At most SAMPLE values of `tensor`, evenly spaced through it, for a verifier to judge a
    distribution (an init) from."""
    flat = tensor.detach().flatten()
    return flat[:: max(1, flat.numel() // SAMPLE)][:SAMPLE]


def plain(value: Any) -> Any:
    """`value` as data torch.load(weights_only=True) accepts: plain tensors, lists, dicts,
    numbers, strings. Subclasses lose their overrides (a list subclass that equals anything
    becomes the plain list of what it holds); other objects become a string naming their type."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone().as_subclass(torch.Tensor)
    if isinstance(value, list | tuple):
        return [plain(item) for item in list(value)]
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in dict.items(value)}
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, type):
        return f"<type {value.__module__}.{value.__qualname__}>"
    return f"<object of type {type(value).__name__}>"


def decode(data: str) -> Any:
    """Evidence data back to plain values; refuses anything but plain data (weights_only)."""
    return torch.load(io.BytesIO(base64.b64decode(data, validate=True)), weights_only=True)
