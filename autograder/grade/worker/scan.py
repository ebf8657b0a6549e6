"""A trusted static scan of a submission's own cells for constructs that tamper with grading.

It runs in the grading worker on the cells' source (nothing is executed) and only reports:
verify.py decides what a finding costs. It reads a cell as the kernel runs it: transformed as
IPython transforms it (`%magic`, `!command` and `x?` become calls of the shell, and a one-line
cell that starts with a magic's name may be run as that magic), then parsed with Python's ast.
It looks for what honest answers to these notebooks never need: dynamic execution (code in
strings through exec/eval/compile, run_cell, magics other than a few that only show things,
shell commands, events.register, IPython's input and AST transformer lists, importlib), any use
of the grader's package beyond the notebook's own `check` and widgets, the interpreter's
modules and frames, changing attributes of torch, builtins, sys, IPython or the autograder
(`torch.allclose = ...`, `setattr(torch.Tensor, "__eq__", ...)`), set_custom_exc, ctypes,
early exits, forged evidence outputs, and classes that redefine comparison on lists, tuples,
dicts or tensors. A cell that cannot be read (it does not parse after IPython's transformations,
or is too large or deeply nested) is a finding too. Changing the notebook's own objects
(`module.bias = nn.Parameter(...)`, `Add.forward = ...`) is not reported.
"""

from __future__ import annotations

import ast
import functools
import keyword
import re
from dataclasses import dataclass

from autograder import parsing
from autograder.i18n import N_, Phrase

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
FORBIDDEN_IMPORTS = {
    "ctypes", "autograder", "nbgrader", "ipykernel", "jupyter_client", "gc", "importlib",
    "builtins", "__main__", "runpy", "code", "codeop", "marshal", "pickle", "_pickle", "dill",
    "cloudpickle",
}  # fmt: skip
FORBIDDEN_CALLS = {
    "set_custom_exc": N_("replaces IPython's error display (set_custom_exc)"),
    "_getframe": N_("walks the interpreter's frames (sys._getframe)"),
    "currentframe": N_("walks the interpreter's frames (inspect.currentframe)"),
    "get_referrers": N_("searches the interpreter's objects (gc.get_referrers)"),
    "get_objects": N_("searches the interpreter's objects (gc.get_objects)"),
    "_exit": N_("ends the kernel (os._exit)"),
    "exit": N_("ends the kernel early (exit / sys.exit)"),
    "quit": N_("ends the kernel early (quit)"),
    "clear_output": N_("clears cell outputs (clear_output)"),
    "__import__": N_("imports by name (__import__)"),
    "import_module": N_("imports by name at run time (importlib.import_module)"),
    "FunctionType": N_("makes a function from code objects (types.FunctionType)"),
    "CodeType": N_("makes code objects (types.CodeType)"),
    "setattr": None,  # reported only on a protected object, below
    "delattr": None,
}
STRING_CODE = {"exec", "eval", "compile", "breakpoint"}
# Attributes that reach a function's or a frame's namespace, code or the interpreter's types.
INTERNALS = {
    "__globals__", "__code__", "__closure__", "__subclasses__", "__builtins__", "__loader__",
    "__spec__", "f_globals", "f_locals", "f_builtins", "f_back", "f_code", "tb_frame",
    "gi_frame", "cr_frame", "ag_frame",
}  # fmt: skip
# What the shell object offers for running code or changing how cells are read and run.
SHELL_EXECUTION = {
    "run_cell", "run_cell_async", "run_code", "run_ast_nodes", "run_line_magic",
    "run_cell_magic", "magic", "ex", "ev", "safe_execfile", "safe_run_module", "system",
    "system_raw", "system_piped", "getoutput", "events", "input_transformers_cleanup",
    "input_transformers_post", "input_transformer_manager", "ast_transformers",
    "register_magic_function", "magics_manager", "prefilter_manager", "user_ns",
    "user_global_ns", "push", "set_custom_exc", "set_hook", "displayhook", "display_pub",
    "kernel", "transform_cell",
}  # fmt: skip
# Magics that only show things (`x?`, %who, %history, %matplotlib), and the two whose argument is
# code, which is scanned like a cell: %time and %timeit (and %%capture for a cell magic).
SAFE_MAGICS = {
    "pinfo", "pinfo2", "pdef", "pdoc", "matplotlib", "who", "whos", "who_ls", "history", "hist",
    "pwd", "lsmagic", "quickref", "magic",
}  # fmt: skip
CODE_MAGICS = {"time", "timeit", "capture"}
# Names the notebooks' locked cells bind for the test cells; a student cell must not rebind them.
REBOUND = {"check", "torch", "nn", "F", "get_ipython", "autograder", "print", "globals"}
COMPARISON_DUNDERS = {"__eq__", "__ne__", "__bool__", "__len__", "__torch_function__"}
CONTAINER_BASES = {"list", "tuple", "dict", "Tensor", "UserList", "Parameter"}
MAX_SOURCE = 200_000  # characters: no answer is this long; more is not scanned, but flagged
PACKAGE = re.compile(r"\bautograder\b")

EXITS = ("ends the kernel", "raises SystemExit", "raises KeyboardInterrupt")
TAMPERS, EXIT, UNPARSABLE = "tampers", "exit", "unparsable"


@dataclass(frozen=True)
class Finding:
    cell: str  # grade id or cell id
    line: int
    what: str
    # TAMPERS: may change what the kernel reports; EXIT: an early exit, which can only make
    # cells fail or not run (the grader sees that from outside); UNPARSABLE: the cell does not
    # parse, so it cannot have run either, which verify.py checks against what the kernel did.
    kind: str = TAMPERS

    @property
    def tampers(self) -> bool:
        return self.kind == TAMPERS

    def __str__(self) -> str:
        return f"cell {self.cell}, line {self.line}: {self.what}"


def scan_source(source: str, cell: str, protected: set[str] | None = None) -> list[Finding]:
    """Findings in one cell's source, read as IPython runs it."""
    if protected is None:
        # The findings depend on the source only: most cells a worker scans (the notebook's
        # unlocked demo cells, answers left blank) recur in submission after submission.
        return [Finding(cell, *found) for found in _findings_in(source)]
    return _scan_source(source, cell, protected)


@functools.lru_cache(maxsize=4096)
def _findings_in(source: str) -> tuple[tuple[int, str, str], ...]:
    found = _scan_source(source, "", PROTECTED_ROOTS)
    return tuple((f.line, f.what, f.kind) for f in found)


def _scan_source(source: str, cell: str, protected: set[str]) -> list[Finding]:
    if len(source) > MAX_SOURCE:
        return [
            Finding(
                cell,
                0,
                Phrase(N_("is longer than {size} characters, too long to scan"), size=MAX_SOURCE),
            )
        ]
    found: list[Finding] = []
    try:
        for code in readings(source):
            for finding in _scan_code(code, cell, protected):
                if finding not in found:
                    found.append(finding)
    except (RecursionError, MemoryError):  # nesting no answer needs, maybe to hide from the scan
        return [Finding(cell, 0, N_("code too deeply nested to scan"))]
    return found


def _scan_code(code: str, cell: str, protected: set[str]) -> list[Finding]:
    try:
        tree = parsing.parse(code)
    except SyntaxError as error:
        what = Phrase(
            N_("does not parse as Python ({error}), so the grader cannot read it"), error=error.msg
        )
        return [Finding(cell, error.lineno or 0, what, UNPARSABLE)]
    except ValueError:  # a null byte: Python cannot compile it either
        return [Finding(cell, 0, N_("holds a null byte, so the grader cannot read it"), UNPARSABLE)]
    return _scan_tree(tree, cell, set(protected))


def readings(source: str) -> list[str]:
    """The Python code(s) IPython may run for `source`: its cell transformed as IPython does,
    and, for a one-line cell that starts with a magic's name, that line run as the magic (with
    automagic on, IPython's default, it does unless the name is defined in the notebook)."""
    from IPython.core.splitinput import LineInfo

    code = _transform(source)
    line = source.strip()
    if not line or "\n" in line:
        return [code]
    info = LineInfo(line)  # how IPython's prefilter splits a line: escape, name, the rest
    if info.esc or info.ifun not in magic_names() or keyword.iskeyword(info.ifun):
        return [code]
    if info.the_rest.startswith("=") and not info.the_rest.startswith("=="):
        return [code]  # an assignment: never a magic
    return [code, _transform(f"%{info.ifun} {info.the_rest}")]  # what IPython's handler runs


def _transform(source: str) -> str:
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        return TransformerManager().transform_cell(source)
    except (RecursionError, MemoryError):
        raise
    except Exception:  # IPython cannot transform it: the kernel cannot run it either
        return source


@functools.cache
def magic_names() -> frozenset[str]:
    """The line magics and aliases of a stock IPython kernel (its automagic names)."""
    import IPython.core.magics as magics
    from IPython.core.alias import default_aliases

    names = {"autosave", "clear", "connect_info", "edit", "less", "man", "more", "qtconsole"}
    names.update(alias for alias, _command in default_aliases())
    for name in dir(magics):
        table = getattr(getattr(magics, name), "magics", None)
        if isinstance(table, dict):
            names.update(table.get("line", {}))
    return frozenset(names)


def _scan_tree(tree: ast.AST, cell: str, protected: set[str]) -> list[Finding]:
    _aliases(tree, protected)
    sys_names = {"sys"} | {
        alias.asname
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
        if alias.name == "sys" and alias.asname
    }
    found: list[Finding] = []
    allowed: set[int] = set()  # ids of nodes that are part of an allowed construct

    def add(node: ast.AST, what: str) -> None:
        kind = EXIT if what.startswith(EXITS) else TAMPERS
        finding = Finding(cell, getattr(node, "lineno", 0), what, kind)
        if finding not in found:
            found.append(finding)

    for node in ast.walk(tree):
        if id(node) in allowed:
            continue
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
            targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
            for target in targets:
                _check_target(target, protected, lambda what, n=node: add(n, what))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            if isinstance(node, ast.ImportFrom) and _imports_course_api(node):
                continue  # what every test cell and every hint cell does
            _check_import(node, lambda what, n=node: add(n, what))
        elif isinstance(node, ast.Call) and _is_magic(node):
            found += [f for f in _magic_findings(node, cell, protected) if f not in found]
            allowed.update(id(child) for child in ast.walk(node))
        elif isinstance(node, ast.Call):
            _check_call(node, protected, lambda what, n=node: add(n, what))
        elif isinstance(node, ast.Name):
            _check_name(node, lambda what, n=node: add(n, what))
        elif isinstance(node, ast.Attribute):
            _check_attribute(node, protected, sys_names, lambda what, n=node: add(n, what))
        elif isinstance(node, ast.Raise) and _name_of(node.exc) in (
            "SystemExit",
            "KeyboardInterrupt",
        ):
            add(node, Phrase(N_("raises {name}"), name=_name_of(node.exc)))
        elif isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name in REBOUND:
            add(node, Phrase(N_("rebinds {name}"), name=node.name))
        elif isinstance(node, ast.ClassDef):
            _check_class(node, lambda what, n=node: add(n, what))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if "vnd.hooklab" in node.value:
                add(node, N_("writes the grader's private evidence format"))
            elif PACKAGE.search(node.value):
                add(node, N_("names the grader's package in a string ('autograder')"))
    return found


def _is_magic(node: ast.Call) -> bool:
    """`get_ipython().run_line_magic('name', 'arg')` or run_cell_magic, with constant strings:
    what IPython makes of `%name arg` and `%%name`."""
    func = node.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr in ("run_line_magic", "run_cell_magic")
        and isinstance(func.value, ast.Call)
        and _name_of(func.value) == "get_ipython"
        and not func.value.args
        and len(node.args) in (2, 3)
        and not node.keywords
        and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args)
    )


def _magic_findings(node: ast.Call, cell: str, protected: set[str]) -> list[Finding]:
    name, line = node.args[0].value, node.args[1].value
    body = node.args[2].value if len(node.args) == 3 else None
    at = getattr(node, "lineno", 0)
    if name in SAFE_MAGICS and body is None and not PACKAGE.search(line):
        return []
    if name not in CODE_MAGICS:
        kind = f"%%{name}" if body is not None else f"%{name}"
        return [
            Finding(
                cell,
                at,
                Phrase(N_("runs the magic {magic}, which the grader cannot check"), magic=kind),
            )
        ]
    # %time / %timeit / %%capture: the code they run is scanned like a cell of its own.
    code = body if body is not None else _strip_options(line)
    inner = _scan_source(code, cell, protected)
    return [
        Finding(cell, at, Phrase(N_("in %{magic}: {what}"), magic=name, what=f.what), f.kind)
        for f in inner
    ]


def _strip_options(line: str) -> str:
    """The code of `%timeit -n 10 -r 3 f(x)`: what follows its options."""
    words = line.split()
    while words and words[0].startswith("-"):
        option = words.pop(0)
        if option in ("-n", "-r", "-p", "-o") and words and option != "-o":
            words.pop(0)
    return " ".join(words)


def _imports_course_api(node: ast.ImportFrom) -> bool:
    """`from autograder import check`, or the widgets of the notebooks' hint and progress cells
    (they show things; nothing they do reaches a verdict)."""
    names = [(a.name, a.asname) for a in node.names]
    if node.module == "autograder" and not node.level:
        return names == [("check", None)]
    widgets = {"show_hints", "show_progress", "feature_map_explorer"}
    return (
        node.module == "autograder.widgets"
        and not node.level
        and all(name in widgets and alias is None for name, alias in names)
    )


def _check_import(node: ast.Import | ast.ImportFrom, add) -> None:
    if isinstance(node, ast.ImportFrom):
        names = [node.module or ""]
        if node.module == "IPython" and any(a.name == "get_ipython" for a in node.names):
            add(N_("uses the IPython shell (imports get_ipython)"))
        if node.module == "types" and any(a.name in FORBIDDEN_CALLS for a in node.names):
            add(N_("imports types' code constructors"))
        if node.module == "sys" and any(a.name == "modules" for a in node.names):
            add(N_("reaches the interpreter's modules (from sys import modules)"))
    else:
        names = [alias.name for alias in node.names]
    for name in names:
        if name.split(".")[0] in FORBIDDEN_IMPORTS:
            add(Phrase(N_("imports {name}"), name=name))


def _check_name(node: ast.Name, add) -> None:
    if node.id == "breakpoint":
        add(N_("starts the debugger (breakpoint)"))
    elif node.id in STRING_CODE:
        add(Phrase(N_("runs code from a string ({name})"), name=node.id))
    elif node.id == "__builtins__":
        add(N_("reaches the interpreter's builtins (__builtins__)"))
    elif node.id == "get_ipython":
        add(N_("uses the IPython shell (get_ipython)"))


def _check_attribute(node: ast.Attribute, protected: set[str], sys_names: set[str], add) -> None:
    if node.attr in INTERNALS:
        add(Phrase(N_("reaches into the interpreter's internals ({name})"), name=node.attr))
    elif node.attr == "modules" and isinstance(node.value, ast.Name) and node.value.id in sys_names:
        add(Phrase(N_("reaches the interpreter's modules ({code})"), code=ast.unparse(node)[:60]))
    elif node.attr in ("system", "system_raw", "system_piped", "getoutput"):
        if _is_shell(node.value, protected):
            add(
                Phrase(
                    N_("runs a shell command (get_ipython().{name}, or !command)"), name=node.attr
                )
            )
    elif node.attr in SHELL_EXECUTION and _is_shell(node.value, protected):
        add(Phrase(N_("runs code through the IPython shell ({name})"), name=node.attr))


def _is_shell(node: ast.AST, protected: set[str]) -> bool:
    """`get_ipython()` or a name bound to it; any object reached from IPython."""
    if isinstance(node, ast.Call):
        return _last_name(node.func) == "get_ipython"
    return isinstance(node, ast.Name | ast.Attribute) and _root(node) in protected


def _check_class(node: ast.ClassDef, add) -> None:
    bases = {_last_name(base) for base in node.bases}
    overrides = {
        item.name
        for item in node.body
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.Assign)
        and getattr(item, "name", None) in COMPARISON_DUNDERS
    }
    if overrides and (bases & CONTAINER_BASES or "__eq__" in overrides):
        names = ", ".join(sorted(overrides))
        add(
            Phrase(
                N_("class {name} redefines {methods} (results that compare equal)"),
                name=node.name,
                methods=names,
            )
        )


def _aliases(tree: ast.AST, protected: set[str]) -> None:
    """Add the names a cell binds to protected modules (`import torch as t`, `from torch import
    nn`, `t = torch`, `shell = get_ipython()`) to `protected`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in PROTECTED_MODULES:
                    protected.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.split(".")[0] in PROTECTED_MODULES:
                protected.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.Assign) and (
            _is_reference_to(node.value, protected)
            or (isinstance(node.value, ast.Call) and _last_name(node.value.func) == "get_ipython")
        ):
            protected.update(t.id for t in node.targets if isinstance(t, ast.Name))


def _is_reference_to(value: ast.AST, protected: set[str]) -> bool:
    """`torch` or `torch.nn`, not `torch.rand(3)` (a call's result is the student's own)."""
    return isinstance(value, ast.Name | ast.Attribute) and _root(value) in protected


def _check_target(target: ast.AST, protected: set[str], add) -> None:
    if isinstance(target, ast.Tuple | ast.List):
        for element in target.elts:
            _check_target(element, protected, add)
    elif isinstance(target, ast.Starred):
        _check_target(target.value, protected, add)
    elif isinstance(target, ast.Name) and target.id in REBOUND:
        add(Phrase(N_("rebinds {name}"), name=target.id))
    elif (
        (isinstance(target, ast.Attribute | ast.Subscript) and _root(target) in protected)
        or (isinstance(target, ast.Subscript) and _root(target) in ("globals", "vars", "locals"))
        or (isinstance(target, ast.Subscript) and ".__dict__" in ast.unparse(target.value))
    ):
        add(Phrase(N_("changes {code}"), code=ast.unparse(target)[:60]))


def _check_call(node: ast.Call, protected: set[str], add) -> None:
    name = _last_name(node.func)
    if name in ("setattr", "delattr") and node.args and _root(node.args[0]) in protected:
        add(Phrase(N_("calls {name} on {code}"), name=name, code=ast.unparse(node.args[0])[:60]))
    elif name == "getattr" and len(node.args) > 1 and isinstance(node.args[1], ast.Constant):
        attribute = node.args[1].value
        if attribute in INTERNALS | STRING_CODE | SHELL_EXECUTION | {"__import__", "__dict__"}:
            add(Phrase(N_("reaches {name} by name (getattr)"), name=attribute))
    elif name in ("stack", "trace") and _root(node.func) == "inspect":
        add(N_("walks the interpreter's frames (inspect.stack)"))
    elif FORBIDDEN_CALLS.get(name):
        if name in ("exit", "quit", "_exit") and not _is_exit_call(node):
            return
        add(FORBIDDEN_CALLS[name])
    elif name in ("update", "__setitem__", "pop", "clear", "setdefault"):
        text = ast.unparse(node.func)
        if "sys.modules" in text or "globals()" in text or "__dict__" in text:
            add(Phrase(N_("changes {code}"), code=text[:60]))


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
