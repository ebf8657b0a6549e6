"""Benchmark `hooklab autograde` against stock `nbgrader autograde` on a throwaway class,
each timed as the command an instructor runs.

This machine's speed drifts by a fifth within minutes, and stock grades for minutes while ours
takes seconds: ours timed only before or after stock would see another machine than stock did.
So ours runs several times, spread over stock's run (before its first assignment, between its
assignments, after its last), each from a fresh copy of the gradebook, and the median counts;
every run's scores must equal stock's. With `--speedups off` ours runs without its speed-ups
(HOOKLAB_SPEEDUPS=off), for the ratio they are worth."""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from autograder import course, gradebook, notebooks
from autograder.grade.settings import DEFAULT_JOBS
from autograder.grade.speedups import ENV as SPEEDUPS_ENV

SUBMISSIONS = course.ROOT / "tests" / "submissions"
NAMED = ("all_correct", "seed001_answers", "blank")
Key = tuple[str, str, str]  # (assignment, student, grade id)


def say(message: str) -> None:
    print(message, flush=True)


def student_ids(count: int) -> list[str]:
    return [f"s{i:02d}" for i in range(1, count + 1)]


def case_for(index: int, assignment: str) -> str:
    """The named submission student `index` (0-based) hands in: even students rotate through
    all_correct, seed001_answers and blank; odd ones take the partly wrong cases in turn."""
    if index % 2 == 0:
        return NAMED[(index // 2) % len(NAMED)]
    others = sorted(p.stem for p in (SUBMISSIONS / assignment).glob("*.py") if p.stem not in NAMED)
    return others[(index // 2) % len(others)] if others else "blank"


def answers(assignment: str, case: str) -> str:
    path = SUBMISSIONS / assignment / f"{case}.py"
    return notebooks.read_answers(path) if path.exists() else ""  # "" is the blank notebook


def make_course(root: Path, students: int, assignments: list[str]) -> None:
    """A course in `root`: config and solutions copied, notebooks built, every student's
    submission of every assignment in submitted/."""
    shutil.copy(course.ROOT / "nbgrader_config.py", root)
    shutil.copytree(course.ROOT / "solutions", root / "solutions")
    course.build(assignments, root=root)
    for assignment in assignments:
        for index, student in enumerate(student_ids(students)):
            case = case_for(index, assignment)
            nb = course.answered_notebook(answers(assignment, case), assignment, root)
            course.submit(nb, student, assignment, root)


def grade_with_command(
    root: Path, db_url: str, assignments: list[str], jobs: int, speedups: str = "on"
) -> tuple[float, int, float]:
    """Grade with `hooklab autograde --force` (python -m autograder), all assignments in one
    command, as an instructor runs it: its start-up is timed as stock's is. Returns the
    wall-clock seconds, its exit code and the peak RSS in MB of its processes: the largest of
    what wait4 counts (itself and its workers; not what runs in bubblewrap, which does not pass
    its processes' usage on) and of the kernels' peak, which the command reports. `speedups`
    is the command's HOOKLAB_SPEEDUPS."""
    summary_path = root / "ours-summary.json"
    summary_path.unlink(missing_ok=True)
    command = [sys.executable, "-m", "autograder", "--root", str(root), "autograde"]
    command += [*assignments, "--force", "--db", db_url, "--jobs", str(jobs)]
    command += ["--summary-json", str(summary_path)]
    start = time.perf_counter()
    process = subprocess.Popen(command, env={**os.environ, SPEEDUPS_ENV: speedups})
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    kernels = 0.0
    if summary_path.exists():
        kernels = json.loads(summary_path.read_text()).get("peak_kernel_rss_mb") or 0.0
    return seconds, process.returncode, max(usage.ru_maxrss / 1024, kernels)


def all_scores(db_url: str, assignments: list[str]) -> dict[Key, tuple[float, float]]:
    """{(assignment, student, grade id): (score, max score)} for every graded cell."""
    return {
        (assignment, student, cell.cell): (cell.score, cell.max_score)
        for assignment in assignments
        for student, cells in gradebook.scores(db_url, assignment).items()
        for cell in cells
    }


def differences(
    first: dict[Key, tuple[float, float]], second: dict[Key, tuple[float, float]]
) -> list[str]:
    """Every graded cell whose (score, max score) differs, or that only one gradebook has."""
    return [
        f"{'/'.join(key)}: stock {first.get(key, 'missing')}, ours {second.get(key, 'missing')}"
        for key in sorted(first.keys() | second.keys())
        if first.get(key) != second.get(key)
    ]


def last_line(
    stock: float, ours: float, identical: bool, peak_mb: float, speedups: str = "on"
) -> str:
    ratio = stock / ours if ours else float("inf")
    off = ", speed-ups off" if speedups == "off" else ""
    return (
        f"speedup: {ratio:.1f}x (stock {stock:.1f} s, ours {ours:.1f} s, "
        f"identical scores: {'yes' if identical else 'no'}, peak worker RSS {peak_mb:.0f} MB{off})"
    )


def fresh_gradebook(root: Path, name: str) -> str:
    """The URL of a copy, named `name`, of the course's gradebook as the course build left it."""
    shutil.copy(root / "gradebook.db", root / name)
    return f"sqlite:///{root / name}"


class OursRun(NamedTuple):
    seconds: float
    exit_code: int
    peak_mb: float
    db_url: str  # its own gradebook, compared with stock's once stock is done


def run_slots(runs: int, assignments: int) -> list[int]:
    """After how many of stock's assignments each of our runs goes: spread evenly from before
    the first (0) to after the last (`assignments`)."""
    if runs == 1:
        return [assignments // 2]
    return [round(k * assignments / (runs - 1)) for k in range(runs)]


def bench(
    root: Path,
    *,
    students: int = 12,
    jobs: int | None = None,
    assignments: list[str] | None = None,
    runs: int = 3,
    speedups: str = "on",
) -> tuple[str, bool]:
    """The whole benchmark in the empty folder `root`; returns (last line, identical scores)."""
    course.use_environment_bin()
    jobs = jobs or DEFAULT_JOBS
    names = assignments or course.assignments()
    # Both sides run on this interpreter; its build alone moves both times by a tenth.
    say(f"Python {platform.python_version()} at {os.path.realpath(sys.executable)}")
    say(f"building a course of {students} students x {len(names)} assignments in {root}")
    make_course(root, students, names)
    stock_url = fresh_gradebook(root, "stock.db")
    say(
        f"grading with stock nbgrader autograde, one command per assignment, and {runs} times "
        f"with `hooklab autograde` ({jobs} jobs, all assignments, a fresh gradebook each time) "
        f"in between{' (speed-ups off)' if speedups == 'off' else ''}"
    )
    slots = run_slots(runs, len(names))
    stock, ours_runs = 0.0, []
    for done in range(len(names) + 1):
        for _ in range(slots.count(done)):
            number = len(ours_runs) + 1
            url = fresh_gradebook(root, f"ours-{number}.db")
            graded = grade_with_command(root, url, names, jobs, speedups)
            ours_runs.append(OursRun(*graded, url))
            say(f"  ours: run {number} took {ours_runs[-1].seconds:.1f} s")
        if done < len(names):
            start = time.perf_counter()
            course.autograde(names[done], root=root, db_url=stock_url)
            seconds = time.perf_counter() - start
            stock += seconds
            say(f"  stock: {names[done]} took {seconds:.1f} s ({stock:.1f} s so far)")
    stock_scores = all_scores(stock_url, names)
    identical = bool(stock_scores)
    for number, run in enumerate(ours_runs, 1):
        diffs = differences(stock_scores, all_scores(run.db_url, names))
        exited = f", the command exited with {run.exit_code}" if run.exit_code else ""
        cells = len(stock_scores)
        say(f"  run {number}: {run.seconds:.1f} s; {len(diffs)} of {cells} cells differ{exited}")
        for diff in diffs[:5]:
            say(f"    {diff}")
        identical = identical and not diffs and run.exit_code == 0
    times = [run.seconds for run in ours_runs]
    ours = statistics.median(times)
    say(f"ours: median {ours:.1f} s of {', '.join(f'{t:.1f}' for t in times)} s")
    peak = max(run.peak_mb for run in ours_runs)
    return last_line(stock, ours, identical, peak, speedups), identical


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.bench", description=__doc__)
    parser.add_argument("--jobs", type=int, default=DEFAULT_JOBS, help="engine workers")
    parser.add_argument("--students", type=int, default=12, help="submissions per assignment")
    parser.add_argument(
        "--runs", type=int, default=3, help="runs of ours, spread over stock's; the median counts"
    )
    parser.add_argument("--keep", type=Path, help="build the course here and keep it")
    parser.add_argument(
        "--speedups", choices=("on", "off"), default="on", help="ours with or without speed-ups"
    )
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    sizes = {"students": args.students, "jobs": args.jobs, "runs": args.runs}
    sizes["speedups"] = args.speedups
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        if any(args.keep.iterdir()):
            parser.error(f"{args.keep} is not empty")
        line, identical = bench(args.keep.resolve(), **sizes)
    else:
        with tempfile.TemporaryDirectory(prefix="hooklab-bench-") as folder:
            line, identical = bench(Path(folder), **sizes)
    say(line)
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
