"""Ground-truth checks, one per grade id, used by the notebooks' visible and hidden test cells."""

# Importing the modules registers their checks.
from autograder.checks import (
    cnn,
    cnn_trusted,
)
from autograder.checks.registry import check, grade_ids, has_hidden

__all__ = [
    "check",
    "cnn",
    "cnn_trusted",
    "grade_ids",
    "has_hidden",
]
