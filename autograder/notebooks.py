"""Notebook plumbing: cells with nbgrader metadata, canonical JSON, and answer files -> notebooks.

Notebooks are written through nbformat with stable cell ids and no outputs, so a change to one
reads as a plain diff. An *answer file* is a small `.py` file whose `# %% <grade_id>` sections
replace the solution cells of that grade id; submissions and sample students are kept this way.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import nbformat
from nbformat import NotebookNode

SCHEMA_VERSION = 3
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
_SECTION = re.compile(r"^# %% (?P<grade_id>[A-Za-z0-9_]+)\s*$", re.MULTILINE)


def _meta(cell_id: str, *, grade: bool, solution: bool, locked: bool, points: float | None):
    meta = {
        "grade": grade,
        "grade_id": cell_id,
        "locked": locked,
        "schema_version": SCHEMA_VERSION,
        "solution": solution,
        "task": False,
    }
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def _text(source: str) -> str:
    return textwrap.dedent(source).strip("\n")


def md(cell_id: str, text: str) -> NotebookNode:
    """A read-only explanation cell."""
    cell = nbformat.v4.new_markdown_cell(_text(text), id=cell_id)
    cell.metadata = _meta(cell_id, grade=False, solution=False, locked=True, points=None)
    return cell


def locked(cell_id: str, source: str) -> NotebookNode:
    """A read-only code cell (set-up, model definitions, the run that a test reads)."""
    cell = nbformat.v4.new_code_cell(_text(source), id=cell_id)
    cell.metadata = _meta(cell_id, grade=False, solution=False, locked=True, points=None)
    return cell


def demo(cell_id: str, source: str) -> NotebookNode:
    """A runnable demo the student may edit freely; it is not graded."""
    return nbformat.v4.new_code_cell(_text(source), id=cell_id)


def solution(grade_id: str, source: str) -> NotebookNode:
    """The student's answer cell; `### BEGIN/END SOLUTION` parts become stubs for students."""
    cell = nbformat.v4.new_code_cell(_text(source), id=grade_id)
    cell.metadata = _meta(grade_id, grade=False, solution=True, locked=False, points=None)
    return cell


def tests(grade_id: str, source: str, points: float) -> NotebookNode:
    """A graded, read-only test cell; `### BEGIN/END HIDDEN TESTS` parts stay hidden."""
    cell = nbformat.v4.new_code_cell(_text(source), id=grade_id)
    cell.metadata = _meta(grade_id, grade=True, solution=False, locked=True, points=points)
    return cell


def new_notebook(cells: list[NotebookNode]) -> NotebookNode:
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata = {
        "kernelspec": dict(KERNELSPEC),
        "language_info": {"name": "python"},
    }
    return nb


def canonical(nb: NotebookNode) -> str:
    """The exact JSON text a notebook is stored as: no outputs, no execution counts."""
    nb = nbformat.from_dict(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        cell.metadata.pop("execution", None)
        cell.metadata.pop("trusted", None)
    return nbformat.writes(nb) + "\n"


def write(nb: NotebookNode, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(canonical(nb), encoding="utf-8")


def read(path: Path) -> NotebookNode:
    return nbformat.read(path, as_version=4)


def grade_id(cell: NotebookNode) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


_BASED_ON = re.compile(r"^# based on: (?P<name>[A-Za-z0-9_./]+)\s*$", re.MULTILINE)


def read_answers(path: Path) -> str:
    """An answer file's text. A file with a `# based on: <name>` line also gets every section of
    `<name>.py` (a path relative to its folder) that it does not write itself: a mistake case then
    holds only the exercise it gets wrong, and the other exercises stay right."""
    text = path.read_text(encoding="utf-8")
    based_on = _BASED_ON.search(text)
    if based_on is None:
        return text
    base = read_answers(path.parent / f"{based_on['name']}.py")
    own = parse_answers(text)
    kept = {k: v for k, v in parse_answers(base).items() if k not in own}
    return text + "".join(f"\n# %% {grade_id}\n{source}\n" for grade_id, source in kept.items())


def parse_answers(text: str) -> dict[str, str]:
    """Split an answer file into {grade_id: source} at its `# %% <grade_id>` lines."""
    parts = _SECTION.split(text)
    answers = {}
    for index in range(1, len(parts), 2):
        answers[parts[index]] = parts[index + 1].strip("\n")
    return answers


def fill_answers(student_nb: NotebookNode, answers: dict[str, str]) -> NotebookNode:
    """A copy of the student notebook with the given solution cells replaced by the answers."""
    nb = nbformat.from_dict(student_nb)
    solution_ids = {grade_id(c) for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")}
    unknown = set(answers) - solution_ids
    if unknown:
        raise ValueError(f"answers for unknown solution cells: {sorted(unknown)}")
    for cell in nb.cells:
        if grade_id(cell) in answers:
            cell.source = answers[grade_id(cell)]
    return nb
