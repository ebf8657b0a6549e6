"""Does every named submission get exactly its golden scores? (in-process: fast, no kernel)

tests/course/test_nbgrader_roundtrip.py grades the same folder with the real `nbgrader autograde`.
"""

import pytest
from golden import SUBMISSIONS, cases, expected_scores, golden_keys, graded_points
from golden import answers as answer_text
from notebook_runner import run_notebook


@pytest.mark.parametrize(("assignment", "case"), cases(), ids=[f"{a}/{c}" for a, c in cases()])
def test_submission_scores_match_golden(assignment, case):
    run = run_notebook(assignment, answer_text(assignment, case))
    points = graded_points(assignment)
    got = {
        cell: points[cell] if run.results.get(cell, "missing") is None else 0.0 for cell in points
    }
    assert got == expected_scores(assignment, case), {
        cell: str(run.results.get(cell))[:200]
        for cell in points
        if got[cell] != expected_scores(assignment, case)[cell]
    }


def test_golden_file_names_only_real_cases_and_cells():
    known = {f"{a}/{c}" for a, c in cases()}
    for key, cells in golden_keys().items():
        assert key in known, f"golden entry {key} has no answer file"
        assignment, case = key.split("/")
        assert set(cells) - {"based_on"} <= set(graded_points(assignment)), f"{key}: unknown cells"
        based_on = f"# based on: {cells['based_on']}\n" if "based_on" in cells else None
        answers = (SUBMISSIONS / assignment / f"{case}.py").read_text(encoding="utf-8")
        assert based_on is None or based_on in answers, f"{key}: golden based on, answers not"
    assert known <= set(golden_keys()), f"cases without golden scores: {known - set(golden_keys())}"
