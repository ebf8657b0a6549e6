"""mlp_report: a forward hook on `net.fc2` fills the dict `report` with the types and sizes of the
layer's input and output and the output's norm (seed 003's two-layer MLP)."""

from __future__ import annotations

from types import SimpleNamespace

import torch
from torch import nn

from autograder.exercises.forward_hooks.common import (
    left_by_an_earlier_run,
    run_cell_not_run_since,
    split_hooks,
)
from autograder.exercises.forward_hooks.models import make_mlp
from autograder.exercises.kit.evidence import built_from
from autograder.exercises.kit.judge import Suspicious, expect_close, expect_equal, item
from autograder.exercises.kit.student import Student, assigns, is_stub, require_arity
from autograder.feedback import CheckFailed, NotDoneYet, describe
from autograder.i18n import N_, _, ngettext
from autograder.tolerances import close

HINTS = [
    N_("`input` is the tuple of positional arguments; `input[0]` is the tensor `fc2` received."),
    N_("`type(value)` gives a value's type and `tensor.size()` its size."),
    N_("Detach the output before taking its norm, so the report does not keep the autograd graph."),
]
TRIALS = [((100, 200, 10), (100,)), ((20, 30, 5), (4, 20))]  # the hidden check's (sizes, x)
FRESH = "net = Net(100, 200, 10)"
FIX_DETACH = 'report["output_norm"] = output.detach().norm()'


def _registered(s: Student) -> tuple[list, list]:
    """(hooks, stale hooks): the forward hooks on the notebook's `net.fc2`, whatever their names."""
    net = s.get("net")
    fc2 = getattr(net, "fc2", None)
    if not isinstance(fc2, nn.Module):
        raise CheckFailed(
            _("`net` should be the notebook's `Net`, with a layer `fc2`; it is {got}.").format(
                got=describe(net)
            )
        )
    hooks, stale = split_hooks(s, fc2, "forward")
    if not hooks:
        if stale:
            raise left_by_an_earlier_run("net.fc2", stale, FRESH)
        elsewhere = [
            f"net.{name}" if name else "net"
            for name, module in net.named_modules()
            if module is not fc2 and split_hooks(s, module, "forward")[0]
        ]
        if elsewhere:
            raise CheckFailed(
                _(
                    "a forward hook is registered on `{where}`, not on `net.fc2`: a hook sees "
                    "only the input and output of the module it is registered on, and the "
                    "report is about fc2."
                ).format(where=elsewhere[0])
            )
        written = s.namespace.get("fc2_report")
        if s.hooks_on(fc2, "forward") or not callable(written) or is_stub(written):
            raise NotDoneYet(
                _(
                    "`fc2_report` does nothing yet: write its body, then run the answer cell "
                    "and the cells under it."
                )
            )
        raise CheckFailed(
            _(
                "no forward hook is registered on `net.fc2`, the layer the report is about: "
                "hooks run only on the module they are registered on."
            )
        )
    for fn in hooks:
        name = getattr(fn, "__name__", "fc2_report")
        require_arity(fn, name, "fc2_report(module, input, output)", 3)
    return hooks, stale


def _report_on(s: Student, hooks: list, net: nn.Module, x: torch.Tensor) -> object:
    """What `report` holds after `net(x)` with these hooks on a fresh `net.fc2`."""
    with s.swapped_global(hooks, "report", {}) as report_now:
        handles = [net.fc2.register_forward_hook(fn) for fn in hooks]
        try:
            s.call(_("`net(x)` with your hook registered on fc2"), net, x)
        finally:
            for handle in handles:
                handle.remove()
        return report_now()


def expected_report(net, x: torch.Tensor) -> dict:
    """The report, computed without hooks from the layers' weights (`net` may be any object
    with fc1 and fc2 that have `weight` and `bias`)."""
    with torch.no_grad():
        hidden = torch.relu(x @ net.fc1.weight.T + net.fc1.bias)
        out = hidden @ net.fc2.weight.T + net.fc2.bias
    return {
        "input_type": tuple,
        "input0_type": torch.Tensor,
        "output_type": torch.Tensor,
        "input_size": hidden.size(),
        "output_size": out.size(),
        "output_norm": out.norm(),
    }


def _shown(value: object) -> str:
    if isinstance(value, torch.Size | type):
        return repr(value)
    return describe(value)


def _compare(got: object, expected: dict, hooks: list) -> None:
    if not isinstance(got, dict):
        raise CheckFailed(_("`report` should be a dict, got {got}.").format(got=describe(got)))
    if not got and any(assigns(fn, "report") for fn in hooks):
        raise CheckFailed(
            _(
                "`report` stayed empty: your hook assigns a new dict to `report`, and an "
                "assignment inside a function makes a local name of its own. Fill the "
                "notebook's dict instead, one key at a time."
            )
        )
    missing = [key for key in expected if key not in got]
    if missing:
        raise CheckFailed(
            ngettext(
                "`report` lacks the key {missing}; it has {keys}.",
                "`report` lacks the keys {missing}; it has {keys}.",
                len(missing),
            ).format(missing=missing, keys=sorted(map(str, got)))
        )
    for key, want in expected.items():
        _compare_value(key, got[key], want)


def _matches(got: object, expected: dict, hooks: list) -> bool:
    try:
        _compare(got, expected, hooks)
    except CheckFailed:
        return False
    return True


def _compare_value(key: str, value: object, want: object) -> None:
    entry = f"report[{key!r}]"
    if isinstance(want, type):
        if isinstance(value, str):
            raise CheckFailed(
                _(
                    "`{entry}` should be a type, what `type(...)` returns, not the string {got!r}."
                ).format(entry=entry, got=value)
            )
        if value is want:
            return
        why = ""
        if key == "input_type" and value is torch.Tensor:
            why = " " + _(
                "A forward hook's `input` is not a tensor: it is the tuple of the positional "
                "arguments the module was called with."
            )
        raise CheckFailed(
            _("`{entry}` should be {expected}, got {got}.").format(
                entry=entry, expected=_shown(want), got=_shown(value)
            )
            + why
        )
    if isinstance(want, torch.Size):
        if callable(value):
            raise CheckFailed(
                _("`{entry}` is a method ({got}), not its result: call it to get the size.").format(
                    entry=entry, got=describe(value)
                )
            )
        if isinstance(value, tuple | list) and tuple(value) == tuple(want):
            return
        raise CheckFailed(
            _("`{entry}` should be {expected}, got {got}.").format(
                entry=entry, expected=_shown(want), got=_shown(value)
            )
        )
    ok = isinstance(value, torch.Tensor | float) and close(torch.as_tensor(value), want)
    if not ok:
        raise CheckFailed(
            _("`{entry}` should be {expected}, got {got}.").format(
                entry=entry, expected=describe(want), got=describe(value)
            )
        )
    if isinstance(value, torch.Tensor) and value.requires_grad:
        raise CheckFailed(
            _(
                "`{entry}` is still attached to the autograd graph (it requires grad): a value "
                "kept in a report keeps the whole graph of the forward pass alive. The table "
                "asks for the norm of the detached output."
            ).format(entry=entry),
            fix=FIX_DETACH,
        )


def _trials(rng: torch.Generator) -> list:
    """Fresh networks (weights drawn from the check's generator) and inputs."""
    return [
        (built_from(rng, make_mlp, *sizes), torch.rand(shape, generator=rng))
        for sizes, shape in TRIALS
    ]


def visible(s: Student) -> str:
    hooks, stale = _registered(s)
    own = built_from(s.rng, make_mlp)
    own_x = torch.rand(100, generator=s.rng)
    own_report = _report_on(s, hooks, own, own_x)  # errors and their causes first
    net, x, report = s.get("net"), s.get("x"), s.get("report")
    layers = {
        f"{name}.{p}": getattr(getattr(net, name, None), p, None)
        for name in ("fc1", "fc2")
        for p in ("weight", "bias")
    }
    s.record(x=x, report=report, layers=layers)
    try:
        _compare(report, expected_report(net, x), hooks)
    except CheckFailed:
        if stale:
            raise left_by_an_earlier_run("net.fc2", stale, FRESH) from None
        if _matches(own_report, expected_report(own, own_x), hooks):
            raise run_cell_not_run_since("Net", "report", "net(x)") from None
        raise
    return _("the report gives fc2's input and output types, sizes and the output norm.")


def hidden(s: Student) -> str:
    hooks, _stale = _registered(s)
    for trial, (net, x) in enumerate(_trials(s.rng)):
        report = _report_on(s, hooks, net, x)
        s.record(**{f"report{trial}": report})
        try:
            _compare(report, expected_report(net, x), hooks)
        except CheckFailed as failure:
            raise CheckFailed(
                _("On a fresh Net with input of shape {shape}: {failure}").format(
                    shape=tuple(x.shape), failure=failure.message
                ),
                fix=failure.fix,
            ) from None
    return _("fc2_report works on fresh networks of other sizes and batch shapes.")


def _expect_report(got: object, net, x: torch.Tensor, what: str) -> None:
    if type(got) is not dict:
        raise Suspicious(f"{what} is {type(got).__name__}, not a dict")
    for key, want in expected_report(net, x).items():
        value = item(got, key)
        if isinstance(want, type):
            expect_equal(value, f"<type {want.__module__}.{want.__qualname__}>", f"{what}[{key!r}]")
        elif isinstance(want, torch.Size):
            expect_equal(value, list(want), f"{what}[{key!r}]")
        else:
            value = torch.tensor(value) if type(value) is float else value
            expect_close(value, want, f"{what}[{key!r}]")


def judge_visible(rng: torch.Generator, evidence: dict) -> None:
    layers, x = item(evidence, "layers"), item(evidence, "x")
    expect_close(x, x, "x")
    for name in ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"):
        expect_close(item(layers, name), item(layers, name), f"net.{name}")
    net = SimpleNamespace(
        **{
            fc: SimpleNamespace(weight=layers[f"{fc}.weight"], bias=layers[f"{fc}.bias"])
            for fc in ("fc1", "fc2")
        }
    )
    try:
        _expect_report(item(evidence, "report"), net, x, "report")
    except RuntimeError:  # shapes that do not multiply: not the notebook's network
        raise Suspicious("net's layers and x do not fit together") from None


def judge_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial, (net, x) in enumerate(_trials(rng)):
        _expect_report(item(evidence, f"report{trial}"), net, x, f"the report of trial {trial}")
