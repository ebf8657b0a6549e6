"""rfc3987_syntax (jsonschema's check of the "iri" string formats), loaded when a format check
first needs it, not whenever jsonschema is imported.

jsonschema imports rfc3987_syntax with itself when it is installed (jupyter's packages install
it, through jsonschema[format-nongpl]), and that module builds its lark parser on import: about
0.7 s of CPU in every process that imports nbformat or nbgrader, such as each `hooklab` command.
Nothing here checks those formats (nbformat's schemas are draft 4, which has no "iri").

`install()` puts a stand-in in sys.modules: its `is_valid_syntax` (what jsonschema imports)
loads the real module on its first call and asks it, and so does any other attribute; the real
module then takes the stand-in's place. Results are the real module's
(tests/grade/speedups/test_iri_check_on_demand.py compares them in fresh interpreters).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from typing import Any

from autograder.grade.speedups.base import Missing

NAME = "rfc3987_syntax"

_lock = threading.Lock()


class _StandIn(types.ModuleType):
    """What `rfc3987_syntax` is until something uses it."""

    def __getattr__(self, name: str) -> Any:
        return getattr(_real(), name)


def _real() -> types.ModuleType:
    with _lock:
        module = sys.modules.get(NAME)
        if module is None or isinstance(module, _StandIn):
            sys.modules.pop(NAME, None)
            module = importlib.import_module(NAME)
        return module


def is_valid_syntax(term: str, value: str) -> bool:
    return _real().is_valid_syntax(term, value)


def install() -> None:
    """Put the stand-in in place: before jsonschema is imported (it imports rfc3987_syntax)."""
    for imported in ("jsonschema", NAME):
        if imported in sys.modules:
            raise Missing(f"{imported} is imported already (install the command's speed-ups first)")
    spec = importlib.util.find_spec(NAME)
    if spec is None:
        raise Missing(f"{NAME} cannot be found")
    stand_in = _StandIn(NAME, "rfc3987_syntax, loaded when first used")
    # Set, so that scans of sys.modules (inspect.getmodule) do not load the real module, and so
    # that an import of a submodule finds it.
    stand_in.__file__ = spec.origin
    stand_in.__path__ = list(spec.submodule_search_locations or [])
    stand_in.__spec__ = spec
    stand_in.is_valid_syntax = is_valid_syntax
    sys.modules[NAME] = stand_in
