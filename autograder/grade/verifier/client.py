"""How the trusted side of grading (worker/verify.py) reaches the verifiers (host.py): forked by the
kernel template like a kernel, so that grading workers never import torch, and kept from one
notebook to the next of the same assignment.

A grading process keeps its idle verifiers by the shared cells they ran (`_idle`): a notebook
takes one that ran its assignment's, or has the template fork a new one, sends its request, and
gives the verifier back once it has read the verdicts. A verifier that failed, or that says it
retires, is closed instead (it ends when its connection does)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import tempfile
import threading
import time
from typing import Any


class VerifierFailed(RuntimeError):
    """The grader could not get a notebook's verdicts: a fault of the grader, not a zero."""


MAX_IDLE = 2  # verifiers a process keeps between notebooks (the assignments it grades now)

_idle: dict[tuple[str, str], list[VerifierHost]] = {}  # (template, shared cells) -> idle ones
_lock = threading.Lock()


def shared_digest(shared: list[str]) -> str:
    return hashlib.sha256(json.dumps(shared).encode()).hexdigest()


def connect_when_listening(path: str, within: float) -> socket.socket:
    """A connection to a verifier's socket at `path` once it listens. The socket file exists
    from the verifier's bind, a moment before its listen, and a connection in between is
    refused: both are retried for `within` seconds."""
    deadline = time.monotonic() + within
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


class VerifierHost:
    """One verifier (host.py) as a grading worker drives it: forked by the kernel template like
    a kernel (without the wall-clock limit of a notebook: it serves many, each with a time
    limit of its own), one connection to it, one request at a time."""

    def __init__(self, zygote: Any, limits: dict, shared: str) -> None:
        self.zygote, self.limits, self.shared = zygote, limits, shared
        self.template = zygote.fork_path
        self.folder = ""
        self.connection: socket.socket | None = None
        self.reader: Any = None

    def start(self) -> VerifierHost:
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
        limits = {**self.limits, "wall_seconds": None}
        reply = zygote.request(
            at=self.template, op="fork", role="verifier", cmd=[], env=env, cwd=cwd,
            limits=limits, kernel_dir=self.folder,
        )  # fmt: skip
        if "error" in reply:
            self.close()
            raise VerifierFailed(f"the verifier could not start: {reply['error']}")
        try:
            self.connection = connect_when_listening(f"{self.folder}/{SOCKET}", within=30)
        except VerifierFailed:
            self.close()
            raise
        self.reader = self.connection.makefile("rb")
        return self

    def ask(self, request: dict) -> None:
        assert self.connection is not None
        try:
            self.connection.sendall((json.dumps(request) + "\n").encode())
        except OSError as error:
            raise VerifierFailed(f"the verifier did not take the request ({error})") from error

    def answer(self, wait_s: float) -> tuple[dict[str, dict[bool, Any]], bool]:
        """(grade id -> hidden -> Verdict, whether it retires); raises VerifierFailed."""
        from autograder.grade.verifier.protocol import Verdict

        assert self.connection is not None
        try:
            self.connection.settimeout(wait_s)
            line = self.reader.readline()
        except OSError as error:
            raise VerifierFailed(f"the verifier did not answer ({error})") from error
        try:
            reply = json.loads(line)
        except ValueError as error:
            raise VerifierFailed("the verifier's answer was cut off or malformed") from error
        if isinstance(reply, dict) and "error" in reply:
            raise VerifierFailed(f"the verifier refused the request: {reply['error']}")
        try:
            verdicts = {
                gid: {bool(int(hidden)): Verdict(**verdict) for hidden, verdict in checks.items()}
                for gid, checks in reply["verdicts"].items()
            }
        except (ValueError, TypeError, AttributeError, KeyError) as error:
            raise VerifierFailed("the verifier's answer was cut off or malformed") from error
        return verdicts, bool(reply.get("retire"))

    def close(self) -> None:
        """End it (it ends when its connection does) and remove its folder."""
        for closable in (self.reader, self.connection):
            if closable is not None:
                closable.close()
        self.reader = self.connection = None
        if self.folder:
            shutil.rmtree(self.folder, ignore_errors=True)


class Verification:
    """One notebook's request, sent to a verifier: `verdicts()` reads them (once); `again()`
    sends the request to a new verifier, after the first one failed."""

    def __init__(self, zygote: Any, request: dict, limits: dict, wait_s: float) -> None:
        self.zygote, self.request, self.limits, self.wait_s = zygote, request, limits, wait_s
        self.host: VerifierHost | None = None

    def start(self, fresh: bool = False) -> Verification:
        key = (self.zygote.fork_path, shared_digest(self.request["shared"]))
        host = None if fresh else _take(key)
        if host is not None:
            try:
                host.ask(self.request)
                self.host = host
                return self
            except VerifierFailed:
                host.close()  # it ended meanwhile: a new one below
        host = VerifierHost(self.zygote, self.limits, key[1]).start()
        try:
            host.ask(self.request)
        except VerifierFailed:
            host.close()
            raise
        self.host = host
        return self

    def again(self) -> Verification:
        if self.host is not None:
            self.host.close()
            self.host = None
        return Verification(self.zygote, self.request, self.limits, self.wait_s).start(fresh=True)

    def verdicts(self) -> dict[str, dict[bool, Any]]:
        """grade id -> hidden -> Verdict; raises VerifierFailed when none came."""
        host, self.host = self.host, None
        if host is None:
            raise VerifierFailed("the verifier's answer was already read")
        try:
            verdicts, retires = host.answer(self.wait_s)
        except VerifierFailed:
            host.close()
            raise
        if retires:
            host.close()
        else:
            _give_back(host)
        return verdicts


def _take(key: tuple[str, str]) -> VerifierHost | None:
    with _lock:
        hosts = _idle.get(key)
        return hosts.pop() if hosts else None


def _give_back(host: VerifierHost) -> None:
    """Keep `host` for the next notebook of its assignment; close the least recently used
    verifiers beyond MAX_IDLE."""
    key = (host.template, host.shared)
    with _lock:
        _idle.setdefault(key, []).append(host)
        _idle[key] = _idle.pop(key)  # dicts keep order: the most recently used last
        surplus = sum(len(hosts) for hosts in _idle.values()) - MAX_IDLE
        closing = []
        for oldest in list(_idle):
            while surplus > 0 and _idle[oldest]:
                closing.append(_idle[oldest].pop(0))
                surplus -= 1
            if not _idle[oldest]:
                del _idle[oldest]
    for idle in closing:
        idle.close()


def _forget_in_child() -> None:
    """In a forked process: the parent's verifiers are the parent's (their connections close
    here only), and its lock may have been held by another thread."""
    global _lock
    _idle.clear()
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_in_child)


def close_idle() -> None:
    """End every verifier this process keeps (they also end with it)."""
    with _lock:
        closing = [host for hosts in _idle.values() for host in hosts]
        _idle.clear()
    for host in closing:
        host.close()
