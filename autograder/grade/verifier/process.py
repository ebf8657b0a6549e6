"""The trusted verifiers' own process: it judges the evidence of passing checks for the grading
workers (verify.py), so that neither they nor the grading process import torch (a second copy
of torch's start-up, ~1.3 s of CPU, and more memory in every worker).

The kernel template (zygote.py) forks it on the first "verifier" request, from the state it forks
kernels from: torch and every check and verifier imported, no kernel code run. It listens on a
socket in the zygote's control folder, which no sandboxed kernel can see (isolation.py). Like
the workers before it, it only ever reads evidence through evidence.decode, which accepts
nothing but plain data. Protocol: one JSON line per request and per answer, on a connection a
worker keeps open:
  {"op": "facts"} -> {"verifiers": [[grade_id, hidden], ...], "independent": [...],
                      "grade_ids": [...], "hidden": [...]}
  {"op": "judge", "grade_id": G, "hidden": H, "seed": S, "evidence": E} -> {"reason": "..."}
  ("" when the verifier accepts the evidence)
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import threading
from typing import Any

import torch

import autograder.checks  # noqa: F401  (imports every check and its verifier)
from autograder.checks import registry
from autograder.checks.evidence import Evidence, decode
from autograder.checks.trusted import INDEPENDENT, VERIFIERS, Suspicious


def judge(grade_id: str, hidden: bool, seed: int, evidence: Any) -> str:
    """Why the `evidence` of the check (seeded with `seed`; its output's data, as the notebook
    holds it) is not to be believed; "" when the check's verifier accepts it."""
    try:
        values = decode(evidence["data"])
        VERIFIERS[(grade_id, hidden)](Evidence.generator(seed), values)
    except Suspicious as mismatch:
        return f"the grader's own verification of {grade_id} disagrees: {mismatch}"
    except Exception as error:  # malformed evidence: not the format, bad base64, wrong sizes...
        return f"the evidence of {grade_id} is malformed ({type(error).__name__})"
    return ""


def facts() -> dict[str, list]:
    """Which checks exist and which have verifiers, as the worker's Guard needs to know."""
    grade_ids = registry.grade_ids()
    return {
        "verifiers": sorted(VERIFIERS),
        "independent": sorted(INDEPENDENT),
        "grade_ids": grade_ids,
        "hidden": [grade_id for grade_id in grade_ids if registry.has_hidden(grade_id)],
    }


def start(server: socket.socket, inherited: list) -> int:
    """In the template: fork the verifier process, to answer on the listening `server` (which
    the template then closes: a worker can connect at once); returns its pid. `inherited` (the
    template's sockets and pipes) are closed in it."""
    template = os.getpid()
    pid = os.fork()
    if pid == 0:
        try:
            for held in inherited:
                held.close()
            _serve(server, template)
        finally:
            os._exit(0)
    server.close()
    return pid


def _serve(server: socket.socket, template: int) -> None:
    """Answer every worker's connection on a thread of its own (this process never forks, so
    threads are safe here), one judgement at a time, until the template is gone."""
    torch.set_num_threads(1)  # the cores are the kernels'
    lock = threading.Lock()
    while os.getppid() == template:
        ready, _, _ = select.select([server], [], [], 1.0)
        if ready:
            connection, _ = server.accept()
            threading.Thread(target=_answer_all, args=(connection, lock), daemon=True).start()


def _answer_all(connection: socket.socket, lock: threading.Lock) -> None:
    with connection, contextlib.suppress(OSError), connection.makefile("rw") as stream:
        for line in stream:
            try:
                request = json.loads(line)
                with lock:
                    if request.get("op") == "facts":
                        answer: dict = facts()
                    else:
                        hidden = bool(request["hidden"])
                        seed, evidence = request["seed"], request["evidence"]
                        answer = {"reason": judge(request["grade_id"], hidden, seed, evidence)}
            except Exception as error:  # a request this process cannot read: say so, go on
                answer = {"error": f"{type(error).__name__}: {error}"}
            stream.write(json.dumps(answer) + "\n")
            stream.flush()
