"""Check for the hooks-in-practice notebook's memory exercise: measuring the bytes that stored
activations keep alive, and recording activations that keep only themselves alive.

The checker measures independently of any graph walk: while the tensors are made, a
saved_tensors_hooks pack hook wraps every tensor that autograd saves for backward in a box the
checker holds only a weak reference to. Afterwards a box is alive exactly when some autograd graph
that is still referenced holds it, so the live boxes are the saved tensors being kept alive.
"""

from __future__ import annotations

import contextlib
import gc
import numbers
import weakref
from collections.abc import Iterator

import torch
from torch import nn

from autograder.checks.evidence import built_from, randint
from autograder.checks.practice_common import (
    hook_free_outputs,
    in_check,
    random_sizes,
    require_no_module_hooks,
)
from autograder.checks.registry import register
from autograder.checks.student import Student, require_arity
from autograder.feedback import CheckFailed, describe
from autograder.models.practice import make_mlp
from autograder.tolerances import close

FRESH = "On a fresh MLP with random sizes, weights and batches"


class _Saved:
    """What the pack hook stores in the graph instead of the saved tensor."""

    def __init__(self, tensor: torch.Tensor) -> None:
        # A detached alias: same storage, but no reference back to the graph (no cycle).
        self.tensor = tensor.detach()


@contextlib.contextmanager
def watch_saved() -> Iterator[list[weakref.ref]]:
    """While active, every tensor autograd saves is boxed; yields weak references to the boxes."""
    boxes: list[weakref.ref] = []

    def pack(tensor: torch.Tensor) -> _Saved:
        box = _Saved(tensor)
        boxes.append(weakref.ref(box))
        return box

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda box: box.tensor):
        yield boxes


def storage_bytes(tensors: list[torch.Tensor]) -> int:
    """Bytes of the distinct storages behind `tensors`, each storage counted once."""
    storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in tensors}
    return sum(storages.values())


def kept_alive(stored: list[torch.Tensor], boxes: list[weakref.ref], *, collect: bool = False):
    """Independent measure: the stored tensors' storages plus those of live saved tensors.

    The boxes hold no reference back to their graph, so reference counting frees a dropped graph
    at once; `collect` also runs the (slow) cycle collector, for graphs held by a cycle.
    """
    if collect:
        gc.collect()
    alive = [box().tensor for box in boxes if box() is not None]
    return storage_bytes(list(stored) + alive)


KINDS = ("detached views", "with their graphs", "detached")
VISIBLE_KINDS, HIDDEN_KINDS = KINDS[:2], KINDS + KINDS
RECORD_TRIALS = {False: 1, True: 2}  # visible, hidden


def stored_case(rng: torch.Generator, kind: str) -> tuple[list[torch.Tensor], list[weakref.ref]]:
    """Model outputs a careless or a careful recorder might store, made under watch_saved."""
    sizes = random_sizes(rng)
    model = built_from(rng, make_mlp, sizes)
    batches = [torch.randn(randint(rng, 3, 8), sizes[0], generator=rng) for _ in range(3)]
    stored = []
    with watch_saved() as boxes:
        for x in batches:
            out = model(x)
            if kind == "detached":
                out = out.detach()
            elif kind == "detached views":
                out = out[:, :1].detach()  # a view keeps its whole storage alive
            stored.append(out)
    return stored, boxes


def _judge_bytes(s: Student, kind: str, key: str) -> None:
    fn = s.function("bytes_kept_alive")
    require_arity(fn, "bytes_kept_alive", "bytes_kept_alive(tensors)", 1)
    stored, boxes = stored_case(s.rng, kind)
    got = s.call("bytes_kept_alive(tensors)", fn, list(stored))
    s.record(**{f"bytes{key}": got})
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        got = got.item()
    if not isinstance(got, numbers.Real) or isinstance(got, bool):
        raise CheckFailed(f"bytes_kept_alive should return a number of bytes, got {describe(got)}.")
    expected = kept_alive(stored, boxes)
    if got != expected:
        expected = kept_alive(stored, boxes, collect=True)
    if got == expected:
        return
    own = storage_bytes(stored)
    elements = sum(t.numel() * t.element_size() for t in stored)
    where = f"for stored model outputs ({kind})"
    if got == elements and elements != own:
        hint = (
            "you counted the tensors' own elements (numel * element_size), but a view keeps its "
            "whole storage alive: count t.untyped_storage().nbytes()."
        )
    elif got == own and own != expected:
        hint = (
            "you counted only the stored tensors, not the tensors their autograd graphs saved "
            "for backward: walk grad_fn and next_functions and count the `_saved_*` tensors."
        )
    elif got > expected:
        hint = "too many bytes: count each storage once (the same storage can appear many times)."
    else:
        hint = "too few bytes: are all nodes reached, through next_functions, from every tensor?"
    raise CheckFailed(f"{where}, expected {expected} bytes, got {got}: {hint}")


def _record(s: Student, model: nn.Module, name: str, batches: list[torch.Tensor]) -> object:
    fn = s.function("record_layer")
    require_arity(fn, "record_layer", "record_layer(model, layer_name, batches)", 3)
    return s.call("record_layer(model, layer_name, batches)", fn, model, name, batches)


def _judge_record(s: Student, key: str) -> None:
    model, name, batches = record_case(s.rng)
    with watch_saved() as boxes:
        got = _record(s, model, name, batches)
    s.record(**{f"recorded{key}": got})
    require_no_module_hooks(model, FRESH, "record_layer")
    expected = [hook_free_outputs(model, x)[name] for x in batches]
    if not isinstance(got, list) or len(got) != len(expected):
        raise CheckFailed(
            f"record_layer should return a list with one output per batch ({len(expected)}), "
            f"got {describe(got)}."
        )
    for index, (tensor, want) in enumerate(zip(got, expected, strict=True)):
        if not close(tensor, want):
            raise CheckFailed(
                f"entry {index} should be the output of {name} for batch {index}: expected "
                f"{describe(want)}, got {describe(tensor)}."
            )
    kept, own = kept_alive(got, boxes), storage_bytes(got)
    if kept > own:
        kept = kept_alive(got, boxes, collect=True)
    if kept > own:
        raise CheckFailed(
            f"the recorded outputs keep {kept} bytes alive, but they hold only {own}: they keep "
            "their autograd graphs, with every tensor saved for backward. Store "
            "output.detach() (and .clone() it if it is a view of something bigger)."
        )
    if own > sum(t.numel() * t.element_size() for t in got):
        raise CheckFailed(
            "the recorded outputs are views that keep a bigger storage alive: store .clone()."
        )


def record_case(rng: torch.Generator) -> tuple[nn.Module, str, list[torch.Tensor]]:
    sizes = random_sizes(rng)
    model = built_from(rng, make_mlp, sizes)
    batches = [torch.randn(randint(rng, 2, 6), sizes[0], generator=rng) for _ in range(3)]
    return model, f"layers.{randint(rng, 0, len(model.layers) - 2)}", batches


@register("activation_memory")
def activation_memory(s: Student) -> str:
    for trial, kind in enumerate(VISIBLE_KINDS):
        in_check(FRESH, _judge_bytes, s, kind, str(trial))
    in_check(FRESH, _judge_record, s, "0")
    recorded = s.get("recorded")
    if not isinstance(recorded, list) or any(
        t.grad_fn is not None for t in recorded if isinstance(t, torch.Tensor)
    ):
        raise CheckFailed("`recorded` in the notebook still holds tensors with a grad_fn.")
    return "bytes_kept_alive measures what stored tensors keep; record_layer keeps only outputs."


@register("activation_memory", hidden=True)
def activation_memory_hidden(s: Student) -> str:
    for trial, kind in enumerate(HIDDEN_KINDS):
        in_check(FRESH, _judge_bytes, s, kind, str(trial))
    for trial in range(RECORD_TRIALS[True]):
        in_check(FRESH, _judge_record, s, str(trial))
    return "both functions are right on fresh models, batches and layers."
