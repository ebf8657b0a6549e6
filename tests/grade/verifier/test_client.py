"""A grading process keeps its verifiers from one notebook to the next of the same assignment:
one per set of shared cells, at most MAX_IDLE idle, a failed or retiring one closed, never
one of its parent's after a fork. Fakes stand in for the verifier processes."""

from __future__ import annotations

import os
from typing import ClassVar

import pytest

from autograder.grade.verifier import client
from autograder.grade.verifier.client import Verification, VerifierFailed


class FakeZygote:
    fork_path = "/run/template.sock"


class FakeHost:
    """A verifier as Verification drives it: what it was asked, what it answers."""

    started: ClassVar[list] = []
    answers: ClassVar[
        list
    ] = []  # what the next answer() calls give: (verdicts, retire) or an error

    def __init__(self, zygote, limits, shared) -> None:
        self.template, self.shared = zygote.fork_path, shared
        self.asked: list[dict] = []
        self.closed = False

    def start(self) -> FakeHost:
        FakeHost.started.append(self)
        return self

    def ask(self, request: dict) -> None:
        if self.closed:
            raise VerifierFailed("closed")
        self.asked.append(request)

    def answer(self, wait_s: float):
        outcome = FakeHost.answers.pop(0) if FakeHost.answers else ({"x": {}}, False)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def close(self) -> None:
        self.closed = True


@pytest.fixture(autouse=True)
def fakes(monkeypatch):
    monkeypatch.setattr(client, "VerifierHost", FakeHost)
    FakeHost.started, FakeHost.answers = [], []
    client._idle.clear()
    yield
    client._idle.clear()


def _verify(shared: list[str], student: str = "s") -> dict:
    request = {"shared": shared, "exercises": [], "student": student}
    return Verification(FakeZygote(), request, {}, 1.0).start().verdicts()


def test_the_notebooks_of_one_assignment_share_a_verifier():
    for student in ("s01", "s02", "s03"):
        assert _verify(["import torch"], student) == {"x": {}}
    (host,) = FakeHost.started
    assert [r["student"] for r in host.asked] == ["s01", "s02", "s03"] and not host.closed


def test_another_assignment_gets_a_verifier_of_its_own():
    _verify(["import torch"])
    _verify(["import torch", "model = 1"])
    _verify(["import torch"])
    first, second = FakeHost.started
    assert len(first.asked) == 2 and len(second.asked) == 1


def test_a_verifier_that_retires_is_closed_and_the_next_notebook_starts_another():
    FakeHost.answers = [({"x": {}}, True)]
    _verify(["a"])
    _verify(["a"])
    first, second = FakeHost.started
    assert first.closed and not second.closed


def test_a_verifier_that_fails_is_closed_and_again_starts_a_fresh_one():
    _verify(["a"])  # one idle verifier for these shared cells
    FakeHost.answers = [VerifierFailed("died")]
    verification = Verification(FakeZygote(), {"shared": ["a"], "exercises": []}, {}, 1.0).start()
    with pytest.raises(VerifierFailed):
        verification.verdicts()
    kept = FakeHost.started[0]
    assert kept.closed
    assert verification.again().verdicts() == {"x": {}}
    assert len(FakeHost.started) == 2 and not FakeHost.started[1].closed


def test_at_most_max_idle_verifiers_are_kept_the_least_recently_used_closed():
    for shared in (["a"], ["b"], ["c"]):
        _verify(shared)
    a, b, c = FakeHost.started
    assert a.closed and not b.closed and not c.closed
    assert sum(len(hosts) for hosts in client._idle.values()) == client.MAX_IDLE


def test_a_forked_process_does_not_take_its_parents_verifiers():
    _verify(["a"])
    assert client._idle
    pid = os.fork()
    if pid == 0:
        os._exit(0 if not client._idle else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert client._idle  # the parent's are still its own
