"""activation_memory: `bytes_kept_alive(tensors)` counts the bytes stored tensors keep alive
(their storages and those their autograd graphs saved, each storage once), and
`record_layer(model, layer_name, batches)` records a layer's outputs so that they keep only
themselves alive.

The checker measures independently of any graph walk: while the tensors are made, a
saved_tensors_hooks pack hook wraps every tensor autograd saves for backward in a box the checker
holds only a weak reference to. A box is alive afterwards exactly when a graph that is still
referenced holds it, so the live boxes are the saved tensors being kept alive.
"""

from __future__ import annotations

import contextlib
import gc
import numbers
import weakref
from collections.abc import Iterator

import torch
from torch import nn

from autograder.exercises.hooks_in_practice.common import hook_free_outputs, number, random_sizes
from autograder.exercises.hooks_in_practice.models import make_mlp
from autograder.exercises.kit.cases import in_case
from autograder.exercises.kit.evidence import built_from, randint
from autograder.exercises.kit.hooks import require_no_hooks
from autograder.exercises.kit.judge import Suspicious, expect_close, item
from autograder.exercises.kit.student import Student, require_arity
from autograder.feedback import CheckFailed, describe
from autograder.i18n import N_, _
from autograder.tolerances import close

HINTS = [
    N_(
        "Keep a dict from `storage.data_ptr()` to `storage.nbytes()`, where `storage` is "
        "`t.untyped_storage()`: a storage met twice is then counted once."
    ),
    N_(
        "Walk the graph as a search: start from the `grad_fn` of each tensor that has one, "
        "follow `node.next_functions` (skip the `None` entries) and keep a set of the nodes "
        "already visited."
    ),
    N_(
        "On each node, `dir(node)` lists the attribute names; read those starting with "
        "`_saved_` with `getattr`. Count only `torch.Tensor` values, also inside tuples and "
        "lists; the other saved values are numbers or sizes."
    ),
    N_(
        "For `record_layer`: `model.get_submodule(layer_name)` finds the layer. The hook stores "
        "`output.detach()` (no `grad_fn`, so no graph kept alive); remove the hook in a "
        "`finally:` block."
    ),
]
FIX = "outputs.append(output.detach())"
KINDS = ("detached views", "with their graphs", "detached")
VISIBLE_KINDS, HIDDEN_KINDS = KINDS[:2], KINDS + KINDS
RECORD_TRIALS = {False: 1, True: 2}  # visible, hidden


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


def record_case(rng: torch.Generator) -> tuple[nn.Module, str, list[torch.Tensor]]:
    sizes = random_sizes(rng)
    model = built_from(rng, make_mlp, sizes)
    batches = [torch.randn(randint(rng, 2, 6), sizes[0], generator=rng) for _ in range(3)]
    return model, f"layers.{randint(rng, 0, len(model.layers) - 2)}", batches


def _judge_bytes(s: Student, kind: str, key: str) -> None:
    fn = s.function("bytes_kept_alive")
    require_arity(fn, "bytes_kept_alive", "bytes_kept_alive(tensors)", 1)
    stored, boxes = stored_case(s.rng, kind)
    got = s.call("`bytes_kept_alive(tensors)`", fn, list(stored))
    s.record(**{f"bytes{key}": got})
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        got = got.item()
    if not isinstance(got, numbers.Real) or isinstance(got, bool):
        raise CheckFailed(
            _("`bytes_kept_alive` should return a number of bytes, got {got}.").format(
                got=describe(got)
            )
        )
    expected = kept_alive(stored, boxes)
    if got != expected:
        expected = kept_alive(stored, boxes, collect=True)
    if got == expected:
        return
    own = storage_bytes(stored)
    elements = sum(t.numel() * t.element_size() for t in stored)
    if got == elements and elements != own:
        why = _(
            "you counted the tensors' own elements, but a view keeps the whole storage it "
            "shares alive: count the bytes of each tensor's storage."
        )
    elif got == own and own != expected:
        why = _(
            "you counted only the stored tensors, not the tensors their autograd graphs saved "
            "for backward (the `_saved_*` attributes of the nodes reachable from `grad_fn`)."
        )
    elif got > expected:
        why = _(
            "too many bytes: a storage met more than once (several tensors, or nodes, can "
            "share one) is counted once."
        )
    else:
        why = _(
            "too few bytes: are all the nodes reached, through `next_functions`, from every "
            "tensor, and the saved tensors inside tuples counted too?"
        )
    raise CheckFailed(
        _("for stored model outputs ({kind}), expected {expected} bytes, got {got}: {why}").format(
            kind=kind, expected=expected, got=got, why=why
        )
    )


def _judge_record(s: Student, key: str) -> None:
    model, name, batches = record_case(s.rng)
    fn = s.function("record_layer")
    require_arity(fn, "record_layer", "record_layer(model, layer_name, batches)", 3)
    with watch_saved() as boxes:
        got = s.call("`record_layer(model, layer_name, batches)`", fn, model, name, batches)
    s.record(**{f"recorded{key}": got})
    require_no_hooks(model, "record_layer")
    expected = [hook_free_outputs(model, x)[name] for x in batches]
    if not isinstance(got, list | tuple) or len(got) != len(expected):
        raise CheckFailed(
            _(
                "`record_layer` should return a list with one output per batch ({count}), got "
                "{got}."
            ).format(count=len(expected), got=describe(got))
        )
    for index, (tensor, want) in enumerate(zip(got, expected, strict=True)):
        if not isinstance(tensor, torch.Tensor) or not close(tensor, want):
            raise CheckFailed(
                _(
                    "entry {index} should be the output of {name} for batch {index}: expected "
                    "{expected}, got {got}."
                ).format(index=index, name=name, expected=describe(want), got=describe(tensor))
            )
    _judge_kept(list(got), boxes)


def _judge_kept(got: list[torch.Tensor], boxes: list[weakref.ref]) -> None:
    kept, own = kept_alive(got, boxes), storage_bytes(got)
    if kept > own:
        kept = kept_alive(got, boxes, collect=True)
    if kept > own:
        raise CheckFailed(
            _(
                "the recorded outputs keep {kept} bytes alive, but they hold only {own}: each "
                "still has a `grad_fn`, which keeps its whole autograd graph alive, with every "
                "tensor the graph saved for backward. A recorded output needs no graph: store a "
                "tensor cut off from it, which shares the values but has no `grad_fn`."
            ).format(kept=kept, own=own),
            fix=FIX,
        )


def _fresh_where() -> str:
    return _("On a fresh MLP with random sizes, weights and batches")


def visible(s: Student) -> str:
    for trial, kind in enumerate(VISIBLE_KINDS):
        in_case(_fresh_where(), _judge_bytes, s, kind, str(trial))
    in_case(_fresh_where(), _judge_record, s, "0")
    recorded = s.get("recorded")
    entries = recorded if isinstance(recorded, list | tuple) else []
    graphs = [t for t in entries if isinstance(t, torch.Tensor) and t.grad_fn is not None]
    if graphs:
        raise CheckFailed(
            _(
                "`recorded` in the notebook holds {count} tensors that still have a `grad_fn`: "
                "run the cell that records them again."
            ).format(count=len(graphs))
        )
    return _(
        "`bytes_kept_alive` measures what stored tensors keep; `record_layer` keeps only outputs."
    )


def hidden(s: Student) -> str:
    for trial, kind in enumerate(HIDDEN_KINDS):
        in_case(_fresh_where(), _judge_bytes, s, kind, str(trial))
    for trial in range(RECORD_TRIALS[True]):
        in_case(_fresh_where(), _judge_record, s, str(trial))
    return _("both functions are right on fresh models, batches and layers.")


def _judge(rng: torch.Generator, evidence: dict, hidden: bool) -> None:
    kinds = HIDDEN_KINDS if hidden else VISIBLE_KINDS
    for trial, kind in enumerate(kinds):
        stored, boxes = stored_case(rng, kind)
        got = number(item(evidence, f"bytes{trial}"), f"the bytes of trial {trial}")
        # As in the check: the cycle collector (slow in a big process) only when needed.
        if got != kept_alive(stored, boxes) and got != kept_alive(stored, boxes, collect=True):
            raise Suspicious(f"the bytes of trial {trial} ({kind}) are not what is kept alive")
    for trial in range(RECORD_TRIALS[hidden]):
        model, name, batches = record_case(rng)
        got = item(evidence, f"recorded{trial}")
        want = [hook_free_outputs(model, x)[name] for x in batches]
        if type(got) is not list or len(got) != len(want):
            raise Suspicious(f"the recorded outputs of trial {trial} are not one per batch")
        for index, (entry, expected) in enumerate(zip(got, want, strict=True)):
            expect_close(entry, expected, f"recorded output {index} of trial {trial}")


# Both checks' values come from the seed alone; that the notebook's `recorded` holds no graph,
# and how much memory the recorded outputs keep alive, are judged in the kernel only.
def judge_visible(rng: torch.Generator, evidence: dict) -> None:
    _judge(rng, evidence, hidden=False)


def judge_hidden(rng: torch.Generator, evidence: dict) -> None:
    _judge(rng, evidence, hidden=True)
