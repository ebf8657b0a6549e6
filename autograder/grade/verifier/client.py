"""How the trusted side of grading (worker/verify.py) reaches a notebook's verifier (host.py):
forked by the kernel template like a kernel, so that grading workers never import torch."""

from __future__ import annotations

import json
import socket
from typing import Any


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
