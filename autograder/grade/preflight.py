"""What a grading run checks before it grades anything: that the course folder exists and its
autograded folder can be written, that the gradebook opens, that every assignment named is one
the gradebook or the submissions know, and that the summary file asked for can be written; and,
while it grades, that no other run grades the same course (`course_lock`).
Each problem is one sentence (CannotGrade), which the command prints instead of a traceback."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from nbgrader.api import Gradebook
from nbgrader.coursedir import CourseDirectory
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from traitlets.config import Config

from autograder.grade.grader.batch import submitted_students
from autograder.grade.problems import CannotGrade
from autograder.grade.settings import load_config

__all__ = ["CannotGrade", "check", "course_lock"]


def check(
    root: Path,
    assignments: list[str],
    db_url: str | None = None,
    summary: Path | None = None,
    config: Config | None = None,
) -> None:
    """Raise CannotGrade when the run could not grade anything sensible, or could not write its
    `summary` file at the end; else return."""
    if not root.is_dir():
        raise CannotGrade(f"no course folder at {root}")
    if summary is not None and not summary.parent.is_dir():
        raise CannotGrade(f"cannot write the summary to {summary}: no folder {summary.parent}")
    coursedir = CourseDirectory(config=load_config(root, db_url, config))
    if folder := _unwritable(Path(coursedir.root) / coursedir.autograded_directory):
        raise CannotGrade(
            f"cannot write in {folder} (permission denied), where the autograded notebooks go: "
            f"make the course folder writable for this user"
        )
    url = coursedir.db_url
    if _missing_sqlite_file(url):  # opening it would create it: a run that stops leaves none
        known = []
    else:
        try:
            with Gradebook(url, coursedir.course_id) as gradebook:
                known = sorted(assignment.name for assignment in gradebook.assignments)
        except (SQLAlchemyError, ImportError) as error:  # ImportError: no driver for the URL
            raise CannotGrade(
                f"cannot open the gradebook {_shown(url)}: {_reason(error)}"
            ) from None
    # One that only has submissions is left to fail per submission, with nbgrader's message.
    unknown = [
        name
        for name in assignments
        if name not in known and not submitted_students(coursedir, name, "*")
    ]
    if unknown:
        has = ", ".join(known) or "none yet (run `nbgrader generate_assignment` first)"
        raise CannotGrade(
            f"no assignment {', '.join(unknown)} in the gradebook {_shown(url)} and no "
            f"submissions of it in {Path(coursedir.root) / coursedir.submitted_directory}; "
            f"the gradebook's assignments: {has}"
        )


@contextlib.contextmanager
def course_lock(root: Path) -> Iterator[None]:
    """Hold the course for one grading run: a second run on the same course (its gradebook
    rows, its autograded/ folders) is refused in one sentence instead of racing this one. The
    lock is on the course folder itself (flock), so no file is added to the course, and it
    ends with the process that holds it, however that ends."""
    descriptor = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise CannotGrade(
                f"another hooklab autograde is grading {root} now; run this one when it is done"
            ) from None
        yield
    finally:
        os.close(descriptor)


def _unwritable(folder: Path) -> Path | None:
    """`folder`, or the nearest folder above it that exists, when this user cannot add to it:
    found before grading, a read-only course is one sentence, not one failure per submission."""
    while not folder.exists() and folder.parent != folder:
        folder = folder.parent
    return None if os.access(folder, os.W_OK | os.X_OK) else folder


def _missing_sqlite_file(url: str) -> bool:
    try:
        parsed = make_url(url)
    except ArgumentError:
        return False
    database = parsed.database
    return (
        parsed.get_backend_name() == "sqlite"
        and database not in (None, "", ":memory:")
        and not Path(database).exists()
        and Path(database).parent.is_dir()  # else opening it says why it cannot be made
    )


def _shown(url: str) -> str:
    """The URL without its password."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url


def _reason(error: Exception) -> str:
    """The driver's own words (its first line), without SQLAlchemy's wrapping and links."""
    cause = getattr(error, "orig", None) or error
    lines = str(cause).strip().splitlines()
    return lines[0] if lines else type(cause).__name__
