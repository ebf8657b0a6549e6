"""`ast.parse` for code that several threads of one process may run at once.

CPython 3.11's AST constructor keeps its recursion depth in state the interpreter's threads
share, so two threads parsing at once (the grading threads of a process that grades in-process,
a Dask worker's threads) can make one of them fail with SystemError ("AST constructor recursion
depth mismatch", python/cpython#106905): a submission then failed for nothing it did. Every
parse of the package goes through one lock.
"""

from __future__ import annotations

import ast
import threading

# Reentrant: a parse may run a finalizer (garbage collection) that parses too.
_ONE_AT_A_TIME = threading.RLock()


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    with _ONE_AT_A_TIME:
        return ast.parse(source, filename)
