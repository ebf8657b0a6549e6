"""What the module_apply exercises share: running a student's function through `apply` on the
checker's own models, the state the chained exercises continue from, and the messages about
selecting modules and changing their parameters."""

from __future__ import annotations

import re
from collections.abc import Callable, MutableMapping
from typing import Any

import torch
from torch import nn
from torch.nn.parameter import Parameter

from autograder.exercises.kit.judge import Suspicious, expect_close, item
from autograder.exercises.kit.student import Student, checker_classes
from autograder.exercises.module_apply._selection import Selection, traced_apply
from autograder.exercises.module_apply.models import FUNCTION_PATHS
from autograder.feedback import CheckFailed, NotDoneYet, describe
from autograder.i18n import N_, _
from autograder.tolerances import close_broadcast

TRIALS = 3  # fresh models per hidden check
FUNCTIONS = tuple(FUNCTION_PATHS.values())
ISINSTANCE = "`isinstance(module, (Function_A, Function_B, Function_C, Function_D))`"
FRESH = N_("On a fresh Model with random parameters")
NO_ATTRIBUTE = re.compile(r"'(\w+)' object has no attribute '(\w+)'")


def fill_fix(names: tuple[str, ...]) -> str:
    """The fix that fills each named Parameter in place."""
    return "with torch.no_grad(): " + "; ".join(f"module.{name}.fill_(1.0)" for name in names)


FILL_FIX = fill_fix(("W",))


def joined(names: tuple[str, ...]) -> str:
    """`W`, or `W` and `b`, in the language of the messages."""
    quoted = [f"`{name}`" for name in names]
    if len(quoted) == 1:
        return quoted[0]
    return _("{rest} and {last}").format(rest=", ".join(quoted[:-1]), last=quoted[-1])


# ---- running student code through apply ----------------------------------------------------------


def _apply_hint(message: str) -> str:
    """What this notebook's errors mean, beyond the cause kit/diagnose.py gives."""
    if "as child module" in message:
        return _(
            "In Layer_AB, `b` is its Function_B submodule, and PyTorch refuses to replace a "
            "submodule by a tensor. apply calls your function on every module: act only on the "
            "Function modules, e.g. with {isinstance}."
        ).format(isinstance=ISINSTANCE)
    if "'NoneType' object has no attribute" in message:
        return _(
            "Here, TinyLM's Head is built with bias=False: test that `module.bias` is not None "
            "before initialising it."
        )
    found = NO_ATTRIBUTE.search(message)
    if found and found.group(1) not in FUNCTIONS:
        cls, attribute = found.groups()
        if cls in ("Layer_AB", "Layer_CD", "Model"):
            return _(
                "apply calls your function on every module, Layer_AB, Layer_CD and Model too, "
                "and those have no `{attribute}`. Act only on the Function modules, e.g. with "
                "{isinstance}."
            ).format(attribute=attribute, isinstance=ISINSTANCE)
        return _(
            "apply calls your function on every module, including {cls}, which has no "
            "`{attribute}`: test the module's type first, e.g. `isinstance(module, nn.Linear)`."
        ).format(cls=cls, attribute=attribute)
    return ""


def _fix_for(message: str) -> str:
    if "as parameter" in message or "leaf Variable" in message:
        return FILL_FIX
    return ""


def student_call(s: Student, what: str, fn: Callable[..., Any], *args: Any) -> Any:
    """s.call, with what this notebook's mistakes mean added to their error messages."""
    try:
        return s.call(what, fn, *args)
    except NotDoneYet:
        raise
    except CheckFailed as failure:
        hint = _apply_hint(failure.message)
        message = f"{failure.message}\n{hint}" if hint else failure.message
        raise CheckFailed(message, fix=_fix_for(failure.message)) from None


def apply_to(
    s: Student, model: nn.Module, fn_name: str, receiver: str = "model"
) -> tuple[nn.Module, Selection]:
    """`model.apply(<the student's fn_name>)` on a checker model, run as student code; what it
    returned and which modules the function selected."""
    fn = s.function(fn_name)
    with checker_classes(s, fn, model):
        what = _("`{receiver}.apply({fn})`").format(receiver=receiver, fn=fn_name)
        return student_call(s, what, traced_apply, model, fn, receiver)


def run_model(s: Student, model: nn.Module, x: torch.Tensor, name: str = "x") -> torch.Tensor:
    return student_call(s, _("`model({name})`").format(name=name), model, x)


def on_fresh(failure: CheckFailed) -> CheckFailed:
    message = _("{fresh}: {message}").format(fresh=_(FRESH), message=failure.message)
    return CheckFailed(message, fix=failure.fix)


def explained(failure: CheckFailed, selection: Selection, fn_name: str) -> CheckFailed:
    """`failure`, or its cause when the lines the function ran tell it: a test that held for no
    module, or for some of the Function modules only."""
    if selection.selected == []:
        return CheckFailed(
            _(
                "`{fn}` changed nothing: apply passed it each of the {count} modules ({names}), "
                "and for none of them did the condition of its `if` hold, so the code under it "
                "never ran. Try the test on one module of each kind, as the demo above does."
            ).format(fn=fn_name, count=len(selection.visited), names=", ".join(selection.visited))
        )
    wanted = [label for label in selection.visited if label.split(" ")[0] in FUNCTIONS]
    missed = selection.missed(wanted)
    if missed and len(missed) < len(wanted):
        held = [label for label in wanted if label not in missed]
        return CheckFailed(
            _(
                "the `if` of `{fn}` held for {held}, not for {missed}: the test that selects the "
                "Function modules misses some (a name test is easy to get wrong); {isinstance} "
                "selects exactly the four."
            ).format(
                fn=fn_name,
                held=", ".join(held),
                missed=", ".join(missed),
                isinstance=ISINSTANCE,
            )
        )
    return failure


# ---- the seed course's Model ---------------------------------------------------------------------


def function_modules(model: nn.Module) -> list[tuple[str, nn.Module | None]]:
    """(label, module or None when it is gone) for the four Function modules, in forward order."""
    found = []
    for path, cls_name in FUNCTION_PATHS.items():
        try:
            module = model.get_submodule(path)
        except AttributeError:
            module = None
        found.append((f"{cls_name} (model.{path})", module))
    return found


def with_bias(model: nn.Module) -> nn.Module:
    """The state add_bias leaves: a new random Parameter b of shape (2,) on every Function."""
    for _label, module in function_modules(model):
        module.b = Parameter(torch.rand(2))
    return model


def continued(namespace: MutableMapping[str, Any], *, ones: bool) -> None:
    """The notebook's `model` as the exercises before a chained one leave it: a Model of the
    notebook's own classes with b added, and (`ones`) W and b filled with ones."""
    model = with_bias(namespace["Model"]())
    if ones:
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.fill_(1.0)
    namespace["model"] = namespace["returned_module"] = model


def require_returned(s: Student, fn_name: str) -> nn.Module:
    """The notebook's `model`, which `returned_module = model.apply(...)` must have returned."""
    model = s.get("model")
    returned = s.get("returned_module", hint=_("Run the answer cell above (it sets it)."))
    if returned is model:
        return model
    got = (
        _("another {kind}").format(kind=type(returned).__name__)
        if isinstance(returned, nn.Module)
        else describe(returned)
    )
    message = _(
        "`returned_module` should be `model` itself, got {got}: the answer cell's last "
        "line applies `{fn}` to the notebook's `model`, and model.apply(fn) returns the "
        "module it was called on. Keep that line as the notebook gives it."
    ).format(got=got, fn=fn_name)
    if type(returned) is type(model):  # maybe the line is as given, and `model` is newer
        message += " " + _(
            "If you kept it, `model` was made again after your answer cell ran (by a cell above "
            "it): run your answer cell again, then the cells under it."
        )
    raise CheckFailed(message)


def require_registered(model: nn.Module, names: tuple[str, ...]) -> None:
    """Every named attribute of every Function module is a Parameter registered under its name."""
    problems = []
    for label, module in function_modules(model):
        if module is None:
            continue
        own = dict(module.named_parameters(recurse=False))
        for name in names:
            value = getattr(module, name, None)
            if not isinstance(value, torch.Tensor) or own.get(name) is value:
                continue
            if name in own:
                problems.append(
                    _(
                        "{label}: a plain tensor `{name}` hides the registered Parameter "
                        "`{name}`, so `module.{name}` reads the tensor while "
                        "`model.parameters()` still holds the old Parameter, unchanged"
                    ).format(label=label, name=name)
                )
            elif name in dict(module.named_buffers(recurse=False)):
                problems.append(
                    _("{label}: `{name}` is a buffer now, which an optimizer never trains").format(
                        label=label, name=name
                    )
                )
            else:
                problems.append(
                    _(
                        "{label}: `{name}` is a plain tensor, no longer a registered Parameter"
                    ).format(label=label, name=name)
                )
    if problems:
        raise CheckFailed(
            _(
                "{what} should stay registered Parameters, but:\n  {problems}\nA tensor that "
                "is not a registered Parameter is missing from `model.parameters()` and "
                "`state_dict()`, so an optimizer would never train it. Change the values of "
                "the Parameter in place instead of replacing it."
            ).format(what=joined(names), problems="\n  ".join(problems)),
            fix=fill_fix(names),
        )


def require_ones(model: nn.Module, names: tuple[str, ...], fn_name: str) -> None:
    """Every named parameter of every Function module holds only ones."""
    wrong, right = [], []
    for label, module in function_modules(model):
        bad = []
        for name in names:
            value = getattr(module, name, None)
            if not (isinstance(value, torch.Tensor) and close_broadcast(value, torch.ones(()))):
                bad.append(f"{name} = {describe(value)}")
        (wrong if bad else right).append(f"{label}: {', '.join(bad)}" if bad else label)
    if not wrong:
        return
    message = _("`{fn}` did not set {what} to 1 in:\n  {wrong}").format(
        fn=fn_name, what=joined(names), wrong="\n  ".join(wrong)
    )
    if right:
        message += "\n" + _(
            "It did in {right}, so the test that selects modules misses some (a name test is "
            "easy to get wrong); {isinstance} selects exactly the four."
        ).format(right=", ".join(right), isinstance=ISINSTANCE)
    raise CheckFailed(message)


def require_in_place(model: nn.Module, before: list[list[Any]], names: tuple[str, ...], fn_name):
    """The named parameters of each Function module are the very objects `before` holds."""
    replaced = [
        label
        for (label, module), objects in zip(function_modules(model), before, strict=True)
        if any(
            getattr(module, name, None) is not old for name, old in zip(names, objects, strict=True)
        )
    ]
    if replaced:
        raise CheckFailed(
            _(
                "`{fn}` put new objects in place of the Parameters {what} of {replaced}. Their "
                "values may be right, but the text asks to fill the existing Parameters in "
                "place, as in Exercise 2: whatever holds the old Parameter keeps it (an "
                "optimizer made before this call would go on training the old one)."
            ).format(fn=fn_name, what=joined(names), replaced=", ".join(replaced)),
            fix=fill_fix(names),
        )


def objects_of(model: nn.Module, names: tuple[str, ...]) -> list[list[Any]]:
    return [
        [getattr(module, name, None) for name in names] for _l, module in function_modules(model)
    ]


def lacking_bias(model: nn.Module) -> list[str]:
    """The Function modules of `model` with no b (an add_bias that missed them)."""
    return [
        label for label, module in function_modules(model) if getattr(module, "b", None) is None
    ]


def chain_note(lacking: list[str], fn_name: str) -> str:
    return "\n" + _(
        "Note: in your notebook's `model`, {lacking} has no b, because add_bias (Exercise 3) "
        "did not add it. This check judged `{fn}` on a model with b added correctly; fix "
        "Exercise 3, then run the cells from its answer cell down again to see it in your "
        "model."
    ).format(lacking=", ".join(lacking), fn=fn_name)


def shape_note(model: nn.Module) -> str:
    shapes = [
        tuple(getattr(module, "W", torch.empty(2, 2)).shape)
        for _label, module in function_modules(model)
    ]
    changed = [shape for shape in shapes if shape != (2, 2)]
    if not changed:
        return ""
    return "\n" + _(
        "Note: W changed shape from (2, 2) to {shape} because you assigned a new Parameter. It "
        "works here, but filling W in place keeps its shape and the very Parameter object that "
        "an optimizer may already hold."
    ).format(shape=changed[0])


def parameters_of(model: nn.Module, names: tuple[str, ...], trial: object = "") -> dict:
    """The named parameters of the four Function modules, as evidence (name{trial}.index)."""
    return {
        f"{name}{trial}.{index}": getattr(module, name, None)
        for index, (_label, module) in enumerate(function_modules(model))
        for name in names
    }


def expect_ones(evidence: dict, names: tuple[str, ...], trial: object) -> None:
    """For a judge: the recorded parameters (parameters_of) of the Function modules are ones."""
    for index in range(4):
        for name in names:
            value, what = item(evidence, f"{name}{trial}.{index}"), f"{name} of Function {index}"
            if type(value) is not torch.Tensor or value.numel() == 0:
                raise Suspicious(f"{what} is not a tensor")
            expect_close(value, torch.ones_like(value), what)
