"""Does `hooklab autograde` (the engine) grade exactly like `nbgrader autograde`, with the same
protections and outputs, and with one fresh warm kernel per submission?"""

import ast
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from golden import answers as answer_text
from golden import cases, expected_scores, make_course, submit_cases

from autograder import course, gradebook, notebooks
from autograder.grade.grader.batch import Batch
from autograder.grade.kernels.template_client import Zygote
from autograder.grade.worker.execute import execute_notebook

pytestmark = pytest.mark.nbgrader


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """A throwaway course where every named submission, plus three special ones, is graded by
    the engine."""
    root = tmp_path_factory.mktemp("engine-course")
    make_course(root)
    for assignment in course.assignments(root):
        submit_cases(root, assignment, [c for a, c in cases() if a == assignment])
    # A test cell emptied by the student: nbgrader restores it from the gradebook.
    nb = course.answered_notebook(
        answer_text("forward_hooks", "all_correct"), "forward_hooks", root
    )
    for cell in nb.cells:
        if cell.id == "forward_collect_hidden":
            cell.source = "pass"
    course.submit(nb, "edits_test_cell", "forward_hooks", root)
    # A file that is not a notebook at all.
    broken = course.notebook_path("submitted/broken_json", "forward_hooks", root)
    broken.parent.mkdir(parents=True)
    broken.write_text("{ this is not json", encoding="utf-8")
    results = {}
    for assignment in course.assignments(root):
        for result in Batch(root, assignment, force=True).run(jobs=2):
            results[(assignment, result.student)] = result
    db = course.gradebook_url(root)
    return root, results, {a: gradebook.scores(db, a) for a in course.assignments(root)}


@pytest.mark.parametrize(("assignment", "case"), cases(), ids=[f"{a}/{c}" for a, c in cases()])
def test_engine_gives_the_golden_scores(graded, assignment, case):
    root, results, scores = graded
    result = results[(assignment, case)]
    assert result.status == "graded"
    got = {cell.cell: cell.score for cell in scores[assignment][case]}
    expected = expected_scores(assignment, case)
    if got != expected:  # what the differing cells showed, to tell a flake from a bug
        nb = notebooks.read(root / "autograded" / case / assignment / f"{assignment}.ipynb")
        shown = {
            cell.metadata.get("nbgrader", {}).get("grade_id"): [
                o.get("text") or o.get("evalue") for o in cell.get("outputs", [])
            ]
            for cell in nb.cells
        }
        differing = {c: shown.get(c) for c in expected if got.get(c) != expected[c]}
        pytest.fail(f"{got} != {expected}; {result.message}; outputs: {differing}")


@pytest.mark.parametrize("assignment", course.assignments())
def test_every_test_cell_of_the_untouched_notebook_says_not_done_yet(graded, assignment):
    # As under stock nbgrader (test_nbgrader_roundtrip.py), hidden test cells too, whose output
    # the engine writes from its verifier's verdict instead of running them in the kernel.
    root, _results, scores = graded
    assert all(cell.score == 0 for cell in scores[assignment]["blank"])
    autograded = notebooks.read(course.notebook_path("autograded/blank", assignment, root))
    graded_cells = [c for c in autograded.cells if c.metadata.get("nbgrader", {}).get("grade")]
    assert any(c.id.endswith("_hidden") for c in graded_cells)
    for cell in graded_cells:
        [error] = [o for o in cell.outputs if o.output_type == "error"]
        text = "\n".join(error.traceback)
        assert error.ename == "NotDoneYet", (cell.id, error.ename, text)
        assert "is not done yet" in text and "Traceback" not in text, (cell.id, text)


def test_test_cells_are_restored_from_the_gradebook(graded):
    root, _, scores = graded
    got = {cell.cell: cell.score for cell in scores["forward_hooks"]["edits_test_cell"]}
    assert got == expected_scores("forward_hooks", "all_correct")
    autograded = notebooks.read(
        course.notebook_path("autograded/edits_test_cell", "forward_hooks", root)
    )
    restored = next(c for c in autograded.cells if c.id == "forward_collect_hidden")
    assert 'check("forward_collect", globals(), hidden=True)' in restored.source


def test_a_broken_submission_is_a_failed_row_and_the_batch_goes_on(graded):
    root, results, _ = graded
    broken = results[("forward_hooks", "broken_json")]
    assert broken.status == "failed" and broken.message
    assert not (root / "autograded" / "broken_json").exists()
    graded_forward = [
        r for (a, _), r in results.items() if a == "forward_hooks" and r.status == "graded"
    ]
    assert len(graded_forward) == len([c for a, c in cases() if a == "forward_hooks"]) + 1


def test_stock_generate_feedback_and_export_work_on_the_engines_output(graded):
    root, _, _ = graded
    course.nbgrader("generate_feedback", "forward_hooks", "--force", root=root)
    feedback = root / "feedback" / "all_correct" / "forward_hooks" / "forward_hooks.html"
    html = feedback.read_text(encoding="utf-8")
    assert "forward_collect" in html and "holds [x1, x2, output], in that order" in html
    # Feedback hygiene: the hidden tests' outputs reach the student, their code does not.
    text = re.sub(r"<[^>]+>", "", html)  # code is highlighted token by token
    assert "HIDDEN TESTS" not in text and "hidden=True" not in text
    course.nbgrader("export", "--to", str(root / "export.csv"), root=root)
    rows = (root / "export.csv").read_text(encoding="utf-8").splitlines()
    assert any(row.startswith("forward_hooks,") and ",all_correct," in row for row in rows)


def test_a_second_run_without_force_skips_what_is_graded(graded):
    root, _, _ = graded
    results = list(Batch(root, "forward_hooks", students="blank").run(jobs=1))
    assert [r.status for r in results] == ["skipped"]


def _probe_notebook() -> str:
    cells = [
        # pid and start time (the sandbox gives every kernel pid 2 in a pid namespace of its own)
        nbformat.v4.new_code_cell(
            "import os, sys\nstarted = open('/proc/self/stat').read().split()[21]\n"
            "print(f'{os.getpid()}@{started}', 'torch' in sys.modules)"
        ),
        nbformat.v4.new_code_cell("print('left_over' in globals())\nleft_over = 1"),
        nbformat.v4.new_code_cell("print(os.environ.get('NBGRADER_EXECUTION'))"),
    ]
    return nbformat.writes(nbformat.v4.new_notebook(cells=cells))


def test_each_notebook_gets_a_fresh_kernel_with_torch_already_imported(tmp_path):
    runs = [
        nbformat.reads(execute_notebook(_probe_notebook(), str(tmp_path)).notebook, 4)
        for _ in range(2)
    ]
    texts = [[cell.outputs[0].text.split() for cell in run.cells] for run in runs]
    processes = {text[0][0] for text in texts}
    this_process = f"{os.getpid()}@{Path('/proc/self/stat').read_text().split()[21]}"
    assert len(processes) == 2 and this_process not in processes
    for text in texts:
        assert text[0][1] == "True"  # warm: torch came with the kernel
        assert text[1] == ["False"]  # fresh: nothing left over from the previous notebook
        assert text[2] == ["autograde"]


def test_the_zygote_stays_single_threaded_so_forking_is_safe():
    zygote = Zygote.current()
    pid = zygote.process.pid if zygote.process else None
    if pid is None:
        pytest.skip("this process uses a zygote another process owns")
    if zygote.info["sandboxed"]:  # the zygote is the child of bwrap
        pid = int(Path(f"/proc/{pid}/task/{pid}/children").read_text().split()[0])
    assert len(os.listdir(f"/proc/{pid}/task")) == 1


def test_workers_forked_after_the_grader_used_torchs_threads_do_not_hang(graded):
    """A grading process that ran a parallel torch operation before grading (a notebook server,
    a test session) has a thread pool its forked workers cannot use; they must not wait for it."""
    root, _, _ = graded
    script = (
        "import sys, torch\n"
        "from pathlib import Path\n"
        "from autograder.grade.grader.batch import Batch\n"
        "torch.set_num_threads(2)\n"
        "torch.ones(512, 512) @ torch.ones(512, 512)  # starts torch's thread pool here\n"
        "batch = Batch(Path(sys.argv[1]), 'forward_hooks', students='all_correct', force=True)\n"
        "print([r.status for r in batch.run(jobs=1)])\n"
    )
    done = _grade_in_a_new_process(script, root)
    assert done.stdout.strip() == "['graded']", done.stderr[-2000:]


def test_the_grading_process_and_its_workers_never_import_torch(graded):
    """Only kernels and the verifier process the template forks hold torch: the grading
    process, and a worker grading in it, verify the evidence through the verifier process and
    still give a correct submission every point."""
    root, _, _ = graded
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from autograder import course, gradebook\n"
        "from autograder.grade.grader.batch import Batch\n"
        "from autograder.grade.worker.pipeline import grade_notebook\n"
        "root = Path(sys.argv[1])\n"
        "batch = Batch(root, 'forward_hooks', students='all_correct', force=True,\n"
        "              dispatch=grade_notebook)  # the worker's step, in this process\n"
        "print([(r.status, r.message) for r in batch.run(jobs=1)])\n"
        "cells = gradebook.scores(course.gradebook_url(root), 'forward_hooks')['all_correct']\n"
        "print(sum(c.score for c in cells), sum(c.max_score for c in cells))\n"
        "print('torch' in sys.modules)\n"
    )
    done = _grade_in_a_new_process(script, root)
    assert done.stdout.splitlines()[0] == "[('graded', '')]", done.stderr[-2000:]
    score, most = map(float, done.stdout.splitlines()[1].split())
    assert score == most > 0
    assert done.stdout.splitlines()[2] == "False"


def test_a_worker_keeps_its_verifier_from_one_notebook_to_the_next(graded):
    """Six submissions graded in one process, two at a time (the grading threads of one job),
    are verified by at most two verifiers, and each gets its golden scores."""
    root, _, _ = graded
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from autograder import course, gradebook\n"
        "from autograder.grade.grader.batch import Batch\n"
        "from autograder.grade.verifier import client\n"
        "from autograder.grade.worker.pipeline import grade_notebook\n"
        "started, start = [], client.VerifierHost.start\n"
        "client.VerifierHost.start = lambda self: started.append(self) or start(self)\n"
        "root = Path(sys.argv[1])\n"
        "batch = Batch(root, 'forward_hooks', students='[acfh]*', force=True,\n"
        "              dispatch=grade_notebook)\n"
        "print(sorted((r.student, r.status, r.message) for r in batch.run(jobs=1)))\n"
        "print(len(started))\n"
        "scores = gradebook.scores(course.gradebook_url(root), 'forward_hooks')\n"
        "print({s: {c.cell: c.score for c in cells} for s, cells in scores.items()})\n"
    )
    done = _grade_in_a_new_process(script, root)
    lines = done.stdout.splitlines()
    graded_now = ast.literal_eval(lines[0])
    students = [student for student, _status, _message in graded_now]
    assert len(students) == 6 and {s for _, s, _ in graded_now} == {"graded"}, graded_now
    assert 1 <= int(lines[1]) <= 2  # not one per notebook
    scores = ast.literal_eval(lines[2])
    assert {s: scores[s] for s in students} == {
        s: expected_scores("forward_hooks", s) for s in students
    }


def test_a_command_starts_the_kernel_template_before_its_heavy_imports():
    """The template's torch import is the start-up's longest path: the command launches it with
    what settings.py and zygote_client.py import, not jupyter_client, nbgrader or torch."""
    script = (
        "import sys\n"
        "from autograder.grade.kernels.template_client import Zygote\n"
        "heavy = ('jupyter_client', 'zmq', 'nbgrader', 'nbformat', 'torch', 'IPython')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr[-2000:]


def _grade_in_a_new_process(script: str, root: Path) -> subprocess.CompletedProcess:
    """Run `script` (which grades the course at sys.argv[1]) in a fresh interpreter."""
    command = [sys.executable, "-c", script, str(root)]
    return subprocess.run(command, capture_output=True, text=True, timeout=180)


def test_a_slow_preload_runs_in_a_child_template_while_the_zygote_goes_on_serving(
    tmp_path, monkeypatch
):
    """Modules a batch needs that the zygote lacks are imported by a child template it forks:
    the zygote keeps answering meanwhile, and kernels that need them come from the child."""
    sentinel = tmp_path / "go"
    (tmp_path / "slow_to_import.py").write_text(
        "import os, time\n"
        f"for _ in range(6000):  # until the test says go (at most a minute)\n"
        f"    if os.path.exists({str(sentinel)!r}):\n"
        "        break\n"
        "    time.sleep(0.01)\n"
    )
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    monkeypatch.setenv("HOOKLAB_SANDBOX", "off")  # the sandbox would hide tmp_path
    zygote = Zygote()
    monkeypatch.setattr(Zygote, "_current", zygote)
    try:
        zygote.preload_soon(["slow_to_import"])
        # The import is stuck in the child: the zygote still answers and still forks kernels.
        assert zygote.request(op="info")["sandboxed"] is False
        probe = nbformat.writes(
            nbformat.v4.new_notebook(
                cells=[
                    nbformat.v4.new_code_cell("import sys\nprint('slow_to_import' in sys.modules)")
                ]
            )
        )
        before = nbformat.reads(execute_notebook(probe, str(tmp_path)).notebook, 4)
        assert before.cells[0].outputs[0].text.split() == ["False"]
        sentinel.touch()
        zygote.preload(["torch", "slow_to_import"])
        assert zygote.fork_path != zygote.path
        after = nbformat.reads(execute_notebook(probe, str(tmp_path)).notebook, 4)
        assert after.cells[0].outputs[0].text.split() == ["True"]  # forked from the child
        zygote.preload(["torch"])  # the zygote has those: its own kernels again
        assert zygote.fork_path == zygote.path
    finally:
        sentinel.touch()
        zygote.stop()
    assert zygote.process.poll() is not None
    # The child template went with it (it is a fork of the zygote: the same command line). It
    # ends on its parent's death signal, which the kernel delivers once the zygote has exited:
    # a moment later on a busy machine (a clean-clone CI once found it still there).
    deadline = time.monotonic() + 10
    while True:
        left = [p for p in Path("/proc").glob("[0-9]*/cmdline") if _reads(p, zygote.path)]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert left == []


def _reads(path: Path, text: str) -> bool:
    try:
        return text.encode() in path.read_bytes()
    except OSError:  # the process ended meanwhile
        return False
