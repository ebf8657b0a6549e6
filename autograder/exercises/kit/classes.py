"""The notebook's classes read as the checker's own while student code runs on a checker's model.

A check builds its models from its own copies of the notebook's classes (an exercise package's
models.py), so that nothing a student did to a class changes what the check measures. A
student's `isinstance(module, CastedLinear)` names the notebook's class, though, and the
checker's modules are not instances of it. While the student's function runs, every global of
its module that names a class of the model's (found by class name), or a tuple holding some
(`KINDS = (nn.Linear, CastedLinear)`), points at the checker's class instead; it is restored
afterwards.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from torch import nn

from autograder.exercises.kit.student import Student


@contextlib.contextmanager
def checker_classes(s: Student, fn: Callable[..., object], model: nn.Module) -> Iterator[None]:
    """While the block runs, the globals `fn` sees name `model`'s classes for the notebook's."""
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
