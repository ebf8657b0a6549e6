"""The per-student, per-exercise score table printed after grading."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from autograder.gradebook import by_exercise, scores


def score_table(db_url: str, assignment: str, exercise_order: list[str]) -> Table:
    """One row per student, one column per exercise (in notebook order), and the total."""
    per_student = scores(db_url, assignment)
    table = Table(title=f"{assignment}: scores per exercise", title_justify="left")
    table.add_column("student", style="bold")
    for exercise in exercise_order:
        table.add_column(exercise, justify="right")
    table.add_column("total", justify="right", style="bold")
    for student, cells in sorted(per_student.items()):
        totals = by_exercise(cells)
        row = [student]
        for exercise in exercise_order:
            score, max_score = totals.get(exercise, (0.0, 0.0))
            row.append(f"{score:g}/{max_score:g}")
        total = sum(cell.score for cell in cells)
        max_total = sum(cell.max_score for cell in cells)
        row.append(f"{total:g}/{max_total:g}")
        table.add_row(*row)
    return table


def print_tables(db_url: str, orders: dict[str, list[str]], console: Console | None = None):
    console = console or Console(width=200)
    for assignment, order in orders.items():
        console.print(score_table(db_url, assignment, order))
