"""Evidence: the plain values a check saw the student's code produce, for the grader to judge.

A check runs where the student's code runs, so its own verdict proves nothing to the grader.
Alongside its verdict it records, with `Student.record`, the values the verdict rests on
(tensors, lists, dicts, numbers, strings). When the grader runs an exercise's answer cell on
its own (autograder/grade/verifier/), it takes these values across as JSON (`encode`/`decode`:
a tensor is its dtype, shape and raw bytes; nothing else is accepted), rebuilds the inputs from
the same seed and judges them with the exercise's `judge_visible`/`judge_hidden` (kit/judge.py).

A check draws every random input from `s.rng` (a torch.Generator seeded from the grader's seed),
in a function of `rng` alone that the judge can call again.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable
from typing import Any, TypeVar

import torch

T = TypeVar("T")
# Evidence nested deeper than this is refused (a judge never needs it; it would only recurse).
MAX_DEPTH = 32


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

    def data(self) -> dict[str, Any]:
        """The recorded values as JSON-ready evidence (encode)."""
        return encode(self.items)


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


def plain(value: Any, depth: int = 0) -> Any:
    """`value` as plain data `encode` accepts: plain tensors, lists, dicts, numbers, strings.
    Subclasses lose their overrides (a list subclass that equals anything becomes the plain list
    of what it holds); other objects become a string naming their type."""
    if depth > MAX_DEPTH:
        return "<nested too deep>"
    if isinstance(value, torch.Tensor):
        return value.detach().clone().as_subclass(torch.Tensor)
    if isinstance(value, list | tuple):
        return [plain(item, depth + 1) for item in list(value)]
    if isinstance(value, dict):
        return {str(key): plain(item, depth + 1) for key, item in dict.items(value)}
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, type):
        return f"<type {value.__module__}.{value.__qualname__}>"
    return f"<object of type {type(value).__name__}>"


# The evidence format: JSON in which a tensor is {"tensor": [dtype, shape, base64 of its bytes]}
# (in the machine's order: little-endian wherever torch runs), a dict is {"dict": {...}} (so no
# dict of the student's reads as a tensor), a NaN or infinity is {"float": "nan"|"inf"|"-inf"},
# and lists, strings, other numbers, booleans and null are themselves. It replaced torch.save:
# the same data, decoded ~10x faster, and no unpickler on the trust boundary.
DTYPES = {
    str(dtype).removeprefix("torch."): dtype
    for dtype in (
        torch.float16, torch.bfloat16, torch.float32, torch.float64,
        torch.complex64, torch.complex128, torch.bool, torch.uint8,
        torch.int8, torch.int16, torch.int32, torch.int64,
    )
}  # fmt: skip


def encode(value: Any) -> Any:
    """Plain data (see `plain`) as JSON-ready evidence."""
    if isinstance(value, torch.Tensor):
        return _encode_tensor(value)
    if isinstance(value, list):
        return [encode(item) for item in value]
    if isinstance(value, dict):
        return {"dict": {str(key): encode(item) for key, item in value.items()}}
    if type(value) is float and not math.isfinite(value):  # JSON has no NaN or infinity
        return {"float": repr(value)}
    return value


def _encode_tensor(tensor: torch.Tensor) -> Any:
    name = str(tensor.dtype).removeprefix("torch.")
    if name not in DTYPES:
        return f"<tensor of dtype {name}>"
    tensor = tensor.detach().cpu().resolve_conj().resolve_neg().contiguous()
    raw = tensor.reshape(-1).view(torch.uint8).numpy().tobytes() if tensor.numel() else b""
    return {"tensor": [name, list(tensor.shape), base64.b64encode(raw).decode("ascii")]}


def decode(data: Any) -> dict[str, Any]:
    """The recorded values (name -> plain value) back from evidence data; raises ValueError for
    anything that is not evidence."""
    values = _decode(data, 0)
    if not isinstance(values, dict):
        raise ValueError("evidence data is a dict of recorded values")
    return values


def _decode(data: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise ValueError(f"evidence is nested deeper than {MAX_DEPTH}")
    if isinstance(data, list):
        return [_decode(item, depth + 1) for item in data]
    if isinstance(data, dict):
        if len(data) != 1:
            raise ValueError("evidence objects have exactly one key")
        ((kind, inner),) = data.items()
        if kind == "dict" and isinstance(inner, dict):
            return {key: _decode(item, depth + 1) for key, item in inner.items()}
        if kind == "tensor":
            return _decode_tensor(inner)
        if kind == "float" and inner in ("nan", "inf", "-inf"):
            return float(inner)
        raise ValueError(f"unknown evidence object {kind!r}")
    if data is None or type(data) in (bool, int, float, str):
        return data
    raise ValueError(f"evidence cannot hold {type(data).__name__}")


def _decode_tensor(fields: Any) -> torch.Tensor:
    if not (isinstance(fields, list) and len(fields) == 3):
        raise ValueError("a tensor is [dtype, shape, data]")
    name, shape, data = fields
    if not isinstance(name, str) or name not in DTYPES:
        raise ValueError(f"unknown tensor dtype {name!r}")
    if not (isinstance(shape, list) and all(type(n) is int and n >= 0 for n in shape)):
        raise ValueError("a tensor's shape is a list of sizes")
    if not isinstance(data, str):
        raise ValueError("a tensor's data is base64 text")
    dtype, raw = DTYPES[name], base64.b64decode(data, validate=True)
    count = math.prod(shape)
    if len(raw) != count * dtype.itemsize:
        raise ValueError(f"a {name} tensor of shape {shape} needs {count * dtype.itemsize} bytes")
    if not raw:
        return torch.empty(shape, dtype=dtype)
    flat = torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(dtype)
    return flat.reshape(shape)
