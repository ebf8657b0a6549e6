"""An untouched answer cell that ends in the stub's bare `...` shows nothing in the student's own
Jupyter, instead of `Out[n]: Ellipsis` after Run All.

Only a `...` that is the cell's last statement, at the top level, is silenced (IPython's
documented `ast_transformers`); a stub inside a function is left alone, and so is every graded
notebook, whose outputs stay those of stock nbgrader.
"""

from __future__ import annotations

import ast
from typing import Any

from autograder.widgets.frontend import graded


class QuietStub(ast.NodeTransformer):
    """Turns a cell's last statement into `pass` when it is a bare `...`."""

    def visit_Module(self, node: ast.Module) -> ast.Module:
        last = node.body[-1] if node.body else None
        if (
            isinstance(last, ast.Expr)
            and isinstance(last.value, ast.Constant)
            and last.value.value is Ellipsis
        ):
            node.body[-1] = ast.copy_location(ast.Pass(), last)
        return node


def quiet_in(shell: Any) -> bool:
    """Silence trailing stubs in `shell` (IPython's); True when it does from now on."""
    if shell is None or graded() or not hasattr(shell, "ast_transformers"):
        return False
    if not any(isinstance(t, QuietStub) for t in shell.ast_transformers):
        shell.ast_transformers.append(QuietStub())
    return True
