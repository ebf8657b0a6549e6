"""method_hook: `Probe` registers its own method `save_output` as a forward hook on `self.linear` in
`__init__`, and the method keeps the layer's output, detached, in `self.last_output` (seed 004:
hooks written as instance methods)."""

from __future__ import annotations

import torch
from torch import nn

from autograder.exercises.kit.judge import expect_close, item
from autograder.exercises.kit.student import Student, is_stub, registered_hooks, require_arity
from autograder.feedback import CheckFailed, NotDoneYet, describe
from autograder.i18n import N_, _
from autograder.tolerances import close

HINTS = [
    N_("In `__init__`, register the bound method `self.save_output` on `self.linear`."),
    N_("`save_output` takes `self` and then the usual `(module, input, output)`."),
    N_("Keep the output, detached, on the instance as `self.last_output`."),
]
FIX_REGISTER = "self.linear.register_forward_hook(self.save_output)"
FIX_REGISTER_NOTE = N_("in __init__")


def _fix_register() -> str:
    """The fix, its comment in the notebook's language."""
    return f"{FIX_REGISTER}   # {_(FIX_REGISTER_NOTE)}"


FIX_DETACH = "self.last_output = output.detach()"


def _methods_of(probe: nn.Module, module: nn.Module, kind: str = "forward") -> list:
    """The hooks of `kind` on `module` that are methods of this very `probe`."""
    return [h for h in registered_hooks(module, kind) if getattr(h, "__self__", None) is probe]


def _no_method_hook(probe: nn.Module, linear: nn.Module) -> CheckFailed:
    """Why no method of the probe is registered on its layer."""
    if _methods_of(probe, probe):
        return CheckFailed(
            _(
                "`save_output` is registered on the Probe itself, not on its layer "
                "`self.linear`: a hook runs on the module it is registered on, and the task is "
                "the layer's output. (Here the two happen to be equal, because `forward` returns "
                "the layer's output; in a bigger model they are not.)"
            ),
            fix=_fix_register(),
        )
    others = [h for h in registered_hooks(linear, "forward") if not is_stub(h)]
    if others:
        return CheckFailed(
            _(
                "the forward hook on `probe.linear` is {got}, not a method of this Probe: the "
                "exercise is a hook that is a method, `self.save_output`, registered in "
                "`__init__`, so that every Probe keeps what it sees on itself."
            ).format(got=describe(others[-1])),
            fix=_fix_register(),
        )
    save_output = getattr(type(probe), "save_output", None)
    if save_output is None or is_stub(save_output):
        return NotDoneYet(
            _(
                "`Probe` does not register a hook yet and `save_output` does nothing yet: write "
                "both, then run the answer cell and the cells under it."
            )
        )
    return CheckFailed(
        _(
            "no forward hook is registered on `probe.linear`: a new Probe must register its "
            "method `save_output` on its layer in `__init__`, or the method never runs."
        ),
        fix=_fix_register(),
    )


def _check_probe(s: Student, probe: nn.Module, x: torch.Tensor, params=None) -> torch.Tensor:
    """Run `probe(x)` and check what it stored; its stored output."""
    linear = getattr(probe, "linear", None)
    if not isinstance(linear, nn.Linear):
        raise CheckFailed(
            _("Probe should keep its layer as `self.linear = nn.Linear(4, 2)`, got {got}.").format(
                got=describe(linear)
            )
        )
    if params is not None:  # weights from the check's generator: the judge knows them too
        with torch.no_grad():
            linear.weight.copy_(params[0])
            linear.bias.copy_(params[1])
    methods = _methods_of(probe, linear)
    for fn in methods:
        require_arity(fn, "save_output", "save_output(module, input, output)", 3)
    if not methods and _methods_of(probe, linear, "forward_pre"):
        raise CheckFailed(
            _(
                "`save_output` is registered on `self.linear` as a pre-hook "
                "(`register_forward_pre_hook`), which runs before the layer and sees only its "
                "inputs, as `(module, input)`: it never gets the output. A forward hook, "
                "registered with `register_forward_hook`, runs after the layer and gets "
                "`(module, input, output)`."
            ),
            fix=_fix_register(),
        )
    s.call(_("`probe(x)`"), probe, x)
    if len(_methods_of(probe, linear)) > len(methods):
        raise CheckFailed(
            _(
                "every call of `probe(x)` registers `save_output` once more: it is registered "
                "in `forward`, so the hooks pile up on the layer, one per call. Register it once, "
                "in `__init__`."
            ),
            fix=_fix_register(),
        )
    if not methods:
        raise _no_method_hook(probe, linear)
    if is_stub(methods[-1]):
        raise NotDoneYet(
            _("`save_output` does nothing yet: write its body, then run the answer cell again.")
        )
    expected = x @ linear.weight.detach().T + linear.bias.detach()
    got = getattr(probe, "last_output", None)
    if got is None:
        raise CheckFailed(
            _(
                "`probe.last_output` is still None after `probe(x)`: `save_output` ran (it is "
                "registered on the layer) but did not store the output on the instance, as "
                "`self.last_output`."
            )
        )
    if not close(got, expected):
        raise CheckFailed(
            _("`probe.last_output` should be the layer's output {expected}, got {got}.").format(
                expected=describe(expected), got=describe(got)
            )
        )
    if got.requires_grad:
        raise CheckFailed(
            _(
                "`probe.last_output` is still attached to the autograd graph (it requires "
                "grad): a stored output keeps the whole graph of its forward pass alive, so "
                "memory grows with every call. Store a detached tensor."
            ),
            fix=FIX_DETACH,
        )
    return got


def visible(s: Student) -> str:
    probe_class = s.get("Probe")
    s.call(_("`Probe()`"), probe_class)  # errors of __init__ first
    probe, x = s.get("probe"), s.get("x")
    if not isinstance(probe, probe_class):
        raise CheckFailed(
            _(
                "`probe` was made from an earlier version of `Probe`: run the cell under your "
                "answer cell again, it makes a new `probe`."
            )
        )
    linear = getattr(probe, "linear", None)
    s.record(x=x, weight=getattr(linear, "weight", None), bias=getattr(linear, "bias", None))
    s.record(output=_check_probe(s, probe, x))
    return _("save_output is a method registered in __init__ and stores the layer's output.")


def cases(rng: torch.Generator) -> list[tuple[torch.Tensor, ...]]:
    """(weight, bias, x) for the hidden check's two Probes: batches of 3 and 5 rows."""
    return [
        (
            torch.randn(2, 4, generator=rng),
            torch.randn(2, generator=rng),
            torch.rand(rows, 4, generator=rng),
        )
        for rows in (3, 5)
    ]


def hidden(s: Student) -> str:
    probe_class = s.get("Probe")
    first, second = s.call(_("`Probe()`"), probe_class), s.call(_("`Probe()`"), probe_class)
    for trial, (probe, (weight, bias, x)) in enumerate(
        zip((first, second), cases(s.rng), strict=True)
    ):
        s.record(**{f"output{trial}": _check_probe(s, probe, x, (weight, bias))})
    if first.last_output.shape == second.last_output.shape:
        raise CheckFailed(
            _(
                "two Probes share their stored output: after the second one ran, the first one's "
                "`last_output` is the second one's. Store it on the instance (`self`)."
            )
        )
    return _("each new Probe records its own layer output.")


def judge_visible(rng: torch.Generator, evidence: dict) -> None:
    x, weight, bias = item(evidence, "x"), item(evidence, "weight"), item(evidence, "bias")
    for value, name in ((x, "x"), (weight, "probe.linear.weight"), (bias, "probe.linear.bias")):
        expect_close(value, value, name)
    expect_close(item(evidence, "output"), x @ weight.T + bias, "probe.last_output")


def judge_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial, (weight, bias, x) in enumerate(cases(rng)):
        expect_close(item(evidence, f"output{trial}"), x @ weight.T + bias, f"Probe {trial}")
