"""Which modules a function passed to `apply` acted on, told by the lines it ran.

A function such as `weight_initialization` tests each module it is given (`if isinstance(...)`)
and acts on some. When it changed nothing, the cause may be a test that held for no module or
code under the test that does nothing; only the lines that ran tell them apart. So the
function is run under a line tracer (sys.settrace, restored afterwards), and a module counts as
selected when a statement under one of the function's `if`s ran for it.
"""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torch import nn

from autograder import parsing


@dataclass
class Selection:
    """The modules apply passed the function, in order, and those it selected (None when the
    function has no `if` to tell by, or its source cannot be read)."""

    visited: list[str]
    selected: list[str] | None

    def missed(self, wanted: list[str]) -> list[str]:
        return [] if self.selected is None else [w for w in wanted if w not in self.selected]


def label(model: nn.Module, receiver: str = "model") -> dict[int, str]:
    """id(module) -> "Class (receiver.path)" for every module of `model`."""
    return {
        id(module): f"{type(module).__name__} ({receiver}{'.' + path if path else ''})"
        for path, module in model.named_modules()
    }


def traced_apply(
    model: nn.Module, fn: Callable[[nn.Module], Any], receiver: str = "model"
) -> tuple[nn.Module, Selection]:
    """`model.apply(fn)`, and which modules `fn` selected. Errors of `fn` propagate."""
    labels = label(model, receiver)
    guarded = _guarded_lines(fn)
    code = getattr(inspect.unwrap(getattr(fn, "__func__", fn)), "__code__", None)
    visited: list[str] = []
    ran: dict[str, set[int]] = {}

    def line(frame, event, arg):
        if event == "line":
            ran.setdefault(visited[-1], set()).add(frame.f_lineno)
        return line

    def call(frame, event, arg):
        return line if frame.f_code is code else None

    def each(module: nn.Module) -> None:
        visited.append(labels.get(id(module), type(module).__name__))
        fn(module)

    before = sys.gettrace()
    sys.settrace(call if guarded and code is not None else before)
    try:
        result = model.apply(each)
    finally:
        sys.settrace(before)
    if not guarded or code is None:
        return result, Selection(visited, None)
    return result, Selection(visited, [m for m in visited if ran.get(m, set()) & guarded])


def _guarded_lines(fn: Callable[..., Any]) -> set[int]:
    """The line numbers of the statements under the `if`s of `fn` (its own, not those of the
    functions it defines), as the tracer reports them; empty when it has none."""
    target = inspect.unwrap(getattr(fn, "__func__", fn))
    try:
        lines, start = inspect.getsourcelines(target)
        tree = parsing.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return set()
    if not tree.body or not isinstance(tree.body[0], ast.FunctionDef | ast.AsyncFunctionDef):
        return set()
    found: set[int] = set()
    _visit(tree.body[0].body, False, found)
    return {number + start - 1 for number in found}


def _visit(statements: list[ast.stmt], guarded: bool, found: set[int]) -> None:
    for statement in statements:
        if isinstance(statement, ast.If):
            _visit(statement.body, True, found)
            _visit(statement.orelse, guarded, found)  # elif: an `if` of its own; else: as around
            continue
        if guarded:
            found.add(statement.lineno)
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue  # its body runs in a frame of its own, if ever
        for field in ("body", "orelse", "finalbody"):
            _visit(getattr(statement, field, []) or [], guarded, found)
        for handler in getattr(statement, "handlers", []) or []:
            _visit(handler.body, guarded, found)
