"""Does the sandbox hold? Submissions that try to use the network, read the answers, the
gradebook or another student's work, write outside their scratch folder, fork-bomb, or ignore
interrupts forever must fail inside their own kernel, while the batch goes on and grades a
correct control submission with full marks. Two kernels running at once must not reach each
other. And where the sandbox is off, the grader must say so in every result, and the sibling
probe must get through (which shows that it can see a leak)."""

import asyncio
import os
import re
import socket
import sysconfig
import time
from pathlib import Path

import nbformat
import pytest
from golden import answers as answer_text
from golden import expected_scores, make_course

import autograder
from autograder import course, gradebook, notebooks
from autograder.grade.grader.batch import Batch
from autograder.grade.kernels import template_client as zygote_client
from autograder.grade.kernels.provisioner import WarmKernelManager
from autograder.grade.kernels.template_client import ZYGOTE_ENV, Zygote
from autograder.grade.sandbox.bwrap import SANDBOX_ENV
from autograder.grade.sandbox.working_folder import KERNEL_CWD

pytestmark = pytest.mark.nbgrader

ASSIGNMENT = "forward_hooks"
PROCESSES = 48  # RLIMIT_NPROC of each kernel in this course (threads count too)
BOMB = "hooklab-bomb"  # the fork bomb's children name themselves so

PROBE = """
import os, socket, sysconfig
def _probe(name, attempt):
    try:
        result = attempt()
    except Exception as error:
        print(f"BLOCKED {name}: {type(error).__name__}")
    else:
        print(f"LEAKED {name}: {str(result)[:60]!r}")
"""


# The kernel's own folder (its connection file and sockets, a bind of the zygote's run folder on
# the host's disk), found in its mount table: 2000 files of 75 kB must not land there. And its
# private /tmp holds at most isolation.SCRATCH_FILES files (20,000), whatever their size.
OWN_FOLDER = """
def _fill_own_folder():
    mounts = [line.split()[4] for line in open('/proc/self/mountinfo')]
    folder = next(m for m in mounts if '/kernels/' in m)
    for i in range(2000):
        with open(os.path.join(folder, f'junk{i}'), 'wb') as file:
            file.write(b'x' * 75_000)
_probe('own folder', _fill_own_folder)
def _fill_scratch():  # its own /tmp is bounded in files too, not only in bytes
    os.makedirs('/tmp/many', exist_ok=True)
    for i in range(30_000):
        open(f'/tmp/many/{i}', 'w').close()
_probe('scratch files', _fill_scratch)
import shutil; shutil.rmtree('/tmp/many', ignore_errors=True)  # room again for the answer
"""


def _attacks(root: Path, port: int, run_dir: str) -> dict[str, str]:
    """case: code that runs before the right answer of an exercise (the last, mlp_report, but
    the first, forward_collect, for the endless one, so that many cells wait behind it)."""
    repo = Path(autograder.__file__).resolve().parents[1]
    site = sysconfig.get_paths()["purelib"]
    zygote = f"{run_dir}/control/zygote.sock"
    other_student = course.notebook_path("submitted/all_correct", ASSIGNMENT, root)
    read = lambda path: f"lambda: open({str(path)!r}, 'rb').read(64)"  # noqa: E731
    write = lambda path: f"lambda: open({str(path)!r}, 'w').write('x')"  # noqa: E731
    package = "'auto' + 'grader'"
    write_in = lambda folder, name: (  # noqa: E731
        f"lambda: open(os.path.join({str(folder)!r}, {package}, {name!r}), 'w').write('x')"
    )
    return {
        "network": PROBE
        + f"_probe('loopback', lambda: socket.create_connection(('127.0.0.1', {port}), 3))\n"
        + "_probe('outside', lambda: socket.create_connection(('1.1.1.1', 53), 3))\n"
        + f"_probe('zygote', lambda: socket.socket(socket.AF_UNIX).connect({zygote!r}))\n",
        "reads": PROBE
        + f"_probe('solutions', {read(course.notebook_path('solutions', ASSIGNMENT, root))})\n"
        + f"_probe('gradebook', {read(root / 'gradebook.db')})\n"
        + f"_probe('other student', {read(other_student)})\n"
        + f"_probe('repo solutions', lambda: os.listdir({str(repo / 'solutions')!r}))\n"
        + f"_probe('repo tests', {read(Path(__file__).resolve())})\n",
        "writes": PROBE
        + f"_probe('course root', {write(root / 'pwned')})\n"
        + f"_probe('site-packages', {write(Path(site) / 'pwned.py')})\n"
        # The package's name made at run time: the scan flags it in a string (test_scan.py),
        # and this probe is about what the sandbox lets through.
        + f"_probe('the package', {write_in(repo, 'pwned.py')})\n"
        + "_probe('etc', lambda: open('/etc/pwned', 'w'))\n"
        + f"_probe('run folder', {write(run_dir + '/control/pwned')})\n"
        + OWN_FOLDER
        + "open('/tmp/hooklab-scratch-pwned', 'w').write('mine')  # the kernel's own /tmp\n",
        "fork_bomb": "import os, time\n"
        "started = 0\n"
        "try:\n"
        "    while True:\n"
        "        if os.fork() == 0:\n"
        f"            open('/proc/self/comm', 'w').write({BOMB!r})\n"
        "            time.sleep(600)\n"
        "            os._exit(0)\n"
        "        started += 1\n"
        "except OSError as error:\n"
        "    print(f'BLOCKED fork bomb after {started} processes: {error}')\n",
        # Nothing in the kernel; in the verifier's child, which runs the answer cell on its own,
        # a kill of its parent (never kill(-1): unsandboxed, as root, it would end the machine).
        "kills_the_verifier": "import os, signal\n"
        "if 'In' not in dir():  # no IPython history: the answer cell runs on its own\n"
        "    os.kill(os.getppid(), signal.SIGKILL)\n",
        "ignores_interrupts": "import time\n"
        "while True:\n"
        "    try:\n"
        "        time.sleep(1)\n"
        "    except KeyboardInterrupt:\n"
        "        print('interrupt ignored')\n",
    }


def _outputs(root: Path, case: str) -> str:
    nb = notebooks.read(course.notebook_path(f"autograded/{case}", ASSIGNMENT, root))
    grade_id = lambda cell: cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")  # noqa: E731
    cell = next(c for c in nb.cells if grade_id(c) == "mlp_report")
    return "".join(o.get("text", "") for o in cell.get("outputs", []))


def _verdicts(root: Path, case: str) -> list[str]:
    """What the autograded notebook shows under mlp_report's test cells."""
    nb = notebooks.read(course.notebook_path(f"autograded/{case}", ASSIGNMENT, root))
    tests = ("mlp_report_test", "mlp_report_hidden")
    cells = [
        c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") in tests
    ]
    return ["".join(o.get("text") or o.get("evalue") or "" for o in c.outputs) for c in cells]


@pytest.fixture(scope="module")
def loopback_server():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    yield server
    server.close()


def _grade(tmp_path_factory, loopback_server, name: str):
    """A course with the attacks and a correct control, graded in one batch."""
    root = tmp_path_factory.mktemp(name)
    limits = {"processes": PROCESSES}
    make_course(
        root, [ASSIGNMENT], config=f"c.Execute.timeout = 5\nc.WarmKernelManager.limits = {limits}"
    )
    correct = notebooks.parse_answers(answer_text(ASSIGNMENT, "all_correct"))
    student = notebooks.read(course.notebook_path("notebooks", ASSIGNMENT, root))
    course.submit(notebooks.fill_answers(student, correct), "all_correct", ASSIGNMENT, root)
    attacks = _attacks(root, loopback_server.getsockname()[1], Zygote.current().run_dir)
    for case, attack in attacks.items():
        cell = "forward_collect" if case == "ignores_interrupts" else "mlp_report"
        answer = {**correct, cell: attack + "\n" + correct[cell]}
        course.submit(notebooks.fill_answers(student, answer), case, ASSIGNMENT, root)
    results = {r.student: r for r in Batch(root, ASSIGNMENT, force=True).run(jobs=2)}
    return root, results, gradebook.scores(course.gradebook_url(root), ASSIGNMENT)


@pytest.fixture(scope="module")
def sandboxed(tmp_path_factory, loopback_server):
    zygote = Zygote.current()
    assert zygote.info["sandboxed"], zygote.weaker  # bubblewrap works on this machine (CI)
    return _grade(tmp_path_factory, loopback_server, "sandboxed-course")


def _scores(scores, case):
    return {cell.cell: cell.score for cell in scores.get(case, [])}


FULL_MARKS = ["all_correct", "network", "reads", "writes", "fork_bomb"]


@pytest.mark.parametrize("case", FULL_MARKS)
def test_attacks_fail_inside_the_kernel_and_the_notebook_is_graded(sandboxed, case):
    root, results, scores = sandboxed
    # The only note allowed is the scan's about code that ends the kernel (the fork bomb's
    # children call os._exit); it costs no points.
    notes = [n for n in results[case].message.split("; ") if n and "ends the kernel" not in n]
    assert (results[case].status, notes) == ("graded", []), results[case]
    expected = expected_scores(ASSIGNMENT, "all_correct")
    if case == "fork_bomb":
        # The verifier runs the answer cell again, on its own, under the same process limit:
        # the bomb's copies of the check hold it until its time-out, or write results of their
        # own over the child's, so the exercise the bomb sits in scores 0 and says why; every
        # other exercise keeps its points.
        expected |= {"mlp_report_test": 0.0, "mlp_report_hidden": 0.0}
        verdicts = _verdicts(root, case)
        why = ("took longer than", "could not read this answer's results")
        assert all(any(w in text for w in why) for text in verdicts), verdicts
    assert _scores(scores, case) == expected
    if case != "all_correct":
        out = _outputs(root, case)
        assert "BLOCKED" in out and "LEAKED" not in out, out


def test_an_answer_cell_that_kills_the_verifier_ends_nothing(sandboxed):
    """In the verifier's child `os.getppid()` is 0, so the kill goes to the child's own process
    group, and the child is the init of its pid namespace, which ignores the signals sent from
    inside it: the verifier and the child go on, and every exercise keeps its points."""
    root, results, scores = sandboxed
    assert results["kills_the_verifier"].status == "graded", results["kills_the_verifier"]
    assert _scores(scores, "kills_the_verifier") == expected_scores(ASSIGNMENT, "all_correct")
    visible, hidden = _verdicts(root, "kills_the_verifier")
    assert hidden.startswith("✓ mlp_report") and "ended the process" not in visible + hidden


def test_every_probe_was_blocked(sandboxed):
    root, _, _ = sandboxed
    cases = FULL_MARKS[1:4]
    blocked = {case: re.findall(r"BLOCKED ([^:]+):", _outputs(root, case)) for case in cases}
    assert blocked == {
        "network": ["loopback", "outside", "zygote"],
        "reads": ["solutions", "gradebook", "other student", "repo solutions", "repo tests"],
        "writes": [
            "course root",
            "site-packages",
            "the package",
            "etc",
            "run folder",
            "own folder",
            "scratch files",
        ],
    }
    # Refused by the file system (read-only), not missed: the folder was found.
    assert "BLOCKED own folder: OSError" in _outputs(root, "writes")


def test_no_connection_reached_the_grader_and_nothing_was_written(sandboxed, loopback_server):
    root, _, _ = sandboxed
    with pytest.raises(BlockingIOError):
        loopback_server.accept()
    written = [
        root / "pwned",
        Path(Zygote.current().run_dir) / "control" / "pwned",
        Path(sysconfig.get_paths()["purelib"]) / "pwned.py",
        Path(autograder.__file__).parent / "pwned.py",
        Path("/tmp/hooklab-scratch-pwned"),
    ]
    assert [p for p in written if p.exists()] == []


def test_the_fork_bomb_is_stopped_by_its_process_limit_and_leaves_nothing(sandboxed):
    root, _, _ = sandboxed
    started = int(re.search(r"fork bomb after (\d+) processes", _outputs(root, "fork_bomb"))[1])
    assert 0 < started < PROCESSES
    assert BOMB not in _process_names()


def test_a_kernel_that_ignores_interrupts_is_stopped_and_the_batch_goes_on(sandboxed):
    # nbclient interrupts the cell at its time-out, then gives up when the kernel stays busy:
    # the run ends within seconds, long before the wall-clock limit; later cells score nothing.
    _, results, scores = sandboxed
    result = results["ignores_interrupts"]
    assert result.status == "graded", result
    assert "cell forward_collect timed out after 5 s and ignored the interrupt" in result.message
    assert result.seconds < 60
    assert {cell.score for cell in scores["ignores_interrupts"]} == {0.0}


ENDLESS = (
    "while True:\n    try:\n        time.sleep(1)\n    except KeyboardInterrupt:\n        pass"
)
# A process that leaves the kernel's session and would live on after it.
DAEMON = (
    "import os, time\n"
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    "    if os.fork() == 0:\n"
    "        open('/proc/self/comm', 'w').write('hooklab-daemon')\n"
    "        time.sleep(600)\n"
    "    os._exit(0)\n"
)


def _process_names() -> list[str]:
    names = []
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            names.append(comm.read_text().strip())
        except OSError:
            continue  # a process that just ended
    return names


def test_the_wall_clock_limit_kills_a_kernel_and_what_it_started(tmp_path):
    from autograder.grade.worker.execute import KernelDied, execute_notebook

    cells = [nbformat.v4.new_code_cell(DAEMON), nbformat.v4.new_code_cell(ENDLESS)]
    cells[1].metadata["nbgrader"] = {"grade_id": "endless"}
    nb = nbformat.writes(nbformat.v4.new_notebook(cells=cells))
    # No cell time-out at all: only the wall-clock limit can end this notebook.
    config = {"Execute": {"timeout": None}, "WarmKernelManager": {"limits": {"wall_seconds": 4}}}
    started = time.monotonic()
    expected = r"kernel died \(stopped at its wall-clock limit of 4 s\) while running cell endless"
    with pytest.raises(KernelDied, match=expected):
        execute_notebook(nb, str(tmp_path), config)
    assert time.monotonic() - started < 30
    assert "hooklab-daemon" not in _process_names()


# Kernel A looks for kernel B (both running): B's HMAC key or folder in any process's environ
# or command line, B's connection file, B's shell socket.
SIBLING = """
import glob, os, signal, socket
found = []
key = {key!r}
for path in glob.glob("/proc/[0-9]*/environ") + glob.glob("/proc/[0-9]*/cmdline"):
    try:
        text = open(path, "rb").read()
        if key.encode() in text or {folder!r}.encode() in text:
            found.append(path)
    except OSError:
        pass
for path in [{connection!r}, {socket_path!r}]:
    try:
        found.append(open(path, "rb").read(64))
    except OSError:
        pass
try:
    s = socket.socket(socket.AF_UNIX)
    s.connect({socket_path!r})
    found.append("connected to the other kernel's shell socket")
except OSError:
    pass
print("pids", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
print("found", found)
"""


async def _run(client, code: str) -> str:
    chunks = []

    def keep(msg):
        if msg["msg_type"] == "stream":
            chunks.append(msg["content"]["text"])

    await client.execute_interactive(code, output_hook=keep, timeout=60)
    return "".join(chunks)


async def _two_kernels_at_once() -> tuple[str, str]:
    managers = [WarmKernelManager(), WarmKernelManager()]
    for manager in managers:
        await manager.start_kernel()
    clients = [m.client() for m in managers]
    try:
        for client in clients:
            client.start_channels()
            await client.wait_for_ready(timeout=60)
        other = managers[1]
        code = SIBLING.format(
            key=other.session.key.decode(),
            folder=os.path.basename(other.kernel_dir),
            connection=other.connection_file,
            socket_path=f"{other.ip}-{other.shell_port}",
        )
        seen = await _run(clients[0], code)
        alive = await _run(clients[1], "print(6 * 7)")
        return seen, alive
    finally:
        for client, manager in zip(clients, managers, strict=True):
            client.stop_channels()
            await manager.shutdown_kernel(now=True)


def test_a_kernel_cannot_reach_a_sibling_kernel():
    assert Zygote.current().info["sandboxed"]
    seen, alive = asyncio.run(_two_kernels_at_once())
    assert "found []" in seen, seen
    assert "pids [1, 2]" in seen, seen  # its own init and itself: nothing else is visible
    assert alive == "42\n"


@pytest.fixture()
def unsandboxed(monkeypatch):
    """A zygote of its own with the sandbox turned off (HOOKLAB_SANDBOX=off), as on a machine
    without bubblewrap."""
    monkeypatch.setenv(SANDBOX_ENV, "off")
    monkeypatch.delenv(ZYGOTE_ENV, raising=False)
    monkeypatch.setattr(Zygote, "_current", None)
    yield
    if Zygote._current is not None:
        Zygote._current.stop()


def test_without_the_sandbox_the_same_probe_finds_the_sibling(unsandboxed, capfd):
    seen, _ = asyncio.run(_two_kernels_at_once())
    assert "NOT SANDBOXED (the sandbox is turned off" in capfd.readouterr().err
    assert re.search(r"found \[.*shell socket", seen), seen  # so the probe can see a leak


def test_without_the_sandbox_every_result_says_so(unsandboxed, tmp_path, loopback_server):
    root = make_course(tmp_path, [ASSIGNMENT])
    nb = course.answered_notebook(answer_text(ASSIGNMENT, "all_correct"), ASSIGNMENT, root)
    course.submit(nb, "all_correct", ASSIGNMENT, root)
    (result,) = Batch(root, ASSIGNMENT, force=True).run(jobs=1)
    assert result.status == "graded"
    assert result.message.startswith("NOT SANDBOXED (the sandbox is turned off")
    scores = gradebook.scores(course.gradebook_url(root), ASSIGNMENT)
    assert _scores(scores, "all_correct") == expected_scores(ASSIGNMENT, "all_correct")


def test_a_trivial_notebook_in_a_sandboxed_kernel(tmp_path):
    from autograder.grade.worker.execute import execute_notebook

    code = "import os\nprint(os.getuid(), os.getcwd(), sorted(os.listdir('/')))"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    executed = nbformat.reads(execute_notebook(nbformat.writes(nb), str(tmp_path)).notebook, 4)
    uid, cwd, top = executed.cells[0].outputs[0].text.split(" ", 2)
    assert (uid, cwd) == ("65534" if os.geteuid() == 0 else uid, KERNEL_CWD)
    assert "home" not in top and "var" not in top and "run" not in top


def test_a_sandboxed_kernels_network_is_a_loopback_of_its_own(tmp_path, loopback_server):
    # ipykernel forwards a forked child's output over its loopback (tests/grade/speedups/test_cell_ends.py);
    # the grader's loopback, on the same address, stays out of reach (and the attacks above).
    from autograder.grade.worker.execute import execute_notebook

    code = f"""import socket
print(socket.if_nameindex())
own = socket.create_server(("127.0.0.1", 0))
socket.create_connection(own.getsockname(), 3).sendall(b"hello")
print(own.accept()[0].recv(5))
for address in [("127.0.0.1", {loopback_server.getsockname()[1]}), ("1.1.1.1", 53)]:
    try:
        socket.create_connection(address, 3)
    except OSError as error:
        print(address[0], type(error).__name__)
"""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    executed = nbformat.reads(execute_notebook(nbformat.writes(nb), str(tmp_path)).notebook, 4)
    printed = "".join(o.get("text", "") for o in executed.cells[0].outputs).splitlines()
    assert printed == [
        "[(1, 'lo')]",
        "b'hello'",
        "127.0.0.1 ConnectionRefusedError",
        "1.1.1.1 OSError",  # "Network is unreachable": no route out
    ], executed.cells[0].outputs
    with pytest.raises(BlockingIOError):
        loopback_server.accept()


def test_a_template_that_cannot_isolate_kernels_is_replaced_and_says_why(monkeypatch, capfd):
    # A sandboxed zygote first isolates a do-nothing kernel, before it listens. Here it starts
    # without bwrap (`env` in its place) and must show a folder that does not exist, so that
    # test fails: the grader starts a zygote without the sandbox and passes the reason on, or,
    # when the sandbox is required, refuses with it.
    monkeypatch.delenv(SANDBOX_ENV, raising=False)
    monkeypatch.setattr(zygote_client, "bwrap_command", lambda run_dir, settings: ["env"])
    monkeypatch.setattr(zygote_client, "shown_paths", lambda settings: ["/nonexistent/hooklab"])
    zygote = Zygote(sandbox={}, wait=False)
    try:
        zygote.ready()
        assert zygote.info["sandboxed"] is False
    finally:
        zygote.stop()
    warning = capfd.readouterr().err
    assert "NOT SANDBOXED (" in warning and "did not start inside" not in warning, warning
    reason = re.search(r"NOT SANDBOXED \((.+?)\): kernels run", warning).group(1)
    with pytest.raises(RuntimeError, match=re.escape(f"required but cannot run: {reason}")):
        Zygote(sandbox={"mode": "bwrap"})


def test_a_sandboxed_kernel_reads_the_files_handed_in_beside_the_notebook(tmp_path):
    """nbgrader runs the kernel in the autograded folder, beside the files handed in with the
    notebook; the sandboxed kernel gets a copy of them in its private /tmp, and nothing that a
    link there points to."""
    from autograder.grade.worker.execute import execute_notebook

    folder = tmp_path / "autograded-folder"
    (folder / "data").mkdir(parents=True)
    (folder / "data.txt").write_text("42\n")
    (folder / "data" / "inner.txt").write_text("inner\n")
    secret = tmp_path / "elsewhere.txt"
    secret.write_text("not the student's")
    (folder / "link.txt").symlink_to(secret)
    code = (
        "import os\n"
        "print(os.getcwd(), open('data.txt').read().strip(), open('data/inner.txt').read().strip(),"
        " os.path.exists('link.txt'))"
    )
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    executed = nbformat.reads(execute_notebook(nbformat.writes(nb), str(folder)).notebook, 4)
    assert executed.cells[0].outputs[0].text.split() == [KERNEL_CWD, "42", "inner", "False"]
    assert sorted(p.name for p in folder.iterdir()) == ["data", "data.txt", "link.txt"]


def test_what_a_sandboxed_kernel_writes_in_its_working_folder_reaches_the_autograded_folder(
    tmp_path,
):
    """nbgrader's kernel leaves the files a notebook writes in the autograded folder; so does a
    sandboxed one, through its template: new and changed regular files, never a link or a FIFO
    it made, nor what it wrote elsewhere in its /tmp, and nothing through a link of the folder."""
    from autograder.grade.worker.execute import execute_notebook

    folder = tmp_path / "autograded-folder"
    folder.mkdir()
    (folder / "kept.txt").write_text("as handed in\n")
    (folder / "changed.txt").write_text("before\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (folder / "linked").symlink_to(outside, target_is_directory=True)
    code = (
        "import os\n"
        "open('side-effect.txt', 'w').write('written\\n')\n"
        "os.makedirs('results/run1')\n"
        "open('results/run1/loss.csv', 'w').write('0.5\\n')\n"
        "open('changed.txt', 'w').write('after\\n')\n"
        "open('/tmp/scratch.txt', 'w').write('temporary\\n')\n"
        "os.symlink('/etc/hostname', 'hostname-link')\n"
        "os.mkfifo('pipe')\n"
        "os.makedirs('linked')\n"
        "open('linked/through-link.txt', 'w').write('x')\n"
        "print('done')"
    )
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    executed = nbformat.reads(execute_notebook(nbformat.writes(nb), str(folder)).notebook, 4)
    assert executed.cells[0].outputs[0].text == "done\n", executed.cells[0].outputs
    assert (folder / "side-effect.txt").read_text() == "written\n"
    assert (folder / "results" / "run1" / "loss.csv").read_text() == "0.5\n"
    assert (folder / "changed.txt").read_text() == "after\n"
    assert (folder / "kept.txt").read_text() == "as handed in\n"
    for made_by_the_kernel in ("scratch.txt", "hostname-link", "pipe"):
        assert not os.path.lexists(folder / made_by_the_kernel)
    assert list(outside.iterdir()) == []
