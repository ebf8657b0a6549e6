"""The kernel template ("zygote"): a process that imports torch and ipykernel once, then forks a
fresh, real ipykernel for every request, so no kernel pays for `import torch` again.

Protocol: one JSON line per connection on a Unix socket.
  {"op": "fork", "cmd": [...], "env": {...}, "cwd": "...", "limits": {...},
   "kernel_dir": "...", "shipped": "...", "written": "..."} -> {"pid": N} or {"error": "..."}
  ("limits" is a Limits as a dict, see limits.py; missing means the defaults. "kernel_dir" holds
  the kernel's connection file and ipc sockets; when sandboxed, it is all the kernel sees of the
  run folder. "shipped", optional: a folder in it whose files the kernel copies into its cwd;
  "written", optional: a folder where, once the kernel has ended, the zygote puts the files left
  in its cwd; both sandbox/working_folder.py.)
  {"op": "status", "pid": N} -> {"running": bool, "returncode": int|null, "maxrss_mb": float|null,
                                 "cpu_s": float|null, "reason": "why the zygote killed it"}
  {"op": "signal", "pid": N, "signum": S} -> {}  (to the kernel's process group)
  {"op": "info"} -> the zygote's configuration: {"sandboxed": bool, "weaker": why not, ...}
The zygote kills a kernel that outlives its wall-clock limit (Limits.wall_seconds). When it
runs in the sandbox, each kernel is isolated further by isolation.py before it starts.
  {"op": "preload", "modules": [...]} -> {"failed": [...], "path": "..."}  (the socket of a
  template with those modules imported, to send "fork", "status" and "signal" requests to: this
  one if it has them, else a child template that imports them, in the order given, while this
  one goes on serving; answered when they are all in)
The zygote must stay single-threaded: fork() copies only the calling thread, and a lock held by
another thread would stay locked forever in the child. The parent therefore starts it with
OpenBLAS/OpenMP limited to one thread, and it never starts a thread itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import sys
from typing import Any

from autograder.grade import collector, speedups
from autograder.grade.kernels import warmup as template_warmup
from autograder.grade.kernels.forked import Kernels, kill_group, listen
from autograder.grade.sandbox import isolation

SINGLE_THREAD_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
NOT_ISOLATED = "not isolated: "  # what a sandboxed zygote says instead of "listening", and why
# Preloading the kernel's debugger would otherwise print a note about frozen modules on stderr.
QUIET_ENV = {"PYDEVD_DISABLE_FILE_VALIDATION": "1"}


class _Templates:
    """Kernel templates forked from this one to import more modules ("preload"), so that the
    import runs on another core while this template goes on forking kernels and answering
    (matplotlib.pyplot takes a third of a second). A request whose modules this template has is
    answered at once with its own socket; otherwise with a child template's socket, once that
    child has imported them (a child that has them all is reused)."""

    def __init__(self, path: str, config: dict) -> None:
        self.path, self.config = path, config
        self.children: list[dict] = []  # {"pid", "path", "modules", "ready": file, "failed"}
        self.waiting: list[tuple[socket.socket, dict, list[str]]] = []

    def request(self, connection: socket.socket, modules: list[str], held: list) -> None:
        wanted = list(dict.fromkeys(modules))
        missing = [m for m in wanted if m not in sys.modules]
        if not missing:
            _answer(connection, {"failed": [], "path": self.path})
            return
        child = next((c for c in self.children if set(missing) <= set(c["modules"])), None)
        child = child or self._start_child(wanted, [connection, *held])
        self.waiting.append((connection, child, wanted))
        self._answer_ready()

    def pending(self) -> list:
        """The ready pipes of children still importing (readable once they are done)."""
        return [c["ready"] for c in self.children if c["failed"] is None]

    def on_ready(self, pipe: Any) -> None:
        child = next(c for c in self.children if c["ready"] is pipe)
        line = pipe.readline()
        # A child that died importing answers as if every module failed: the kernels then come
        # from this template and import them themselves.
        child["failed"] = json.loads(line) if line else list(child["modules"])
        if not line:
            child["path"] = self.path
        self._answer_ready()

    def held(self) -> list:
        """What a forked process must not keep: the waiting connections and the ready pipes."""
        return [c for c, _, _ in self.waiting] + [c["ready"] for c in self.children]

    def stop(self) -> None:
        for child in self.children:
            kill_group(child["pid"])
            with contextlib.suppress(ChildProcessError):
                os.waitpid(child["pid"], 0)

    def _answer_ready(self) -> None:
        still = []
        for connection, child, wanted in self.waiting:
            if child["failed"] is None:
                still.append((connection, child, wanted))
                continue
            failed = [m for m in wanted if m in child["failed"]]
            _answer(connection, {"failed": failed, "path": child["path"]})
        self.waiting = still

    def _start_child(self, modules: list[str], inherited: list) -> dict:
        number = len(self.children) + 1
        path = os.path.join(os.path.dirname(self.path), f"zygote-{number}.sock")
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            for held in [*inherited, *self.held()]:
                held.close()
            try:
                _serve_child(path, self.config, modules, write)
            finally:
                os._exit(0)
        os.close(write)
        child = {"pid": pid, "path": path, "modules": modules, "failed": None}
        child["ready"] = os.fdopen(read, "r")
        self.children.append(child)
        return child


def _serve_child(path: str, config: dict, modules: list[str], ready: int) -> None:
    """In a child template: listen, import `modules`, say which failed, then serve as a
    template (forks wait in the backlog until the imports are done)."""
    import importlib

    server = listen(path)
    failed = []
    with collector.paused_for_imports():
        if "torch" in modules and "torch" not in sys.modules:  # a course not seen to use it
            speedups.install("torch")
        for module in modules:
            try:
                importlib.import_module(module)
            except Exception:  # a notebook's import that fails here fails in its kernel as usual
                failed.append(module)
        if "matplotlib.pyplot" in sys.modules:  # else there is nothing to draw, or to speed up
            speedups.install("figures")  # first: the warm-up figure's fonts are the kernels'
        template_warmup.warm_figure_rendering()
        template_warmup.read_course_data()
    template_warmup.register_modules()
    os.write(ready, (json.dumps(failed) + "\n").encode())
    os.close(ready)
    _serve_requests(server, path, config, parent=os.getppid())


def _answer(connection: socket.socket, reply: dict) -> None:
    with connection, contextlib.suppress(OSError):  # the asker may have gone (preload_soon)
        connection.sendall((json.dumps(reply) + "\n").encode())


def serve(path: str, config: dict) -> None:
    if config.get("sandboxed"):
        # In the sandbox, kernels are isolated further (isolation.py): try it on a do-nothing
        # kernel first. If it fails, the grader starts a zygote without the sandbox instead.
        kernels = os.path.join(config["run_dir"], "kernels")
        why = isolation.self_test(kernels, config.get("kernel_uid"), config.get("shown", []))
        if why:
            print(f"{NOT_ISOLATED}{why}", flush=True)
            return
    # Listen first, then preload: the grader can send its first requests (which wait in the
    # backlog) and get on with its own work while torch is imported here.
    server = listen(path)
    print("listening", flush=True)
    _stdout_to_devnull()
    with collector.paused_for_imports():
        # The grader has said which speed-ups are off and why.
        speedups.configure(config.get("speedups"), said=True)
        speedups.install("template")  # before the imports: they set up what it replaces
        torch = config.get("torch", True)
        if torch:
            speedups.install("torch")
        config["traceback_sources"] = template_warmup.preload(os.path.dirname(path), torch=torch)
    # In the sandbox, bubblewrap ends this process with the grader (--die-with-parent). Outside
    # it, nothing would: a grader killed with SIGKILL (or by the OOM killer) left this process,
    # its child templates and their kernels running, with their memory, for good.
    parent = 0 if config.get("sandboxed") else config.get("parent", os.getppid())
    _serve_requests(server, path, config, parent=parent)


def _stdout_to_devnull() -> None:
    """Once the grader has read "listening", nothing reads this process's stdout (a pipe), yet
    every kernel inherits it: ipykernel prints its connection details there at start-up, and
    copies there whatever a notebook writes to file descriptor 1. Once the pipe's 64 KiB were
    full (some 150 to 200 kernels, or one notebook writing that much), every later kernel
    blocked before it could answer, and its notebook failed with "Kernel didn't respond"."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _serve_requests(server: socket.socket, path: str, config: dict, parent: int = 0) -> None:
    """Answer requests until "stop", or until `parent` (unless 0) is gone; then end the kernels
    still running."""
    template_warmup.huge_pages()  # its imports and warm-ups are done: forks copy less now
    kernels, templates = Kernels(config), _Templates(path, config)
    try:
        # At least once a second (enforce_wall_clock's longest wait), whether the parent lives.
        while not parent or os.getppid() == parent:
            kernels.reap()
            wait = kernels.enforce_wall_clock()
            waiting = [server, *templates.pending(), *kernels.sealing]
            ready, _, _ = select.select(waiting, [], [], wait)
            for pipe in ready:
                if pipe in kernels.sealing:
                    kernels.seal(pipe)
                elif pipe is not server:
                    templates.on_ready(pipe)
            if server not in ready:
                continue
            connection, _ = server.accept()
            request = json.loads(connection.makefile("r").readline() or "{}")
            op = request.get("op")
            if op == "preload":  # answered once its modules are imported (connection kept open)
                held = [server, *kernels.held()]  # a child template must not hold them
                templates.request(connection, list(request.get("modules", [])), held)
                continue
            if op == "stop":
                _answer(connection, {})
                return
            try:
                if op == "fork":
                    kernels.reap()
                    # The kernel must not inherit any socket or pipe of the zygote's.
                    reply = {"pid": kernels.start(request, server, connection, *templates.held())}
                elif op == "status":
                    reply = kernels.status(int(request["pid"]))
                elif op == "signal":
                    reply = kernels.signal(int(request["pid"]), int(request["signum"]))
                elif op == "info":
                    reply = config
                else:
                    reply = {"error": f"unknown request {request!r}"}
            except (OSError, RuntimeError) as error:
                reply = {"error": f"{op} failed: {error}"}
            _answer(connection, reply)
    finally:
        templates.stop()
        kernels.stop()


if __name__ == "__main__":
    serve(sys.argv[1], json.loads(sys.argv[2]) if len(sys.argv) > 2 else {"sandboxed": False})
    # Stopped: nothing is left to save, so skip tearing down torch's millions of objects one by
    # one, which the grader would wait for.
    sys.stdout.flush()
    os._exit(0)
