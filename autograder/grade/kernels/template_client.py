"""The grading side of the kernel template (template.py): start it (in the sandbox when it can),
and ask it for kernels (and verifiers), preloads and statuses over its socket.

Kept apart from provisioner.py (and jupyter_client) so that a command can start the template
before it imports anything heavy: the template's import of torch is the start-up's longest path.
"""

from __future__ import annotations

import atexit
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from autograder.grade import run_folders, speedups
from autograder.grade.kernels.template import NOT_ISOLATED, QUIET_ENV, SINGLE_THREAD_ENV
from autograder.grade.sandbox.bwrap import (
    SANDBOX_ENV,
    WEAKER,
    SandboxSettings,
    bwrap_command,
    import_root,
    kernel_environment,
    shown_paths,
    template_matplotlib_folder,
)
from autograder.grade.speedups import traceback_cache

ZYGOTE_ENV = "HOOKLAB_ZYGOTE"  # a running zygote's socket, for worker processes to share


class Zygote:
    """A running zygote process and the socket it listens on (one per machine and batch).

    Its run folder holds control/zygote.sock and kernels/<kernel>/ (connection file and ipc
    sockets of each kernel). It runs in the sandbox (sandbox.py) when it can; otherwise
    `weaker` says why not, and the zygote prints that loudly once.
    """

    _current: Zygote | None = None
    _shared_only = False  # a grading worker: the grader's zygote or none (only_shared)

    def __init__(
        self,
        path: str | None = None,
        sandbox: dict | None = None,
        *,
        wait: bool = True,
        torch: bool = True,
    ) -> None:
        """`torch`: whether the template imports torch before it forks (warmup.TORCH_PACKAGES)."""
        self.peak_rss_mb, self._info = 0.0, None
        self.torch = torch
        self._templates: dict[tuple[str, ...], str] = {}  # modules -> template socket
        self._unanswered: list[socket.socket] = []
        self._launched_in_sandbox: SandboxSettings | None = None  # until it says it listens
        if path:  # a zygote some other process started and owns
            self.dir, self.path, self.process = None, path, None
            self.fork_path = path
            self.run_dir = str(Path(path).parent.parent)
            return
        settings = SandboxSettings.from_dict(sandbox)
        run_folders.sweep()  # what a killed run left: a zygote's folder holds ~13 MB
        self.dir = self.run_dir = run_folders.make("zygote")
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
        config.update(parent=os.getpid())  # unsandboxed, the zygote ends when this process does
        config.update(speedups=speedups.setting(), torch=self.torch)
        env = {**os.environ, **SINGLE_THREAD_ENV, **QUIET_ENV}
        if sandbox:  # the zygote's environment is every kernel's /proc/self/environ
            env = kernel_environment(env, {**SINGLE_THREAD_ENV, **QUIET_ENV})
            env["MPLCONFIGDIR"] = template_matplotlib_folder(self.dir, os.environ)
            root = import_root()
            env.update({"PYTHONPATH": root} if root else {})
            sandbox = [*sandbox, "--"]
        command = [*sandbox, sys.executable, "-m", "autograder.grade.kernels.template", self.path]
        command.append(json.dumps(config))
        # A session of its own: Ctrl-C at the terminal is the grading process's to handle (it
        # lets the notebooks in flight finish, then stops the template); killed with the
        # terminal's process group, their kernels would die and each wait for its time-out.
        self.process = subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, text=True, start_new_session=True
        )
        # While the template imports torch: it looks for the file only once that is done.
        if speedups.wanted("kept-traceback-sources"):
            traceback_cache.bring_in(os.path.dirname(self.path))

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
        if cls._shared_only and not (shared and os.path.exists(shared)):
            raise RuntimeError("the grader's kernel template has ended")
        if shared and os.path.exists(shared) and (cls._current is None or cls._current.dir):
            cls._current = Zygote(shared)
        else:
            cls._current = Zygote(sandbox=sandbox)
            atexit.register(cls._current.stop)
        return cls._current

    @classmethod
    def settle(cls, started_with: dict | None, wanted: dict | None) -> None:
        """Stop the zygote this process started early with the sandbox settings it guessed,
        when the run's own settings turn out to differ: the batches then start the right one."""
        if cls._current is not None and cls._current.dir and started_with != wanted:
            cls._current.stop()
            cls._current = None

    @classmethod
    def start_soon(cls, sandbox: dict | None = None, *, torch: bool = True) -> None:
        """Start this process's zygote, if it has none, without waiting for it to listen: the
        caller gets on with its own imports meanwhile; `current()` waits."""
        if cls._current is None and not os.environ.get(ZYGOTE_ENV):
            cls._current = Zygote(sandbox=sandbox, wait=False, torch=torch)
            atexit.register(cls._current.stop)

    @classmethod
    def only_shared(cls) -> None:
        """In a grading worker: use the grading process's zygote ($HOOKLAB_ZYGOTE), and never
        start one of its own. Once that one is stopped (a second Ctrl-C), a notebook already
        queued for this worker fails at once instead of waiting for a new template's torch."""
        cls._shared_only = True

    @classmethod
    def stop_started(cls) -> None:
        """Stop the zygote this process started, if any: its kernels, child templates and
        verifiers end at once (a second Ctrl-C: the instructor does not want to wait for the
        notebooks in flight)."""
        if cls._current is not None:
            cls._current.stop()

    @property
    def info(self) -> dict:
        """The zygote's own settings: sandboxed, weaker (why not), kernel_uid, scratch_mb."""
        if self._info is None:
            self._info = self.request(op="info")
        return self._info

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
        if speedups.wanted("kept-traceback-sources"):
            traceback_cache.keep(os.path.dirname(self.path))
        run_folders.remove(self.dir)
