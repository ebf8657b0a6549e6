"""A trusted static scan of a submission's own cells for constructs that tamper with grading.

It runs in the grading worker on the cells' source (Python's ast; nothing is executed) and only
reports: verify.py decides what a finding costs. It looks for what honest answers to these
notebooks never need: changing attributes of torch, builtins, sys, IPython or the autograder
(`torch.allclose = ...`, `setattr(torch.Tensor, "__eq__", ...)`), `set_custom_exc`, edits of
`sys.modules`, ctypes, frame walking, exec/eval of strings, early exits, forged evidence outputs,
and classes that redefine comparison on lists, tuples, dicts or tensors. Changing the notebook's
own objects (`module.bias = nn.Parameter(...)`, `Add.forward = ...`) is not reported.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass

# Names that refer to the grader's libraries in these notebooks; `import x as y` adds y.
PROTECTED_ROOTS = {
    "torch", "nn", "F", "np", "numpy", "builtins", "__builtins__", "sys", "os", "IPython",
    "get_ipython", "ipykernel", "autograder", "check", "nbgrader", "jupyter_client", "gc",
    "inspect", "importlib", "warnings", "contextlib", "io",
}  # fmt: skip
PROTECTED_MODULES = {
    "torch", "numpy", "builtins", "sys", "os", "IPython", "ipykernel", "autograder", "nbgrader",
    "jupyter_client", "gc", "inspect", "importlib", "warnings", "contextlib", "io",
}  # fmt: skip
FORBIDDEN_IMPORTS = {"ctypes", "autograder", "nbgrader", "ipykernel", "jupyter_client", "gc"}
FORBIDDEN_CALLS = {
    "set_custom_exc": "replaces IPython's error display (set_custom_exc)",
    "_getframe": "walks the interpreter's frames (sys._getframe)",
    "currentframe": "walks the interpreter's frames (inspect.currentframe)",
    "get_referrers": "searches the interpreter's objects (gc.get_referrers)",
    "_exit": "ends the kernel (os._exit)",
    "exit": "ends the kernel early (exit / sys.exit)",
    "quit": "ends the kernel early (quit)",
    "clear_output": "clears cell outputs (clear_output)",
    "__import__": "imports by name (__import__)",
    "setattr": None,  # reported only on a protected object, below
    "delattr": None,
}
STRING_CODE = {"exec", "eval", "compile"}
# Names the notebooks' locked cells bind for the test cells; a student cell must not rebind them.
REBOUND = {"check", "torch", "nn", "F", "get_ipython", "autograder", "print", "globals"}
COMPARISON_DUNDERS = {"__eq__", "__ne__", "__bool__", "__len__", "__torch_function__"}
CONTAINER_BASES = {"list", "tuple", "dict", "Tensor", "UserList", "Parameter"}


EXITS = ("ends the kernel", "raises SystemExit", "raises KeyboardInterrupt")


@dataclass(frozen=True)
class Finding:
    cell: str  # grade id or cell id
    line: int
    what: str

    @property
    def tampers(self) -> bool:
        """False for an early exit: it can only make cells fail or not run, which the grader
        sees from outside; anything else may change what the kernel reports."""
        return not self.what.startswith(EXITS)

    def __str__(self) -> str:
        return f"cell {self.cell}, line {self.line}: {self.what}"


def scan_source(source: str, cell: str, protected: set[str] | None = None) -> list[Finding]:
    """Findings in one cell's source (a cell that does not parse has none: it fails anyway)."""
    if protected is None:
        # The findings depend on the source only: most cells a worker scans (the notebook's
        # unlocked demo cells, answers left blank) recur in submission after submission.
        return [Finding(cell, line, what) for line, what in _findings_in(source)]
    return _scan_source(source, cell, protected)


@functools.lru_cache(maxsize=4096)
def _findings_in(source: str) -> tuple[tuple[int, str], ...]:
    return tuple((found.line, found.what) for found in _scan_source(source, "", PROTECTED_ROOTS))


def _scan_source(source: str, cell: str, protected: set[str]) -> list[Finding]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    except (RecursionError, MemoryError):  # nesting no answer needs, maybe to hide from the scan
        return [Finding(cell, 0, "code too deeply nested to scan")]
    try:
        return _scan_tree(tree, cell, set(protected))
    except RecursionError:
        return [Finding(cell, 0, "code too deeply nested to scan")]


def _scan_tree(tree: ast.AST, cell: str, protected: set[str]) -> list[Finding]:
    _aliases(tree, protected)
    found: list[Finding] = []

    def add(node: ast.AST, what: str) -> None:
        found.append(Finding(cell, getattr(node, "lineno", 0), what))

    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
            targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
            for target in targets:
                _check_target(target, protected, lambda what, n=node: add(n, what))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and _imports_course_api(node):
                continue  # what every test cell and every hint cell does
            for name in names:
                if name.split(".")[0] in FORBIDDEN_IMPORTS:
                    add(node, f"imports {name}")
        elif isinstance(node, ast.Call):
            _check_call(node, protected, lambda what, n=node: add(n, what))
        elif isinstance(node, ast.Raise) and _name_of(node.exc) in (
            "SystemExit",
            "KeyboardInterrupt",
        ):
            add(node, f"raises {_name_of(node.exc)}")
        elif isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name in REBOUND:
            add(node, f"rebinds {node.name}")
        elif isinstance(node, ast.ClassDef):
            bases = {_last_name(base) for base in node.bases}
            overrides = {
                item.name
                for item in node.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.Assign)
                and getattr(item, "name", None) in COMPARISON_DUNDERS
            }
            if overrides and (bases & CONTAINER_BASES or "__eq__" in overrides):
                names = ", ".join(sorted(overrides))
                add(node, f"class {node.name} redefines {names} (results that compare equal)")
        elif isinstance(node, ast.Constant) and "vnd.hooklab" in str(node.value):
            add(node, "writes the grader's private evidence format")
    return found


def _imports_course_api(node: ast.ImportFrom) -> bool:
    """`from autograder import check`, or the widgets of the notebooks' hint and progress cells
    (they show things; nothing they do reaches a verdict)."""
    names = [(a.name, a.asname) for a in node.names]
    if node.module == "autograder":
        return names == [("check", None)]
    return node.module == "autograder.widgets" and all(alias is None for _, alias in names)


def _aliases(tree: ast.AST, protected: set[str]) -> None:
    """Add the names a cell binds to protected modules (`import torch as t`, `from torch import
    nn`, `t = torch`) to `protected`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in PROTECTED_MODULES:
                    protected.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.split(".")[0] in PROTECTED_MODULES:
                protected.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.Assign) and _is_reference_to(node.value, protected):
            protected.update(t.id for t in node.targets if isinstance(t, ast.Name))


def _is_reference_to(value: ast.AST, protected: set[str]) -> bool:
    """`torch` or `torch.nn`, not `torch.rand(3)` (a call's result is the student's own)."""
    return isinstance(value, ast.Name | ast.Attribute) and _root(value) in protected


def _check_target(target: ast.AST, protected: set[str], add) -> None:
    if isinstance(target, ast.Tuple | ast.List):
        for element in target.elts:
            _check_target(element, protected, add)
    elif isinstance(target, ast.Name) and target.id in REBOUND:
        add(f"rebinds {target.id}")
    elif (
        (isinstance(target, ast.Attribute | ast.Subscript) and _root(target) in protected)
        or (isinstance(target, ast.Subscript) and _root(target) in ("globals", "vars", "locals"))
        or (isinstance(target, ast.Subscript) and ".__dict__" in ast.unparse(target.value))
    ):
        add(f"changes {ast.unparse(target)[:60]}")


def _check_call(node: ast.Call, protected: set[str], add) -> None:
    name = _last_name(node.func)
    if name in ("setattr", "delattr") and node.args and _root(node.args[0]) in protected:
        add(f"calls {name} on {ast.unparse(node.args[0])[:60]}")
    elif name in STRING_CODE and isinstance(node.func, ast.Name):
        if node.args and not isinstance(node.args[0], ast.Constant):
            add(f"runs code built at run time ({name})")
        elif node.args:
            add(f"runs code from a string ({name})")
    elif FORBIDDEN_CALLS.get(name):
        if name in ("exit", "quit", "_exit") and not _is_exit_call(node):
            return
        add(FORBIDDEN_CALLS[name])
    elif name in ("update", "__setitem__", "pop", "clear", "setdefault"):
        text = ast.unparse(node.func)
        if "sys.modules" in text or "globals()" in text or "__dict__" in text:
            add(f"changes {text[:60]}")


def _is_exit_call(node: ast.Call) -> bool:
    """exit(), quit(), sys.exit(), os._exit(), not some_object.exit() of the student's own."""
    func = node.func
    if isinstance(func, ast.Name):
        return func.id in ("exit", "quit")
    return isinstance(func, ast.Attribute) and _name_of(func.value) in ("sys", "os")


def _root(node: ast.AST) -> str | None:
    """The name an attribute / subscript / call chain starts from: torch.Tensor.__eq__ -> torch."""
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _name_of(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Call):
        node = node.func
    return node.id if isinstance(node, ast.Name) else None


def _last_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None
