"""Message dates parsed with `datetime.fromisoformat` rather than dateutil: jupyter_client parses
every date in every message it receives (each header and parent header), in the grading worker
and in the kernel alike. The same datetimes; anything fromisoformat does not read exactly as
jupyter_client would (no time zone, other forms) goes to jupyter_client's own parse."""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any

from autograder.grade.speedups.base import need


@functools.cache
def _date_functions() -> tuple[Any, Any]:
    """parse_date and extract_dates, calling each other and jupyter_client through this scope
    rather than through the module: a kernel reads every message it receives with them, and a
    notebook that replaces the package's functions (it can reach them) must not stop its kernel
    from reading messages (every later cell would wait for its time-out)."""
    from jupyter_client import jsonutil

    pattern, fallback, fromisoformat = (
        jsonutil.ISO8601_PAT,
        jsonutil.parse_date,
        datetime.fromisoformat,
    )

    def parse_date(text: str | None) -> Any:
        """jupyter_client's parse_date, with `datetime.fromisoformat` for the dates it writes."""
        if text is None or not pattern.match(text):
            return text
        try:
            parsed = fromisoformat(text)
        except ValueError:
            return fallback(text)
        return parsed if parsed.tzinfo else fallback(text)

    def date_or_text(text: str) -> Any:
        # ISO8601_PAT matches nothing shorter than 19 characters ("2026-11-27T09:30:05") or
        # without "-" fifth: most strings of a header (ids, names, the message type) skip it.
        if len(text) < 19 or text[4] != "-":
            return text
        return parse_date(text)

    def extract_dates(obj: Any) -> Any:
        """jupyter_client's extract_dates (the dates in a message just received), with
        parse_date. Strings are handled where they are found rather than by a call each: a
        grading worker receives some 200 messages per notebook, each with two headers."""
        if isinstance(obj, dict):
            return {
                key: date_or_text(value) if isinstance(value, str) else extract_dates(value)
                for key, value in obj.items()
            }
        if isinstance(obj, list | tuple):
            return [
                date_or_text(item) if isinstance(item, str) else extract_dates(item) for item in obj
            ]
        if isinstance(obj, str):
            return date_or_text(obj)
        return obj

    return parse_date, extract_dates


def parse_date(text: str | None) -> Any:
    """jupyter_client's parse_date, with `datetime.fromisoformat` for the dates it writes."""
    return _date_functions()[0](text)


def extract_dates(obj: Any) -> Any:
    """jupyter_client's extract_dates, with parse_date."""
    return _date_functions()[1](obj)


def install() -> None:
    from jupyter_client import jsonutil, session

    need(jsonutil, "ISO8601_PAT", "parse_date")
    need(session, "extract_dates")
    session.extract_dates = _date_functions()[1]
