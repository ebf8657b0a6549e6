"""`hooklab autograde`: the instructor's view of a batch — progress with ETA, a summary line, and
the grades table, grades.csv and class report afterwards."""

from __future__ import annotations

import time
import warnings
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from sqlalchemy.exc import SAWarning

from autograder.engine.batch import Batch, SubmissionResult


def autograde(
    root: Path,
    assignment: str,
    *,
    students: str = "*",
    force: bool = False,
    db_url: str | None = None,
    jobs: int = 2,
    scheduler: str | None = None,
    console: Console | None = None,
) -> list[SubmissionResult]:
    """Grade every submission of `assignment`, showing progress; returns one result per student."""
    console = console or Console(stderr=True)
    # nbgrader's gradebook code makes SQLAlchemy warn about its session use; nothing to act on.
    warnings.filterwarnings("ignore", message="Object of type", category=SAWarning)
    batch = Batch(
        root, assignment, students=students, force=force, db_url=db_url, scheduler=scheduler
    )
    if not batch.students:
        console.print(f"[yellow]No submissions of {assignment} match {students!r}.[/]")
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
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task(assignment, total=len(batch.students), last="")
        for result in batch.run(jobs):
            results.append(result)
            progress.update(task, advance=1, last=f"{result.student}: {result.status}")
    console.print(summary(results, time.perf_counter() - start))
    for result in results:
        if result.status == "failed":
            console.print(f"  [red]failed[/] {result.student}: {result.message}")
    return sorted(results, key=lambda r: r.student)


def summary(results: list[SubmissionResult], seconds: float) -> str:
    counts = {status: sum(r.status == status for r in results) for status in ("graded", "failed")}
    skipped = len(results) - counts["graded"] - counts["failed"]
    rate = len(results) / seconds if seconds else 0.0
    peaks = [r.kernel_peak_rss_mb for r in results if r.kernel_peak_rss_mb]
    peak = f", peak kernel RSS {max(peaks):.0f} MB" if peaks else ""
    return (
        f"graded {counts['graded']}, failed {counts['failed']}, skipped {skipped} "
        f"(already graded; --force regrades) in {seconds:.1f} s, "
        f"{rate:.2f} submissions/s{peak}"
    )
