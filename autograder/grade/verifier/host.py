"""The verifier: each exercise's answer cell run on its own, and its checks judged by the grader.

A verifier host serves one grading worker's notebooks of one assignment, one after another, in a
process of its own that the kernel template forks and isolates like a kernel
(autograder/grade/kernels/), and that never runs student code itself:

1. once, it runs the assignment's shared locked cells (imports, model classes, data: the
   instructor's code, restored from the gradebook, the same in every notebook) in a fresh
   namespace, and keeps the random generators' state as they leave it;
2. for each notebook (a request) and each exercise, it forks a child in namespaces of its own
   (sandbox/apart.py), which starts from that state, runs the exercise's own locked set-up
   cells, the student's answer cell — the only student code in that process —, its locked run
   cells, then the exercise's visible and hidden checks, seeded by the grader (kit/run.py), and
   sends back each check's outcome and evidence as JSON;
3. it judges every passing outcome with the exercise's `judge_visible` / `judge_hidden`, which
   rebuild the inputs from the seed and recompute what is expected with torch.

So a cell elsewhere in the notebook (a "fix" of the checks, a forged result) never reaches an
exercise's verdict, and what an answer cell starts, writes or changes ends with its child: the
next exercise, the student's or the next student's, starts as the first one did. The answer
cell itself still runs before its checks in the same process, so code there that rewrites them
can forge that one exercise (docs/threat-model.md, "What is not defended yet").
"""

from __future__ import annotations

import ast
import contextlib
import json
import linecache
import os
import select
import signal
import sys
import time
from dataclasses import asdict
from typing import Any

import torch

from autograder import parsing
from autograder.exercises.kit import registry
from autograder.exercises.kit.evidence import Evidence, decode
from autograder.exercises.kit.judge import Suspicious
from autograder.exercises.kit.run import NOT_DONE, PASSED, Outcome, run_check
from autograder.grade.sandbox import apart
from autograder.grade.sandbox.limits import end_with_parent
from autograder.grade.verifier.protocol import FLAG, ExerciseRun, Request, Verdict
from autograder.i18n import _, speaking

MAX_REQUEST_BYTES = 64 * 1024 * 1024
MAX_REPLY_BYTES = 8 * 1024 * 1024  # a child's outcomes and evidence; more fails the exercise
# Notebooks a host serves before it ends, so that its memory starts afresh now and then; the
# worker then starts another. It also ends once it used half its CPU time limit.
RETIRE_AFTER = 400


def serve(path: str, accept_within: float = 60.0, on_listening: Any = None) -> None:
    """Answer requests on one connection to a Unix socket at `path`, a JSON line in and the
    verdicts as one out each, until the connection ends or the host retires (it says so in its
    last answer). `on_listening()` runs once the socket exists, before anything else (the
    sandbox seals the verifier's folder then, before any answer cell runs)."""
    import socket

    # First, while this process has one thread and is dumpable: a pid namespace from which
    # each child gets one of its own. Then no thread may start here: torch computes on this one.
    torch.set_num_threads(1)
    kept = apart.own_namespaces()
    # Not dumpable: the children this process forks (student code) can neither ptrace it nor
    # read its memory through /proc.
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    if on_listening is not None:
        on_listening()
    server.settimeout(accept_within)
    connection, _address = server.accept()
    server.close()
    host = Host()
    with connection, connection.makefile("rb") as reader:
        while line := reader.readline(MAX_REQUEST_BYTES):
            try:
                verdicts = host.verify(Request.from_dict(json.loads(line)))
            except ValueError as error:  # not a request this host can answer
                connection.sendall((json.dumps({"error": str(error)}) + "\n").encode())
                return
            # Without namespaces of their own, the children of two notebooks would share this
            # process's: one notebook per host then, as a verifier was before it was kept.
            retire = not kept or host.worn_out()
            reply = {
                "verdicts": {
                    gid: {str(int(h)): asdict(v) for h, v in by_check.items()}
                    for gid, by_check in verdicts.items()
                },
                "retire": retire,
            }
            connection.sendall((json.dumps(reply) + "\n").encode())
            if retire:
                return


def verify(request: Request) -> dict[str, dict[bool, Verdict]]:
    """grade id -> hidden -> the verdict of that check, for every check the request names (a
    host of its own for this one request)."""
    return Host().verify(request)


class Host:
    """What a verifier keeps from one notebook to the next: the shared cells' namespace and the
    random generators' state after them, which every child starts from."""

    def __init__(self) -> None:
        self.shared: list[str] | None = None
        self.namespace: dict[str, Any] = {"__name__": "__main__"}
        self.random_state: dict[str, Any] = {}
        self.served = 0

    def verify(self, request: Request) -> dict[str, dict[bool, Verdict]]:
        """grade id -> hidden -> the verdict of that check, in the notebook's language (the
        request's; the grader's own HOOKLAB_LANG does not apply). Raises ValueError for a
        request with other shared cells than this host's first one."""
        with speaking(request.language):
            self._run_shared(request.shared)
            verdicts = {
                exercise.grade_id: self._verdicts(exercise, request.timeout)
                for exercise in request.exercises
            }
        self.served += 1
        return verdicts

    def worn_out(self) -> bool:
        """Whether to end after this notebook: RETIRE_AFTER notebooks, or half its CPU limit."""
        import resource

        usage = resource.getrusage(resource.RUSAGE_SELF)
        limit = resource.getrlimit(resource.RLIMIT_CPU)[0]
        spent = usage.ru_utime + usage.ru_stime
        return self.served >= RETIRE_AFTER or (
            limit != resource.RLIM_INFINITY and spent > limit / 2
        )

    def _run_shared(self, shared: list[str]) -> None:
        if self.shared is None:
            with _quiet():
                for index, source in enumerate(shared):
                    run_cell(source, self.namespace, f"shared-{index}")
            self.shared, self.random_state = list(shared), _random_state()
        elif shared != self.shared:
            raise ValueError("a verifier serves one assignment: these shared cells are another's")

    def _verdicts(self, exercise: ExerciseRun, timeout: float) -> dict[bool, Verdict]:
        values = _literal_answer(exercise)
        if values is not None:  # nothing of the student's to run: no child needed
            _restore_random_state(self.random_state)
            outcomes = _checked_here(exercise, {**self.namespace, **values})
        else:
            outcomes = _in_child(exercise, self.namespace, timeout, self.random_state)
        by_check = {
            hidden: _judge(exercise.grade_id, hidden, seed, outcomes.get(hidden))
            for hidden, seed in exercise.checks
        }
        if any(outcome.transient for outcome in outcomes.values()) or len(by_check) > len(outcomes):
            for verdict in by_check.values():
                verdict.transient = True
        return by_check


def _random_state() -> dict[str, Any]:
    """The global random generators' state (torch's, Python's, NumPy's when it is loaded)."""
    import random

    state = {"torch": torch.get_rng_state(), "random": random.getstate()}
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        state["numpy"] = numpy.random.get_state()
    return state


def _restore_random_state(state: dict[str, Any]) -> None:
    import random

    if "torch" in state:
        torch.set_rng_state(state["torch"])
    if "random" in state:
        random.setstate(state["random"])
    if "numpy" in state:
        sys.modules["numpy"].random.set_state(state["numpy"])


def _literal_answer(exercise: ExerciseRun) -> dict | None:
    """The names an answer cell binds, when it does nothing but bind names to literals (a quiz's
    answer) and the exercise has no cells of its own to run; None otherwise."""
    if exercise.setup or exercise.run:
        return None
    try:
        tree = parsing.parse(exercise.answer)
        values = {}
        for node in tree.body:
            if not (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
            ):
                return None
            values[node.targets[0].id] = ast.literal_eval(node.value)
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return None
    return values


def _checked_here(exercise: ExerciseRun, namespace: dict) -> dict[bool, Outcome]:
    with _quiet():
        return {
            hidden: run_check(exercise.grade_id, namespace, hidden=hidden, seed=seed)
            for hidden, seed in exercise.checks
        }


def run_cell(source: str, namespace: dict, name: str) -> BaseException | None:
    """Run a cell's code as IPython would (its magics transformed) in `namespace`; the error it
    raised, if any. Its source goes into linecache, so checks can read the functions it made."""
    filename = f"<cell {name}>"
    try:
        code = _transform(source)
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        exec(compile(code, filename, "exec"), namespace)
    except BaseException as error:
        return error
    return None


def _transform(source: str) -> str:
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(source)


class _NoShell:
    """`get_ipython()` in a verifier child: magics and shell commands do not run there."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(
            _(
                "IPython magics and shell commands do not run when the grader "
                "runs an answer cell on its own"
            )
        )


def _in_child(
    exercise: ExerciseRun, namespace: dict, timeout: float, random_state: dict[str, Any]
) -> dict[bool, Outcome]:
    """The outcomes of the exercise's checks, run in a forked child (see the module's docstring)."""
    read, write = os.pipe()
    pid = apart.fork_apart()
    if pid == 0:  # the child: the only process where this answer cell runs
        os.close(read)
        end_with_parent()
        os.setpgid(0, 0)  # what the answer cell starts is killed with the child's group
        # Nothing of the verifier's but this pipe: not its connection to the grader, above all.
        os.closerange(3, write)
        os.closerange(write + 1, _max_fd())
        # OpenMP's worker threads do not survive a fork: once this process ran a parallel op
        # (a judge's matmul), a child's next parallel op waits for them forever.
        torch.set_num_threads(1)
        _restore_random_state(random_state)  # as the shared cells left it, for every child
        code = 1
        try:
            _child(exercise, namespace, write)
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    reply, why = _read_reply(read, pid, timeout)
    if why:
        failed = Outcome(exercise.grade_id, False, "failed", why, transient=True)
        return {hidden: failed for hidden, _seed in exercise.checks}
    try:
        return {o.hidden: o for o in map(_outcome, json.loads(reply))}
    except (ValueError, TypeError, KeyError, RecursionError):
        broken = Outcome(
            exercise.grade_id,
            False,
            "failed",
            _("the grader could not read this answer's results"),
            transient=True,
        )
        return {hidden: broken for hidden, _seed in exercise.checks}


def _outcome(data: Any) -> Outcome:
    """An outcome from a child's JSON, which student code may have written: strict types."""
    if not isinstance(data, dict):
        raise ValueError("an outcome is an object")
    text = {key: data.get(key) for key in ("grade_id", "status", "message", "fix")}
    if not all(isinstance(value, str) for value in text.values()):
        raise ValueError("an outcome's texts are strings")
    if text["status"] not in ("passed", "failed", "not done yet"):
        raise ValueError("unknown status")
    if not isinstance(data.get("hidden"), bool):
        raise ValueError("hidden is true or false")
    notes = data.get("notes") or []
    if not (isinstance(notes, list) and all(isinstance(n, str) for n in notes)):
        raise ValueError("notes are strings")
    return Outcome(
        text["grade_id"],
        data["hidden"],
        text["status"],
        text["message"][:4000],
        text["fix"][:1000],
        [n[:200] for n in notes[:5]],
        data.get("evidence"),
    )


def _max_fd() -> int:
    import resource

    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft if soft != resource.RLIM_INFINITY else 4096


def _child(exercise: ExerciseRun, namespace: dict, write: int) -> None:
    with _quiet():
        namespace["get_ipython"] = _NoShell
        gid = exercise.grade_id
        for index, source in enumerate(exercise.setup):
            run_cell(source, namespace, f"{gid}-setup-{index}")
        prepare = getattr(registry.exercise(gid), "prepare", None)
        if prepare is not None:
            prepare(namespace)
        error = run_cell(exercise.answer, namespace, gid)
        for index, source in enumerate(exercise.run):
            run_cell(source, namespace, f"{gid}-run-{index}")
        outcomes = []
        for hidden, seed in exercise.checks:
            outcome = run_check(gid, namespace, hidden=hidden, seed=seed)
            if error is not None and not outcome.passed:
                outcome.message = _alone(error) + " " + outcome.message
            outcomes.append(asdict(outcome))
    data = json.dumps(outcomes).encode()
    with os.fdopen(write, "wb") as pipe:
        pipe.write(data)


def _alone(error: BaseException) -> str:
    return _(
        "Run on its own, as the grader runs it, your answer cell raised `{error}`: an "
        "answer cell must itself define or import everything it uses."
    ).format(error=f"{type(error).__name__}: {error}".splitlines()[0][:200])


def _read_reply(read: int, pid: int, timeout: float) -> tuple[bytes, str]:
    """All the child wrote, once it ends; or "" and why it gave nothing to judge.

    The reply is complete when the child has ended, even if the pipe never reaches its end:
    processes the answer cell started (a fork bomb's sleepers) may still hold its write end.
    Whatever is left of the child's process group is killed then."""
    deadline, chunks, size, status = time.monotonic() + timeout, [], 0, None
    try:
        with os.fdopen(read, "rb", buffering=0) as pipe:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    return b"", _("checking this answer took longer than {seconds:.0f} s").format(
                        seconds=timeout
                    )
                ready, _w, _x = select.select([pipe], [], [], min(left, 0.1))
                if not ready:
                    if status is not None:  # ended, and all it wrote is read
                        break
                    ended, code = os.waitpid(pid, os.WNOHANG)
                    if not ended:
                        continue
                    # What it wrote before it ended is in the pipe now: read that, then stop.
                    status = code
                    os.set_blocking(pipe.fileno(), False)
                chunk = pipe.read(65536)
                if not chunk:  # the end of the pipe, or (once the child ended) nothing more
                    break
                size += len(chunk)
                if size > MAX_REPLY_BYTES:
                    return b"", _("this answer's results are too large to check")
                chunks.append(chunk)
    finally:
        status = _end(pid, status)
    if status != 0 and not chunks:
        return b"", _ended(status)
    return b"".join(chunks), ""


def _ended(status: int) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        return _("checking this answer ended the process (signal {number}, {name})").format(
            number=number, name=signal.Signals(number).name
        )
    return _("checking this answer ended the process (exit code {code})").format(
        code=os.waitstatus_to_exitcode(status)
    )


def _end(pid: int, status: int | None = None) -> int:
    """Kill the child and what is left of its process group; its exit status (reaped here
    unless `status` says it was already)."""
    for kill in (os.killpg, os.kill):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            kill(pid, signal.SIGKILL)
    if status is None:
        try:
            status = os.waitpid(pid, 0)[1]
        except ChildProcessError:
            status = 0
    return status


def _judge(grade_id: str, hidden: bool, seed: int, outcome: Outcome | None) -> Verdict:
    if outcome is None:
        return Verdict(False, _("the grader did not get this check's result"))
    if outcome.status != PASSED:
        return Verdict(False, outcome.message, not_done=outcome.status == NOT_DONE)
    judge = getattr(registry.exercise(grade_id), "judge_hidden" if hidden else "judge_visible")
    try:
        judge(Evidence.generator(seed), decode(outcome.evidence))
    except Suspicious as mismatch:
        return Verdict(
            False,
            _("the grader's own check of this answer disagrees"),
            f"{FLAG}: the grader's own verification of {grade_id} disagrees: {mismatch}",
        )
    except (ValueError, TypeError, RecursionError) as error:
        return Verdict(
            False,
            _("the grader's own check of this answer disagrees"),
            f"{FLAG}: the evidence of {grade_id} is malformed ({type(error).__name__})",
        )
    return Verdict(True, outcome.message)


@contextlib.contextmanager
def _quiet():
    """What student and notebook code prints goes nowhere (file descriptors 1 and 2 too)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)
    try:
        with (
            open(os.devnull, "w") as sink,
            contextlib.redirect_stdout(sink),
            contextlib.redirect_stderr(sink),
        ):
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)
