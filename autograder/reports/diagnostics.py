"""Failed-check messages read from autograded notebooks, normalised so that one mistake groups."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import nbformat

from autograder.gradebook import CellScore
from autograder.i18n import N_

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# The headlines of CheckFailed and NotDoneYet (autograder/feedback.py), up to the message, in
# any language: `✗ <id>: ` and `… <id> <words>: `.
_PREFIX = re.compile(r"^(?:✗ [\w.-]+: |… [\w.-]+ [^:]*: )")
# feedback.describe writes tensors as tensor([v, v, …]) or tensor(v): one level of brackets.
_TENSOR = re.compile(r"tensor\((?:[^()]|\([^()]*\))*\)")
# A number that stands alone (not the 2 of `fc2` or `x2.grad`), or nan / inf.
_NUMBER = re.compile(
    r"(?<![\w.])[-+]?(?:\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|nan|inf)(?![\w])", re.IGNORECASE
)
KINDS = {"CheckFailed": N_("check failed"), "NotDoneYet": N_("not done yet")}


@dataclass(frozen=True)
class Failure:
    """One graded cell of one student's notebook that ended in an error."""

    student: str
    cell: str  # the graded cell's grade id, e.g. forward_collect_hidden
    kind: str  # "check failed", "not done yet", or another exception's name
    text: str  # the message's first line without its headline

    @property
    def exercise(self) -> str:
        return CellScore(self.cell, 0.0, 0.0).exercise

    @property
    def pattern(self) -> str:
        return normalise(self.text)


@dataclass(frozen=True)
class Diagnostic:
    """A group of failures of one exercise with the same normalised message."""

    kind: str
    pattern: str
    students: int  # how many students' notebooks show it (once per student)
    example: str  # one of the messages as a student saw it


def normalise(text: str) -> str:
    """The message with tensor values and numbers replaced, so random values don't split it."""
    text = _TENSOR.sub("tensor(…)", text)
    text = _NUMBER.sub("#", text)
    return " ".join(text.split())


def headline(output: dict) -> tuple[str, str]:
    """(kind, first line without the `✗ <id>: ` / `… <id> is not done yet: ` prefix)."""
    ename = str(output.get("ename", ""))
    lines = [_ANSI.sub("", str(line)) for line in output.get("traceback") or []]
    if ename in KINDS and lines:
        first = lines[0]
    else:  # an ordinary exception's traceback starts with decorations: use its value
        first = f"{output.get('evalue', '')}".splitlines()[0] if output.get("evalue") else ""
    first = _PREFIX.sub("", first.strip(), count=1)
    return KINDS.get(ename, ename or "error"), first


def notebook_path(root: Path, student: str, assignment: str) -> Path:
    return root / "autograded" / student / assignment / f"{assignment}.ipynb"


def read_failures(root: Path, assignment: str) -> tuple[list[Failure], list[str]]:
    """The failures in every root/autograded/<student>/<assignment>/<assignment>.ipynb, and the
    students whose notebook could not be read."""
    failures: list[Failure] = []
    unreadable: list[str] = []
    for path in sorted(root.glob(f"autograded/*/{assignment}/{assignment}.ipynb")):
        student = path.parent.parent.name
        try:
            nb = nbformat.read(path, as_version=4)
        except (OSError, ValueError):
            unreadable.append(student)
            continue
        for cell in nb.cells:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if cell.get("cell_type") != "code" or not meta.get("grade"):
                continue
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    kind, text = headline(output)
                    failures.append(Failure(student, str(meta.get("grade_id", "")), kind, text))
    return failures, unreadable


def top_diagnostics(failures: list[Failure], limit: int = 3) -> dict[str, list[Diagnostic]]:
    """Per exercise, the `limit` most frequent diagnostics, counted once per student."""
    students: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    examples: dict[tuple[str, str, str], str] = {}
    for failure in failures:
        key = (failure.exercise, failure.kind, failure.pattern)
        students[key].add(failure.student)
        examples.setdefault(key, failure.text)
    grouped: dict[str, list[Diagnostic]] = defaultdict(list)
    for (exercise, kind, pattern), who in students.items():
        example = examples[(exercise, kind, pattern)]
        grouped[exercise].append(Diagnostic(kind, pattern, len(who), example))
    return {
        exercise: sorted(found, key=lambda d: (-d.students, d.kind, d.pattern))[:limit]
        for exercise, found in grouped.items()
    }
