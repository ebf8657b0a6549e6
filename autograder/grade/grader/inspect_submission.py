"""Say in plain words what is wrong with a submitted notebook file when nbgrader fails on it."""

from __future__ import annotations

import json
from pathlib import Path

SUPPORTED_NBFORMAT = 4


def submission_problems(folder: Path, assignment: str) -> list[str]:
    """What is wrong with the notebooks handed in under `folder` (submitted/<s>/<a>/), if
    anything: one plain sentence per problem, empty when the files look gradable."""
    expected = f"{assignment}.ipynb"
    found = sorted(folder.glob("*.ipynb"))
    if not found:
        return [f"no notebook was handed in (expected {expected})"]
    problems = [notebook_problem(path) for path in found]
    names = [path.name for path in found]
    if expected not in names:
        problems.insert(0, f"the notebook is named {', '.join(names)}, not {expected}")
    return [p for p in problems if p]


def notebook_problem(path: Path) -> str | None:
    """What makes `path` not a gradable notebook, in one sentence, or None when nothing does."""
    name = path.name
    data = path.read_bytes()
    if not data.strip():
        return f"{name} is empty"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        byte = data[error.start]
        return f"{name} is not UTF-8 text (byte 0x{byte:02x} at position {error.start})"
    try:
        nb = json.loads(text)
    except json.JSONDecodeError as error:
        return f"{name} is not valid JSON (line {error.lineno}, column {error.colno})"
    if not isinstance(nb, dict) or "nbformat" not in nb:
        return f"{name} is JSON but not a notebook (no nbformat version)"
    version = nb["nbformat"]
    if version != SUPPORTED_NBFORMAT:
        return f"{name} is nbformat version {version}; the grader needs version 4"
    cells = nb.get("cells")
    if not isinstance(cells, list):
        return f"{name} has no list of cells"
    if not any(isinstance(c, dict) and "nbgrader" in c.get("metadata", {}) for c in cells):
        return (
            f"{name} has no nbgrader cell metadata (it was not made from the released notebook,"
            " so no answer or test cell can be found)"
        )
    return None
