"""Verdicts shared by the workers of one grading run (worker/verdict_cache.py): reused only for
the same code, never across runs or outside one, never when transient, never from an entry that
the grader did not write."""

from __future__ import annotations

import copy
import json
import os
from types import SimpleNamespace
from typing import ClassVar

import pytest
from golden import ROOT

from autograder import notebooks
from autograder.grade.verifier.host import verify
from autograder.grade.verifier.protocol import Request, Verdict
from autograder.grade.worker import verdict_cache
from autograder.grade.worker.verify import Guard

EXERCISE = {
    "grade_id": "forward_add5",
    "setup": ["add = Add()"],
    "answer": "def hook(module, input, output):\n    return output + 5",
    "run": ["add.register_forward_hook(hook)"],
    "checks": [[False, 11], [True, 12]],
}


def _key(shared=("import torch",), language="en", timeout=60.0, **changes):
    return verdict_cache.key(list(shared), {**EXERCISE, **changes}, language, timeout)


def test_the_key_is_the_code_and_how_it_is_checked_never_the_seed():
    same = _key()
    assert _key(checks=[[False, 99], [True, 98]]) == same  # other seeds
    different = [
        _key(answer=EXERCISE["answer"].replace("5", "6")),
        _key(setup=["add = Add(); add.extra = 1"]),
        _key(run=[]),
        _key(shared=("import torch", "torch.manual_seed(0)")),
        _key(checks=[[False, 11]]),  # no hidden check
        _key(grade_id="forward_collect"),
        _key(language="ko"),
        _key(timeout=5.0),
    ]
    assert same not in different and len(set(different)) == len(different)


VERDICTS = {False: Verdict(True, "passed"), True: Verdict(False, "expected 6, got 5")}


def test_nothing_is_kept_outside_a_run():
    verdict_cache.keep("d" * 64, VERDICTS)
    assert verdict_cache.known("d" * 64) is None
    with verdict_cache.shared_folder():
        assert verdict_cache.known("d" * 64) is None


def test_a_worker_forked_in_the_run_reads_what_another_kept_and_the_run_leaves_nothing():
    with verdict_cache.shared_folder() as folder:
        child = os.fork()
        if child == 0:  # another worker of the same run
            verdict_cache.keep("a" * 64, VERDICTS)
            os._exit(0)
        os.waitpid(child, 0)
        assert verdict_cache.known("a" * 64) == VERDICTS
        assert verdict_cache.known("b" * 64) is None
    assert not folder.exists()
    with verdict_cache.shared_folder():
        assert verdict_cache.known("a" * 64) is None  # a new run judges afresh


def test_transient_verdicts_are_not_kept():
    timed_out = {False: Verdict(False, "timed out", transient=True), True: VERDICTS[True]}
    with verdict_cache.shared_folder():
        verdict_cache.keep("c" * 64, timed_out)
        assert verdict_cache.known("c" * 64) is None


@pytest.mark.parametrize("forged", ["changed", "written"])
def test_an_entry_the_grader_did_not_write_is_ignored(forged):
    """What a process without the run's key leaves in the folder: a kept entry turned into a
    pass, or an entry made up from scratch."""
    with verdict_cache.shared_folder() as folder:
        if forged == "changed":
            child = os.fork()
            if child == 0:  # kept by a worker, so this process has none in memory
                verdict_cache.keep("e" * 64, VERDICTS)
                os._exit(0)
            os.waitpid(child, 0)
            entry = json.loads((folder / f"{'e' * 64}.json").read_text())
            entry["verdicts"] = entry["verdicts"].replace("false", "true")
        else:
            body = json.dumps(
                {"0": {"passed": True, "message": "", "flag": "", "transient": False}}
            )
            entry = {"verdicts": body, "mac": "0" * 64}
        (folder / f"{'e' * 64}.json").write_text(json.dumps(entry))
        assert verdict_cache.known("e" * 64) is None


class CountingVerifier:
    """The notebook's verifier run in this process; records which exercises it was asked for."""

    asked: ClassVar[list[list[str]]] = []

    def __init__(self, request: dict) -> None:
        self.request = request
        CountingVerifier.asked.append([e["grade_id"] for e in request["exercises"]])

    def verdicts(self) -> dict:
        return verify(Request.from_dict(self.request))


def _hidden_outputs(nb, student: str) -> dict:
    """The hidden test cells' outputs after `student`'s guard has verified `nb` (not executed:
    the hidden cells get the verifier's verdicts all the same)."""
    nb = copy.deepcopy(nb)
    guard = Guard(student, "forward_hooks", "course secret", run_verifier=CountingVerifier)
    guard.prepare(nb, SimpleNamespace())
    guard.verify(nb)
    return {
        cell.metadata["nbgrader"]["grade_id"]: cell.outputs
        for cell in nb.cells
        if cell.metadata.get("nbgrader", {}).get("grade_id", "").endswith("_hidden")
    }


def test_a_second_student_with_the_same_code_gets_the_same_verdicts_without_a_verifier(
    monkeypatch,
):
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    solution = notebooks.read(ROOT / "solutions" / "forward_hooks" / "forward_hooks.ipynb")
    changed = copy.deepcopy(solution)
    answer = next(c for c in changed.cells if c.metadata.get("nbgrader", {}).get("solution"))
    assert "answer.append(output)" in answer.source
    answer.source = answer.source.replace("answer.append(output)", "answer.append(None)")
    CountingVerifier.asked = []
    with verdict_cache.shared_folder():
        first = _hidden_outputs(solution, "alice")
        again = _hidden_outputs(solution, "bob")
        other = _hidden_outputs(changed, "carol")
    exercises = CountingVerifier.asked[0]
    assert len(exercises) > 3
    assert CountingVerifier.asked[1:] == [[answer.metadata["nbgrader"]["grade_id"]]]
    assert again == first and all("✓" in str(outputs) for outputs in first.values())
    changed_hidden = f"{answer.metadata['nbgrader']['grade_id']}_hidden"
    assert "✓" not in str(other[changed_hidden])
    assert {k: v for k, v in other.items() if k != changed_hidden} == {
        k: v for k, v in first.items() if k != changed_hidden
    }
