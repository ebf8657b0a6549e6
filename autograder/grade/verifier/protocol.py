"""What a grading worker and its verifier (host.py) say to each other: the request (the
notebook's cells by role, the seeds) and the verdicts. Plain data, no torch: the worker never
imports it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

SOCKET = "verifier.sock"  # in the verifier's own folder, where the grading worker connects
FLAG = "tampering suspected"


@dataclass
class ExerciseRun:
    """One exercise as the notebook has it: its cells' sources and the checks to run."""

    grade_id: str
    answer: str  # the student's answer cell
    setup: list[str] = field(default_factory=list)  # its own locked cells before the answer
    run: list[str] = field(default_factory=list)  # its locked cells between answer and checks
    checks: list[tuple[bool, int]] = field(default_factory=list)  # (hidden, seed)


@dataclass
class Request:
    shared: list[str]  # the notebook's locked cells that belong to no exercise, in order
    exercises: list[ExerciseRun]
    timeout: float = 60.0  # seconds per exercise
    language: str = "en"

    @classmethod
    def from_dict(cls, data: dict) -> Request:
        exercises = [
            ExerciseRun(**{**e, "checks": [tuple(c) for c in e["checks"]]})
            for e in data["exercises"]
        ]
        return cls(data["shared"], exercises, data.get("timeout", 60.0), data.get("language", "en"))

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Verdict:
    passed: bool
    message: str  # for the student: why it did not pass (or the pass message)
    flag: str = ""  # for the instructor: why the grader does not believe a pass, if it does not
    not_done: bool = False  # the check found the exercise not done yet (its stub, say)
    # From the grader's circumstances, not the code alone (the child timed out, was killed, or
    # its results were unreadable): not reused for another submission (worker/verdict_cache.py).
    transient: bool = False
