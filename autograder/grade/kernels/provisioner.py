"""Warm kernels for nbclient/nbgrader: a jupyter_client provisioner whose kernels are forked by
the zygote instead of started from scratch. Everything else (connection files, messages,
shutdown) is stock jupyter_client, so a notebook behaves exactly as under `nbgrader autograde`;
the kernels talk over ipc (Unix socket) transport, each in a folder of its own."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from typing import Any

import zmq
from jupyter_client.manager import AsyncKernelManager
from jupyter_client.provisioning import LocalProvisioner
from traitlets import Dict, DottedObjectName, Type, Unicode

from autograder.grade.kernels.client import quick_reconnect
from autograder.grade.kernels.template_client import Zygote
from autograder.grade.sandbox import working_folder
from autograder.grade.sandbox.bwrap import kernel_environment
from autograder.grade.sandbox.limits import Limits

TEMPLATE_GONE = "its kernel template ended"


class ForkedKernel:
    """What LocalProvisioner expects of a Popen, for a kernel that is the zygote's child."""

    stdin = stdout = stderr = None

    def __init__(self, zygote: Zygote, pid: int, template: str) -> None:
        self.zygote, self.pid, self.returncode = zygote, pid, None
        self.template = template  # the socket of the template that forked it (its parent)
        self.maxrss_mb: float | None = None

    def status(self) -> dict:
        try:
            return self.zygote.request(at=self.template, op="status", pid=self.pid)
        except (OSError, RuntimeError):
            # The template is gone (stopped by a second Ctrl-C, or died), and its kernels with
            # it: it kills them as it stops, and each dies with its parent. Said as an ended
            # kernel, so that nbclient's liveness check ends the cell now rather than raising
            # in its poller and leaving the cell to its time-out.
            return {"running": False, "returncode": -signal.SIGKILL, "reason": TEMPLATE_GONE}

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
    (in the sandbox: a filtered env, and a folder of the kernel's private /tmp as its cwd)."""

    host_cwd = ""  # the working folder asked for (in the sandbox, not the kernel's)

    async def launch_kernel(self, cmd: list[str], **kwargs: Any):
        zygote = Zygote.current(self.parent.sandbox)
        env = {**(kwargs.get("env") or os.environ), **self.parent.extra_env}
        cwd = str(kwargs.get("cwd") or os.getcwd())
        shipped = written = ""
        self.host_cwd = cwd
        if zygote.info.get("sandboxed"):
            uid = zygote.info.get("kernel_uid")
            # The files nbgrader would run the notebook beside, copied into its private /tmp,
            # and a folder for what it leaves there (working_folder.py).
            shipped = working_folder.ship(cwd, self.parent.kernel_dir, uid)
            written = working_folder.written_folder(self.parent.kernel_dir)
            env = kernel_environment(env, self.parent.extra_env)
            cwd = working_folder.KERNEL_CWD
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
            shipped=shipped,
            written=written,
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
            # The kernel has ended, and the template has kept what it wrote (forked.py).
            with contextlib.suppress(OSError):
                working_folder.bring_back(self.parent.kernel_dir, self.host_cwd)
            shutil.rmtree(self.parent.kernel_dir, ignore_errors=True)
            shutil.rmtree(working_folder.written_path(self.parent.kernel_dir), ignore_errors=True)


_KERNEL_SPECS: dict[str, Any] = {}  # kernel name -> KernelSpec, looked up once per process


class WarmKernelManager(AsyncKernelManager):
    """An AsyncKernelManager whose kernels come from the zygote (see WarmProvisioner)."""

    client_class = DottedObjectName("autograder.grade.kernels.client.WarmKernelClient")
    client_factory = Type(klass="autograder.grade.kernels.client.WarmKernelClient")

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
