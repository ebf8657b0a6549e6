"""The instructor's progress display (engine/run.py): redrawn a few times a second, not rich's
ten, since drawing it costs the grading CPU; it still shows every result and the summary."""

import io
import time

from rich.console import Console

from autograder.grade import run
from autograder.grade.grader.batch import SubmissionResult

STUDENTS = [f"s{i:02d}" for i in range(12)]


class SlowBatch:
    """Stands in for a Batch of 12 submissions; run_batches below grades one every 0.1 s."""

    def __init__(self, root, assignment, **kwargs):
        self.assignment, self.students = assignment, STUDENTS
        self.without_notebook = []


def slow_results(batches, jobs, on_stop=None):
    for batch in batches:
        for student in batch.students:
            time.sleep(0.1)
            yield SubmissionResult(student, batch.assignment, "graded", 0.1)


def test_the_progress_is_redrawn_at_most_twice_a_second_and_ends_with_the_summary(
    monkeypatch, tmp_path
):
    monkeypatch.setattr(run, "Batch", SlowBatch)
    monkeypatch.setattr(run, "run_batches", slow_results)
    monkeypatch.setattr(run.preflight, "check", lambda *args: None)  # no course on disk here
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, color_system=None, width=120)
    start = time.perf_counter()
    results = run.autograde(tmp_path, ["forward_hooks"], console=console)
    seconds = time.perf_counter() - start
    shown = screen.getvalue()
    # Each redraw of the live display (one bar: one line) first erases the line it is on.
    redraws = shown.count("\r\x1b[2K")
    assert seconds >= 1.2 and len(results) == 12
    assert 1 <= redraws <= 2 * seconds + 2, (redraws, seconds)
    assert "12/12" in shown and "graded 12, failed 0, skipped 0" in shown
