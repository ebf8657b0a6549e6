"""Which exercises exist, found by convention: every module of a notebook's package under
autograder/exercises/ is the exercise of that grade id, except the helpers named in HELPERS.

Discovery reads file names only, so the grading process (which never imports torch) can ask
too; `exercise()` imports the module itself.

An exercise module defines:
  visible(s) -> str          the check under the answer cell (`check(id, globals())`)
  hidden(s) -> str           optional: the hidden check (`check(id, globals(), hidden=True)`)
  judge_visible(rng, evidence), judge_hidden(rng, evidence)
                             the grader's judgement of each check's evidence (kit/judge.py)
  HINTS                      the hints the hint button reveals, in order
  prepare(namespace)         optional: the state its answer cell needs that no set-up cell of
                             its own makes (an exercise that continues the one before it)
"""

from __future__ import annotations

import ast
import importlib
from functools import cache
from pathlib import Path
from types import ModuleType

from autograder import parsing

PACKAGE = Path(__file__).resolve().parents[1]
HELPERS = {"models", "common", "kit"}


@cache
def _index() -> dict[str, str]:
    """grade id -> notebook."""
    found = {}
    for folder in sorted(PACKAGE.iterdir()):
        if folder.name in HELPERS or not (folder / "__init__.py").is_file():
            continue
        for path in sorted(folder.glob("*.py")):
            name = path.stem
            if name == "__init__" or name in HELPERS or name.startswith("_"):
                continue
            if name in found:
                raise RuntimeError(f"two exercises named {name}: {found[name]} and {folder.name}")
            found[name] = folder.name
    return found


def notebooks() -> list[str]:
    """The notebooks that have exercises (their package names)."""
    return sorted(set(_index().values()))


def grade_ids(notebook: str | None = None) -> list[str]:
    """Every exercise's grade id, or the exercises of one notebook."""
    return sorted(g for g, nb in _index().items() if notebook is None or nb == notebook)


def notebook_of(grade_id: str) -> str | None:
    return _index().get(grade_id)


@cache
def defines(grade_id: str, name: str) -> bool:
    """Whether the exercise module defines `name` at its top level (read, not imported)."""
    path = PACKAGE / _index()[grade_id] / f"{grade_id}.py"
    tree = parsing.parse(path.read_text(encoding="utf-8"))
    return any(
        (isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name == name)
        or (
            isinstance(node, ast.Assign) and any(getattr(t, "id", "") == name for t in node.targets)
        )
        for node in tree.body
    )


def exercise(grade_id: str) -> ModuleType:
    """The exercise module of `grade_id` (KeyError when there is none)."""
    notebook = _index()[grade_id]
    return importlib.import_module(f"autograder.exercises.{notebook}.{grade_id}")
