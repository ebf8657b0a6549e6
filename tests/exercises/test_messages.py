"""What the checks tell a student about the named mistakes: never the solution's code on a first
failure, and one verdict — the visible and the hidden check of an exercise agree, except where
the hidden check exists to catch what the visible one cannot."""

from __future__ import annotations

import re

import pytest
from golden import answers as answer_text
from golden import cases, expected_scores
from notebook_runner import run_notebook

from autograder import CheckFailed, course, notebooks
from autograder.exercises.kit import registry

SOLUTION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.DOTALL)
# Cases whose visible check rightly passes while the hidden one fails: the notebook's own values
# are right, but not from the student's functions (hard-coded values, a patched class).
HIDDEN_CATCHES = {
    "notebook_values_hard_coded",
    "notebook_digit_hard_coded",
    "hard_coded_and_patched",
    "patched_class",
    "linear_assumes_ones",  # a hook that hard-codes W and b as ones, which they are in the notebook
}
CONVERTED = [(a, c) for a, c in cases() if registry.grade_ids(a)]


def solution_lines(assignment: str) -> dict[str, list[str]]:
    """grade id -> the lines of its solution regions that say something (not `return x` alone)."""
    nb = notebooks.read(course.notebook_path("solutions", assignment))
    found = {}
    for cell in nb.cells:
        if not cell.metadata.get("nbgrader", {}).get("solution"):
            continue
        lines = [
            line.strip() for region in SOLUTION.findall(cell.source) for line in region.splitlines()
        ]
        found[cell.id] = [line for line in lines if len(line) >= 12 and not line.startswith("#")]
    return found


@pytest.mark.parametrize(("assignment", "case"), CONVERTED, ids=[f"{a}/{c}" for a, c in CONVERTED])
def test_no_first_failure_message_holds_the_solution(assignment, case):
    run = run_notebook(assignment, answer_text(assignment, case))
    lines = solution_lines(assignment)
    for cell, error in run.results.items():
        grade_id = cell.rsplit("_", 1)[0]
        if not isinstance(error, CheckFailed) or not registry.notebook_of(grade_id):
            continue
        leaked = [line for line in lines.get(grade_id, []) if line in error.message]
        assert not leaked, (cell, leaked, error.message)


@pytest.mark.parametrize(("assignment", "case"), CONVERTED, ids=[f"{a}/{c}" for a, c in CONVERTED])
def test_visible_and_hidden_checks_agree(assignment, case):
    if case in HIDDEN_CATCHES:
        pytest.skip("the hidden check exists to catch this case")
    golden = expected_scores(assignment, case)
    for grade_id in registry.grade_ids(assignment):
        if f"{grade_id}_hidden" in golden:
            visible, hidden = golden[f"{grade_id}_test"] > 0, golden[f"{grade_id}_hidden"] > 0
            assert visible == hidden, (grade_id, visible, hidden)
