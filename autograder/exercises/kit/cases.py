"""Checks that try an answer on several cases (fresh models, new inputs): a failure in one of
them says which case it happened in."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from autograder.feedback import CheckFailed, NotDoneYet
from autograder.i18n import _


def in_case(where: str, fn: Callable[..., Any], *args: Any) -> Any:
    """`fn(*args)` (student code, or a comparison); a failure's message starts with `where`."""
    try:
        return fn(*args)
    except NotDoneYet:
        raise
    except CheckFailed as failure:
        raise CheckFailed(
            _("{where}: {message}").format(where=where, message=failure.message),
            fix=failure.fix,
        ) from None
