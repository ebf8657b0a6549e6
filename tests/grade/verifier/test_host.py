"""The verifier gives every named submission, exercise by exercise, the verdicts its golden
scores say, running each answer cell on its own; and code outside an answer cell never counts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
import torch
from golden import cases, expected_scores, restored_notebook

from autograder.exercises.kit import registry
from autograder.grade.verifier.client import connect_when_listening
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
host.RETIRE_AFTER = {retire_after}
pid = os.fork()
if pid == 0:
    try:
        host.serve({path!r})
    finally:
        os._exit(0)
sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""


def _serve_requests(tmp_path, notebooks: list, retire_after: int = 400) -> list[dict]:
    """Each notebook's verdicts from one verifier, sent one after another on one connection as
    a grading worker does, until it retires; it must end on its own (status 0) once it is
    closed, or once it retired."""
    path = str(tmp_path / "verifier.sock")
    script = SERVE.format(path=path, retire_after=retire_after)
    server = subprocess.Popen([sys.executable, "-c", script])
    replies = []
    try:
        connection = connect_when_listening(path, within=60)
        with connection, connection.makefile("rb") as reader:
            for nb in notebooks:
                request = build_request(nb, seed).to_dict()
                connection.sendall((json.dumps(request) + "\n").encode())
                line = reader.readline()
                assert line, "the verifier ended without an answer"
                replies.append(json.loads(line))
                if replies[-1].get("retire"):
                    assert reader.readline() == b"", "a verifier that retired answered on"
                    break
        assert server.wait(30) == 0
    finally:
        server.kill()
    return replies


def test_an_answer_cell_cannot_end_the_verifier_and_the_other_exercises_keep_their_verdicts(
    tmp_path,
):
    nb = restored_notebook("forward_hooks", "all_correct")
    answer = next(cell for cell in nb.cells if cell.get("id") == "forward_add5")
    answer.source = KILLS_THE_VERIFIER + answer.source
    (reply,) = _serve_requests(tmp_path, [nb])
    assert set(reply["verdicts"]) == set(exercises_in(nb))
    for grade_id, by_check in reply["verdicts"].items():
        for verdict in by_check.values():
            # getppid() is 0 in the child, so the kill went to its own group, and the child is
            # its pid namespace's init, which ignores signals sent from inside it: nothing ends.
            assert verdict["passed"], (grade_id, verdict)


# Code an answer cell could hold to leave something behind for the next child of the verifier
# (the next exercise, or the next student's): files where it may write, and a process that left
# its group. /tmp itself is read-only there; its working folder is a tmpfs of its own.
LEAVES_FILES_AND_A_DAEMON = """
import os, tempfile
if "In" not in dir():
    for folder in (os.getcwd(), tempfile.gettempdir(), "/tmp", "/dev/shm"):
        try:
            open(os.path.join(folder, "left_behind.py"), "w").write("planted = True")
        except OSError:
            pass
    if os.fork() == 0:
        os.setsid()
        os.execv("/bin/sleep", ["sleep", "{marker}"])
"""
# ... and code that answers wrongly when it finds one of those files.
FINDS_THE_FILES = """
import os, tempfile
for folder in (os.getcwd(), tempfile.gettempdir(), "/tmp", "/dev/shm"):
    if os.path.exists(os.path.join(folder, "left_behind.py")):
        raise RuntimeError("found what the last child left in " + folder)
"""


def _running(marker: str) -> bool:
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as file:
                if file.read().split(b"\0")[:2] == [b"sleep", marker.encode()]:
                    return True
        except OSError:
            continue
    return False


def test_one_verifier_serves_notebooks_one_after_another_each_as_if_alone(tmp_path):
    """What an answer cell leaves (a file in /tmp, a daemon) ends with its child, so the same
    verifier judges the next notebook as a new one would: the golden verdicts, twice."""
    marker = f"{os.getpid()}.{time.monotonic_ns() % 10**6}"
    first = restored_notebook("forward_hooks", "all_correct")
    answer = next(cell for cell in first.cells if cell.get("id") == "forward_add5")
    answer.source = LEAVES_FILES_AND_A_DAEMON.format(marker=marker) + answer.source
    second = restored_notebook("forward_hooks", "all_correct")
    for cell in second.cells:
        if cell.get("id") in exercises_in(second):
            cell.source = FINDS_THE_FILES + cell.source
    blank = restored_notebook("forward_hooks", "blank")
    replies = _serve_requests(tmp_path, [first, second, blank])
    assert not _running(marker), "a daemon of an answer cell outlived its child"
    golden = {case: expected_scores("forward_hooks", case) for case in ("all_correct", "blank")}
    for reply, case in zip(replies, ("all_correct", "all_correct", "blank"), strict=True):
        assert not reply["retire"]
        for grade_id, by_check in reply["verdicts"].items():
            for hidden, verdict in by_check.items():
                cell = f"{grade_id}_{'hidden' if int(hidden) else 'test'}"
                assert verdict["passed"] == (golden[case][cell] > 0), (case, cell, verdict)


def test_a_verifier_retires_after_its_notebooks_and_says_so(tmp_path):
    nb = restored_notebook("forward_hooks", "blank")
    replies = _serve_requests(tmp_path, [nb, nb, nb], retire_after=2)
    assert [reply["retire"] for reply in replies] == [False, True]


def test_a_verifier_refuses_a_notebook_of_another_assignment(tmp_path):
    """A verifier runs one assignment's shared cells; the worker keeps one per assignment."""
    first = restored_notebook("forward_hooks", "all_correct")
    other = restored_notebook("backward_hooks", "all_correct")
    replies = _serve_requests(tmp_path, [first, other])
    assert replies[0]["verdicts"] and "another's" in replies[1]["error"]


# What a child of the verifier (as the sandbox makes it: not root) can see of and do to the
# verifier, whose end would cost the notebook its verdicts.
REACH_THE_VERIFIER = """
import ctypes, json, os, sys
from autograder.grade.sandbox import apart
os.setgroups([])
os.setresgid(65534, 65534, 65534)
os.setresuid(65534, 65534, 65534)
ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # dumpable again after the change of user
assert apart.own_namespaces()  # this process goes on as the verifier, pid 1 of its namespace
verifier = os.getpid()
ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # not dumpable, as host.serve makes it
read, write = os.pipe()
child = apart.fork_apart()
if child == 0:
    libc = ctypes.CDLL(None, use_errno=True)
    seen = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    status = open("/proc/self/status").read()
    capabilities = [l.split()[1] for l in status.splitlines() if l.startswith("CapEff")]
    others = [p for p in seen if p != os.getpid()]
    attached = [p for p in others if libc.ptrace(16, p, 0, 0) == 0]  # PTRACE_ATTACH
    try:
        os.kill(-1, 9)  # every process it may signal (not itself)
        reached = "some"
    except ProcessLookupError:
        reached = "none"
    result = {"pid": os.getpid(), "ppid": os.getppid(), "seen": seen,
              "capabilities": capabilities, "attached": attached, "kill(-1) reached": reached}
    os.write(write, json.dumps(result).encode())
    os._exit(0)
os.close(write)
result = json.loads(os.read(read, 65536))
os.waitpid(child, 0)
result["verifier_alive"] = True
print(json.dumps(result), flush=True)
os._exit(0)
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="becoming another user takes root")
def test_the_verifiers_children_cannot_see_ptrace_or_signal_it():
    ran = subprocess.run(
        [sys.executable, "-c", REACH_THE_VERIFIER], capture_output=True, text=True, timeout=60
    )
    assert ran.returncode == 0, ran
    result = json.loads(ran.stdout)
    assert result == {
        "pid": 1,  # the init of a pid namespace of its own
        "ppid": 0,  # the verifier has no pid there
        "seen": [1],  # its /proc shows that namespace only
        "capabilities": ["0000000000000000"],
        "attached": [],
        "kill(-1) reached": "none",
        "verifier_alive": True,
    }, result
