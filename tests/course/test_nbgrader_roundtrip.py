"""The full round trip through the real nbgrader command line, in a copy of the course:
generate_assignment -> submit as students -> autograde -> read the gradebook."""

import os
import re
import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest
from golden import ROOT, cases, expected_scores, make_course, submit_cases

from autograder import course, gradebook, notebooks

pytestmark = pytest.mark.nbgrader
ASSIGNMENTS = course.assignments()


@pytest.fixture(scope="module")
def course_copy(tmp_path_factory):
    """A throwaway course: nbgrader_config.py and solutions/, student notebooks generated anew."""
    return make_course(tmp_path_factory.mktemp("course"))


@pytest.fixture(scope="module")
def graded(course_copy):
    """Every named submission plus the solution and the untouched student notebook, autograded.

    Stock nbgrader takes ~7 s a notebook here, almost all of it one core's work, and this is
    ~90 notebooks: the assignments are graded side by side, one `nbgrader autograde` per core.
    Each writes its own copy of the gradebook (as generate_assignment left it), so that no two
    commands write one SQLite file."""
    root = course_copy
    named = cases()
    submitted = {a: [c for b, c in named if b == a] for a in ASSIGNMENTS}
    for assignment in ASSIGNMENTS:
        solution = notebooks.read(course.notebook_path("solutions", assignment, root))
        course.submit(solution, "solution", assignment, root)
        untouched = notebooks.read(course.notebook_path("notebooks", assignment, root))
        course.submit(untouched, "untouched", assignment, root)
        submit_cases(root, assignment, submitted[assignment])

    def autograde(assignment):
        own = root / f"gradebook-{assignment}.db"
        shutil.copy(root / "gradebook.db", own)
        db = f"sqlite:///{own}"
        course.autograde(assignment, root=root, db_url=db)
        return assignment, gradebook.scores(db, assignment)

    # The assignments with the most submissions first, so that the last to start are short.
    by_size = sorted(ASSIGNMENTS, key=lambda a: -len(submitted[a]))
    with ThreadPoolExecutor(max_workers=min(len(by_size), os.cpu_count() or 1)) as pool:
        return root, dict(pool.map(autograde, by_size))


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_committed_notebooks_are_what_generate_assignment_makes(course_copy, assignment):
    fresh = course.notebook_path("notebooks", assignment, course_copy).read_bytes()
    committed = course.notebook_path("notebooks", assignment).read_bytes()
    assert fresh == committed, f"notebooks/{assignment} is stale: run `hooklab build`"
    files = {p.name for p in (course_copy / "notebooks" / assignment).iterdir()}
    assert files == {p.name for p in (ROOT / "notebooks" / assignment).iterdir()}


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_solution_notebook_scores_full_marks(graded, assignment):
    _, scores = graded
    cells = scores[assignment]["solution"]
    assert cells and all(c.score == c.max_score for c in cells), cells


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_graded_solution_shows_no_empty_progress_and_no_memory_address(graded, assignment):
    root, _scores = graded
    autograded = notebooks.read(course.notebook_path("autograded/solution", assignment, root))
    shown = {
        cell.id: "".join(o.get("text", "") + str(o.get("data", {}).get("text/plain", ""))
                         for o in cell.outputs)
        for cell in autograded.cells
        if cell.cell_type == "code"
    }  # fmt: skip
    # A full-marks copy whose progress panel says "0 of 10 exercises pass" misleads its reader.
    assert shown["progress"].strip() and not re.search(r"\d+ of \d+", shown["progress"])
    addresses = {cid: text for cid, text in shown.items() if re.search(r" at 0x[0-9a-f]+>", text)}
    assert not addresses, addresses


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_untouched_student_notebook_scores_zero_and_says_not_done_yet(graded, assignment):
    root, scores = graded
    assert all(cell.score == 0 for cell in scores[assignment]["untouched"])
    autograded = notebooks.read(course.notebook_path("autograded/untouched", assignment, root))
    for cell in autograded.cells:
        if cell.metadata.get("nbgrader", {}).get("grade"):
            errors = [o for o in cell.outputs if o.output_type == "error"]
            assert errors, f"{cell.id} has no error output"
            text = "\n".join(errors[0].traceback)
            assert "not done yet" in text and "Traceback" not in text, f"{cell.id}: {text}"


@pytest.mark.parametrize(("assignment", "case"), cases(), ids=[f"{a}/{c}" for a, c in cases()])
def test_named_submission_gets_its_golden_scores(graded, assignment, case):
    _, scores = graded
    got = {cell.cell: cell.score for cell in scores[assignment][case]}
    assert got == expected_scores(assignment, case)
