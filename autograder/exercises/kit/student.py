"""A student's namespace as a check sees it: names, the functions behind them, the hooks they
registered, and a safe way to run their code that turns its errors into plain messages."""

from __future__ import annotations

import ast
import contextlib
import inspect
import textwrap
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

import torch
from torch import nn

from autograder import parsing
from autograder.exercises.kit.diagnose import explain_error
from autograder.exercises.kit.evidence import Evidence
from autograder.feedback import CheckFailed, NotDoneYet
from autograder.i18n import _

_MISSING = object()
# Where nn.Module keeps each kind of hook (torch has no public way to list them).
HOOK_DICTS = {
    "forward_pre": "_forward_pre_hooks",
    "forward": "_forward_hooks",
    "backward": "_backward_hooks",
    "backward_pre": "_backward_pre_hooks",
}


class Student:
    """The names a student's notebook defined, and safe ways to run the code behind them."""

    def __init__(
        self, namespace: MutableMapping[str, Any], grade_id: str, evidence: Evidence | None = None
    ) -> None:
        self.namespace = namespace
        self.grade_id = grade_id
        self.evidence = evidence or Evidence(grade_id, False, None)

    @property
    def rng(self) -> torch.Generator:
        """The generator a check draws its random inputs from (seeded when the grader runs it)."""
        return self.evidence.rng

    def record(self, **values: Any) -> None:
        """Keep these values as evidence for the grader's own judgement (evidence.py)."""
        for name, value in values.items():
            self.evidence.record(name, value)

    def has(self, name: str) -> bool:
        return name in self.namespace

    def get(self, name: str, *, hint: str = "") -> Any:
        """The value of `name`, or NotDoneYet when the notebook has not defined it."""
        value = self.namespace.get(name, _MISSING)
        if value is _MISSING:
            raise NotDoneYet(
                _("`{name}` is not defined yet. {hint}").format(
                    name=name, hint=hint or _("Run the cells above this one, top to bottom.")
                )
            )
        return value

    def function(self, name: str, *, fallback: Callable[..., Any] | None = None) -> Callable:
        """The student's function `name`; `fallback` (say, the hook they registered under another
        name) when the notebook has no such name. NotDoneYet while it is still the stub."""
        fn = self.namespace.get(name, _MISSING)
        if fn is _MISSING and fallback is not None:
            fn = fallback
        if fn is _MISSING:
            raise NotDoneYet(
                _(
                    "`{name}` is not defined yet: write it in the answer cell above, then run it."
                ).format(name=name)
            )
        if not callable(fn):
            raise CheckFailed(
                _("`{name}` should be a function, but it is a {kind}.").format(
                    name=name, kind=type(fn).__name__
                )
            )
        if is_stub(fn):
            raise NotDoneYet(
                _(
                    "`{name}` is still the stub: replace `# YOUR CODE HERE` and the line under it "
                    "with your code, then run the cell."
                ).format(name=getattr(fn, "__name__", name))
            )
        return fn

    def hooks_on(self, module: nn.Module, kind: str) -> list[Callable[..., Any]]:
        """The hooks of `kind` (forward_pre, forward, backward, backward_pre) registered on
        `module`, in the order they run; found by what is registered, whatever their names."""
        return registered_hooks(module, kind)

    def tensor_hooks_on(self, tensor: Any) -> list[Callable[..., Any]]:
        """The hooks registered on `tensor` with `tensor.register_hook`, in the order they run;
        found by what is registered, whatever their names."""
        return registered_tensor_hooks(tensor)

    def call(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run student code (directly, or through a module that carries their hooks).

        A stub's NotImplementedError becomes NotDoneYet; any other error becomes a CheckFailed
        that names what was running and, where the error is a known pitfall, its cause.
        """
        try:
            return fn(*args, **kwargs)
        except CheckFailed:
            raise
        except NotImplementedError:
            raise NotDoneYet(
                _(
                    "{what} still raises NotImplementedError: replace the stub with your code."
                ).format(what=what)
            ) from None
        except Exception as error:
            raise CheckFailed(explain_error(what, error)) from None

    @contextlib.contextmanager
    def swapped_global(self, fns: list[Callable[..., Any]], name: str, value: Any) -> Iterator[Any]:
        """Temporarily bind `name` to `value` in the globals the student's functions see.

        Yields a getter for the name's value at the end (the code may rebind it), and restores
        the notebook's own binding afterwards, so a check leaves the notebook as it was.
        """
        spaces = [g for g in (_globals_of(fn) for fn in fns) if g is not None] or [self.namespace]
        spaces = list({id(space): space for space in spaces}.values())
        saved = [space.get(name, _MISSING) for space in spaces]
        for space in spaces:
            space[name] = value
        try:
            yield lambda: spaces[0].get(name)
        finally:
            for space, old in zip(spaces, saved, strict=True):
                if old is _MISSING:
                    space.pop(name, None)
                else:
                    space[name] = old


@contextlib.contextmanager
def checker_classes(s: Student, fn: Callable[..., object], model: nn.Module) -> Iterator[None]:
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


def registered_hooks(module: nn.Module, kind: str) -> list[Callable[..., Any]]:
    hooks = getattr(module, HOOK_DICTS[kind], None) or {}
    return list(hooks.values())


def registered_tensor_hooks(tensor: Any) -> list[Callable[..., Any]]:
    # Tensor.register_hook keeps them in `_backward_hooks` (torch has no public way to list them).
    hooks = getattr(tensor, "_backward_hooks", None) if isinstance(tensor, torch.Tensor) else None
    return list(hooks.values()) if hooks else []


def _globals_of(fn: Callable[..., Any]) -> dict[str, Any] | None:
    target = getattr(fn, "__func__", fn)
    return getattr(target, "__globals__", None)


def is_stub(fn: Callable[..., Any]) -> bool:
    """True while `fn` is still the stub the student notebook ships: a body of nothing but
    `...`, `pass`, a docstring or `raise NotImplementedError()`."""
    target = inspect.unwrap(getattr(fn, "__func__", fn))
    try:
        source = textwrap.dedent(inspect.getsource(target))
        tree = parsing.parse(source)
    except (OSError, TypeError, SyntaxError, IndentationError):
        return False
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    if not defs:
        return False
    return all(_does_nothing(statement) for statement in defs[0].body)


def assigns(fn: Callable[..., Any], name: str) -> bool:
    """True when `fn`'s source assigns to the plain name `name` (`output = ...`, `grad *= 2`):
    a hook that rebinds its argument only changes its own local name."""
    try:
        tree = parsing.parse(textwrap.dedent(inspect.getsource(inspect.unwrap(fn))))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return False
    targets = [
        target
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign | ast.AugAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
    ]
    return any(isinstance(t, ast.Name) and t.id == name for t in targets)


def _does_nothing(statement: ast.stmt) -> bool:
    if isinstance(statement, ast.Pass):
        return True
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
        return statement.value.value is Ellipsis or isinstance(statement.value.value, str)
    if isinstance(statement, ast.Raise) and statement.exc is not None:
        exc = statement.exc.func if isinstance(statement.exc, ast.Call) else statement.exc
        return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"
    return False


def positional_arity(fn: Callable[..., Any]) -> int | None:
    """How many positional arguments `fn` accepts (None when it takes *args or is opaque)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return None
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)


def require_arity(fn: Callable[..., Any], name: str, expected: str, count: int) -> None:
    """Fail with a signature message when `fn` cannot be called with `count` arguments."""
    arity = positional_arity(fn)
    if arity is not None and arity != count:
        raise CheckFailed(
            _(
                "`{name}` takes {arity} argument(s), but PyTorch calls it as `{expected}` "
                "({count} arguments), so the call raises TypeError. A hook's signature is fixed by "
                "the kind of hook: look it up in the table at the top of the notebook."
            ).format(name=name, arity=arity, expected=expected, count=count)
        )


def redefined(fn: Callable[..., Any]) -> bool:
    """True when `fn` is a function defined at the top level of a notebook whose name there now
    names another object: a hook that an earlier run of a cell registered, before the cell ran
    again (or another cell reused the name). Lambdas, methods and nested functions: False."""
    target = getattr(fn, "__func__", fn)
    name = getattr(target, "__name__", None)
    space = getattr(target, "__globals__", None)
    if not name or space is None or getattr(target, "__qualname__", name) != name:
        return False
    current = space.get(name, _MISSING)
    return current is not _MISSING and current is not target
