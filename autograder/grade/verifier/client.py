"""How the trusted side of grading (verify.py) reaches the checks' verifiers: in the verifier
process the kernel template forks (verifier_process.py), so that grading workers never import
torch; or, in a process that has torch anyway (tests, a notebook), right here."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# The mimetype of a check's evidence output (evidence.py): defined here, outside the torch side.
EVIDENCE_MIMETYPE = "application/vnd.hooklab.evidence+json"
# A verification that takes longer than this (evidence built to be slow) fails the cell's
# verification instead of holding up the batch.
JUDGE_TIMEOUT_S = 120


@dataclass(frozen=True)
class Facts:
    """Which checks exist and which have trusted verifiers (autograder/checks/)."""

    verifiers: frozenset[tuple[str, bool]]  # (grade id, hidden) with a verifier
    independent: frozenset[tuple[str, bool]]  # ... whose verdict the notebook cannot forge
    grade_ids: frozenset[str]  # every grade id with a visible check
    hidden: frozenset[str]  # ... that also has a hidden one

    @classmethod
    def from_dict(cls, facts: dict[str, list]) -> Facts:
        return cls(
            frozenset((grade_id, bool(hidden)) for grade_id, hidden in facts["verifiers"]),
            frozenset((grade_id, bool(hidden)) for grade_id, hidden in facts["independent"]),
            frozenset(facts["grade_ids"]),
            frozenset(facts["hidden"]),
        )


class LocalVerifiers:
    """The verifiers in this process (which imports torch and every check for them)."""

    def facts(self) -> Facts:
        from autograder.grade.verifier import process as verifier_process

        return Facts.from_dict(verifier_process.facts())

    def judge(self, grade_id: str, hidden: bool, seed: int, evidence: Any) -> str:
        from autograder.grade.verifier import process as verifier_process

        return verifier_process.judge(grade_id, hidden, seed, evidence)


class RemoteVerifiers:
    """The verifier process, reached at the socket `locate(failed)` returns with its pid (asking
    the kernel template, which starts a verifier when none runs, or when the one it names as
    `failed` did not answer). One connection per thread; a request whose connection fails is sent
    once more, to a verifier located anew, so a verifier that died is replaced; if that fails too,
    the request raises."""

    def __init__(self, locate: Callable[[int | None], dict]) -> None:
        self.locate = locate
        self.local = threading.local()
        self._facts: Facts | None = None

    def facts(self) -> Facts:
        if self._facts is None:
            self._facts = Facts.from_dict(self._ask({"op": "facts"}))
        return self._facts

    def judge(self, grade_id: str, hidden: bool, seed: int, evidence: Any) -> str:
        message = {"op": "judge", "grade_id": grade_id, "hidden": hidden, "seed": seed}
        return str(self._ask({**message, "evidence": evidence})["reason"])

    def _ask(self, message: dict) -> dict:
        line = json.dumps(message) + "\n"
        problem: OSError | None = None
        for _ in range(2):
            try:
                return self._exchange(line)
            except TimeoutError as error:  # the verifier is busy with it: do not ask again
                self._forget()
                raise RuntimeError(f"the verifier process took over {JUDGE_TIMEOUT_S} s") from error
            except OSError as error:  # also a closed connection: ask a verifier located anew
                self._forget(failed=True)
                problem = error
        raise RuntimeError(f"the verifier process does not answer ({problem})")

    def _exchange(self, line: str) -> dict:
        stream = self._stream()
        stream.write(line)
        stream.flush()
        answer = stream.readline()
        if not answer:
            raise ConnectionError("the verifier process closed the connection")
        reply = json.loads(answer)
        if "error" in reply:
            raise RuntimeError(f"the verifier process says: {reply['error']}")
        return reply

    def _stream(self):
        stream = getattr(self.local, "stream", None)
        if stream is None:
            located = self.locate(getattr(self.local, "failed", None))
            self.local.failed, self.local.pid = None, located["pid"]
            connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            connection.settimeout(JUDGE_TIMEOUT_S)
            try:
                connection.connect(located["path"])
            except OSError:
                connection.close()
                raise
            stream = connection.makefile("rw")
            self.local.connection, self.local.stream = connection, stream
        return stream

    def _forget(self, failed: bool = False) -> None:
        if failed:  # the next locate() has that verifier replaced
            self.local.failed = getattr(self.local, "pid", None)
        for name in ("stream", "connection"):
            held = getattr(self.local, name, None)
            if held is not None:
                with contextlib.suppress(OSError):
                    held.close()
            setattr(self.local, name, None)


class VerifierFailed(RuntimeError):
    """The grader could not get a notebook's verdicts: a fault of the grader, not a zero."""


class NotebookVerifier:
    """The verifier of one notebook (host.py), as a grading worker drives it: forked by the
    kernel template like a kernel, sent the request once, read once. It runs while the notebook
    executes in its kernel, so its work overlaps the kernel's."""

    def __init__(self, zygote: Any, request: dict, limits: dict, wait_s: float) -> None:
        self.zygote, self.request, self.limits, self.wait_s = zygote, request, limits, wait_s
        self.folder = ""
        self.connection: socket.socket | None = None

    def start(self) -> NotebookVerifier:
        import os
        import tempfile

        from autograder.grade.sandbox.bwrap import kernel_environment
        from autograder.grade.verifier.protocol import SOCKET

        zygote = self.zygote
        self.folder = tempfile.mkdtemp(prefix="v", dir=f"{zygote.run_dir}/kernels")
        env, cwd = dict(os.environ), self.folder
        if zygote.info.get("sandboxed"):
            env, cwd = kernel_environment(env, {}), "/tmp"
            uid = zygote.info.get("kernel_uid")
            if uid is not None:  # it binds its socket there as that user
                os.chown(self.folder, uid, uid)
        reply = zygote.request(
            at=zygote.fork_path, op="fork", role="verifier", cmd=[], env=env, cwd=cwd,
            limits=self.limits, kernel_dir=self.folder,
        )  # fmt: skip
        if "error" in reply:
            raise VerifierFailed(f"the verifier could not start: {reply['error']}")
        self.connection = self._connect(f"{self.folder}/{SOCKET}")
        self.connection.sendall((json.dumps(self.request) + "\n").encode())
        return self

    def again(self) -> NotebookVerifier:
        """A new verifier for the same request (the first one failed)."""
        return NotebookVerifier(self.zygote, self.request, self.limits, self.wait_s).start()

    def _connect(self, path: str) -> socket.socket:
        import time

        deadline = time.monotonic() + 30
        while True:
            connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                connection.connect(path)
                return connection
            except (FileNotFoundError, ConnectionRefusedError):
                connection.close()
                if time.monotonic() > deadline:
                    raise VerifierFailed("the verifier did not start listening") from None
                time.sleep(0.002)

    def verdicts(self) -> dict[str, dict[bool, Any]]:
        """grade id -> hidden -> Verdict; raises VerifierFailed when none came."""
        import shutil

        from autograder.grade.verifier.protocol import Verdict

        assert self.connection is not None
        try:
            self.connection.settimeout(self.wait_s)
            with self.connection, self.connection.makefile("rb") as reader:
                line = reader.readline()
        except OSError as error:
            raise VerifierFailed(f"the verifier did not answer ({error})") from error
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
        try:
            reply = json.loads(line)
            return {
                gid: {bool(int(hidden)): Verdict(**verdict) for hidden, verdict in checks.items()}
                for gid, checks in reply.items()
            }
        except (ValueError, TypeError, AttributeError) as error:
            raise VerifierFailed("the verifier's answer was cut off or malformed") from error
