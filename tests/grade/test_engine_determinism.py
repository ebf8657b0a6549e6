"""Regrading the same submissions gives the same scores, and the same test-cell outputs, every time.

One throwaway course, six named submissions from two assignments (full marks, partly right,
blank), graded three times over by the engine with --force.
"""

import re

import pytest
from golden import expected_scores, make_course, submit_cases

from autograder import course, gradebook, notebooks
from autograder.grade.grader.batch import Batch

pytestmark = pytest.mark.nbgrader

CASES = {
    "forward_hooks": ["all_correct", "notebook_values_hard_coded", "blank"],
    # notebook_digit_hard_coded fails the hidden checks, whose messages name the random model
    # and inputs they drew: the same submission must draw the same ones in every grading run.
    "cnn_hooks": ["all_correct", "notebook_digit_hard_coded", "blank"],
}
RUNS = 3
ADDRESS = re.compile(r"0x[0-9a-f]{6,}")  # object addresses in reprs differ between processes


def graded_outputs(root, assignment: str, student: str) -> dict[str, list]:
    """The outputs of every graded test cell of the autograded notebook, as plain data.

    Left out: execution timing and counts (metadata, execution_count). Consecutive pieces of one
    stream are joined: the kernel sends a print's text and its newline in one message or in two
    depending on timing (seen on a loaded machine), and nbgrader stores the messages as they come.
    """
    nb = notebooks.read(course.notebook_path(f"autograded/{student}", assignment, root))
    outputs = {}
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade"):
            outputs[cell.id] = [_masked(output) for output in _joined_streams(cell.outputs)]
    return outputs


def _joined_streams(outputs) -> list[dict]:
    joined = []
    for output in outputs:
        previous = joined[-1] if joined else {}
        if output.output_type == "stream" and previous.get("name") == output.name:
            previous["text"] += output.text
        else:
            joined.append(dict(output))
    return joined


def _masked(output) -> dict:
    plain = {
        key: value for key, value in output.items() if key not in {"metadata", "execution_count"}
    }
    return {key: _mask_text(value) for key, value in plain.items()}


def _mask_text(value):
    if isinstance(value, str):
        return ADDRESS.sub("0x…", value)
    if isinstance(value, list):
        return [_mask_text(item) for item in value]
    if isinstance(value, dict):
        return {key: _mask_text(item) for key, item in value.items()}
    return value


@pytest.fixture(scope="module")
def regraded(tmp_path_factory):
    """[{(assignment, student): (scores by grade id, test-cell outputs)}], one dict per run."""
    root = make_course(tmp_path_factory.mktemp("determinism-course"), list(CASES))
    for assignment, names in CASES.items():
        submit_cases(root, assignment, names)
    db = course.gradebook_url(root)
    runs = []
    for _ in range(RUNS):
        run = {}
        for assignment in CASES:
            results = Batch(root, assignment, force=True).run(jobs=2)
            assert {r.student: r.status for r in results} == dict.fromkeys(
                CASES[assignment], "graded"
            )
            for student, cells in gradebook.scores(db, assignment).items():
                scores = {cell.cell: cell.score for cell in cells}
                run[(assignment, student)] = (scores, graded_outputs(root, assignment, student))
        runs.append(run)
    return runs


def test_every_run_gives_the_golden_scores(regraded):
    for run in regraded:
        assert set(run) == {(a, s) for a, names in CASES.items() for s in names}
        for (assignment, student), (scores, _) in run.items():
            assert scores == expected_scores(assignment, student), (assignment, student)


def test_every_run_prints_the_same_test_cell_outputs(regraded):
    first = regraded[0]
    for later in regraded[1:]:
        for key, (_, outputs) in first.items():
            for cell_id, cell_outputs in outputs.items():
                again = later[key][1][cell_id]
                assert again == cell_outputs, f"{key} {cell_id}:\n{cell_outputs}\n!=\n{again}"


def test_the_compared_outputs_hold_the_check_messages(regraded):
    # A comparison of empty outputs would prove nothing: the partly right cnn submission's
    # hidden checks fail with a message that names what they drew at random.
    _, outputs = regraded[0][("cnn_hooks", "notebook_digit_hard_coded")]
    hidden = outputs["grad_cam_hidden"]
    assert hidden and hidden[0]["output_type"] == "error"
    assert "class_index=" in "".join(hidden[0]["traceback"])
