"""Read scores back from an nbgrader gradebook, through nbgrader's own API."""

from __future__ import annotations

from dataclasses import dataclass

from nbgrader.api import Gradebook, MissingEntry


@dataclass(frozen=True)
class CellScore:
    cell: str  # the graded cell's grade id, e.g. forward_collect_hidden
    score: float
    max_score: float

    @property
    def exercise(self) -> str:
        """The task a test cell grades: its grade id without the _test / _hidden suffix."""
        base, _, suffix = self.cell.rpartition("_")
        return base if suffix in {"test", "hidden"} else self.cell


def scores(db_url: str, assignment: str) -> dict[str, list[CellScore]]:
    """Per student, the score of every graded cell of `assignment`'s notebook."""
    result: dict[str, list[CellScore]] = {}
    with Gradebook(db_url) as gradebook:
        for student in gradebook.students:
            try:
                notebook = gradebook.find_submission_notebook(assignment, assignment, student.id)
            except MissingEntry:
                continue
            result[student.id] = [
                CellScore(grade.name, float(grade.score or 0.0), float(grade.max_score))
                for grade in sorted(notebook.grades, key=lambda g: g.name)
            ]
    return result


def by_exercise(cells: list[CellScore]) -> dict[str, tuple[float, float]]:
    """Sum the cells of each exercise: {exercise: (score, max_score)}, in first-seen order."""
    totals: dict[str, tuple[float, float]] = {}
    for cell in cells:
        score, max_score = totals.get(cell.exercise, (0.0, 0.0))
        totals[cell.exercise] = (score + cell.score, max_score + cell.max_score)
    return totals
