"""Errors that student code raises inside a check, turned into their causes.

A traceback's last line names a symptom ("'tuple' object has no attribute 'size'"); for the
pitfalls of hooks the cause is known, and the message says it instead, with the symptom after it.
Exercise modules add their own causes; these are the ones every notebook meets.
"""

from __future__ import annotations

import re

from autograder.i18n import N_, _

# (pattern on "Type: message", the cause to tell the student)
PITFALLS: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(r"AttributeError: 'tuple' object has no attribute '(\w+)'"),
        N_(
            "PyTorch hands a hook its inputs (and gradients) as a tuple, one entry per argument "
            "of `forward`: take the tensor out first, e.g. `input[0]`, then use `.{attribute}` "
            "on it."
        ),
    ),
    (
        re.compile(r"TypeError: .*takes (\d+) positional arguments? but (\d+) (?:were|was) given"),
        N_(
            "a function was called with {given} arguments but takes {takes}: a hook's signature "
            "is fixed by its kind (see the table at the top of the notebook)."
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
        re.compile(r"cannot assign '[\w.]+' as parameter '(\w+)'"),
        N_(
            "`{name}` is a registered Parameter, and PyTorch refuses to replace it by a plain "
            "tensor (it would drop out of `model.parameters()`): change its values in place."
        ),
    ),
    (
        re.compile(r"UnboundLocalError: cannot access local variable '(\w+)'"),
        N_(
            "assigning to `{name}` anywhere inside a function (`{name} = ...`, `{name} += ...`) "
            "makes `{name}` a local name of that function, which has no value yet where it is "
            "first used: change the notebook's object in place through its methods instead of "
            "assigning to the name."
        ),
    ),
    (
        re.compile(r"'NoneType' object has no attribute '(\w+)'"),
        N_(
            "something your code used is None where a tensor or module was expected (a layer "
            "built with `bias=False` has `bias` None; a hook that returns nothing gives None)."
        ),
    ),
]


def explain_error(what: str, error: BaseException) -> str:
    """One message for `error`, raised while `what` ran: its cause when known, then the error."""
    raised = f"{type(error).__name__}: {error}"
    first_line = raised.splitlines()[0][:300]
    for pattern, cause in PITFALLS:
        found = pattern.search(raised)
        if found:
            # A cause with one placeholder names it {attribute} or {name}: either gets the group.
            fields = dict.fromkeys(("attribute", "name"), (found.groups() or ("",))[0])
            if "takes" in pattern.pattern:
                fields = {"takes": found.group(1), "given": found.group(2)}
            return _("{what} raised `{error}`: {cause}").format(
                what=what, error=first_line, cause=_(cause).format(**fields)
            )
    return _("{what} raised `{error}`.").format(what=what, error=first_line)
