"""What every speed-up module shares: the error that says an internal it replaces is not where
it expects it, and the check that raises it before anything is patched."""

from __future__ import annotations

from typing import Any


class Missing(Exception):
    """An internal a speed-up replaces is missing: the speed-up is not installed."""


def need(owner: Any, *names: str) -> None:
    """Raise Missing unless `owner` (a module or class) has every attribute in `names`."""
    absent = [name for name in names if not hasattr(owner, name)]
    if absent:
        where = getattr(owner, "__qualname__", None) or getattr(owner, "__name__", repr(owner))
        raise Missing(f"{where} has no {', '.join(absent)}")
