"""Submissions are staged (nbgrader's bookkeeping) ahead of grading, on a thread of their own:
does staging run ahead, are submissions still graded in order and each once, and does a fault
there reach the caller?"""

import contextlib
import threading
import time

import pytest
from golden import make_course, submit_cases

from autograder.grade.grader.batch import Batch, run_batches
from autograder.grade.worker.pipeline import NotebookResult

pytestmark = pytest.mark.nbgrader

ASSIGNMENTS = ["forward_hooks", "backward_hooks"]
CASES = ["all_correct", "blank", "seed001_answers"]
TOTAL = len(ASSIGNMENTS) * len(CASES)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("staging-course")
    make_course(root, ASSIGNMENTS)
    for assignment in ASSIGNMENTS:
        submit_cases(root, assignment, CASES)
    return root


def test_staging_runs_ahead_and_grading_follows_in_order_each_once(root, monkeypatch):
    staged, jobs, ahead = [], [], []  # ahead: how many were staged when the first job came
    real_stage = Batch.stage

    def counted_stage(self, student):
        result = real_stage(self, student)
        staged.append((self.assignment, student))
        return result

    def dispatch(job):
        """Grades nothing (hands the notebook back as submitted). The first job waits until
        every submission is staged, which only happens if staging does not wait for grading."""
        ids = job.resources["nbgrader"]
        jobs.append((ids["assignment"], ids["student"]))
        first, deadline = len(jobs) == 1, time.monotonic() + 30
        while first and len(staged) < TOTAL and time.monotonic() < deadline:
            time.sleep(0.01)
        if first:
            ahead.append(len(staged))
        return NotebookResult(output=job.text)

    monkeypatch.setattr(Batch, "stage", counted_stage)
    batches = [Batch(root, a, force=True, dispatch=dispatch) for a in ASSIGNMENTS]
    results = list(run_batches(batches, jobs=1))
    assert all(r.status == "graded" for r in results), [r.message for r in results]
    expected = [(a, c) for a in ASSIGNMENTS for c in CASES]
    assert staged == expected  # staged one after another, in order
    assert ahead == [TOTAL]
    assert sorted(jobs) == sorted(expected) == sorted((r.assignment, r.student) for r in results)
    # Two grading threads (jobs=1) take them in order: a job is at most one place off.
    assert all(abs(expected.index(job) - place) <= 1 for place, job in enumerate(jobs)), jobs


def test_a_fault_while_staging_reaches_the_caller_instead_of_hanging(root, monkeypatch):
    def broken(self, student):
        raise RuntimeError("staging broke")

    monkeypatch.setattr(Batch, "stage", broken)
    batches = [Batch(root, ASSIGNMENTS[0], force=True, dispatch=lambda job: None)]
    raised = []

    def take_results():
        try:
            list(run_batches(batches, jobs=1))
        except RuntimeError as error:
            raised.append(str(error))

    taker = threading.Thread(target=take_results, daemon=True)
    taker.start()
    taker.join(timeout=60)
    assert raised == ["staging broke"]


def test_a_stopped_run_grades_no_more_and_leaves_no_row_for_what_it_did_not_grade(root, tmp_path):
    """Ctrl-C (the caller stops taking results): the notebooks already in a worker finish and
    keep their grades; the staged ones that no worker took are not graded, and the submissions
    the gradebook did not have before are removed again, not left as rows of zeros."""
    import shutil

    from nbgrader.api import Gradebook, MissingEntry

    shutil.copy(root / "gradebook.db", tmp_path / "gradebook.db")
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(url) as gradebook:  # as before this run: none of them submitted yet
        for assignment in ASSIGNMENTS:
            for case in CASES:
                with contextlib.suppress(MissingEntry):
                    gradebook.remove_submission(assignment, case)
    release, dispatched = threading.Event(), []

    def dispatch(job):
        ids = job.resources["nbgrader"]
        dispatched.append((ids["assignment"], ids["student"]))
        if len(dispatched) > 1:
            release.wait(30)  # in a worker when the run is stopped
        return NotebookResult(output=job.text)

    batches = [Batch(root, a, force=True, db_url=url, dispatch=dispatch) for a in ASSIGNMENTS]
    results = run_batches(batches, jobs=1)
    first = next(results)
    deadline = time.monotonic() + 30
    while len(dispatched) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    threading.Timer(0.5, release.set).start()
    results.close()  # what a KeyboardInterrupt in the caller's loop does to the generator
    assert first.status == "graded" and 2 <= len(dispatched) < TOTAL
    with Gradebook(url) as gradebook:
        rows = {
            (assignment, case)
            for assignment in ASSIGNMENTS
            for case in CASES
            if any(s.student_id == case for s in gradebook.find_assignment(assignment).submissions)
        }
    assert rows == set(dispatched)


def test_a_submission_staged_and_then_not_graded_leaves_no_folder(root, tmp_path):
    """Staged ahead, then the run stopped before a worker took it: neither its staging folder
    nor the autograded/<student>/ folder made for it stays (nbgrader would skip a submission
    whose folder exists, and an instructor sees a folder as a graded one)."""
    import shutil

    from golden import answers

    from autograder import course

    shutil.copy(root / "gradebook.db", tmp_path / "gradebook.db")
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    nb = course.answered_notebook(answers("forward_hooks", "all_correct"), "forward_hooks", root)
    course.submit(nb, "newcomer", "forward_hooks", root)
    # A file beside the notebook: nbgrader copies it when the submission is staged.
    (root / "submitted" / "newcomer" / "forward_hooks" / "data.txt").write_text("1 2 3\n")
    try:
        batch = Batch(root, "forward_hooks", students="newcomer", db_url=url)
        staged = batch.stage("newcomer")
        folder = root / "autograded" / "newcomer"
        assert folder.is_dir() and any(folder.iterdir())  # its staging folder
        batch.unstage(staged)
        assert not folder.exists()
    finally:
        shutil.rmtree(root / "submitted" / "newcomer")
