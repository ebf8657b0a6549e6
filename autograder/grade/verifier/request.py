"""What the verifier is asked for one notebook: its cells sorted by role, read from the notebook as
nbgrader restored it (locked and test cells from the gradebook, answer cells as submitted).

By the course's convention an exercise `<id>` (a registered exercise with an answer cell) owns the
locked cells named `<id>_...`: those above its answer cell are its set-up, those between the
answer and its test cells its run; its test cells are `<id>_test` (visible) and `<id>_hidden`.
Every other locked code cell is shared: the verifier runs it once, before any exercise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from autograder.exercises.kit import registry
from autograder.grade.verifier.protocol import ExerciseRun, Request


def _meta(cell: Any) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def _name(cell: Any) -> str:
    return _meta(cell).get("grade_id") or cell.get("id") or ""


def exercises_in(nb: Any) -> list[str]:
    """The registered exercises whose answer cell the notebook has, in notebook order."""
    return [
        _name(cell)
        for cell in nb.cells
        if cell.cell_type == "code"
        and _meta(cell).get("solution")
        and registry.notebook_of(_name(cell))
    ]


def build_request(
    nb: Any, seed: Callable[[str, bool], int], *, timeout: float = 60.0, language: str = "en"
) -> Request:
    """The verifier's request for `nb`; `seed(grade_id, hidden)` gives each check its seed."""
    owned = exercises_in(nb)
    runs = {gid: ExerciseRun(gid, answer="") for gid in owned}
    shared, answered = [], set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        meta, name = _meta(cell), _name(cell)
        if name in runs and meta.get("solution"):
            runs[name].answer = cell.source
            answered.add(name)
            continue
        if not meta.get("locked"):
            continue  # demos and the student's own cells never run in the verifier
        owner = next((gid for gid in owned if name.startswith(f"{gid}_")), None)
        if owner is None:
            if not meta.get("grade"):
                shared.append(cell.source)
            continue
        if name == f"{owner}_test":
            runs[owner].checks.append((False, seed(owner, False)))
        elif name == f"{owner}_hidden":
            runs[owner].checks.append((True, seed(owner, True)))
        elif meta.get("grade"):
            continue
        elif owner in answered:
            runs[owner].run.append(cell.source)
        else:
            runs[owner].setup.append(cell.source)
    exercises = [runs[gid] for gid in owned if runs[gid].checks]
    return Request(shared, exercises, timeout, language)
