"""Ground-truth checks, one per grade id, used by the notebooks' visible and hidden test cells."""

# Importing the modules registers their checks.
from autograder.checks import (
)
from autograder.checks.registry import check, grade_ids, has_hidden

__all__ = [
    "check",
    "grade_ids",
    "has_hidden",
]
