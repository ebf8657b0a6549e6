"""Diagnose a list of tensors against the expected named tensors: order, count, tuples, shapes."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from autograder.feedback import CheckFailed, describe
from autograder.tolerances import close

Named = Sequence[tuple[str, torch.Tensor]]
OrderHint = Callable[[list[str]], str | None]


def compare_tensor_list(
    got: object, expected: Named, *, what: str = "answer", order_hint: OrderHint | None = None
) -> None:
    """Raise CheckFailed naming the mistake unless `got` holds exactly `expected`, in order.

    `order_hint` may turn a wrong order (given as the names in the order found) into a more
    specific message, e.g. grad_input and grad_output swapped.
    """
    names = [name for name, _ in expected]
    want = ", ".join(names)
    if isinstance(got, torch.Tensor) or not isinstance(got, list | tuple):
        raise CheckFailed(f"`{what}` should be a list [{want}], but it is {describe(got)}.")
    got = list(got)
    if not got:
        raise CheckFailed(
            f"`{what}` is empty, expected [{want}]. Did the hook run? Hooks fire only when the "
            "module is called as module(...), and only if registered on that module."
        )
    for index, item in enumerate(got):
        if isinstance(item, tuple | list):
            raise CheckFailed(
                f"{what}[{index}] is a {type(item).__name__} of {len(item)} "
                f"({describe(item)}): you appended the whole {type(item).__name__}. Hooks receive "
                "inputs and gradients as tuples; add their elements with "
                f"`{what}.extend(...)` or a loop."
            )
        if not isinstance(item, torch.Tensor):
            raise CheckFailed(f"{what}[{index}] should be a tensor, but it is {describe(item)}.")
    _check_zero_dim(got, expected, what)

    matches = [[name for name, tensor in expected if close(item, tensor)] for item in got]
    found = [m[0] if m else None for m in matches]
    if len(got) != len(expected):
        _wrong_count(got, expected, found, what)
    if found == names:
        return
    if None not in found and sorted(found) == sorted(names):
        hint = order_hint(found) if order_hint else None
        raise CheckFailed(
            (hint + "\n  " if hint else "")
            + f"wrong order: expected [{want}], got [{', '.join(found)}]."
        )
    lines = [f"`{what}` has the right length but wrong values:"]
    for (name, tensor), item in zip(expected, got, strict=True):
        mark = "ok " if close(item, tensor) else "✗  "
        lines.append(f"  {mark}{name}: expected {describe(tensor)}, got {describe(item)}")
    raise CheckFailed("\n".join(lines))


def _check_zero_dim(got: list[torch.Tensor], expected: Named, what: str) -> None:
    for index, item in enumerate(got):
        if item.dim() == 0 and all(tensor.dim() > 0 for _, tensor in expected):
            shape = tuple(expected[min(index, len(expected) - 1)][1].shape)
            raise CheckFailed(
                f"{what}[{index}] is a 0-d tensor ({describe(item)}) where a tensor of shape "
                f"{shape} was expected. `{what}.extend(tensor)` iterates over the tensor and "
                f"adds its elements one by one; use `{what}.append(tensor)` for a tensor, and "
                "`extend` only for a tuple of tensors."
            )


def _wrong_count(got: list[torch.Tensor], expected: Named, found: list[str | None], what: str):
    names = [name for name, _ in expected]
    counts = {name: found.count(name) for name in names}
    repeats = set(counts.values())
    if None not in found and len(repeats) == 1 and (times := repeats.pop()) > 1:
        raise CheckFailed(
            f"`{what}` has {len(got)} entries, expected {len(expected)}: every value appears "
            f"{times} times, so your hook ran {times} times per call. It was registered "
            f"{times} times, most likely because its cell ran more than once. Restart the kernel "
            "and run all cells (Kernel → Restart Kernel and Run All Cells), or keep the handle "
            "that register_* returns and call handle.remove() before registering again."
        )
    missing = [name for name in names if counts[name] == 0]
    extra = [f"{what}[{i}] = {describe(got[i])}" for i, name in enumerate(found) if name is None]
    parts = [f"`{what}` has {len(got)} entries, expected {len(expected)} ({', '.join(names)})."]
    if missing:
        parts.append(f"Missing: {', '.join(missing)}.")
    if extra:
        parts.append(f"Not expected: {'; '.join(extra)}.")
    doubled = [name for name in names if counts[name] > 1]
    if doubled:
        parts.append(f"Appears more than once: {', '.join(doubled)}.")
    raise CheckFailed(" ".join(parts))
