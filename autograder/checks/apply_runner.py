"""Running a student's apply functions on the checker's own models, and the messages shared by
the apply checks."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator

import torch
from torch import nn

from autograder.checks.student import Student
from autograder.feedback import CheckFailed, NotDoneYet, describe
from autograder.models.apply import FUNCTION_PATHS
from autograder.tolerances import close_broadcast

FRESH = "On a fresh Model with random parameters"
TRIALS = 3
FUNCTIONS = tuple(FUNCTION_PATHS.values())
ISINSTANCE = "`isinstance(module, (Function_A, Function_B, Function_C, Function_D))`"

# ---- running student code through apply ----------------------------------------------------------

PLAIN_TENSOR = (
    "\n  W and b are registered Parameters, and PyTorch refuses to replace a registered Parameter "
    "by a plain tensor (it would silently drop out of model.parameters()). Change the values in "
    "place instead: `module.W.data.fill_(1.)`, or `with torch.no_grad(): module.W.fill_(1.)`."
)
NO_GRAD = (
    "\n  A Parameter requires grad, and autograd forbids changing it in place while it records "
    "operations. Do it under `with torch.no_grad():` (or on `.data`), e.g. "
    "`with torch.no_grad(): module.W.fill_(1.)`."
)
CHILD_MODULE = (
    "\n  In Layer_AB, `b` is its Function_B submodule, and PyTorch refuses to replace a submodule "
    f"by a tensor. apply calls your function on every module: act only on the Function modules, "
    f"e.g. with {ISINSTANCE}."
)
BIAS_NONE = (
    "\n  Some layers are built with bias=False, so their `bias` is None: test "
    "`if module.bias is not None:` before initialising it."
)
NO_ATTRIBUTE = re.compile(r"'(\w+)' object has no attribute '(\w+)'")


def _error_hint(message: str) -> str:
    if "cannot assign" in message and "as parameter" in message:
        return PLAIN_TENSOR
    if "as child module" in message:
        return CHILD_MODULE
    if "leaf Variable that requires grad" in message:
        return NO_GRAD
    if "'NoneType' object has no attribute" in message:
        return BIAS_NONE
    found = NO_ATTRIBUTE.search(message)
    if found and found.group(1) not in FUNCTIONS:
        cls, attr = found.groups()
        if cls in ("Layer_AB", "Layer_CD", "Model"):
            return (
                f"\n  apply calls your function on every module, Layer_AB, Layer_CD and Model "
                f"too, and those have no `{attr}`. Act only on the Function modules, e.g. with "
                f"{ISINSTANCE}."
            )
        return (
            f"\n  apply calls your function on every module, including {cls}, which has no "
            f"`{attr}`: test the module's type first, e.g. `isinstance(module, nn.Linear)`."
        )
    return ""


def student_call(s: Student, what: str, fn: Callable[..., object], *args: object) -> object:
    """s.call, with a hint added to the error messages this notebook's mistakes produce."""
    try:
        return s.call(what, fn, *args)
    except NotDoneYet:
        raise
    except CheckFailed as failure:
        raise CheckFailed(failure.message + _error_hint(failure.message)) from None


@contextlib.contextmanager
def _checker_classes(s: Student, fn: Callable[..., object], model: nn.Module) -> Iterator[None]:
    """While `fn` runs, the notebook's classes (Function_A, Head, ...) are replaced by `model`'s.

    The checker's models are built from its own copies of the classes, so an `isinstance` test
    against the notebook's classes would never match them. Every global naming such a class, or a
    tuple holding some (`FUNCTIONS = (Function_A, ...)`), is swapped, and restored afterwards.
    """
    target = getattr(fn, "__func__", fn)
    space = getattr(target, "__globals__", s.namespace)
    mapping = {}
    for cls in {type(module) for module in model.modules()}:
        mine = space.get(cls.__name__)
        if isinstance(mine, type) and mine is not cls:
            mapping[mine] = cls

    def swap(value: object) -> object:
        return mapping.get(value, value) if isinstance(value, type) else value

    with contextlib.ExitStack() as stack:
        for name, value in list(space.items()):
            if isinstance(value, tuple):
                new = tuple(swap(item) for item in value)
                changed = any(a is not b for a, b in zip(new, value, strict=True))
            else:
                new = swap(value)
                changed = new is not value
            if changed:
                stack.enter_context(s.swapped_global([fn], name, new))
        yield


def apply_to(s: Student, model: nn.Module, fn_name: str, receiver: str = "model") -> nn.Module:
    """`model.apply(<the student's fn_name>)` on a checker model, run as student code."""
    fn = s.function(fn_name)
    with _checker_classes(s, fn, model):
        return student_call(s, f"{receiver}.apply({fn_name})", model.apply, fn)


def run_model(s: Student, model: nn.Module, x: torch.Tensor, name: str = "x") -> torch.Tensor:
    return student_call(s, f"model({name})", model, x)


def on_fresh(failure: CheckFailed) -> CheckFailed:
    return CheckFailed(f"{FRESH}: {failure.message}")


# ---- the seed course's Model ---------------------------------------------------------------------


def _label(path: str, cls_name: str) -> str:
    return f"{cls_name} (model.{path})"


def function_modules(model: nn.Module) -> list[tuple[str, nn.Module | None]]:
    """(label, module or None when it is gone) for the four Function modules, in forward order."""
    found = []
    for path, cls_name in FUNCTION_PATHS.items():
        try:
            module = model.get_submodule(path)
        except AttributeError:
            module = None
        found.append((_label(path, cls_name), module))
    return found


def require_returned(s: Student, model: nn.Module, fn_name: str) -> None:
    returned = s.get("returned_module", hint="Run the solution cell above (it sets it).")
    if returned is model:
        return
    got = (
        f"another {type(returned).__name__}"
        if isinstance(returned, nn.Module)
        else describe(returned)
    )
    raise CheckFailed(
        f"`returned_module` should be `model` itself, got {got}. "
        f"model.apply(fn) returns the module it was called on: write "
        f"`returned_module = model.apply({fn_name})`."
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
    what = " and ".join(names)
    message = f"{fn_name} did not set {what} to 1 in:\n  " + "\n  ".join(wrong)
    if right:
        message += (
            f"\n  It did in {', '.join(right)}, so the test that selects modules misses some "
            f"(a name test is easy to get wrong); {ISINSTANCE} selects exactly the four."
        )
    raise CheckFailed(message)


def shape_note(model: nn.Module) -> str:
    shapes = [
        tuple(getattr(module, "W", torch.empty(2, 2)).shape)
        for _, module in function_modules(model)
    ]
    changed = [shape for shape in shapes if shape != (2, 2)]
    if not changed:
        return ""
    return (
        f"\n  Note: W changed shape from (2, 2) to {changed[0]} because you assigned a new "
        "Parameter. It works here, but `module.W.data.fill_(1.)` (or "
        "`fill_(1.)` under torch.no_grad()) keeps W's shape and the very Parameter object that "
        "an optimizer may already hold."
    )


def require_bias_present(model: nn.Module) -> None:
    lacking = [
        label for label, module in function_modules(model) if getattr(module, "b", None) is None
    ]
    if lacking:
        raise CheckFailed(
            f"{', '.join(lacking)} in the notebook's `model` has no b: add_bias (the exercise "
            "above) did not add it. Fix add_bias, then run the cells from there again. (The "
            "hidden test of this exercise prepares its own model, with b added correctly.)"
        )


# ---- apply_order ---------------------------------------------------------------------------------
