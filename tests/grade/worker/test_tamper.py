"""Does a submission that tampers with grading get no point it did not earn, and a flag?

Every case of tests/tamper/ (answer files, plus test cells deleted, duplicated or moved in an
honest notebook) and the honest all_correct controls are graded by the engine in one run over
both assignments of one course; each must get exactly its expected score per graded cell and status,
and a flag in its message."""

import copy
import tomllib

import pytest
from golden import ROOT, graded_points, make_course
from golden import answers as submission_answers

from autograder import course, gradebook, notebooks

pytestmark = pytest.mark.nbgrader

TAMPER = ROOT / "tests" / "tamper"
ASSIGNMENTS = ["backward_hooks", "hooks_in_practice"]
EXPECTED = tomllib.loads((TAMPER / "expected.toml").read_text(encoding="utf-8"))


def _cases() -> list[str]:
    return [key for key in EXPECTED if key.split("/")[0] in ASSIGNMENTS]


def _layout_cases(nb) -> dict:
    """all_correct with a test cell deleted, duplicated (an emptied copy after it), or moved."""
    deleted = copy.deepcopy(nb)
    deleted.cells = [c for c in deleted.cells if c.id != "backward_collect_hidden"]
    duplicated = copy.deepcopy(nb)
    at = next(i for i, c in enumerate(duplicated.cells) if c.id == "tensor_hook_W_test")
    twin = copy.deepcopy(duplicated.cells[at])
    twin.id, twin.source = "tensor_hook_W_test_copy", "pass"
    duplicated.cells.insert(at + 1, twin)
    moved = copy.deepcopy(nb)
    at = next(i for i, c in enumerate(moved.cells) if c.id == "backward_normalize_hidden")
    moved.cells.insert(0, moved.cells.pop(at))
    return {
        "deleted_test_cell": deleted,
        "duplicated_test_cell": duplicated,
        "reordered_test_cell": moved,
    }


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    from autograder.grade.grader.batch import Batch, run_batches

    # patched_torch makes one check spin until the cell's timeout.
    root = tmp_path_factory.mktemp("tamper-course")
    make_course(root, ASSIGNMENTS, config="c.Execute.timeout = 10")
    results, scores = {}, {}
    for assignment in ASSIGNMENTS:
        answers = submission_answers(assignment, "all_correct")
        correct = course.answered_notebook(answers, assignment, root)
        course.submit(correct, "all_correct", assignment, root)
        if assignment == "backward_hooks":
            for name, nb in _layout_cases(correct).items():
                course.submit(nb, name, assignment, root)
        for path in sorted((TAMPER / assignment).glob("*.py")):
            nb = course.answered_notebook(notebooks.read_answers(path), assignment, root)
            course.submit(nb, path.stem, assignment, root)
    # One run over both assignments: the workers and kernels grade every case side by side.
    batches = [Batch(root, assignment, force=True) for assignment in ASSIGNMENTS]
    for result in run_batches(batches, jobs=2):
        results[f"{result.assignment}/{result.student}"] = result
    for assignment in ASSIGNMENTS:
        for student, cells in gradebook.scores(course.gradebook_url(root), assignment).items():
            scores[f"{assignment}/{student}"] = cells
    return results, scores


def test_every_case_is_listed():
    files = {f"{p.parent.name}/{p.stem}" for p in TAMPER.glob("*/*.py")}
    assert files <= set(_cases())


@pytest.mark.parametrize("case", _cases())
def test_a_tamper_case_gets_exactly_its_expected_scores_and_a_flag(graded, case):
    results, scores = graded
    expected = EXPECTED[case]
    result = results[case]
    assert result.status == expected["status"], result.message
    want = {cell: float(expected.get(cell, 0)) for cell in graded_points(case.split("/")[0])}
    got = {cell.cell: cell.score for cell in scores.get(case, [])}
    assert got == want, result.message
    if expected["flag"]:
        assert expected["flag"] in result.message, result.message
    else:
        assert "tampering" not in result.message, result.message
