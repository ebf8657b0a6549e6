"""With the speed-ups off, grading is stock: every named submission, graded by `hooklab autograde`
with them on and with HOOKLAB_SPEEDUPS=off, gets the same scores (the golden ones) and every
code cell of its autograded notebook the same outputs, execution count and kinds of recorded
times."""

import os
import re
import shutil
import subprocess
import sys

import pytest
from golden import cases, expected_scores, make_course, submit_cases

from autograder import course, gradebook, notebooks

pytestmark = pytest.mark.nbgrader

ADDRESS = re.compile(r"0x[0-9a-f]{6,}")  # object addresses in reprs differ between processes


def _grade(root, db_url: str, speedups: str) -> str:
    """`hooklab autograde` of every submission, as an instructor runs it; returns its stderr."""
    env = {k: v for k, v in os.environ.items() if k != "HOOKLAB_ZYGOTE"}
    env["HOOKLAB_SPEEDUPS"] = speedups
    command = [sys.executable, "-m", "autograder", "--root", str(root), "autograde"]
    done = subprocess.run(
        [*command, "--force", "--db", db_url], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stderr


def _cells(path) -> list[dict]:
    """Every code cell of an autograded notebook as plain data: its outputs (consecutive pieces
    of one stream joined, as a kernel sends them in one message or several depending on timing;
    object addresses masked), its execution count and which times it recorded."""
    cells = []
    for cell in notebooks.read(path).cells:
        if cell.cell_type != "code":
            continue
        outputs: list[dict] = []
        for output in cell.outputs:
            plain = {k: v for k, v in output.items() if k not in {"metadata", "execution_count"}}
            last = outputs[-1] if outputs else {}
            if plain["output_type"] == "stream" and last.get("name") == plain["name"]:
                last["text"] += plain["text"]
            else:
                outputs.append(plain)
        cells.append(
            {
                "id": cell.get("id"),
                "outputs": [_masked(output) for output in outputs],
                "execution_count": cell.execution_count,
                "times": sorted(cell.metadata.get("execution", {})),
            }
        )
    return cells


def _masked(value):
    if isinstance(value, str):
        return ADDRESS.sub("0x…", value)
    if isinstance(value, list):
        return [_masked(item) for item in value]
    if isinstance(value, dict):
        return {key: _masked(item) for key, item in value.items()}
    return value


@pytest.fixture(scope="module")
def graded_both_ways(tmp_path_factory):
    """{"on"/"off": (stderr, {(assignment, case): (scores, cells)})}"""
    root = make_course(tmp_path_factory.mktemp("speedups-off-course"))
    for assignment in course.assignments(root):
        submit_cases(root, assignment, [c for a, c in cases() if a == assignment])
    results = {}
    for setting in ("on", "off"):
        shutil.copy(root / "gradebook.db", root / f"gradebook-{setting}.db")
        db_url = f"sqlite:///{root / f'gradebook-{setting}.db'}"
        said = _grade(root, db_url, setting)
        graded = {}
        for assignment, case in cases():
            scores = {c.cell: c.score for c in gradebook.scores(db_url, assignment)[case]}
            path = course.notebook_path(f"autograded/{case}", assignment, root)
            graded[(assignment, case)] = (scores, _cells(path))
        results[setting] = (said, graded)
    return results


def test_the_run_says_speedups_off_and_only_then(graded_both_ways):
    assert "hooklab: speed-ups off (HOOKLAB_SPEEDUPS=off)" in graded_both_ways["off"][0]
    assert "speed-ups off" not in graded_both_ways["on"][0]


@pytest.mark.parametrize(("assignment", "case"), cases())
def test_scores_and_every_cell_are_those_of_stock_grading(graded_both_ways, assignment, case):
    on_scores, on_cells = graded_both_ways["on"][1][(assignment, case)]
    off_scores, off_cells = graded_both_ways["off"][1][(assignment, case)]
    assert off_scores == on_scores == expected_scores(assignment, case)
    assert len(on_cells) == len(off_cells) > 0
    for on, off in zip(on_cells, off_cells, strict=True):
        assert on == off, on["id"]
    assert any(cell["outputs"] for cell in off_cells)  # the comparison covers outputs
