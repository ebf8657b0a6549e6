"""Kill the grader with SIGKILL half-way through a batch, run it again: is every grade there once,
with every autograded notebook, and nothing half-written left behind?"""

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest
from golden import expected_scores, make_course, submit_cases
from nbgrader.api import Gradebook

from autograder import course, gradebook
from autograder.grade import run_folders
from autograder.grade.kernels.template_client import ZYGOTE_ENV

pytestmark = pytest.mark.nbgrader

ASSIGNMENT = "forward_hooks"
CASES = ["all_correct", "blank", "wrong_predictions", "registered_twice", "tuple_appended"]


def _autograde(root, *options: str, env: dict | None = None) -> subprocess.Popen:
    command = [sys.executable, "-m", "autograder", "--root", str(root), "autograde", ASSIGNMENT]
    command += options
    # Its own session, so that killing the group kills its workers and template process too.
    return subprocess.Popen(
        [*command, "--jobs", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env=env,
    )


def _done(root) -> list[str]:
    folder = root / "autograded"
    return sorted(p.parent.name for p in folder.glob(f"*/{ASSIGNMENT}")) if folder.exists() else []


def _kill_once(grader: subprocess.Popen, progressed) -> None:
    """SIGKILL the grader's whole group as soon as `progressed()` (or it ended, or 300 s)."""
    deadline = time.monotonic() + 300
    while not progressed() and grader.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(grader.pid, signal.SIGKILL)
    grader.wait()


def _run_folders(temporary) -> list[str]:
    return sorted(path.name for path in temporary.glob(f"{run_folders.PREFIX}*"))


@pytest.fixture(scope="module")
def killed_and_rerun(tmp_path_factory):
    root = tmp_path_factory.mktemp("durability-course")
    make_course(root, [ASSIGNMENT])
    submit_cases(root, ASSIGNMENT, CASES)
    # A temporary folder of their own, to see what the killed run leaves there (under /tmp:
    # pytest's own folders are too deep for the kernels' sockets).
    temporary = Path(tempfile.mkdtemp(prefix="durability-", dir="/tmp"))
    env = {**os.environ, "TMPDIR": str(temporary)}
    env.pop(ZYGOTE_ENV, None)
    _kill_once(_autograde(root, env=env), lambda: _done(root))
    done_when_killed = _done(root)
    left_by_the_kill = _run_folders(temporary)
    rerun = subprocess.run(
        [sys.executable, "-m", "autograder", "--root", str(root), "autograde", ASSIGNMENT],
        capture_output=True,
        text=True,
        env=env,
    )
    yield root, done_when_killed, rerun, left_by_the_kill, _run_folders(temporary)
    shutil.rmtree(temporary, ignore_errors=True)


def test_the_grader_was_killed_half_way(killed_and_rerun):
    _, done_when_killed, *_ = killed_and_rerun
    assert 1 <= len(done_when_killed) < len(CASES)


def test_the_rerun_removes_the_folders_the_killed_run_left_in_tmp(killed_and_rerun):
    *_, left_by_the_kill, left_after_the_rerun = killed_and_rerun
    kinds = {name.split("-")[1] for name in left_by_the_kill}
    assert {"zygote", "verdicts"} <= kinds, left_by_the_kill
    assert left_after_the_rerun == []


def test_the_rerun_grades_the_rest_and_every_grade_is_the_golden_one(killed_and_rerun):
    root, _, rerun, *_ = killed_and_rerun
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    scores = gradebook.scores(course.gradebook_url(root), ASSIGNMENT)
    for case in CASES:
        got = {cell.cell: cell.score for cell in scores[case]}
        assert got == expected_scores(ASSIGNMENT, case), case


def test_one_submission_per_student_and_one_autograded_notebook_each(killed_and_rerun):
    root, *_ = killed_and_rerun
    with Gradebook(course.gradebook_url(root)) as gb:
        submissions = gb.find_assignment(ASSIGNMENT).submissions
        assert sorted(s.student.id for s in submissions) == sorted(CASES)
        for submission in submissions:
            grades = [g for notebook in submission.notebooks for g in notebook.grades]
            assert grades and all(g.auto_score is not None for g in grades)
    assert _done(root) == sorted(CASES)
    for case in CASES:
        assert course.notebook_path(f"autograded/{case}", ASSIGNMENT, root).exists()
    leftovers = [p for p in (root / "autograded").rglob("*") if "partial" in p.name]
    assert leftovers == []


SENTINEL = "graded-by-the-first-run"


def _regraded(root) -> list[str]:
    return [case for case in _done(root) if not _sentinel(root, case).exists()]


def _sentinel(root, case):
    return root / "autograded" / case / ASSIGNMENT / SENTINEL


@pytest.fixture(scope="module")
def force_killed_and_rerun(tmp_path_factory):
    """Grade everything, mark each autograded folder, then kill a --force regrade once it has
    replaced at least one folder, and run it again."""
    root = tmp_path_factory.mktemp("durability-force-course")
    make_course(root, [ASSIGNMENT])
    submit_cases(root, ASSIGNMENT, CASES)
    assert _autograde(root).wait() == 0
    for case in CASES:
        _sentinel(root, case).write_text("")
    _kill_once(_autograde(root, "--force"), lambda: _regraded(root))
    regraded_when_killed = _regraded(root)
    kept = [
        case
        for case in CASES
        if course.notebook_path(f"autograded/{case}", ASSIGNMENT, root).exists()
    ]
    rerun = _autograde(root, "--force").wait()
    return root, regraded_when_killed, kept, rerun


def test_a_killed_regrade_keeps_the_previous_results_of_what_it_had_not_regraded(
    force_killed_and_rerun,
):
    _, regraded_when_killed, kept, _ = force_killed_and_rerun
    assert 1 <= len(regraded_when_killed) < len(CASES)
    # Staged ahead of grading, every submission was initialised long before it was regraded:
    # none may have lost its autograded notebook for that (a kill between the two renames of a
    # replacement could leave one folder aside, under its "replaced" name).
    assert len(kept) >= len(CASES) - 1, kept


def test_the_forced_rerun_regrades_everything_and_leaves_nothing_behind(force_killed_and_rerun):
    root, _, _, rerun = force_killed_and_rerun
    assert rerun == 0
    assert _regraded(root) == sorted(CASES)
    scores = gradebook.scores(course.gradebook_url(root), ASSIGNMENT)
    for case in CASES:
        got = {cell.cell: cell.score for cell in scores[case]}
        assert got == expected_scores(ASSIGNMENT, case), case
    names = [p.name for p in (root / "autograded").rglob("*")]
    assert not [name for name in names if "hooklab-" in name]


def _running(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE  # a zombie has ended, unreaped
    except psutil.NoSuchProcess:
        return False


@pytest.mark.parametrize("sandbox", ["off", "auto"])
def test_nothing_outlives_a_grader_killed_on_its_own(tmp_path, sandbox):
    """SIGKILL the grading process alone, as the OOM killer would: its workers, its kernel
    template and their kernels end too, instead of waiting for work that never comes."""
    root = tmp_path
    make_course(root, [ASSIGNMENT])
    submit_cases(root, ASSIGNMENT, CASES)
    # Its own kernel template, not one this test process may have started (tests that grade
    # in-process leave theirs in the environment for later ones).
    env = {name: value for name, value in os.environ.items() if name != ZYGOTE_ENV}
    grader = _autograde(root, env={**env, "HOOKLAB_SANDBOX": sandbox})
    deadline = time.monotonic() + 300
    while not _done(root) and grader.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    below = psutil.Process(grader.pid).children(recursive=True)
    assert grader.poll() is None, "the grader ended before it could be killed"
    assert len(below) >= 2, f"no worker and kernel template below the grader yet: {below}"
    grader.kill()
    grader.wait()
    deadline = time.monotonic() + 20
    while any(_running(process) for process in below) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = {}
    for process in below:
        with contextlib.suppress(psutil.NoSuchProcess):  # it ended meanwhile
            if _running(process):
                left[process.pid] = " ".join(process.cmdline())[:80]
                process.kill()  # not to leave it to the next test
    assert left == {}
