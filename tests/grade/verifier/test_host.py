"""The verifier gives every named submission, exercise by exercise, the verdicts its golden
scores say, running each answer cell on its own; and code outside an answer cell never counts."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest
import torch
from golden import cases, expected_scores, restored_notebook

from autograder.exercises.kit import registry
from autograder.grade.verifier.host import verify
from autograder.grade.verifier.request import build_request, exercises_in


def seed(grade_id: str, hidden: bool) -> int:
    return 1000 + len(grade_id) + hidden  # any seed: the judges rebuild the same inputs


CONVERTED = [(a, c) for a, c in cases() if registry.grade_ids(a)]


@pytest.mark.parametrize(("assignment", "case"), CONVERTED, ids=[f"{a}/{c}" for a, c in CONVERTED])
def test_verdicts_match_the_golden_scores(assignment, case):
    nb = restored_notebook(assignment, case)
    verdicts = verify(build_request(nb, seed))
    golden = expected_scores(assignment, case)
    got, want = {}, {}
    for grade_id in exercises_in(nb):
        for hidden, verdict in verdicts[grade_id].items():
            cell = f"{grade_id}_{'hidden' if hidden else 'test'}"
            got[cell] = (verdict.passed, verdict.message[:160])
            want[cell] = golden[cell] > 0
    assert {cell: passed for cell, (passed, _m) in got.items()} == want, got


def test_a_parallel_op_in_the_verifier_does_not_hang_the_next_child():
    """OpenMP's threads do not survive a fork: after the verifier ran a parallel op (a judge's
    matmul), mlp_report's check (parallel ops too) still finishes in its forked child."""
    (torch.rand(500, 500) @ torch.rand(500, 500)).norm()  # starts OpenMP threads here
    verdicts = verify(build_request(restored_notebook("forward_hooks", "all_correct"), seed))
    assert all(verdict.passed for verdict in verdicts["mlp_report"].values()), verdicts


def test_a_cell_outside_the_answers_cannot_pass_an_exercise():
    """A forged `check` and forged answers in a cell of the student's own: the verifier never
    runs that cell, so the untouched exercises stay at zero."""
    nb = restored_notebook("forward_hooks", "blank")
    forged = (
        "import autograder\n"
        "autograder.check = lambda *a, **k: print('✓ passed')\n"
        "answer = [x1, x2, x1 + x2]\n"
    )
    from nbformat.v4 import new_code_cell

    nb.cells.insert(3, new_code_cell(forged))
    verdicts = verify(build_request(nb, seed))
    assert verdicts["forward_collect"] and not any(
        v.passed for by_check in verdicts.values() for v in by_check.values()
    )


# Code an answer cell could hold to end the verifier that runs it on its own: in the kernel it
# does nothing; in the verifier's child it kills the parent.
# (Never `kill(-1)` here: where the children are not kept apart, a test run as root would
# kill every process of the machine.)
KILLS_THE_VERIFIER = """
import os, signal
if "In" not in dir():  # no IPython history: the answer cell runs on its own
    os.kill(os.getppid(), signal.SIGKILL)
"""
# The verifier as the kernel template starts it: forked, so with one thread (torch's import
# starts another, and a process with two cannot have a user namespace of its own).
SERVE = """
import os, sys
from autograder.grade.verifier import host
pid = os.fork()
if pid == 0:
    try:
        host.serve({path!r})
    finally:
        os._exit(0)
sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""


def test_an_answer_cell_cannot_end_the_verifier_and_the_other_exercises_keep_their_verdicts(
    tmp_path,
):
    nb = restored_notebook("forward_hooks", "all_correct")
    answer = next(cell for cell in nb.cells if cell.get("id") == "forward_add5")
    answer.source = KILLS_THE_VERIFIER + answer.source
    path = str(tmp_path / "verifier.sock")
    server = subprocess.Popen([sys.executable, "-c", SERVE.format(path=path)])
    try:
        deadline = time.monotonic() + 60
        while not os.path.exists(path) and time.monotonic() < deadline:
            time.sleep(0.01)
        with socket.socket(socket.AF_UNIX) as connection:
            connection.connect(path)
            request = build_request(nb, seed).to_dict()
            connection.sendall((json.dumps(request) + "\n").encode())
            with connection.makefile("rb") as reader:
                line = reader.readline()
        assert server.wait(30) == 0
    finally:
        server.kill()
    assert line, "the verifier ended without an answer"
    reply = json.loads(line)
    assert set(reply) == set(exercises_in(nb))
    for grade_id, by_check in reply.items():
        for verdict in by_check.values():
            if grade_id == "forward_add5":  # getppid() is 0 in the child: it killed its group
                assert not verdict["passed"] and "ended the process" in verdict["message"]
            else:
                assert verdict["passed"], (grade_id, verdict)


# What a child of the verifier (as the sandbox makes it: not root) can do to its namespace's
# init, whose end would take every later child of the verifier with it.
REACH_THE_INIT = """
import ctypes, os, sys
from autograder.grade.sandbox import isolation
pid = os.fork()  # one thread, as in a verifier
if pid == 0:
    try:
        os.setgroups([])
        os.setresgid(65534, 65534, 65534)
        os.setresuid(65534, 65534, 65534)
        ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # dumpable again after the change of user
        assert isolation.children_apart()
        child = os.fork()
        if child == 0:
            libc = ctypes.CDLL(None, use_errno=True)
            attached = libc.ptrace(16, 1, 0, 0) == 0  # PTRACE_ATTACH: pid 1 is the init
            try:
                open(f"/proc/{isolation._init}/mem", "rb").close()
                opened = True
            except OSError:
                opened = False
            print(f"attached={attached} opened={opened}", flush=True)
            os._exit(0)
        os.waitpid(child, 0)
        alive = os.waitpid(isolation._init, os.WNOHANG) == (0, 0)
        print(f"alive={alive}", flush=True)
    finally:
        os._exit(0)
os.waitpid(pid, 0)
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="becoming another user takes root")
def test_the_verifiers_children_cannot_ptrace_or_open_the_init_of_their_namespace():
    ran = subprocess.run(
        [sys.executable, "-c", REACH_THE_INIT], capture_output=True, text=True, timeout=60
    )
    assert ran.stdout.split() == ["attached=False", "opened=False", "alive=True"], ran
