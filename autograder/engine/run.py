"""`hooklab autograde`: the instructor's view of a batch — progress with ETA, a summary line, and
the grades table, grades.csv and class report afterwards."""

from __future__ import annotations

import time
import warnings
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from sqlalchemy.exc import SAWarning

from autograder.engine.batch import Batch, SubmissionResult, run_batches


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
) -> list[SubmissionResult]:
    """Grade every submission of the assignments (one or several, with one set of workers),
    showing progress per assignment; returns one result per student and assignment."""
    console = console or Console(stderr=True)
    # nbgrader's gradebook code makes SQLAlchemy warn about its session use; nothing to act on.
    warnings.filterwarnings("ignore", message="Object of type", category=SAWarning)
    names = [assignments] if isinstance(assignments, str) else list(assignments)
    batches = []
    for name in names:
        batch = Batch(
            root, name, students=students, force=force, db_url=db_url, scheduler=scheduler
        )
        if batch.students:
            batches.append(batch)
        else:
            console.print(f"[yellow]No submissions of {name} match {students!r}.[/]")
    if not batches:
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
        tasks = {
            b.assignment: progress.add_task(b.assignment, total=len(b.students), last="")
            for b in batches
        }
        for result in run_batches(batches, jobs):
            results.append(result)
            last = f"{result.student}: {result.status}"
            progress.update(tasks[result.assignment], advance=1, last=last)
    console.print(summary(results, time.perf_counter() - start))
    for result in results:
        if result.status == "failed":
            where = f"{result.assignment}/{result.student}"
            console.print(f"  [red]failed[/] {where}: {result.message}")
    return sorted(results, key=lambda r: (names.index(r.assignment), r.student))


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
