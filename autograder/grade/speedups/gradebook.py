"""Make nbgrader's Gradebook cheap to open in the grading process: one engine per database URL.

nbgrader opens the gradebook about eight times per submission, and every open creates an engine,
inspects and re-creates the schema, checks that the course's row exists (a query and a commit),
and disposes the engine again on close. Here the first open of a URL does all of that as
nbgrader does, and the first open for each further course id checks that course; later opens
reuse the engine (sessions stay per-instance, as in nbgrader). The same statements reach the
database, minus the repeated schema and course checks (~0.5 ms each, ~500 in a 60-notebook
batch). Nothing here deletes a course's row.
"""

from __future__ import annotations

import threading

from nbgrader import api
from sqlalchemy.orm import scoped_session, sessionmaker

from autograder.grade.speedups.base import need

_engines: dict[str, object] = {}
_courses_checked: set[tuple[str, str]] = set()  # (db URL, course id)
_lock = threading.Lock()
_nbgrader_init = api.Gradebook.__init__
_nbgrader_close = api.Gradebook.close


def _init(self, db_url: str, course_id: str = "default_course", authenticator=None) -> None:
    with _lock:
        engine = _engines.get(db_url)
        if engine is None:
            _nbgrader_init(self, db_url, course_id, authenticator)
            _engines[db_url] = self.engine
            _courses_checked.add((db_url, course_id))
            return
        checked = (db_url, course_id) in _courses_checked
    # What nbgrader's __init__ does once its engine exists and its schema is in place.
    self.engine = engine
    self.db = scoped_session(sessionmaker(autoflush=True, bind=engine, future=True))
    if not checked:
        self.check_course(course_id=course_id)
        _courses_checked.add((db_url, course_id))
    self.course_id = course_id
    self.authenticator = authenticator


def _close(self) -> None:
    if self.engine in _engines.values():
        self.db.remove()  # keep the shared engine for the next open
    else:
        _nbgrader_close(self)


def install() -> None:
    need(api.Gradebook, "check_course", "close", "__enter__")
    api.Gradebook.__init__ = _init
    api.Gradebook.close = _close


def forget(db_url: str) -> None:
    """Dispose of the engine kept for `db_url` (when a batch is done with that gradebook)."""
    with _lock:
        engine = _engines.pop(db_url, None)
        _courses_checked.difference_update({c for c in _courses_checked if c[0] == db_url})
    if engine is not None:
        engine.dispose()
