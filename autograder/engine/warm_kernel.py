"""Warm kernels for nbclient/nbgrader: a jupyter_client provisioner whose kernels are forked by
the zygote instead of started from scratch. Everything else (connection files, messages,
shutdown) is stock jupyter_client, so a notebook behaves exactly as under `nbgrader autograde`;
the kernels talk over ipc (Unix socket) transport, each in a folder of its own."""

from __future__ import annotations

import atexit
import errno
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import zmq
from jupyter_client.manager import AsyncKernelManager
from jupyter_client.provisioning import LocalProvisioner
from traitlets import Dict, DottedObjectName, Type, Unicode

from autograder.engine.kernel_client import quick_reconnect
from autograder.engine.limits import Limits
from autograder.engine.sandbox import (
    SANDBOX_ENV,
    WEAKER,
    SandboxSettings,
    bwrap_command,
    import_root,
    kernel_environment,
    shown_paths,
    template_matplotlib_folder,
)
from autograder.engine.verifier_client import RemoteVerifiers
from autograder.engine.zygote import NOT_ISOLATED, QUIET_ENV, SINGLE_THREAD_ENV

ZYGOTE_ENV = "HOOKLAB_ZYGOTE"  # a running zygote's socket, for worker processes to share


class Zygote:
    """A running zygote process and the socket it listens on (one per machine and batch).

    Its run folder holds control/zygote.sock and kernels/<kernel>/ (connection file and ipc
    sockets of each kernel). It runs in the sandbox (sandbox.py) when it can; otherwise
    `weaker` says why not, and the zygote prints that loudly once.
    """

    _current: Zygote | None = None

    def __init__(
        self, path: str | None = None, sandbox: dict | None = None, *, wait: bool = True
    ) -> None:
        self.peak_rss_mb, self._info = 0.0, None
        self._templates: dict[tuple[str, ...], str] = {}  # modules -> template socket
        self._unanswered: list[socket.socket] = []
        self._verifiers: RemoteVerifiers | None = None
        self._launched_in_sandbox: SandboxSettings | None = None  # until it says it listens
        if path:  # a zygote some other process started and owns
            self.dir, self.path, self.process = None, path, None
            self.fork_path = path
            self.run_dir = str(Path(path).parent.parent)
            return
        settings = SandboxSettings.from_dict(sandbox)
        self.dir = self.run_dir = tempfile.mkdtemp(prefix="hooklab-zygote-")
        for folder in (self.dir, f"{self.dir}/control", f"{self.dir}/kernels"):
            os.makedirs(folder, exist_ok=True)
            os.chmod(folder, 0o711)  # kernels (another user) reach their own folder only
        self.path = self.fork_path = os.path.join(self.dir, "control", "zygote.sock")
        command, why = self._sandbox_command(settings)
        if command is None:
            self._start_weaker(settings, why)
            return
        self._launch(command, settings, None)
        self._launched_in_sandbox = settings
        if wait:
            self.ready()

    def ready(self) -> None:
        """Wait until the zygote listens. One started in the sandbox first checks that it can
        isolate a kernel there (isolation.self_test); if it cannot, or does not start, a zygote
        without the sandbox replaces it, loudly (or, when the sandbox is required, this raises)."""
        settings, self._launched_in_sandbox = self._launched_in_sandbox, None
        if settings is None:
            return
        line = self._first_line()
        if line == "listening":
            return
        why = line.removeprefix(NOT_ISOLATED) if line.startswith(NOT_ISOLATED) else ""
        why = why or "the kernel template did not start inside bubblewrap"
        if settings.mode == "bwrap":
            raise RuntimeError(f"the sandbox is required but cannot run: {why}")
        self._start_weaker(settings, why)

    def _sandbox_command(self, settings: SandboxSettings) -> tuple[list[str] | None, str | None]:
        """The bwrap command to start the zygote with, or why there is none."""
        if settings.mode == "off":
            return None, f"the sandbox is turned off (mode off or {SANDBOX_ENV}=off)"
        command = bwrap_command(self.dir, settings)
        if command is not None:
            return command, None
        why = "bubblewrap (bwrap) is not installed"
        if settings.mode == "bwrap":
            raise RuntimeError(f"the sandbox is required but cannot run: {why}")
        return None, why

    def _start_weaker(self, settings: SandboxSettings, why: str) -> None:
        weaker = WEAKER.format(why=why)
        print(f"WARNING: {weaker}", file=sys.stderr, flush=True)
        self._launch([], settings, weaker)
        if self._first_line() != "listening":
            raise RuntimeError("the kernel template process failed to start")

    def _first_line(self) -> str:
        """What the launched zygote says first: "listening", or else why not (then it is gone)."""
        line = self.process.stdout.readline().strip()
        if line != "listening":
            self.process.kill()
            self.process.wait()
        return line

    def _launch(self, sandbox: list[str], settings: SandboxSettings, weaker: str | None) -> None:
        """Start the zygote (in `sandbox`, a bwrap command, unless empty); it prints "listening"
        once it takes requests (before it imports torch: they wait until it has)."""
        uid = settings.kernel_uid if sandbox and os.geteuid() == 0 else None
        config = {"sandboxed": bool(sandbox), "weaker": weaker, "run_dir": self.dir}
        config.update(kernel_uid=uid, scratch_mb=settings.scratch_mb)
        config.update(shown=shown_paths(settings) if sandbox else [])
        env = {**os.environ, **SINGLE_THREAD_ENV, **QUIET_ENV}
        if sandbox:  # the zygote's environment is every kernel's /proc/self/environ
            env = kernel_environment(env, {**SINGLE_THREAD_ENV, **QUIET_ENV})
            env["MPLCONFIGDIR"] = template_matplotlib_folder(self.dir, os.environ)
            root = import_root()
            env.update({"PYTHONPATH": root} if root else {})
            sandbox = [*sandbox, "--"]
        command = [*sandbox, sys.executable, "-m", "autograder.engine.zygote", self.path]
        command.append(json.dumps(config))
        self.process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)

    @classmethod
    def current(cls, sandbox: dict | None = None) -> Zygote:
        """The zygote this process uses: the one named by $HOOKLAB_ZYGOTE if it is alive, else
        one of its own (with the `sandbox` settings), started on first use and stopped when the
        process exits."""
        if cls._current is not None:
            cls._current.ready()
            if cls._current.alive():
                return cls._current
        shared = os.environ.get(ZYGOTE_ENV)
        if shared and os.path.exists(shared) and (cls._current is None or cls._current.dir):
            cls._current = Zygote(shared)
        else:
            cls._current = Zygote(sandbox=sandbox)
            atexit.register(cls._current.stop)
        return cls._current

    @classmethod
    def start_soon(cls, sandbox: dict | None = None) -> None:
        """Start this process's zygote, if it has none, without waiting for it to listen: the
        caller gets on with its own imports meanwhile; `current()` waits."""
        if cls._current is None and not os.environ.get(ZYGOTE_ENV):
            cls._current = Zygote(sandbox=sandbox, wait=False)
            atexit.register(cls._current.stop)

    @property
    def info(self) -> dict:
        """The zygote's own settings: sandboxed, weaker (why not), kernel_uid, scratch_mb."""
        if self._info is None:
            self._info = self.request(op="info")
        return self._info

    @property
    def verifiers(self) -> RemoteVerifiers:
        """The checks' trusted verifiers, in the process this zygote forks for them."""
        if self._verifiers is None:
            self._verifiers = RemoteVerifiers(lambda: self.request(op="verifier")["path"])
        return self._verifiers

    @property
    def weaker(self) -> str | None:
        """Why kernels from this zygote are not sandboxed (None when they are)."""
        return self.info.get("weaker")

    def alive(self) -> bool:
        if self.process is not None:
            return self.process.poll() is None
        return os.path.exists(self.path)

    def _send(self, message: dict, at: str | None = None) -> socket.socket:
        """A connection to this template (or the one listening `at`) that `message` went over."""
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            connection.connect(at or self.path)
            connection.sendall((json.dumps(message) + "\n").encode())
        except OSError:
            connection.close()
            raise
        return connection

    def request(self, at: str | None = None, **message: Any) -> dict:
        """Send `message` to this template, or to the one listening `at` (a child template)."""
        with self._send(message, at) as connection:
            reply = connection.makefile("r").readline()
        if not reply:
            code = self.process.poll() if self.process else None
            raise RuntimeError(f"the kernel template process ended (exit code {code})")
        return json.loads(reply)

    def preload(self, modules: list[str]) -> None:
        """Have the next kernels start with `modules` imported: they come from the template
        that the zygote says has them (itself, or a child template it forked to import them)."""
        wanted = tuple(dict.fromkeys(modules))
        if wanted not in self._templates:
            reply = self.request(op="preload", modules=list(wanted))
            self._templates[wanted] = reply.get("path") or self.path
        self.fork_path = self._templates[wanted]

    def preload_soon(self, modules: list[str]) -> None:
        """Have the zygote start a child template importing `modules` (in this order) without
        waiting for it: that runs while the first notebooks do, so the later ones (which ask
        with preload()) find their modules in instead of waiting for them."""
        if not modules:
            return
        connection = self._send({"op": "preload", "modules": modules})
        self._unanswered.append(connection)  # its answer is not needed; closed by stop()

    def stop(self) -> None:
        for connection in self._unanswered:
            connection.close()
        if self.process is None:  # not ours to stop
            return
        if self.process.poll() is None:
            try:
                self.request(op="stop")
                self.process.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


class ForkedKernel:
    """What LocalProvisioner expects of a Popen, for a kernel that is the zygote's child."""

    stdin = stdout = stderr = None

    def __init__(self, zygote: Zygote, pid: int, template: str) -> None:
        self.zygote, self.pid, self.returncode = zygote, pid, None
        self.template = template  # the socket of the template that forked it (its parent)
        self.maxrss_mb: float | None = None

    def status(self) -> dict:
        return self.zygote.request(at=self.template, op="status", pid=self.pid)

    def poll(self) -> int | None:
        if self.returncode is None:
            status = self.status()
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
        # The zygote signals the kernel's process group: in the sandbox, the kernel's pid means
        # nothing outside its namespaces.
        try:
            self.zygote.request(at=self.template, op="signal", pid=self.pid, signum=int(signum))
        except OSError as error:  # no zygote, so no kernel: what os.kill would say
            raise ProcessLookupError(errno.ESRCH, "the kernel template is gone") from error

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


class WarmProvisioner(LocalProvisioner):
    """Starts kernels by asking the zygote to fork one, with the command, env and cwd asked for
    (in the sandbox: a filtered env, and the kernel's private /tmp as its cwd)."""

    async def launch_kernel(self, cmd: list[str], **kwargs: Any):
        zygote = Zygote.current(self.parent.sandbox)
        env = {**(kwargs.get("env") or os.environ), **self.parent.extra_env}
        cwd = str(kwargs.get("cwd") or os.getcwd())
        if zygote.info.get("sandboxed"):
            env, cwd = kernel_environment(env, self.parent.extra_env), "/tmp"
            uid = zygote.info.get("kernel_uid")
            if uid is not None:  # the kernel, another user, reads it and binds sockets there
                os.chown(self.parent.kernel_dir, uid, uid)
                os.chown(self.parent.connection_file, uid, uid)
        limits = Limits.from_dict(self.parent.limits).to_dict()
        template = zygote.fork_path
        reply = zygote.request(
            at=template,
            op="fork",
            cmd=list(cmd),
            env=env,
            cwd=cwd,
            limits=limits,
            kernel_dir=self.parent.kernel_dir,
        )
        if "error" in reply:
            raise RuntimeError(f"the kernel could not start: {reply['error']}")
        self.process = ForkedKernel(zygote, int(reply["pid"]), template)
        self.pid = self.process.pid
        self.pgid = None  # signals go through the zygote (ForkedKernel.send_signal)
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

    async def cleanup(self, restart: bool = False) -> None:
        await super().cleanup(restart)
        if not restart and self.parent.kernel_dir:
            shutil.rmtree(self.parent.kernel_dir, ignore_errors=True)


_KERNEL_SPECS: dict[str, Any] = {}  # kernel name -> KernelSpec, looked up once per process


class WarmKernelManager(AsyncKernelManager):
    """An AsyncKernelManager whose kernels come from the zygote (see WarmProvisioner)."""

    client_class = DottedObjectName("autograder.engine.kernel_client.WarmKernelClient")
    client_factory = Type(klass="autograder.engine.kernel_client.WarmKernelClient")

    def _context_default(self) -> zmq.Context:
        return quick_reconnect(super()._context_default())

    async def _async_wait(self, pollinterval: float = 0.1) -> None:
        # The stock loop sleeps 0.1 s between checks; a killed kernel is gone within 1 ms.
        await super()._async_wait(pollinterval=0.002)

    extra_env = Dict(help="Environment variables added to the kernel's environment").tag(
        config=True
    )

    limits = Dict(help="Resource limits of each kernel (fields of engine.limits.Limits)").tag(
        config=True
    )

    sandbox = Dict(help="How kernels are isolated (fields of engine.sandbox.SandboxSettings)").tag(
        config=True
    )

    kernel_dir = Unicode("", help="This kernel's folder: connection file and ipc sockets")

    @property
    def kernel_spec(self):
        # The stock lookup lists every kernel folder on disk (and imports IPython to find its
        # own) for every kernel; a batch's kernels all use the same few specs.
        if self._kernel_spec is None and self.kernel_name:
            spec = _KERNEL_SPECS.get(self.kernel_name)
            if spec is None:
                spec = self.kernel_spec_manager.get_kernel_spec(self.kernel_name)
                _KERNEL_SPECS[self.kernel_name] = spec
            self._kernel_spec = spec
        return self._kernel_spec

    async def _async_pre_start_kernel(self, **kw: Any):
        self.kernel_id = self.kernel_id or kw.pop("kernel_id", str(uuid.uuid4()))
        # The kernel talks over Unix sockets in a folder of its own (in the sandbox it has no
        # network at all), and its connection file (with its HMAC key) lives there too.
        zygote = Zygote.current(self.sandbox)
        self.kernel_dir = tempfile.mkdtemp(prefix="k", dir=f"{zygote.run_dir}/kernels")
        self.transport = "ipc"
        self.connection_file = f"{self.kernel_dir}/kernel.json"
        self.ip = f"{self.kernel_dir}/ipc"
        if self.provisioner is None:
            self.provisioner = WarmProvisioner(
                kernel_id=self.kernel_id, kernel_spec=self.kernel_spec, parent=self
            )
        return await super()._async_pre_start_kernel(**kw)
