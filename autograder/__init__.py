"""Hooklab's autograder: ground-truth checks for the hook and apply notebooks, and their CLI."""

from autograder.checks import check
from autograder.feedback import CheckFailed, NotDoneYet

__all__ = ["CheckFailed", "NotDoneYet", "check"]
