"""Errors that student code raises, turned into their causes.

A traceback's last line names a symptom ("'tuple' object has no attribute 'size'"); for the
pitfalls of hooks the cause is known, and the message says it instead, with the symptom after it.
Exercise modules add their own causes; these are the ones every notebook meets, in a check and
in the notebook's own cells (cell_errors.py). A cause's {fields} are its pattern's named groups.
"""

from __future__ import annotations

import re

from autograder.i18n import N_, _

# (pattern on "Type: message", the cause to tell the student)
PITFALLS: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(r"AttributeError: 'tuple' object has no attribute '(?P<attribute>\w+)'"),
        N_(
            "PyTorch hands a hook its inputs (and gradients) as a tuple, one entry per argument "
            "of `forward`: take the tensor out first, e.g. `input[0]`, then use `.{attribute}` "
            "on it."
        ),
    ),
    (
        re.compile(
            r"TypeError: .*takes (?P<takes>\d+) positional arguments? but (?P<given>\d+) "
            r"(?:were|was) given"
        ),
        N_(
            "a function was called with {given} arguments but takes {takes}: a hook's signature "
            "is fixed by its kind (see the table at the top of the notebook)."
        ),
    ),
    (
        # A forward pre-hook's return value replaces the module's positional arguments.
        re.compile(r"TypeError: [\w.]*forward\(\) missing \d+ required positional argument"),
        N_(
            "the module's `forward` got fewer arguments than it takes. When a forward pre-hook "
            "returns a value, that value replaces the module's positional arguments: return a "
            "tuple with one entry per argument (a list or a single tensor counts as one "
            "argument), or `None` to keep them as they are."
        ),
    ),
    (
        re.compile(
            r"TypeError: (?:[\w.<>]+\.)?(?P<function>\w+)\(\) missing \d+ required positional "
            r"argument"
        ),
        N_(
            "`{function}` was called with fewer arguments than it takes: a hook's signature is "
            "fixed by its kind (see the table at the top of the notebook). A forward pre-hook "
            "gets `(module, args)`, a forward hook `(module, args, output)`, a full backward "
            "hook `(module, grad_input, grad_output)`, a tensor hook `(grad)`."
        ),
    ),
    (
        re.compile(r"hook '[^']*' has changed the size of value"),
        N_(
            "a hook returned a gradient of another shape than the one it was given. A tensor "
            "hook returns one tensor of the gradient's shape (or `None`); a full backward hook "
            "returns a tuple with one tensor per entry of `grad_input` (or `None`): "
            "`(grad_input[0] * 2,)`, not the tensor alone."
        ),
    ),
    (
        re.compile(
            r"Backward hook returned an invalid number of grad_input, got (?P<got>\d+), but "
            r"expected (?P<expected>\d+)"
        ),
        N_(
            "a full backward hook returns a tuple with exactly one entry per entry of "
            "`grad_input` ({expected} here, not {got}; `None` for an input to leave as it is), "
            "or `None` to change nothing."
        ),
    ),
    (
        re.compile(r"expected Variable, but hook returned '(?P<kind>\w+)'"),
        N_(
            "a tensor hook (`tensor.register_hook`) returns one tensor, the new gradient, or "
            "`None`; it returned a `{kind}`."
        ),
    ),
    (
        re.compile(r"variables needed for gradient computation has been modified by an inplace"),
        N_(
            "autograd saved a tensor in the forward pass to compute gradients, and it was "
            "changed in place (`+=`, `.add_()`, an optimizer's `step()`) before the backward "
            "pass used it: change it only after the backward pass is done with it, or work on "
            "a copy."
        ),
    ),
    (
        re.compile(r"leaf Variable that requires grad is being used in an in-place operation"),
        N_(
            "a Parameter requires grad, and autograd forbids changing it in place while it "
            "records operations: change it inside a `torch.no_grad()` block."
        ),
    ),
    (
        # torch 2.13 says "Output 0 of BackwardHookFunction is a view ..."; older ones name the
        # Backward node.
        re.compile(r"BackwardHookFunction(?:Backward)? is a view and is being modified inplace"),
        N_(
            "a full backward hook wraps the module's inputs and outputs in views, and a view "
            "changed in place (an in-place ReLU, `+=`) breaks it: register the hook on the "
            "tensor instead (`tensor.register_hook`), or avoid the in-place operation."
        ),
    ),
    (
        re.compile(r"cannot assign '[\w.]+' as parameter '(?P<name>\w+)'"),
        N_(
            "`{name}` is a registered Parameter, and PyTorch refuses to replace it by a plain "
            "tensor (it would drop out of `model.parameters()`): change its values in place."
        ),
    ),
    (
        re.compile(r"UnboundLocalError: cannot access local variable '(?P<name>\w+)'"),
        N_(
            "assigning to `{name}` anywhere inside a function (`{name} = ...`, `{name} += ...`) "
            "makes `{name}` a local name of that function, which has no value yet where it is "
            "first used: change the notebook's object in place through its methods instead of "
            "assigning to the name."
        ),
    ),
    (
        re.compile(r"'NoneType' object has no attribute '\w+'"),
        N_(
            "something your code used is None where a tensor or module was expected (a layer "
            "built with `bias=False` has `bias` None; a hook that returns nothing gives None)."
        ),
    ),
]


def cause_of(error: BaseException) -> str | None:
    """The cause of `error` when it is a known pitfall, translated; None otherwise."""
    raised = f"{type(error).__name__}: {error}"
    for pattern, cause in PITFALLS:
        found = pattern.search(raised)
        if found:
            return _(cause).format(**found.groupdict())
    return None


def explain_error(what: str, error: BaseException) -> str:
    """One message for `error`, raised while `what` ran: its cause when known, then the error."""
    first_line = f"{type(error).__name__}: {error}".splitlines()[0][:300]
    cause = cause_of(error)
    if cause is None:
        return _("{what} raised `{error}`.").format(what=what, error=first_line)
    return _("{what} raised `{error}`: {cause}").format(what=what, error=first_line, cause=cause)
