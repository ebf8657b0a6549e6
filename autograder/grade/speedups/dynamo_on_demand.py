"""torch._dynamo (the engine behind torch.compile), imported when something uses it, not when an
eager-mode optimizer merely mentions it.

Every torch optimizer imports torch._dynamo on its first step, zero_grad or state_dict (about
0.8 s of CPU): `step` calls `torch._dynamo.graph_break()` and the others go through
`torch._dynamo.disable(fn)`, and outside a compiled region both come down to calling the
function as it is. Grading paid that import twice per run, in the kernel template (for the
notebooks that make an optimizer) and in the grading process (for the verifiers that do).

`install()` puts a stand-in for torch._dynamo in its place (sys.modules and `torch._dynamo`):
it answers those two calls as torch does in eager mode, and the first use of anything else
(`torch.compile`, `torch._dynamo.config`, an import of a torch._dynamo submodule) imports the
real module, puts it in place of the stand-in, and from then on every function the stand-in
was asked to disable is disabled by the real one, as if it had been loaded from the start.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import threading
import types
from collections.abc import Callable
from typing import Any

from autograder.grade.speedups.base import Missing

NAME = "torch._dynamo"

_lock = threading.RLock()


class _StandIn(types.ModuleType):
    """What `torch._dynamo` is until something uses more than eager optimizers do."""

    def __init__(self, file: str | None, path: list[str]) -> None:
        super().__init__(NAME, "torch._dynamo, imported when first used")
        # Set, so that module scans (inspect.getmodule, IPython's kernel) find them without
        # importing the real module; an import of a submodule goes through _RealFirst.
        self.__file__, self.__path__ = file, path
        self.__package__ = NAME
        # Functions `disable` was asked for (torch's own, which live as long as torch), each with
        # what it returned: rebound to the real thing on load.
        self._asked: list[tuple[Callable, Callable, bool, dict]] = []

    def graph_break(self, msg: str = "") -> None:
        """torch._dynamo.graph_break: a marker for the compiler; outside it, nothing."""

    def disable(self, fn: Callable | None = None, recursive: bool = True, **options: Any) -> Any:
        """torch._dynamo.disable: outside a compiled region, `fn` called as it is."""
        if fn is None:  # the decorator-factory form: nothing eager asks for it
            return load().disable(fn, recursive, **options)

        def called_as_is(*args: Any, **kwargs: Any) -> Any:
            if sys.modules.get(NAME) is self:
                return fn(*args, **kwargs)
            # Loaded since, and kept by someone load() could not rebind: disabled for real.
            return load().disable(fn, recursive, **options)(*args, **kwargs)

        with _lock:
            self._asked.append((fn, called_as_is, recursive, options))
        return called_as_is

    def __getattr__(self, name: str) -> Any:
        return getattr(load(), name)


class _RealFirst(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports of torch._dynamo's submodules while the stand-in is in place: the real package
    is loaded first (it imports most of them), then the submodule is the real one."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if not name.startswith(NAME + ".") or not isinstance(sys.modules.get(NAME), _StandIn):
            return None
        load()
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec: Any) -> types.ModuleType:
        module = importlib.import_module(spec.name)  # the real package is in place now
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        # Loaded already: only its own spec back, which the import system replaced by ours.
        module.__spec__ = module.__spec__.loader_state


_finder = _RealFirst()


def load() -> types.ModuleType:
    """The real torch._dynamo, put in place of the stand-in if that is still there."""
    import torch

    with _lock:
        module = sys.modules.get(NAME)
        if not isinstance(module, _StandIn):
            return importlib.import_module(NAME)
        del sys.modules[NAME]
        if torch.__dict__.get("_dynamo") is module:
            del torch._dynamo
        try:
            real = importlib.import_module(NAME)
        except BaseException:
            sys.modules[NAME] = torch._dynamo = module
            raise
        for fn, given, recursive, options in module._asked:
            # torch caches what disable returned on the function; what it would have cached.
            if getattr(fn, "__dynamo_disable", None) is given:
                fn.__dynamo_disable = real.disable(fn, recursive, **options)
        module._asked.clear()
        return real


def install() -> None:
    """Put the stand-in in place of torch._dynamo (imports torch); Missing if torch._dynamo is
    imported already (by something else than the stand-in)."""
    import torch

    with _lock:
        if isinstance(sys.modules.get(NAME), _StandIn):
            return
        if NAME in sys.modules:
            raise Missing(f"{NAME} is imported already (by torch itself, or before the template)")
        spec = importlib.util.find_spec(NAME)
        if spec is None or spec.submodule_search_locations is None:
            raise Missing(f"{NAME} cannot be found")
        for name in ("graph_break", "disable"):
            if name not in _source_of(spec):
                raise Missing(f"{NAME} has no {name}")
        stand_in = _StandIn(spec.origin, list(spec.submodule_search_locations))
        stand_in.__spec__ = spec
        if _finder not in sys.meta_path:
            sys.meta_path.insert(0, _finder)
        sys.modules[NAME] = torch._dynamo = stand_in


def _source_of(spec: Any) -> str:
    """torch._dynamo's __init__, as text: what it defines, without importing it."""
    with open(spec.origin, encoding="utf-8") as file:
        return file.read()
