"""What the grader noted about each submission (its status, flags and failure reasons), kept in
the course root so that every report shows it, whenever it is made.

A failed submission has no autograded notebook, and a graded one holds only the verifier's flags
(in its metadata), not the other notes (a kernel death, a timed-out cell, the sandbox missing).
So the grading process writes .grading-notes/<assignment>/<student>.json for every submission it
grades or fails, and the reports (flags.csv, the class report) read them back. They are kept
out of autograded/, which holds exactly what nbgrader puts there.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

FOLDER = ".grading-notes"


@dataclass(frozen=True)
class SubmissionNotes:
    student: str
    assignment: str
    status: str  # graded | failed
    notes: tuple[str, ...]  # one sentence each: flags, failure reasons, faults graded anyway


def notes_path(root: Path, assignment: str, student: str) -> Path:
    return Path(root) / FOLDER / assignment / f"{student}.json"


def write_notes(root: Path, record: SubmissionNotes) -> None:
    """Replace the submission's notes file with `record` (written whole, then renamed)."""
    path = notes_path(root, record.assignment, record.student)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"status": record.status, "notes": list(record.notes)}
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        json.dump(data, file, ensure_ascii=False, indent=1)
    os.replace(temporary, path)


def read_notes(root: Path, assignment: str) -> list[SubmissionNotes]:
    """Every submission of `assignment` with notes on file, by student; unreadable files are
    skipped (a report never fails on one)."""
    found = []
    for path in sorted((Path(root) / FOLDER / assignment).glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            status, notes = str(data["status"]), tuple(str(note) for note in data["notes"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        found.append(SubmissionNotes(path.stem, assignment, status, notes))
    return found
