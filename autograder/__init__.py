"""Hooklab's autograder: ground-truth checks for the hook and apply notebooks, and their CLI."""

import importlib

__all__ = ["CheckFailed", "NotDoneYet", "check"]

# Imported on first use, not with the package: the checks import torch (seconds), and processes
# that only use the engine (the kernel template, before it preloads) should not wait for it.
_PROVIDERS = {
    "check": "autograder.exercises.kit.notebook",
    "CheckFailed": "autograder.feedback",
    "NotDoneYet": "autograder.feedback",
}


def __getattr__(name: str) -> object:
    if name not in _PROVIDERS:
        raise AttributeError(f"module 'autograder' has no attribute {name!r}")
    value = getattr(importlib.import_module(_PROVIDERS[name]), name)
    globals()[name] = value
    return value
