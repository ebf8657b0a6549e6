"""Warm kernels for nbclient/nbgrader: a jupyter_client provisioner whose kernels are forked by
the zygote instead of started from scratch. Everything else (ports, connection files, messages,
shutdown) is stock jupyter_client, so a notebook behaves exactly as under `nbgrader autograde`."""

from __future__ import annotations

import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from queue import Empty
from typing import Any

from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.manager import AsyncKernelManager
from jupyter_client.provisioning import LocalProvisioner
from traitlets import Dict, DottedObjectName, Type

from autograder.engine.limits import Limits
from autograder.engine.zygote import QUIET_ENV, SINGLE_THREAD_ENV

ZYGOTE_ENV = "HOOKLAB_ZYGOTE"  # a running zygote's socket, for worker processes to share


class Zygote:
    """A running zygote process and the socket it listens on (one per machine and batch)."""

    _current: Zygote | None = None

    def __init__(self, path: str | None = None) -> None:
        if path:  # a zygote some other process started and owns
            self.dir, self.path, self.process, self.peak_rss_mb = None, path, None, 0.0
            self.preloaded: set[str] = set()
            return
        self.dir = tempfile.mkdtemp(prefix="hooklab-zygote-")
        self.path = os.path.join(self.dir, "zygote.sock")
        env = {**os.environ, **SINGLE_THREAD_ENV, **QUIET_ENV}
        command = [sys.executable, "-m", "autograder.engine.zygote", self.path]
        self.process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)
        # It listens before it imports torch; requests wait until it has.
        if self.process.stdout.readline().strip() != "listening":
            raise RuntimeError("the kernel template process failed to start")
        self.peak_rss_mb = 0.0
        self.preloaded = set()

    @classmethod
    def current(cls) -> Zygote:
        """The zygote this process uses: the one named by $HOOKLAB_ZYGOTE if it is alive, else
        one of its own, started on first use and stopped when the process exits."""
        if cls._current is not None and cls._current.alive():
            return cls._current
        shared = os.environ.get(ZYGOTE_ENV)
        if shared and os.path.exists(shared) and (cls._current is None or cls._current.dir):
            cls._current = Zygote(shared)
        else:
            cls._current = Zygote()
            atexit.register(cls._current.stop)
        return cls._current

    def alive(self) -> bool:
        if self.process is not None:
            return self.process.poll() is None
        return os.path.exists(self.path)

    def request(self, **message: Any) -> dict:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.connect(self.path)
            connection.sendall((json.dumps(message) + "\n").encode())
            reply = connection.makefile("r").readline()
        if not reply:
            code = self.process.poll() if self.process else None
            raise RuntimeError(f"the kernel template process ended (exit code {code})")
        return json.loads(reply)

    def preload(self, modules: list[str]) -> None:
        """Have the template import `modules` (once per process) before it forks more kernels."""
        wanted = set(modules) - self.preloaded
        if wanted:
            self.request(op="preload", modules=sorted(wanted))
            self.preloaded |= wanted

    def stop(self) -> None:
        if self.process is None:  # not ours to stop
            return
        if self.process.poll() is None:
            try:
                self.request(op="stop")
                self.process.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
        Path(self.path).unlink(missing_ok=True)
        if os.path.isdir(self.dir):
            os.rmdir(self.dir)


class ForkedKernel:
    """What LocalProvisioner expects of a Popen, for a kernel that is the zygote's child."""

    stdin = stdout = stderr = None

    def __init__(self, zygote: Zygote, pid: int) -> None:
        self.zygote, self.pid, self.returncode = zygote, pid, None
        self.maxrss_mb: float | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            status = self.zygote.request(op="status", pid=self.pid)
            if not status.get("running", False):
                self.returncode = status.get("returncode", -1)
                self.maxrss_mb = status.get("maxrss_mb")
                self.zygote.peak_rss_mb = max(self.zygote.peak_rss_mb, self.maxrss_mb or 0.0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired("kernel", timeout)
            time.sleep(0.01)
        return self.returncode

    def send_signal(self, signum: int) -> None:
        os.kill(self.pid, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


class WarmProvisioner(LocalProvisioner):
    """Starts kernels by asking the zygote to fork one, with the command, env and cwd asked for."""

    async def launch_kernel(self, cmd: list[str], **kwargs: Any):
        zygote = Zygote.current()
        env = {**(kwargs.get("env") or os.environ), **self.parent.extra_env}
        cwd = str(kwargs.get("cwd") or os.getcwd())
        limits = Limits.from_dict(self.parent.limits).to_dict()
        reply = zygote.request(op="fork", cmd=list(cmd), env=env, cwd=cwd, limits=limits)
        self.process = ForkedKernel(zygote, int(reply["pid"]))
        self.pid = self.pgid = self.process.pid
        self.cwd = cwd
        return self.connection_info

    async def wait(self) -> int | None:
        # LocalProvisioner polls every 0.1 s; a kernel ends within milliseconds of its shutdown.
        if self.process is None:
            return 0
        while self.process.poll() is None:
            time.sleep(0.005)
        code, self.process = self.process.returncode, None
        return code


class WarmKernelClient(AsyncKernelClient):
    """jupyter_client's client, minus most of a fixed wait: once the kernel is ready, the stock
    wait_for_ready drains IOPub until it has been quiet for 0.2 s. A forked kernel says all it
    has to say at start-up within milliseconds, so 20 ms of quiet is plenty."""

    async def _async_wait_for_ready(self, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (timeout or 60)
        while True:
            self.kernel_info()
            try:
                reply = await self.shell_channel.get_msg(timeout=1)
            except Empty:
                reply = None
            if reply and reply["msg_type"] == "kernel_info_reply":
                # IOPub is a subscription: outputs sent before it is connected are lost. The
                # kernel publishes a status for every request, so one arriving proves it is.
                try:
                    await self.iopub_channel.get_msg(timeout=0.03)
                except Empty:
                    continue
                self._handle_kernel_info_reply(reply)
                break
            if not await self._async_is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {timeout} seconds")
        while True:
            try:
                await self.iopub_channel.get_msg(timeout=0.02)
            except Empty:
                return

    wait_for_ready = _async_wait_for_ready


class WarmKernelManager(AsyncKernelManager):
    """An AsyncKernelManager whose kernels come from the zygote (see WarmProvisioner)."""

    client_class = DottedObjectName("autograder.engine.warm_kernel.WarmKernelClient")
    client_factory = Type(klass="autograder.engine.warm_kernel.WarmKernelClient")

    async def _async_wait(self, pollinterval: float = 0.1) -> None:
        # The stock loop sleeps 0.1 s between checks; a killed kernel is gone within 1 ms.
        await super()._async_wait(pollinterval=0.002)

    extra_env = Dict(help="Environment variables added to the kernel's environment").tag(
        config=True
    )

    limits = Dict(help="Resource limits of each kernel (fields of engine.limits.Limits)").tag(
        config=True
    )

    async def _async_pre_start_kernel(self, **kw: Any):
        self.kernel_id = self.kernel_id or kw.pop("kernel_id", str(uuid.uuid4()))
        if self.provisioner is None:
            self.provisioner = WarmProvisioner(
                kernel_id=self.kernel_id, kernel_spec=self.kernel_spec, parent=self
            )
        return await super()._async_pre_start_kernel(**kw)
