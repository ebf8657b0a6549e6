"""Access to a student's notebook namespace: look up names, call student code, report its errors."""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

import torch

from autograder.checks.evidence import Evidence
from autograder.feedback import CheckFailed, NotDoneYet

_MISSING = object()


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
        """The generator a check draws its random inputs from (seeded in graded hidden cells)."""
        return self.evidence.rng

    def record(self, **values: Any) -> None:
        """Keep these values as evidence for the trusted verifier (see evidence.py)."""
        for name, value in values.items():
            self.evidence.record(name, value)

    def get(self, name: str, *, hint: str = "") -> Any:
        """The value of `name`, or NotDoneYet when the notebook has not defined it."""
        value = self.namespace.get(name, _MISSING)
        if value is _MISSING:
            raise NotDoneYet(
                f"`{name}` is not defined. {hint or 'Run the cells above this one, top to bottom.'}"
            )
        return value

    def function(self, name: str) -> Callable[..., Any]:
        fn = self.get(name, hint=f"Write the function `{name}` in the solution cell above.")
        if not callable(fn):
            raise CheckFailed(f"`{name}` should be a function, but it is {type(fn).__name__}.")
        from autograder.exercises.kit.student import is_stub  # the stub that does nothing

        if is_stub(fn):
            raise NotDoneYet(f"`{name}` is still the stub: replace it with your code.")
        return fn

    def call(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run student code (directly, or indirectly through a module with their hooks).

        A stub's NotImplementedError becomes NotDoneYet; any other error becomes a one-line
        CheckFailed naming what was running.
        """
        try:
            return fn(*args, **kwargs)
        except CheckFailed:
            raise
        except NotImplementedError:
            raise NotDoneYet(
                f"{what} still raises NotImplementedError: replace the stub "
                "`raise NotImplementedError()` with your code."
            ) from None
        except Exception as error:
            raise CheckFailed(f"{what} raised {type(error).__name__}: {error}") from None

    @contextlib.contextmanager
    def swapped_global(self, fns: list[Callable[..., Any]], name: str, value: Any) -> Iterator[Any]:
        """Temporarily bind `name` to `value` in the globals the student's functions see.

        Yields a getter for the name's value at the end (the code may rebind it), and restores
        the notebook's own binding afterwards, so a hidden check leaves the notebook as it was.
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


def _globals_of(fn: Callable[..., Any]) -> dict[str, Any] | None:
    target = getattr(fn, "__func__", fn)
    return getattr(target, "__globals__", None)


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
            f"`{name}` takes {arity} argument(s), but PyTorch calls it as {expected} "
            f"({count} arguments), so the call raises TypeError. Change the signature to "
            f"`def {name}{expected[expected.index('(') :]}`."
        )
