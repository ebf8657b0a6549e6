"""The kernels a template (template.py) forks: each one becomes a real ipykernel within its resource
limits, or a verifier (verifier/host.py); the template keeps track of them
(signals, wall-clock limits, how each ended)."""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import socket
import sys
import time
from dataclasses import dataclass

from autograder.grade import speedups
from autograder.grade.sandbox import isolation, working_folder
from autograder.grade.sandbox.limits import Limits, end_with_parent
from autograder.grade.speedups import kernel_command_line, listed_modules


def _become_kernel(request: dict) -> None:
    """In the forked child: turn into an ipykernel started exactly as `cmd` asks, within the
    resource limits the request gives."""
    # Unsandboxed, nothing else ends it with its template: a child template killed with the
    # grader (SIGKILL) left its kernels running for good (in the sandbox the pid namespace does).
    end_with_parent()
    os.setsid()  # its own process group, so signals to the kernel reach its children too
    Limits.from_dict(request.get("limits")).apply(count_processes=request.get("sandboxed"))
    if request.get("sandboxed"):  # its working folder, in its private /tmp (working_folder.py)
        os.umask(0o022)  # so that the template, not this user, can read what it leaves there
        os.makedirs(request["cwd"], exist_ok=True)
        if request.get("shipped"):  # the files nbgrader would run the notebook beside
            working_folder.unpack(request["shipped"], request["cwd"])
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    from ipykernel import kernelapp
    from zmq.utils.garbage import gc as zmq_garbage

    from autograder.grade.speedups import kernel_output

    # pyzmq starts this thread on the first large zero-copy message (an image, evidence): after
    # a fork bomb has used up the kernel's process limit it could not, and the message would go
    # out half-sent, corrupting the next one. Started here, before any notebook code runs.
    zmq_garbage.start()
    argv = kernel_command_line.kernel_argv(request["cmd"])
    sys.argv = ["ipykernel_launcher", *argv]
    app = kernelapp.IPKernelApp.instance()  # what launch_new_instance does, with one step more
    app.initialize(argv)
    speedups.install("kernel")
    kernel_output.quiet_log(app.log)
    if "seal_fd" in request:  # sandboxed: its sockets are bound, its folder now goes read-only
        ports = [app.shell_port, app.iopub_port, app.stdin_port, app.control_port, app.hb_port]
        _sealed(request["seal_fd"], [f"{app.ip}-{port}" for port in ports])
    app.start()


def _sealed(seal_fd: int, sockets: list[str]) -> None:
    """isolation.seal_when_listening, or the end of this process before any student code."""
    try:
        isolation.seal_when_listening(seal_fd, sockets)
    except OSError as error:
        print(f"kernel set-up failed: {error}", file=sys.stderr, flush=True)
        os._exit(1)


def _become_verifier(request: dict) -> None:
    """In the forked child: become a verifier (verifier/host.py), answering one worker on a
    socket in its folder, within the same limits and isolation as a kernel. It ends with the
    template that forked it: a grader that is killed leaves no verifier waiting."""
    from autograder.grade.verifier import host

    end_with_parent()
    os.setsid()
    Limits.from_dict(request.get("limits")).apply(count_processes=request.get("sandboxed"))
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    from autograder.grade.verifier.protocol import SOCKET

    path = os.path.join(request["kernel_dir"], SOCKET)
    seal_fd = request.get("seal_fd")
    host.serve(path, on_listening=None if seal_fd is None else lambda: _sealed(seal_fd, [path]))


@dataclass
class _Kernel:
    init: int | None  # pid 1 of its pid namespace, when sandboxed
    deadline: float | None  # time.monotonic() after which it is killed
    wall_seconds: int | None
    reason: str = ""  # why the zygote killed it, if it did
    written: str = ""  # where to keep what it leaves in its working folder (working_folder.py)
    namespace: _Namespace | None = None  # its mount namespace, held from its seal to then


class _Namespace:
    """A kernel's mount namespace, held open (isolation.seal_folder_of)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class Kernels:
    """The kernels this zygote started (its children), by pid: signals, wall-clock limits, and
    how each one ended."""

    def __init__(self, config: dict) -> None:
        self.config = config
        self.running: dict[int, _Kernel] = {}
        self.inits: dict[int, int] = {}  # init pid -> its kernel's pid
        self.ended: dict[int, tuple[int, float, float, str]] = {}
        # The sockets on which sandboxed kernels ask to have their folder sealed: (folder, pid).
        self.sealing: dict[socket.socket, tuple[str, int]] = {}

    def held(self) -> list:
        """What a process this one forks must close: the sealing sockets, the namespaces."""
        namespaces = [k.namespace for k in self.running.values() if k.namespace is not None]
        return [*self.sealing, *namespaces]

    def start(self, request: dict, *inherited: socket.socket) -> int:
        request = {**request, **self.config}
        limits = Limits.from_dict(request.get("limits"))

        def close_inherited() -> None:  # a kernel must not hold another kernel's seal socket
            for held in [*inherited, *self.held()]:
                held.close()

        init = None
        if request.get("role") != "verifier":
            if speedups.installed("listed-modules"):
                listed_modules.list_loaded_modules()
            if speedups.installed("kernel-command-line"):
                kernel_command_line.parse_ahead(kernel_command_line.kernel_argv(request["cmd"]))
        # What the kernel inherits goes to the collector's permanent generation: a kernel's full
        # collections (frequent while it parses or builds figures) would otherwise walk torch's
        # and matplotlib's millions of objects each time, and copy every page they sit on.
        gc.freeze()
        become = _become_verifier if request.get("role") == "verifier" else _become_kernel
        if self.config["sandboxed"]:
            pid, init, channel = isolation.fork_isolated(request, close_inherited, become)
            self.sealing[channel] = (request["kernel_dir"], pid)
        else:
            pid = os.fork()
            if pid == 0:
                close_inherited()
                try:
                    become(request)
                finally:
                    os._exit(0)
        wall = limits.wall_seconds
        deadline = time.monotonic() + wall if wall else None
        self.running[pid] = _Kernel(init, deadline, wall, written=request.get("written") or "")
        if init is not None:
            self.inits[init] = pid
        return pid

    def seal(self, channel: socket.socket) -> None:
        """Answer the kernel asking on `channel` to have its folder sealed (isolation.py)."""
        folder, pid = self.sealing.pop(channel)
        namespace = isolation.seal_folder_of(channel, folder)
        kernel = self.running.get(pid)
        if namespace is None:
            return
        if kernel is not None and kernel.written:
            kernel.namespace = _Namespace(namespace)
        else:
            os.close(namespace)

    def reap(self) -> None:
        while True:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid in self.inits:  # its kernel is dead too (a pid namespace ends with its init)
                self.running[self.inits.pop(pid)].init = None
                continue
            kernel = self.running.pop(pid, None)
            if kernel is None:
                continue
            kill_group(pid)  # what it left in its process group
            if kernel.init is not None:  # ends its pid namespace: nothing it started survives
                del self.inits[kernel.init]
                kill_group(kernel.init)
                os.waitpid(kernel.init, 0)  # returns once every process in it is gone
            if kernel.namespace is not None:  # nothing of it runs now: keep what it wrote
                with contextlib.suppress(OSError):
                    files = isolation.files_in(
                        kernel.namespace.fd, working_folder.KERNEL_CWD, working_folder.MAX_BYTES
                    )
                    working_folder.keep(files, kernel.written)
                kernel.namespace.close()
            cpu = usage.ru_utime + usage.ru_stime
            code = os.waitstatus_to_exitcode(status)
            self.ended[pid] = (code, usage.ru_maxrss / 1024, cpu, kernel.reason)

    def stop(self) -> None:
        """Kill every kernel still running (and what it started)."""
        for pid, kernel in self.running.items():
            kill_group(pid)
            if kernel.init is not None:
                kill_group(kernel.init)
        self.reap()

    def enforce_wall_clock(self) -> float:
        """Kill every kernel past its wall-clock limit; seconds until the next deadline."""
        now, wait = time.monotonic(), 1.0
        for pid, kernel in self.running.items():
            if kernel.deadline is None or kernel.reason:
                continue
            if now >= kernel.deadline:
                kernel.reason = f"stopped at its wall-clock limit of {kernel.wall_seconds} s"
                kill_group(pid)
            else:
                wait = min(wait, kernel.deadline - now)
        return max(wait, 0.001)

    def signal(self, pid: int, signum: int) -> dict:
        if pid in self.running:
            try:
                os.killpg(pid, signum)
            except ProcessLookupError:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signum)
        return {}

    def status(self, pid: int) -> dict:
        self.reap()
        if pid in self.ended:
            code, maxrss, cpu, reason = self.ended[pid]
            return {
                "running": False,
                "returncode": code,
                "maxrss_mb": maxrss,
                "cpu_s": cpu,
                "reason": reason,
            }
        return {"running": True, "returncode": None, "maxrss_mb": None, "cpu_s": None}


def kill_group(pid: int) -> None:
    for kill in (os.killpg, os.kill):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            kill(pid, signal.SIGKILL)


def listen(path: str) -> socket.socket:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(64)
    return server
