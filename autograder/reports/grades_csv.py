"""The class's grades as one CSV file: a row per student, a column per exercise and totals."""

from __future__ import annotations

import csv
from pathlib import Path

from nbgrader.api import Gradebook

from autograder.grade.grader.notes import read_notes
from autograder.gradebook import by_exercise, scores


def all_students(db_url: str) -> list[str]:
    """Every student in the gradebook, sorted, whether or not they submitted anything."""
    with Gradebook(db_url) as gradebook:
        return sorted(student.id for student in gradebook.students)


# A spreadsheet runs a cell that starts with one of these as a formula (OWASP's CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def text_cell(text: str) -> str:
    """`text` as a CSV cell a spreadsheet shows as text: a leading formula character is escaped
    with a single quote, as OWASP recommends. Student ids come from folder names, which the
    students chose."""
    return f"'{text}" if text.startswith(FORMULA_STARTS) else text


def number(value: float) -> str:
    """A score as written in the CSV: 3 rather than 3.0, at most 10 significant digits."""
    return str(int(value)) if float(value).is_integer() else f"{value:.10g}"


def header(assignments: dict[str, list[str]]) -> list[str]:
    """student, every exercise (in the given order), <assignment>_total per assignment, total."""
    columns = ["student"]
    columns += [exercise for exercises in assignments.values() for exercise in exercises]
    columns += [f"{assignment}_total" for assignment in assignments]
    columns.append("total")
    repeated = sorted({c for c in columns if columns.count(c) > 1})
    if repeated:
        raise ValueError(f"CSV column names must be unique; repeated: {', '.join(repeated)}")
    return columns


def grade_rows(db_url: str, assignments: dict[str, list[str]]) -> list[list[str]]:
    """The CSV's rows after the header. An assignment a student did not submit gives empty cells
    (not 0), so a missing submission and a zero score stay apart; the same for `total` when the
    student submitted nothing. An assignment's total is the sum of all its graded cells."""
    per_assignment = {assignment: scores(db_url, assignment) for assignment in assignments}
    rows = []
    for student in all_students(db_url):
        exercise_cells: list[str] = []
        total_cells: list[str] = []
        grand_total: float | None = None
        for assignment, exercises in assignments.items():
            cells = per_assignment[assignment].get(student)
            if cells is None:
                exercise_cells += [""] * len(exercises)
                total_cells.append("")
                continue
            totals = by_exercise(cells)
            exercise_cells += [number(totals.get(e, (0.0, 0.0))[0]) for e in exercises]
            assignment_total = sum(cell.score for cell in cells)
            total_cells.append(number(assignment_total))
            grand_total = (grand_total or 0.0) + assignment_total
        total = "" if grand_total is None else number(grand_total)
        rows.append([student, *exercise_cells, *total_cells, total])
    return rows


def write_grades_csv(db_url: str, assignments: dict[str, list[str]], path: Path) -> Path:
    """Write the grades of every student in the gradebook to `path` (UTF-8 CSV, one header row).

    `assignments` maps each assignment to its exercise ids in column order (for instance from
    `autograder.cli.exercise_order`); an exercise's score is the sum of its graded cells.
    """
    columns = header(assignments)
    rows = grade_rows(db_url, assignments)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow([text_cell(column) for column in columns])
        writer.writerows([text_cell(row[0]), *row[1:]] for row in rows)
    return path


FLAG_COLUMNS = ["assignment", "student", "status", "note"]


def flag_rows(root: Path, assignments: list[str]) -> list[list[str]]:
    """One row per note of each submission (a flag, a failure reason, a fault graded anyway),
    and one for a failed submission without any; in assignment, then student order."""
    rows = []
    for assignment in assignments:
        for record in read_notes(root, assignment):
            notes = record.notes or (("",) if record.status == "failed" else ())
            rows += [[assignment, record.student, record.status, note] for note in notes]
    return rows


def write_flags_csv(root: Path, assignments: list[str], path: Path) -> Path:
    """Write every submission's flags and failure reasons to `path` (UTF-8 CSV, one header row),
    for the instructor to filter: what grades.csv's scores do not say."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(FLAG_COLUMNS)
        writer.writerows([text_cell(cell) for cell in row] for row in flag_rows(root, assignments))
    return path
