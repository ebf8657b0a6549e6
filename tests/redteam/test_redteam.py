"""The red team's attacks, graded by `hooklab autograde`'s engine in one batch beside honest
students: does every attack get exactly its expected score, status and flag while the honest
students keep their golden scores; does every flag and failure reason reach what the command
prints, flags.csv and the class report; and do the autograded notebooks and the feedback that
stock `nbgrader generate_feedback` makes from them show no hidden test, no seed and no script?

The attacks are tests/redteam/cells/*.ipy (put in cells a student may edit) and submissions
made on disk here (links, a FIFO, a device, a deeply nested file); expected.toml lists each
one's outcome and why."""

from __future__ import annotations

import base64
import csv
import io
import json
import os
import re
import stat
import subprocess
import sys
import tomllib
from html import escape
from pathlib import Path

import nbformat
import pytest
from golden import answers as answer_text
from golden import expected_scores, graded_points, make_course
from rich.console import Console

from autograder import course, gradebook, notebooks
from autograder.grade.run import autograde, printable
from autograder.grade.worker.execute import OUTPUT_CAP
from autograder.grade.worker.verify import SECRET_FILE, seed_for
from autograder.reports import write_class_report, write_flags_csv, write_grades_csv

pytestmark = pytest.mark.nbgrader

ASSIGNMENT = "forward_hooks"
HERE = Path(__file__).parent
CELLS = HERE / "cells"
EXPECTED = tomllib.loads((HERE / "expected.toml").read_text(encoding="utf-8"))
# Honest students graded in the same batch: their golden scores must not move.
HONEST = ["all_correct", "blank", "wrong_predictions", "tuple_appended", "hook_left_registered"]
DEPTH = 100_000


def _cell(name: str) -> str:
    source = (CELLS / f"{name}.ipy").read_text(encoding="utf-8")
    forge = (CELLS / "universal_forge.ipy").read_text(encoding="utf-8")
    encoded = base64.b64encode(forge.encode()).decode()
    return source.replace("__UNIVERSAL_FORGE_BASE64__", encoded)


def _attack_notebook(student_nb, case: dict) -> nbformat.NotebookNode:
    answers = notebooks.parse_answers(answer_text(ASSIGNMENT, case["base"]))
    nb = notebooks.fill_answers(student_nb, answers)
    for where, name in case.get("cells", {}).items():
        attack = _cell(name)
        if where == "end":
            nb.cells.append(notebooks.demo(f"attack_{name}", attack))
            continue
        cell = next(c for c in nb.cells if c.get("id") == where)
        if cell.metadata.get("nbgrader", {}).get("solution"):  # before the exercise's answer
            suffix = "\nif _landed:\n    add._forward_pre_hooks.clear()\n    add._forward_hooks.clear()\n"
            cell.source = f"{attack}\n{cell.source}{suffix}"
        else:
            cell.source = attack
    return nb


def _on_disk(root: Path, kind: str, student: str, honest: str) -> None:
    """A submission `kind` of `student` made on disk (see expected.toml)."""
    folder = root / "submitted" / student / ASSIGNMENT
    victim = course.notebook_path("submitted/all_correct", ASSIGNMENT, root)
    if kind == "student_folder_symlink":
        (root / "submitted" / student).symlink_to("all_correct", target_is_directory=True)
        return
    folder.mkdir(parents=True)
    notebook = folder / f"{ASSIGNMENT}.ipynb"
    if kind == "symlink_to_other_student":
        notebook.symlink_to(victim)
    elif kind == "hard_link_victim":
        notebook.write_text(honest, encoding="utf-8")
    elif kind == "hard_link":  # made after its victim (expected.toml's order)
        os.link(course.notebook_path("submitted/hard_link_victim", ASSIGNMENT, root), notebook)
    elif kind == "deep_json":
        notebook.write_text('{"cells": ' + "[" * DEPTH + "]" * DEPTH + "}", encoding="utf-8")
    else:
        notebook.write_text(honest, encoding="utf-8")
        if kind == "symlink_to_shadow":
            (folder / "shadow.txt").symlink_to("/etc/shadow")
        elif kind == "fifo":
            os.mkfifo(folder / "data.fifo")
        elif kind == "device":
            os.mknod(folder / "null", stat.S_IFCHR | 0o600, os.makedev(1, 3))


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The course, every attack and honest student submitted, graded in one engine batch
    through the command's front end; the reports and stock nbgrader's feedback made after."""
    root = tmp_path_factory.mktemp("redteam-course")
    make_course(root, [ASSIGNMENT], config="c.Execute.timeout = 10")
    student_nb = notebooks.read(course.notebook_path("notebooks", ASSIGNMENT, root))
    for name in HONEST:
        answers = notebooks.parse_answers(answer_text(ASSIGNMENT, name))
        course.submit(notebooks.fill_answers(student_nb, answers), name, ASSIGNMENT, root)
    honest = course.notebook_path("submitted/all_correct", ASSIGNMENT, root).read_text()
    skipped = {}
    for student, case in EXPECTED.items():
        if "file" not in case:
            course.submit(_attack_notebook(student_nb, case), student, ASSIGNMENT, root)
            continue
        try:
            _on_disk(root, case["file"], student, honest)
        except PermissionError as error:  # a device needs CAP_MKNOD (CI grades as root)
            skipped[student] = str(error)
    printed = io.StringIO()
    console = Console(file=printed, width=400, color_system=None)
    results = autograde(root, ASSIGNMENT, force=True, jobs=2, console=console)
    db = course.gradebook_url(root)
    exercises = {ASSIGNMENT: sorted({g.rsplit("_", 1)[0] for g in graded_points(ASSIGNMENT)})}
    reports = {
        "grades": write_grades_csv(db, exercises, root / "grades.csv"),
        "flags": write_flags_csv(root, [ASSIGNMENT], root / "flags.csv"),
        "report": write_class_report(db, root, exercises, root / "reports" / "class.html"),
    }
    course.use_environment_bin()
    command = [sys.executable, "-m", "nbgrader", "generate_feedback", ASSIGNMENT, "--force"]
    feedback = subprocess.run(command, cwd=root, capture_output=True, text=True)
    return {
        "root": root,
        "results": {r.student: r for r in results},
        "scores": gradebook.scores(db, ASSIGNMENT),
        "printed": printed.getvalue(),
        "reports": reports,
        "feedback": feedback,
        "skipped": skipped,
    }


def _scores(graded, student) -> dict[str, float]:
    return {cell.cell: cell.score for cell in graded["scores"].get(student, [])}


def _skip_if_not_made(graded, case):
    if case in graded["skipped"]:
        pytest.skip(f"{case} could not be made here: {graded['skipped'][case]}")


@pytest.mark.parametrize("case", list(EXPECTED))
def test_an_attack_gets_exactly_its_expected_status_scores_and_flag(graded, case):
    _skip_if_not_made(graded, case)
    expected, result = EXPECTED[case], graded["results"][case]
    assert result.status == expected["status"], result.message
    zero = dict.fromkeys(graded_points(ASSIGNMENT), 0.0)
    want = expected_scores(ASSIGNMENT, "all_correct") if expected["scores"] == "full" else zero
    got = _scores(graded, case) if result.status == "graded" else zero
    assert got == want, result.message
    if expected["flag"]:
        assert expected["flag"] in result.message, result.message
    else:
        assert "tampering" not in result.message and "cannot be read" not in result.message
    assert "timed out" not in result.message  # overwrite_callables once hung every later cell


@pytest.mark.parametrize("student", HONEST)
def test_honest_students_beside_the_attacks_keep_their_golden_scores(graded, student):
    result = graded["results"][student]
    assert result.status == "graded", result.message
    assert _scores(graded, student) == expected_scores(ASSIGNMENT, student), result.message
    assert "tampering" not in result.message, result.message


@pytest.mark.parametrize("case", [c for c in EXPECTED if EXPECTED[c]["flag"]])
def test_every_flag_and_failure_reason_is_printed_exported_and_reported(graded, case):
    _skip_if_not_made(graded, case)
    result = graded["results"][case]
    notes = result.notes
    assert notes and "; ".join(notes) == result.message
    assert f"{ASSIGNMENT}/{printable(case)}: {printable(result.message)}" in graded["printed"]
    with graded["reports"]["flags"].open(newline="", encoding="utf-8") as file:
        rows = [row for row in csv.DictReader(file) if row["student"] == case]
    assert [row["note"] for row in rows] == notes
    assert {row["status"] for row in rows} == {result.status}
    report = graded["reports"]["report"].read_text(encoding="utf-8")
    for note in notes:
        assert escape(note) in report, note


def test_formula_student_ids_are_neutralised_in_grades_csv(graded):
    with graded["reports"]["grades"].open(newline="", encoding="utf-8") as file:
        students = {row[0] for row in list(csv.reader(file))[1:]}
    assert {"'=cmd|' -C calc'!A0", "'@SUM(1+1)"} <= students
    assert not any(s.startswith(("=", "+", "-", "@", "\t", "\r")) for s in students)


def _visible(graded) -> dict[str, str]:
    """Everything a student or a formgrader session is shown: every autograded notebook and
    every feedback page, by path."""
    root = graded["root"]
    paths = [*root.glob("autograded/*/*/*.ipynb"), *root.glob("feedback/*/*/*.html")]
    return {str(p.relative_to(root)): p.read_text(encoding="utf-8") for p in paths}


def test_stock_feedback_is_made_for_every_graded_student(graded):
    root, feedback = graded["root"], graded["feedback"]
    assert feedback.returncode == 0, feedback.stdout + feedback.stderr
    for student, result in graded["results"].items():
        page = root / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html"
        assert page.exists() == (result.status == "graded"), student
    assert (root / "feedback" / "begin_hidden_string").exists()


def test_no_student_visible_output_shows_a_hidden_test_or_a_seed(graded):
    root = graded["root"]
    solution = notebooks.read(course.notebook_path("solutions", ASSIGNMENT, root))
    hidden = [
        line.strip()
        for cell in solution.cells
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "").endswith("_hidden")
        for line in cell.source.splitlines()
        if "check(" in line
    ]
    # As the kernel ran them (the old checks' cells, seeded): what precedes the seed.
    hidden = [line.removesuffix(")") for line in hidden]
    secret = (root / SECRET_FILE).read_text().strip()
    visible = _visible(graded)
    assert any("print_history" in path for path in visible)
    printed = visible[f"autograded/print_history/{ASSIGNMENT}/{ASSIGNMENT}.ipynb"]
    assert "forward_collect_setup" in printed or "add = Add()" in printed  # In was printed
    for path, text in visible.items():
        student = path.split("/")[1]
        seeds = [
            str(seed_for(secret, student, ASSIGNMENT, f"{grade_id}/{kind}"))
            for grade_id in graded_points(ASSIGNMENT)
            for kind in ("visible", "hidden")
        ]
        outputs = text if path.endswith(".html") else _outputs_text(text)
        assert [line for line in hidden if line in outputs] == [], path
        assert [seed for seed in seeds if seed in text] == [], path


def _outputs_text(notebook: str) -> str:
    nb = json.loads(notebook)
    return json.dumps([cell.get("outputs", []) for cell in nb["cells"]])


def test_no_script_of_a_student_reaches_the_autograded_notebook_or_the_feedback(graded):
    visible = _visible(graded)
    script = re.compile(r"<script[^>]*>(?:(?!</script>).)*window\.pwned", re.DOTALL)
    for path, text in visible.items():
        if path.endswith(".ipynb"):  # the cells' sources hold the attack as code: its outputs
            text = _outputs_text(text)
            assert "window.pwned = 3" not in text, path  # the Javascript output is dropped
        assert not script.search(text), path
        assert not re.search(r"<img[^>]*onerror", text), path
    shown = _outputs_text(visible[f"autograded/script_html/{ASSIGNMENT}/{ASSIGNMENT}.ipynb"])
    assert "&lt;script&gt;window.pwned = 1" in shown  # shown as text


def test_a_display_flood_is_cut_in_the_autograded_notebook(graded):
    path = course.notebook_path("autograded/update_display_flood", ASSIGNMENT, graded["root"])
    assert path.stat().st_size < 2 * OUTPUT_CAP


def test_a_kernel_finds_its_folder_on_the_grader_disk_and_cannot_write_there(graded):
    nb = notebooks.read(course.notebook_path("autograded/disk_writes", ASSIGNMENT, graded["root"]))
    printed = "".join(o.get("text", "") for o in nb.cells[-1].outputs)
    assert "refused: OSError: Read-only file system" in printed, printed
    assert "found its folder; files written there: 0" in printed, printed


def test_refused_links_are_never_followed_or_copied(graded):
    root = graded["root"]
    for folder in ("autograded", "feedback"):
        for path in (root / folder).rglob("*"):
            assert not path.is_symlink() and path.name not in ("shadow.txt", "data.fifo", "null")
    for case in ("symlink_to_other_student", "symlink_to_shadow", "student_folder_symlink"):
        assert not (root / "autograded" / case / ASSIGNMENT).exists()


def test_a_verifier_that_fails_is_a_grader_fault_not_a_zero(graded, monkeypatch):
    from autograder.grade.grader.batch import Batch
    from autograder.grade.verifier import client
    from autograder.grade.verifier.client import VerifierFailed, VerifierHost
    from autograder.grade.worker.pipeline import grade_notebook

    root = graded["root"]
    answers = notebooks.parse_answers(answer_text(ASSIGNMENT, "all_correct"))
    student_nb = notebooks.read(course.notebook_path("notebooks", ASSIGNMENT, root))
    course.submit(notebooks.fill_answers(student_nb, answers), "unlucky", ASSIGNMENT, root)
    attempts = []

    def fail(self):
        attempts.append(self)
        raise VerifierFailed("the verifier could not start: (made to fail by the test)")

    client.close_idle()  # none kept from the fixture's grading: each verifier is a new one
    monkeypatch.setattr(VerifierHost, "start", fail)
    batch = Batch(root, ASSIGNMENT, students="unlucky", force=True, dispatch=grade_notebook)
    (result,) = list(batch.run(jobs=1))
    assert result.status == "failed"
    assert "grader fault, not the student's" in result.message, result.message
    assert len(attempts) == 2  # retried once
    assert not (root / "autograded" / "unlucky" / ASSIGNMENT).exists()


def test_the_exercises_hidden_cells_never_run_in_the_kernel(graded):
    # nbclient numbers every cell it runs; the verifier alone runs these, so a cell that prints
    # the kernel's input history (print_history) cannot find them there.
    nb = notebooks.read(
        course.notebook_path("autograded/print_history", ASSIGNMENT, graded["root"])
    )
    counts = {notebooks.grade_id(cell): cell.get("execution_count") for cell in nb.cells}
    assert counts["forward_collect_hidden"] is None and counts["forward_add5_hidden"] is None
    assert counts["forward_collect_test"] is not None  # visible cells run in the kernel
    assert "✓ forward_collect" in "".join(
        o.get("text", "")
        for c in nb.cells
        if c.get("id") == "forward_collect_hidden"
        for o in c.outputs
    )


@pytest.mark.parametrize(
    "error",
    [
        MemoryError(),
        RecursionError("maximum recursion depth exceeded"),
        UnicodeDecodeError("utf-8", b"\xe9", 0, 1, "invalid continuation byte"),
        OSError(28, "No space left on device"),
        ValueError("a bug"),
    ],
    ids=lambda error: type(error).__name__,
)
def test_any_exception_while_one_submission_is_graded_is_its_failed_row(graded, error):
    from autograder.grade.grader.batch import Batch

    root = graded["root"]
    student = f"raises_{type(error).__name__}"
    answers = notebooks.parse_answers(answer_text(ASSIGNMENT, "all_correct"))
    student_nb = notebooks.read(course.notebook_path("notebooks", ASSIGNMENT, root))
    course.submit(notebooks.fill_answers(student_nb, answers), student, ASSIGNMENT, root)

    def dispatch(job):
        raise error

    batch = Batch(root, ASSIGNMENT, students=student, force=True, dispatch=dispatch)
    (result,) = list(batch.run(jobs=1))
    assert result.status == "failed" and result.message, result
    assert type(error).__name__ in result.message or "No space left" in result.message
