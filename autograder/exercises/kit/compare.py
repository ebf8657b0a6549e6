"""Diagnose a list of tensors against the expected named tensors: order, count, tuples, shapes."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from autograder.feedback import CheckFailed, describe
from autograder.i18n import _
from autograder.tolerances import close

Named = Sequence[tuple[str, torch.Tensor]]
OrderHint = Callable[[list[str]], str | None]


def compare_tensor_list(
    got: object,
    expected: Named,
    *,
    what: str = "answer",
    order_hint: OrderHint | None = None,
    empty_hint: str = "",
) -> None:
    """Raise CheckFailed naming the mistake unless `got` holds exactly `expected`, in order.

    `order_hint` may turn a wrong order (given as the names in the order found) into a more
    specific message, e.g. grad_input and grad_output swapped; `empty_hint` says why the list
    may have stayed empty in this exercise.
    """
    names = [name for name, _tensor in expected]
    want = ", ".join(names)
    if isinstance(got, torch.Tensor) or not isinstance(got, list | tuple):
        raise CheckFailed(
            _("`{what}` should be a list [{want}], but it is {got}.").format(
                what=what, want=want, got=describe(got)
            )
        )
    got = list(got)
    if not got:
        raise CheckFailed(
            _("`{what}` is empty, expected [{want}]. {why}").format(
                what=what,
                want=want,
                why=empty_hint
                or _(
                    "Your hook did not add anything: hooks run only when the module is called "
                    "as `module(...)`, and only if they are registered on that very module."
                ),
            )
        )
    for index, item in enumerate(got):
        if isinstance(item, tuple | list):
            raise CheckFailed(
                _(
                    "`{what}[{index}]` is a {kind} of {count} ({value}): the whole {kind} went in "
                    "as one entry. Hooks receive inputs and gradients as tuples; `{what}` needs "
                    "the tensors inside it, one entry each."
                ).format(
                    what=what,
                    index=index,
                    kind=type(item).__name__,
                    count=len(item),
                    value=describe(item),
                )
            )
        if not isinstance(item, torch.Tensor):
            raise CheckFailed(
                _("`{what}[{index}]` should be a tensor, but it is {value}.").format(
                    what=what, index=index, value=describe(item)
                )
            )
    _check_zero_dim(got, expected, what)

    matches = [[name for name, tensor in expected if close(item, tensor)] for item in got]
    found = [m[0] if m else None for m in matches]
    if len(got) != len(expected):
        _wrong_count(got, expected, found, what)
    if found == names:
        return
    if None not in found and sorted(found) == sorted(names):
        hint = order_hint(found) if order_hint else None
        order = _("wrong order: expected [{want}], got [{got}].").format(
            want=want, got=", ".join(found)
        )
        raise CheckFailed(f"{hint}\n{order}" if hint else order)
    lines = [_("`{what}` has the right length but wrong values:").format(what=what)]
    for (name, tensor), item in zip(expected, got, strict=True):
        mark = "✓" if close(item, tensor) else "✗"
        lines.append(
            _("{mark} {name}: expected {expected}, got {got}").format(
                mark=mark, name=name, expected=describe(tensor), got=describe(item)
            )
        )
    raise CheckFailed("\n".join(lines))


def _check_zero_dim(got: list[torch.Tensor], expected: Named, what: str) -> None:
    for index, item in enumerate(got):
        if item.dim() == 0 and all(tensor.dim() > 0 for _name, tensor in expected):
            shape = tuple(expected[min(index, len(expected) - 1)][1].shape)
            raise CheckFailed(
                _(
                    "`{what}[{index}]` is a 0-d tensor ({value}) where a tensor of shape {shape} "
                    "was expected. `extend` iterates over what it is given: over a tuple it adds "
                    "each tensor, but over a tensor it adds the tensor's elements one by one, as "
                    "0-d tensors. A single tensor is one entry, not a collection."
                ).format(what=what, index=index, value=describe(item), shape=shape)
            )


def _wrong_count(got: list[torch.Tensor], expected: Named, found: list[str | None], what: str):
    names = [name for name, _tensor in expected]
    counts = {name: found.count(name) for name in names}
    repeats = set(counts.values())
    if None not in found and len(repeats) == 1 and (times := repeats.pop()) > 1:
        raise CheckFailed(
            _(
                "`{what}` has {count} entries, expected {expected}: every value appears {times} "
                "times, so your hooks ran {times} times per call, which means they were "
                "registered {times} times on the same module (a cell that registers them ran more "
                "than once). Run the exercise's answer cell again: it starts from a fresh module, "
                "so only the new hooks are registered."
            ).format(what=what, count=len(got), expected=len(expected), times=times)
        )
    missing = [name for name in names if counts[name] == 0]
    extra = [f"{what}[{i}] = {describe(got[i])}" for i, name in enumerate(found) if name is None]
    parts = [
        _("`{what}` has {count} entries, expected {expected} ({names}).").format(
            what=what, count=len(got), expected=len(expected), names=", ".join(names)
        )
    ]
    if missing:
        parts.append(_("Missing: {names}.").format(names=", ".join(missing)))
    if extra:
        parts.append(_("Not expected: {entries}.").format(entries="; ".join(extra)))
    doubled = [name for name in names if counts[name] > 1]
    if doubled:
        parts.append(_("Appears more than once: {names}.").format(names=", ".join(doubled)))
    raise CheckFailed(" ".join(parts))
