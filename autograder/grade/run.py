"""`hooklab autograde`: the instructor's view of a batch — progress with ETA, a summary line, and
the grades table, reports/grades.csv and class report afterwards."""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from sqlalchemy.exc import SAWarning
from traitlets.config import Config

from autograder.grade import preflight
from autograder.grade.grader.batch import Batch, SubmissionResult, run_batches


def autograde(
    root: Path,
    assignments: str | list[str],
    *,
    students: str = "*",
    force: bool = False,
    db_url: str | None = None,
    jobs: int = 2,
    scheduler: str | None = None,
    console: Console | None = None,
    summary_json: Path | None = None,
    config: Config | None = None,
) -> list[SubmissionResult]:
    """Grade every submission of the assignments (one or several, with one set of workers),
    showing progress per assignment; returns one result per student and assignment. With
    `summary_json`, the summary also goes to that file (summary_counts). `config` is what
    nbgrader's command line and config files gave (grade/app.py); without it, the course
    folder's nbgrader_config.py is read. Raises preflight.CannotGrade, before grading, for a
    missing course, gradebook or assignment, or a course another run is grading."""
    console = console or Console(stderr=True)
    # nbgrader's gradebook code makes SQLAlchemy warn about its session use; nothing to act on.
    warnings.filterwarnings("ignore", message="Object of type", category=SAWarning)
    names = [assignments] if isinstance(assignments, str) else list(assignments)
    # Bad input: a sentence, not a traceback.
    preflight.check(root, names, db_url, summary_json, config)
    with preflight.course_lock(root):
        if config is not None and not config.Execute.get("enabled", True):
            console.print(
                "[yellow]--no-execute: no notebook is run, so no answer is checked: scores come "
                "from the outputs as handed in (as with nbgrader autograde --no-execute).[/]"
            )
        batches = []
        for name in names:
            batch = Batch(
                root,
                name,
                students=students,
                force=force,
                db_url=db_url,
                scheduler=scheduler,
                config=config,
            )
            for student in batch.without_notebook:
                console.print(
                    f"[yellow]No notebooks were matched in submitted/{student}/{name}/: "
                    f"{student} is not graded.[/]"
                )
            if batch.students:
                batches.append(batch)
            elif not batch.without_notebook:
                console.print(f"[yellow]No submissions of {name} match {students!r}.[/]")
        if not batches:
            _write_summary(summary_json, [], 0.0)
            return []
        start, results = time.perf_counter(), []
        columns = (
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[last]}"),
        )
        # Redrawn twice a second rather than rich's ten times: five bars took ~6 ms to draw here,
        # on the core the grading competes for, and they move only when a submission finishes.
        with Progress(*columns, console=console, transient=False, refresh_per_second=2) as progress:
            tasks = {
                b.assignment: progress.add_task(b.assignment, total=len(b.students), last="")
                for b in batches
            }
            for result in run_batches(batches, jobs, on_stop=lambda: _say_stopping(console)):
                results.append(result)
                last = f"{result.student}: {result.status}"
                progress.update(tasks[result.assignment], advance=1, last=last)
        seconds = time.perf_counter() - start
        console.print(summary(results, seconds))
        _write_summary(summary_json, results, seconds)
        for result in results:  # every failure reason and flag, as plain text (no markup)
            if result.status == "failed" or result.message:
                where = f"{result.assignment}/{result.student}"
                style = "red" if result.status == "failed" else "yellow"
                console.print(f"  [{style}]{result.status}[/] ", end="")
                line = printable(f"{where}: {result.message}")
                console.print(line, markup=False, highlight=False, soft_wrap=True)
        return sorted(results, key=lambda r: (names.index(r.assignment), r.student))


def _say_stopping(console: Console) -> None:
    console.print(
        "[yellow]stopping: finishing the submissions in flight (Ctrl-C again stops them now, "
        "ungraded)[/]"
    )


def printable(text: str) -> str:
    """`text` with control characters (a student's folder name may hold escape sequences or
    newlines) shown as escapes, so what is printed cannot move the instructor's terminal."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _write_summary(path: Path | None, results: list[SubmissionResult], seconds: float) -> None:
    if path is not None:
        path.write_text(json.dumps(summary_counts(results, seconds), indent=1) + "\n")


def summary_counts(results: list[SubmissionResult], seconds: float) -> dict:
    """graded, failed, skipped, seconds, submissions_per_s, peak_kernel_rss_mb (the largest
    peak resident memory of any kernel, as its template saw it; null when none ran)."""
    counts = {status: sum(r.status == status for r in results) for status in ("graded", "failed")}
    peaks = [r.kernel_peak_rss_mb for r in results if r.kernel_peak_rss_mb]
    return {
        **counts,
        "skipped": len(results) - counts["graded"] - counts["failed"],
        "seconds": seconds,
        "submissions_per_s": len(results) / seconds if seconds else 0.0,
        "peak_kernel_rss_mb": max(peaks) if peaks else None,
    }


def summary(results: list[SubmissionResult], seconds: float) -> str:
    counts = summary_counts(results, seconds)
    peak = counts["peak_kernel_rss_mb"]
    return (
        f"graded {counts['graded']}, failed {counts['failed']}, skipped {counts['skipped']} "
        f"(already graded; --force regrades) in {seconds:.1f} s, "
        f"{counts['submissions_per_s']:.2f} submissions/s"
        + (f", peak kernel RSS {peak:.0f} MB" if peak else "")
    )
