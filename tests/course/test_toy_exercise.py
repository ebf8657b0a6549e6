"""Does docs/adding-an-exercise.md add an exercise? A toy exercise added to a copy of the course
that way, and nothing else, is graded end to end by `python -m autograder autograde`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from golden import ROOT, expected_scores

from autograder import gradebook, notebooks
from autograder.grade.kernels.template_client import ZYGOTE_ENV

pytestmark = pytest.mark.nbgrader

ASSIGNMENT = "forward_hooks"
TOY = "forward_scale"
POINTS = {f"{TOY}_test": 1.0, f"{TOY}_hidden": 2.0}

# Step 1 of the doc: the exercise's module, its visible and hidden checks, their judges, HINTS.
MODULE = '''\
"""forward_scale: a forward hook on `add` makes it return 3 * (x1 + x2)."""

from autograder.exercises.forward_hooks.models import make_add
from autograder.exercises.kit.evidence import random_pairs
from autograder.exercises.kit.judge import expect_close, item
from autograder.exercises.kit.student import Student, is_stub
from autograder.feedback import CheckFailed, NotDoneYet, describe
from autograder.i18n import N_, _
from autograder.tolerances import close

HINTS = [
    N_("A forward hook that returns a tensor replaces the module's output."),
    N_("Build the new tensor from `output`; never change it in place."),
]
SHAPES = [(1,), (3,)]


def _expect(got, x1, x2, where: str) -> None:
    if not close(got, 3 * (x1 + x2)):
        raise CheckFailed(
            _("{where}: expected {expected}, got {got}.").format(
                where=where, expected=describe(3 * (x1 + x2)), got=describe(got)
            )
        )


def visible(s: Student) -> str:
    hooks = [h for h in s.hooks_on(s.get("add"), "forward") if not is_stub(h)]
    if not hooks:  # the untouched stub registers its hook too: it does nothing yet
        raise NotDoneYet(_("write the hook's body, then run the answer cell."))
    x1, x2, output = s.get("x1"), s.get("x2"), s.get("output")
    s.record(x1=x1, x2=x2, output=output)
    _expect(output, x1, x2, "add(x1, x2)")
    return _("the output is 3 * (x1 + x2).")


def hidden(s: Student) -> str:
    hooks = [h for h in s.hooks_on(s.get("add"), "forward") if not is_stub(h)]
    if not hooks:  # the untouched stub registers its hook too: it does nothing yet
        raise NotDoneYet(_("write the hook's body, then run the answer cell."))
    for trial, (x1, x2) in enumerate(random_pairs(s.rng, SHAPES)):
        add = make_add()
        for fn in hooks:
            add.register_forward_hook(fn)
        got = add(x1, x2)
        s.record(**{f"output{trial}": got})
        _expect(got, x1, x2, "on a fresh Add")
    return _("the hook triples the output of a fresh Add too.")


def judge_visible(rng, evidence) -> None:
    x1, x2 = item(evidence, "x1"), item(evidence, "x2")
    expect_close(item(evidence, "output"), 3 * (x1 + x2), "output")


def judge_hidden(rng, evidence) -> None:
    for trial, (x1, x2) in enumerate(random_pairs(rng, SHAPES)):
        expect_close(item(evidence, f"output{trial}"), 3 * (x1 + x2), f"output of trial {trial}")
'''


def _toy_cells():
    """Step 2 of the doc: the exercise's cells, in the doc's order."""
    return [
        notebooks.md(
            f"{TOY}_intro",
            f"## Exercise n — Scale the output (`{TOY}`)\n\n"
            "Register a forward hook on `add` that makes it return `3 * (x1 + x2)`.",
        ),
        notebooks.demo(
            f"{TOY}_hints", f'from autograder.widgets import show_hints\n\nshow_hints("{TOY}")'
        ),
        notebooks.solution(
            TOY,
            "add = Add()  # a fresh Add each time this cell runs\n\n"
            "def scale_hook(module, input, output):\n"
            "    ### BEGIN SOLUTION\n"
            "    return 3 * output\n"
            "    ### END SOLUTION\n\n"
            "add.register_forward_hook(scale_hook)",
        ),
        notebooks.locked(
            f"{TOY}_run", "x1, x2 = torch.rand(1), torch.rand(1)\noutput = add(x1, x2)"
        ),
        notebooks.tests(
            f"{TOY}_test", f'from autograder import check\n\ncheck("{TOY}", globals())', 1
        ),
        notebooks.tests(
            f"{TOY}_hidden",
            "### BEGIN HIDDEN TESTS\nfrom autograder import check\n\n"
            f'check("{TOY}", globals(), hidden=True)\n### END HIDDEN TESTS',
            2,
        ),
    ]


def _run(root: Path, *args: str) -> subprocess.CompletedProcess:
    # Its own kernel template, from the copy's code: not one an earlier test of this process
    # started from the repo's (HOOKLAB_ZYGOTE), which has no toy exercise.
    env = {**os.environ, "PYTHONPATH": str(root)}
    env.pop(ZYGOTE_ENV, None)
    done = subprocess.run(
        [sys.executable, "-m", "autograder", "--root", str(root), *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_a_toy_exercise_added_as_the_doc_says_is_graded_end_to_end(tmp_path):
    root = tmp_path / "course"
    shutil.copytree(
        ROOT / "autograder", root / "autograder", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copytree(ROOT / "solutions" / ASSIGNMENT, root / "solutions" / ASSIGNMENT)
    shutil.copy(ROOT / "nbgrader_config.py", root / "nbgrader_config.py")

    (root / "autograder" / "exercises" / ASSIGNMENT / f"{TOY}.py").write_text(
        MODULE, encoding="utf-8"
    )
    source = root / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    solution = notebooks.read(source)
    at = next(i for i, cell in enumerate(solution.cells) if cell.id == "summary")
    solution.cells[at:at] = _toy_cells()
    notebooks.write(solution, source)

    _run(root, "build")
    student = notebooks.read(root / "notebooks" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    stub = next(cell for cell in student.cells if cell.id == TOY)
    assert "return 3 * output" not in stub.source
    for name, nb in (("solution", solution), ("stub", student)):
        notebooks.write(nb, root / "submitted" / name / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")

    _run(root, "autograde", ASSIGNMENT, "-j", "2")

    got = {
        student: {cell.cell: cell.score for cell in cells}
        for student, cells in gradebook.scores(f"sqlite:///{root}/gradebook.db", ASSIGNMENT).items()
    }
    assert got["solution"] == {**expected_scores(ASSIGNMENT, "all_correct"), **POINTS}
    assert got["stub"] == {**expected_scores(ASSIGNMENT, "blank"), **dict.fromkeys(POINTS, 0.0)}
    graded = notebooks.read(root / "autograded" / "stub" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    check = next(cell for cell in graded.cells if cell.id == f"{TOY}_test")
    shown = " ".join(str(o.get("evalue", "")) + str(o.get("text", "")) for o in check.outputs)
    assert "not done yet" in shown, shown  # the untouched stub is not a wrong answer
