"""Ctrl-C during `hooklab autograde`, as at a terminal (SIGINT to the command's process group):
the first one lets the submissions in flight finish, a second one ends them at once; either way
no row or folder is left for a submission that was not graded, and a second run grades it."""

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest
from golden import answers, expected_scores, make_course, submit_cases
from nbgrader.api import Gradebook, MissingEntry

from autograder import course, gradebook, notebooks
from autograder.grade.kernels.template_client import ZYGOTE_ENV

pytestmark = pytest.mark.nbgrader

ASSIGNMENT = "forward_hooks"
LOOPS = "a_loops"  # graded first: its mlp_report cell never ends by itself (time-out 60 s)


def _has_row(root, student: str) -> bool:
    with Gradebook(course.gradebook_url(root)) as book:
        try:
            book.find_submission(ASSIGNMENT, student)
        except MissingEntry:
            return False
    return True


def _kernel_busy(grader: psutil.Process) -> bool:
    """A kernel under the grader (a process with no children, unlike the templates) has spent
    more CPU than a kernel of this notebook needs: the looping cell is running."""
    try:
        under = grader.children(recursive=True)
    except psutil.Error:  # the grader has ended
        return False
    for process in under:
        try:
            if not process.children() and process.cpu_times().user > 1.5:
                return True
        except psutil.Error:
            continue
    return False


def _sigint_as_at_a_terminal() -> None:
    """In the command's process, before it starts: Ctrl-C neither ignored nor blocked, as a
    shell's foreground job has it, whatever this test's process inherited or set."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture(scope="module")
def interrupted_twice(tmp_path_factory):
    root = tmp_path_factory.mktemp("interrupt-course")
    make_course(root, [ASSIGNMENT])
    correct = notebooks.parse_answers(answers(ASSIGNMENT, "all_correct"))
    student = notebooks.read(course.notebook_path("notebooks", ASSIGNMENT, root))
    looping = notebooks.fill_answers(student, {**correct, "mlp_report": "while True:\n    pass"})
    course.submit(looping, LOOPS, ASSIGNMENT, root)
    submit_cases(root, ASSIGNMENT, ["all_correct"])
    command = [sys.executable, "-m", "autograder", "--root", str(root), "autograde", ASSIGNMENT]
    # Its own kernel template, not one this test process may have started (tests that grade
    # in-process leave theirs in the environment for later ones).
    env = {name: value for name, value in os.environ.items() if name != ZYGOTE_ENV}
    grader = subprocess.Popen(
        [*command, "--jobs", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a process group of its own, as a terminal's job
        env=env,
        preexec_fn=_sigint_as_at_a_terminal,
    )
    deadline = time.monotonic() + 120
    watched = psutil.Process(grader.pid)
    while not _kernel_busy(watched) and grader.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    if grader.poll() is not None:
        pytest.fail(f"the run ended before the looping cell ran: {grader.communicate()[1]}")
    started = watched.children(recursive=True)  # workers, template, kernels, verifiers
    os.killpg(grader.pid, signal.SIGINT)
    time.sleep(1.0)
    second = time.monotonic()
    os.killpg(grader.pid, signal.SIGINT)
    _, err = grader.communicate(timeout=120)
    seconds = time.monotonic() - second
    time.sleep(1.0)  # a process ending with its parent (PR_SET_PDEATHSIG) ends meanwhile
    left = [p.pid for p in started if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    return root, grader.returncode, err, seconds, (len(started), left)


def test_the_second_ctrl_c_ends_the_run_at_once(interrupted_twice):
    _, code, err, seconds, (started, left) = interrupted_twice
    assert code == 130, err
    # Not the 60 s the looping cell has before its time-out.
    assert seconds < 20, (seconds, err)
    assert "stopping: finishing the submissions in flight" in err, err
    assert "hooklab: interrupted" in err and "Traceback" not in err, err
    assert started >= 3 and left == []  # the worker, the template and the kernel at least


def test_an_abandoned_submission_leaves_no_row_and_no_folder(interrupted_twice):
    root = interrupted_twice[0]
    assert not _has_row(root, LOOPS)
    assert not (root / "autograded" / LOOPS).exists()


@pytest.fixture(scope="module")
def rerun(interrupted_twice):
    root = interrupted_twice[0]
    command = [sys.executable, "-m", "autograder", "--root", str(root), "autograde", ASSIGNMENT]
    done = subprocess.run(
        [*command, "--Execute.timeout=3"],  # the looping cell's time-out, sooner
        capture_output=True,
        text=True,
    )
    return root, done


def test_the_next_run_grades_them_all(rerun):
    root, done = rerun
    assert done.returncode == 0, done.stderr
    scores = gradebook.scores(course.gradebook_url(root), ASSIGNMENT)
    got = {cell.cell: cell.score for cell in scores["all_correct"]}
    assert got == expected_scores(ASSIGNMENT, "all_correct")
    looped = {cell.cell: cell.score for cell in scores[LOOPS]}
    assert looped["mlp_report_test"] == 0 and looped["forward_collect_test"] == 1


def test_a_course_without_figures_hears_nothing_of_the_figure_speedups(rerun):
    """forward_hooks draws nothing: its kernels' template never imports matplotlib.pyplot, and
    a speed-up for drawing is no news to the instructor there."""
    _, done = rerun
    assert "speed-up" not in done.stderr, done.stderr
