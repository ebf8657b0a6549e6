"""The error a grading run reports as one sentence instead of a traceback (preflight checks,
an unreachable Dask scheduler, ...)."""


class CannotGrade(RuntimeError):
    """Input a grading run cannot start with; the message says what and where."""
