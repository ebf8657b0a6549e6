"""What an autograde run leaves in a course, as plain data two runs can be compared by: every
gradebook record nbgrader's autograde writes (read through nbgrader's Gradebook API, without
the random ids) and every file and folder of the course with its permissions."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from nbgrader.api import Gradebook

SQLITE = "sqlite:///"


def gradebook_record(url: str) -> dict | None:
    """Students, assignments and their notebooks, and every submission: its timestamp and
    lateness, and per notebook its scores, penalty, flags, grades and comments. None when the
    SQLite file does not exist (opening it would create it)."""
    if url.startswith(SQLITE) and not Path(url.removeprefix(SQLITE)).exists():
        return None
    with Gradebook(url) as gb:
        return {
            "students": sorted(student.id for student in gb.students),
            "assignments": {
                assignment.name: {
                    "duedate": str(assignment.duedate),
                    "notebooks": {
                        notebook.name: notebook.kernelspec for notebook in assignment.notebooks
                    },
                    "submissions": {
                        submission.student.id: _submission(submission)
                        for submission in assignment.submissions
                    },
                }
                for assignment in gb.assignments
            },
        }


def _submission(submission) -> dict:
    return {
        "timestamp": str(submission.timestamp),
        "extension": str(submission.extension),
        "total_seconds_late": submission.total_seconds_late,
        "notebooks": {
            notebook.name: {
                "score": notebook.score,
                "max_score": notebook.max_score,
                "needs_manual_grade": notebook.needs_manual_grade,
                "failed_tests": notebook.failed_tests,
                "flagged": notebook.flagged,
                "late_submission_penalty": notebook.late_submission_penalty,
                "grades": {
                    grade.name: [
                        grade.auto_score,
                        grade.manual_score,
                        grade.extra_credit,
                        grade.needs_manual_grade,
                    ]
                    for grade in notebook.grades
                },
                "comments": {
                    comment.name: [comment.auto_comment, comment.manual_comment]
                    for comment in notebook.comments
                },
            }
            for notebook in submission.notebooks
        },
    }


def file_modes(folder: Path) -> dict[str, str]:
    """Every path under `folder` (the gradebook file aside) with its permission bits."""
    return {
        str(path.relative_to(folder)) + ("/" if path.is_dir() else ""): oct(
            stat.S_IMODE(path.lstat().st_mode)
        )
        for path in sorted(folder.rglob("*"))
        if path.name != "gradebook.db"
    }


def course_record(course_dir: Path, db_url: str | None) -> dict:
    """The test's gradebooks (its `--db` one if it has one, and the course folder's default
    one) and the course folder's files."""
    return {
        "gradebook --db": gradebook_record(db_url) if db_url else None,
        "gradebook.db": gradebook_record(SQLITE + str(course_dir / "gradebook.db")),
        "files": file_modes(course_dir),
    }


def differences(expected: dict, found: dict, where: str = "") -> list[str]:
    """One line per value that differs between two records (`expected` is stock's)."""
    if isinstance(expected, dict) and isinstance(found, dict):
        lines = []
        for key in sorted(expected.keys() | found.keys(), key=str):
            if key not in found:
                lines.append(f"{where}/{key}: only stock has it ({_short(expected[key])})")
            elif key not in expected:
                lines.append(f"{where}/{key}: only hooklab has it ({_short(found[key])})")
            else:
                lines += differences(expected[key], found[key], f"{where}/{key}")
        return lines
    if expected != found:
        return [f"{where}: stock {_short(expected)}, hooklab {_short(found)}"]
    return []


def _short(value: object) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 120 else text[:117] + "..."
