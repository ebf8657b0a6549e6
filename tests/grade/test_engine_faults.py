"""Does the engine turn every fault of a submission (a crash, a hang, a memory bomb, a huge
output, a file that is not a usable notebook) into a clear per-submission result, and finish the
batch with the other submissions graded as usual?"""

import json

import nbformat
import pytest
from golden import answers as answer_text
from golden import expected_scores, make_course

from autograder import course, gradebook, notebooks
from autograder.grade.grader.batch import Batch
from autograder.grade.sandbox.limits import MIB, Limits
from autograder.grade.worker.execute import OUTPUT_CAP, KernelDied, execute_notebook

pytestmark = pytest.mark.nbgrader

ASSIGNMENT = "forward_hooks"
TIMEOUT = 5  # seconds per cell, instead of the course's 60
# What the last solution cell (mlp_report) does instead of its answer.
LAST_CELL = {
    "infinite_loop": "while True:\n    pass",
    "long_sleep": "import time\ntime.sleep(1000)",
    "memory_bomb": "def grow():\n    blocks = []\n    while True:\n"
    "        blocks.append(bytearray(256 * 1024 * 1024))\n\n\ngrow()",
    "segfault": "import ctypes\nctypes.string_at(0)",
    "os_exit": "import os\nos._exit(1)",
    "big_file": 'with open("big.bin", "wb") as f:\n    f.write(bytes(65 * 1024 * 1024))',
}
HUGE_OUTPUT = 'print("x" * 50_000_000)\n'  # 50 MB on one line, then the right answer


def _write(root, case, data, name=f"{ASSIGNMENT}.ipynb"):
    path = root / "submitted" / case / ASSIGNMENT / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode())


@pytest.fixture(scope="module")
def faults(tmp_path_factory):
    """A course with only forward_hooks, one submission per fault plus a correct control, all
    graded by the engine in one batch with a 5 s cell timeout."""
    root = tmp_path_factory.mktemp("faults-course")
    make_course(root, [ASSIGNMENT], config=f"c.Execute.timeout = {TIMEOUT}")
    correct = notebooks.parse_answers(answer_text(ASSIGNMENT, "all_correct"))
    student = notebooks.read(course.notebook_path("notebooks", ASSIGNMENT, root))
    course.submit(notebooks.fill_answers(student, correct), "all_correct", ASSIGNMENT, root)
    for case, source in LAST_CELL.items():
        nb = notebooks.fill_answers(student, {**correct, "mlp_report": source})
        course.submit(nb, case, ASSIGNMENT, root)
    # The kernel dies in the first exercise: nothing after it may count as passed, although
    # nbgrader scores a test cell without an error output as passed.
    early = {**correct, "forward_collect": "import os\nos._exit(3)"}
    course.submit(notebooks.fill_answers(student, early), "dies_early", ASSIGNMENT, root)
    huge = {**correct, "mlp_report": HUGE_OUTPUT + correct["mlp_report"]}
    course.submit(notebooks.fill_answers(student, huge), "huge_output", ASSIGNMENT, root)
    good = json.loads(nbformat.writes(notebooks.fill_answers(student, correct)))
    _write(root, "invalid_json", '{"cells": [')
    _write(root, "empty_file", b"")
    _write(root, "wrong_nbformat_version", json.dumps({**good, "nbformat": 99}))
    v3 = {"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [{"cells": []}]}
    _write(root, "nbformat_3", json.dumps(v3))
    bare = {**good, "cells": [{**c, "metadata": {}} for c in good["cells"]]}
    _write(root, "no_nbgrader_metadata", json.dumps(bare))
    _write(root, "renamed_notebook", json.dumps(good), name="other_name.ipynb")
    _write(root, "non_utf8", b'{"cells": [], "metadata": {"title": "caf\xe9"}}')
    results = {r.student: r for r in Batch(root, ASSIGNMENT, force=True).run(jobs=2)}
    scores = gradebook.scores(course.gradebook_url(root), ASSIGNMENT)
    return root, results, scores


# case: (status, words the message must contain)
EXPECTED = {
    "all_correct": ("graded", ""),
    "infinite_loop": ("graded", "cell mlp_report timed out after 5 s"),
    "long_sleep": ("graded", "cell mlp_report timed out after 5 s"),
    "memory_bomb": ("graded", "cell mlp_report ran out of memory (MemoryError"),
    "huge_output": ("graded", "cell mlp_report printed too much; its output was cut"),
    "segfault": ("graded", "kernel died (signal 11, SIGSEGV) while running cell mlp_report"),
    "os_exit": ("graded", "kernel died (exit code 1) while running cell mlp_report"),
    "big_file": ("graded", "cell mlp_report wrote a file over the limit of 64 MiB"),
    "dies_early": ("graded", "kernel died (exit code 3) while running cell forward_collect"),
    "invalid_json": ("failed", "forward_hooks.ipynb is not valid JSON (line 1, column 12)"),
    "empty_file": ("failed", "forward_hooks.ipynb is empty"),
    "wrong_nbformat_version": ("failed", "is nbformat version 99; the grader needs version 4"),
    "nbformat_3": ("graded", "is nbformat version 3; the grader needs version 4"),
    "no_nbgrader_metadata": ("graded", "has no nbgrader cell metadata"),
    "renamed_notebook": ("failed", "named other_name.ipynb, not forward_hooks.ipynb"),
    "non_utf8": ("failed", "forward_hooks.ipynb is not UTF-8 text (byte 0xe9 at position 40)"),
}


def _scores(scores, case):
    return {cell.cell: cell.score for cell in scores.get(case, [])}


def test_the_batch_finishes_with_one_row_per_submission(faults):
    _, results, _ = faults
    assert sorted(results) == sorted(EXPECTED)


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_each_fault_gets_its_status_and_a_plain_message(faults, case):
    _, results, _ = faults
    status, words = EXPECTED[case]
    assert (results[case].status, words in results[case].message) == (status, True), results[case]
    if not words:
        assert results[case].message == ""


def test_the_control_and_the_huge_output_get_full_marks(faults):
    _, _, scores = faults
    full = expected_scores(ASSIGNMENT, "all_correct")
    assert _scores(scores, "all_correct") == full
    assert _scores(scores, "huge_output") == full


# (No segfault here: its `import ctypes` is flagged as tampering by the scan, which voids the
# checks that cannot be verified outside the kernel; see test_tamper.py.)
@pytest.mark.parametrize("case", ["infinite_loop", "long_sleep", "memory_bomb", "os_exit"])
def test_a_fault_in_the_last_cell_keeps_the_points_earned_before_it(faults, case):
    _, _, scores = faults
    earned = {**expected_scores(ASSIGNMENT, "all_correct")}
    earned.update(mlp_report_test=0.0, mlp_report_hidden=0.0)
    assert _scores(scores, case) == earned


@pytest.mark.parametrize("case", ["infinite_loop", "long_sleep"])
def test_a_cell_that_timed_out_keeps_its_execution_count(faults, case):
    # As under stock nbgrader, which numbers a cell from the kernel's announcement of it.
    root, _, _ = faults
    autograded = notebooks.read(course.notebook_path(f"autograded/{case}", ASSIGNMENT, root))
    counts = [c.execution_count for c in autograded.cells if c.cell_type == "code"]
    index = next(i for i, c in enumerate(autograded.cells) if c.id == "mlp_report")
    before = [c.execution_count for c in autograded.cells[:index] if c.cell_type == "code"]
    ran = [n for n in before if n is not None]
    assert autograded.cells[index].execution_count == ran[-1] + 1, counts
    assert ran == sorted(set(ran)), counts


def test_after_a_kernel_death_no_later_cell_scores(faults):
    root, _, scores = faults
    assert set(_scores(scores, "dies_early").values()) == {0.0}
    autograded = notebooks.read(course.notebook_path("autograded/dies_early", ASSIGNMENT, root))
    hidden = next(c for c in autograded.cells if c.id == "forward_add5_hidden")
    assert "not run: the kernel died (exit code 3)" in hidden.outputs[0].evalue


def test_failed_submissions_leave_no_autograded_folder(faults):
    root, results, _ = faults
    for case, result in results.items():
        assert (root / "autograded" / case / ASSIGNMENT).exists() == (result.status == "graded"), (
            case
        )


def test_a_huge_output_is_cut_in_the_autograded_notebook(faults):
    root, _, _ = faults
    path = course.notebook_path("autograded/huge_output", ASSIGNMENT, root)
    assert path.stat().st_size < 2 * OUTPUT_CAP


def test_every_kernel_runs_under_the_resource_limits(tmp_path):
    probe = (
        "import resource\n"
        "for name in ('AS', 'CPU', 'FSIZE', 'CORE'):\n"
        "    print(resource.getrlimit(getattr(resource, 'RLIMIT_' + name))[0])"
    )
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(probe)])
    executed = nbformat.reads(execute_notebook(nbformat.writes(nb), str(tmp_path)).notebook, 4)
    limits = Limits()
    expected = [limits.address_space_mb * MIB, limits.cpu_seconds, limits.file_size_mb * MIB, 0]
    assert [int(v) for v in executed.cells[0].outputs[0].text.split()] == expected


def test_a_kernel_over_its_cpu_limit_dies_with_a_clear_message(tmp_path):
    busy = nbformat.v4.new_code_cell("while True:\n    pass")
    busy.metadata["nbgrader"] = {"grade_id": "busy"}
    nb = nbformat.writes(nbformat.v4.new_notebook(cells=[busy]))
    config = {"Execute": {"timeout": 30}, "WarmKernelManager": {"limits": {"cpu_seconds": 1}}}
    with pytest.raises(
        KernelDied, match=r"kernel died \(signal 24, SIGXCPU\) while running cell busy"
    ):
        execute_notebook(nb, str(tmp_path), config)


def test_output_written_to_file_descriptor_1_never_stalls_a_later_kernel(tmp_path):
    # ipykernel copies what a notebook writes to fd 1 to its own inherited stdout (the kernel
    # template's), and prints its connection details there at start-up: a pipe nobody read
    # filled, and every later kernel blocked before it answered.
    flood = nbformat.v4.new_code_cell(
        "import os\nfor _ in range(64):\n    os.write(1, b'x' * 4096)"
    )
    nb = nbformat.writes(nbformat.v4.new_notebook(cells=[flood]))
    executed = execute_notebook(nb, str(tmp_path), {"Execute": {"timeout": 20}})
    outputs = nbformat.reads(executed.notebook, 4).cells[0].outputs
    # Not all of it: ipykernel forwards fd output from a thread, and drops what comes after the
    # cell has finished. The cell finishes (before, it blocked until its timeout).
    assert outputs and {output.output_type for output in outputs} == {"stream"}
    after = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)")])
    config = {"Execute": {"startup_timeout": 15}}
    again = nbformat.reads(
        execute_notebook(nbformat.writes(after), str(tmp_path), config).notebook, 4
    )
    assert again.cells[0].outputs[0].text == "42\n"
