"""The folder of named submissions and its golden file of expected scores per graded cell."""

from __future__ import annotations

import re
import shutil
import tomllib
from pathlib import Path

from autograder import course, notebooks

ROOT = Path(__file__).resolve().parents[1]
SUBMISSIONS = ROOT / "tests" / "submissions"


def cases() -> list[tuple[str, str]]:
    """Every (assignment, case) with an answer file in tests/submissions/<assignment>/."""
    return sorted((p.parent.name, p.stem) for p in SUBMISSIONS.glob("*/*.py"))


def answers(assignment: str, case: str) -> str:
    return notebooks.read_answers(SUBMISSIONS / assignment / f"{case}.py")


def graded_points(assignment: str) -> dict[str, float]:
    """{graded cell id: points}, read from the solution notebook's nbgrader metadata."""
    nb = notebooks.read(ROOT / "solutions" / assignment / f"{assignment}.ipynb")
    return {
        cell.metadata["nbgrader"]["grade_id"]: float(cell.metadata["nbgrader"]["points"])
        for cell in nb.cells
        if cell.metadata.get("nbgrader", {}).get("grade")
    }


def exercise_of(cell: str) -> str:
    """The grade id of the answer cell a graded cell checks (`x_test`, `x_hidden` -> `x`)."""
    return re.sub(r"_(test|hidden)$", "", cell)


def own_sections(assignment: str, case: str) -> set[str]:
    """The grade ids the case's answer file writes itself (not those it inherits)."""
    path = SUBMISSIONS / assignment / f"{case}.py"
    return set(notebooks.parse_answers(path.read_text(encoding="utf-8")))


def expected_scores(assignment: str, case: str) -> dict[str, float]:
    """The golden score of every graded cell of the case. A case with `based_on = "<case>"`
    has that case's score on every cell of an exercise its answer file does not write; the
    cells it lists override; any other cell is 0."""
    listed = dict(golden_keys()[f"{assignment}/{case}"])
    scores = dict.fromkeys(graded_points(assignment), 0.0)
    base = listed.pop("based_on", None)
    if base is not None:
        own = own_sections(assignment, case)
        inherited = expected_scores(assignment, base)
        scores.update({c: s for c, s in inherited.items() if exercise_of(c) not in own})
    scores.update({cell: float(score) for cell, score in listed.items()})
    return scores


def golden_keys() -> dict[str, dict]:
    return tomllib.loads((SUBMISSIONS / "expected.toml").read_text(encoding="utf-8"))


def make_course(
    root: Path, assignments: list[str] | None = None, *, db_url: str | None = None, config: str = ""
) -> Path:
    """A throwaway course in `root`: the repo's nbgrader_config.py (plus `config` lines), the
    solutions of `assignments` (default: all), student notebooks built by generate_assignment."""
    text = (ROOT / "nbgrader_config.py").read_text(encoding="utf-8")
    (root / "nbgrader_config.py").write_text(f"{text}\n{config}\n", encoding="utf-8")
    for assignment in assignments or course.assignments():
        shutil.copytree(ROOT / "solutions" / assignment, root / "solutions" / assignment)
    course.build(root=root, db_url=db_url)
    return root


def submit_cases(root: Path, assignment: str, names: list[str]) -> None:
    """Submit named submissions of `assignment`, each as the student of the same name."""
    for name in names:
        nb = course.answered_notebook(answers(assignment, name), assignment, root)
        course.submit(nb, name, assignment, root)


def restored_notebook(assignment: str, case: str):
    """The student notebook filled with the case's answers, its locked and test cells restored
    from the solution notebook, as nbgrader's OverwriteCells leaves it before execution."""
    solution = notebooks.read(ROOT / "solutions" / assignment / f"{assignment}.ipynb")
    trusted = {
        cell.id: cell.source
        for cell in solution.cells
        if cell.metadata.get("nbgrader", {}).get("locked")
        or cell.metadata.get("nbgrader", {}).get("grade")
    }
    nb = course.answered_notebook(answers(assignment, case), assignment, ROOT)
    for cell in nb.cells:
        if cell.get("id") in trusted:
            cell.source = trusted[cell.id]
    return nb
