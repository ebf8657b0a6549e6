"""The student's loop, in a real kernel: Run All on the untouched notebook goes through without an
error, every check saying "not done yet"; then, exercise by exercise, each named mistake typed
into the answer cell and run down to the check gets its own diagnosis (never a traceback; a cell
on the way that raises through PyTorch shows its cause, not PyTorch's frames), and the correct
answer typed in after them passes there, without a restart and without running any earlier cell
again."""

from __future__ import annotations

import re

import nbformat
import pytest
from golden import answers, cases, expected_scores
from student_loop import StudentSession

from autograder import course, notebooks
from autograder.exercises.kit import registry
from autograder.exercises.kit.cell_errors import TORCH_FILES

# An answer that changes a class of the notebook (`Add.forward = ...`) changes it for the rest of
# the session; a student undoes it by running the cell that defines the class again, which its
# diagnosis says (tested with the exercise's mistakes). Such answers are left out of the loop.
PATCHES_A_CLASS = re.compile(r"^[A-Z]\w*\.\w+\s*=", re.MULTILINE)
TRACEBACK = ("Traceback (most recent call last)", 'File "', "----> ")


def exercises_in_order(assignment: str) -> list[str]:
    nb = notebooks.read(course.notebook_path("solutions", assignment))
    ids = {cell.id for cell in nb.cells}
    return [
        cell.id
        for cell in nb.cells
        if cell.metadata.get("nbgrader", {}).get("solution") and f"{cell.id}_test" in ids
    ]


def typed(session: StudentSession, grade_id: str, answer: str) -> str:
    """`answer` as a student types it into the answer cell: inside the cell, so the cell's first
    lines (the fresh module it starts from: `add = Add()`) stay above it unless it has them."""
    released = session.released[grade_id].splitlines()
    first = []
    for line in released:
        if line.startswith(("def ", "class ", "#", "@")) or not line.strip():
            break
        first.append(line)
    kept = [line for line in first if line.split("#")[0].strip() not in answer]
    return "\n".join([*kept, answer])


def named_mistakes(assignment: str, grade_id: str) -> list[tuple[str, str, bool]]:
    """(case, its answer to grade_id, whether its visible check should pass) for every named
    submission whose answer to grade_id differs from all_correct's."""
    correct = notebooks.parse_answers(answers(assignment, "all_correct"))[grade_id]
    found = []
    for case_assignment, case in cases():
        if case_assignment != assignment:
            continue
        section = notebooks.parse_answers(answers(assignment, case)).get(grade_id)
        if section is None or section.strip() == correct.strip() or PATCHES_A_CLASS.search(section):
            continue
        passes = expected_scores(assignment, case)[f"{grade_id}_test"] > 0
        found.append((case, section, passes))
    return found


@pytest.mark.nbgrader
@pytest.mark.parametrize("assignment", course.assignments())
def test_run_all_then_answer_each_exercise(assignment):
    converted = [g for g in exercises_in_order(assignment) if registry.notebook_of(g)]
    if not converted:
        pytest.skip(f"{assignment}'s checks are not exercise modules yet")
    correct = notebooks.parse_answers(answers(assignment, "all_correct"))
    with StudentSession(assignment) as session:
        ran = {run.cell_id: run for run in session.run_all()}
        if set(converted) == set(exercises_in_order(assignment)):
            errors = {cid: run.text[-300:] for cid, run in ran.items() if run.status == "error"}
            assert not errors, errors
        # An object's repr (`<torch._C.Generator at 0x7f...>`) tells a student nothing.
        addresses = {
            cid: r.text for cid, r in ran.items() if re.search(r" at 0x[0-9a-f]+>", r.text)
        }
        assert not addresses, addresses
        # An untouched stub's bare `...` shows nothing, not `Out[n]: Ellipsis`.
        ellipses = [
            cid
            for cid, r in ran.items()
            if any(o.get("data", {}).get("text/plain") == "Ellipsis" for o in r.outputs)
        ]
        assert not ellipses, ellipses
        for grade_id in converted:
            check = ran[f"{grade_id}_test"]
            assert check.status == "ok" and "not done yet" in check.text, check.text
            for case, source, passes in named_mistakes(assignment, grade_id):
                session.answer(grade_id, typed(session, grade_id, source))
                runs = session.run_to_check(grade_id)
                for run in runs[:-1]:  # a run cell that raised through a hook says why
                    if run.status == "error" and TORCH_FILES in run.text:
                        raise AssertionError((case, run.cell_id, "PyTorch's frames", run.text))
                    if "inside PyTorch left out" in run.text:
                        assert "What this usually means" in run.text, (case, run.text)
                verdict = runs[-1]
                assert not any(mark in verdict.text for mark in TRACEBACK), (case, verdict.text)
                if passes:
                    assert verdict.status == "ok" and f"✓ {grade_id}" in verdict.text, (
                        case,
                        verdict.text,
                    )
                else:
                    assert f"✓ {grade_id}" not in verdict.text, (case, verdict.text)
                    assert verdict.status == "error" or "not done yet" in verdict.text, case
            session.answer(grade_id, typed(session, grade_id, correct[grade_id]))
            runs = session.run_to_check(grade_id)
            assert all(run.status == "ok" for run in runs), [
                (r.cell_id, r.status, r.text[-300:]) for r in runs
            ]
            assert f"✓ {grade_id}" in runs[-1].text, runs[-1].text


def answered_in_order(session: StudentSession, assignment: str) -> list[str]:
    """Run All, then every exercise answered correctly and run down to its check; the exercises."""
    correct = notebooks.parse_answers(answers(assignment, "all_correct"))
    session.run_all()
    done = exercises_in_order(assignment)
    for grade_id in done:
        session.answer(grade_id, typed(session, grade_id, correct[grade_id]))
        verdict = session.run_to_check(grade_id)[-1]
        assert f"✓ {grade_id}" in verdict.text, verdict.text
    return done


@pytest.mark.nbgrader
@pytest.mark.parametrize("cell_ids", [True, False], ids=["JupyterLab", "no cell ids"])
@pytest.mark.parametrize("assignment", course.assignments())
def test_a_check_run_again_after_later_exercises_still_passes(assignment, cell_ids):
    """Later exercises rebind the same names (`add`, `model`, `answer`, `x`); an earlier check
    cell run again on its own reads its own exercise's objects, not theirs, whether or not the
    front end says which cell runs."""
    with StudentSession(assignment, cell_ids=cell_ids) as session:
        for grade_id in answered_in_order(session, assignment):
            verdict = session.run(session.cells[session.index(f"{grade_id}_test")])
            assert verdict.status == "ok" and f"✓ {grade_id}" in verdict.text, (
                grade_id,
                verdict.text,
            )


@pytest.mark.nbgrader
def test_an_exercise_done_after_the_next_one_passes():
    """tensor_hook_scale's answer cell uses the `model` of its set-up cell: answered after
    backward_normalize, whose answer cell rebinds `model` with a hook on it, it still passes."""
    correct = notebooks.parse_answers(answers("backward_hooks", "all_correct"))
    with StudentSession("backward_hooks") as session:
        session.run_all()
        for grade_id in ("backward_normalize", "tensor_hook_scale"):
            session.answer(grade_id, typed(session, grade_id, correct[grade_id]))
            verdict = session.run_to_check(grade_id)[-1]
            assert f"✓ {grade_id}" in verdict.text, (grade_id, verdict.text)


@pytest.mark.nbgrader
@pytest.mark.parametrize("cell_ids", [True, False], ids=["JupyterLab", "no cell ids"])
def test_a_name_the_student_rebinds_in_a_cell_of_their_own_stays_rebound(cell_ids):
    correct = notebooks.parse_answers(answers("forward_hooks", "all_correct"))
    with StudentSession("forward_hooks", cell_ids=cell_ids) as session:
        session.run_all()
        for grade_id in ("forward_add5", "pre_hook_replace"):
            session.answer(grade_id, typed(session, grade_id, correct[grade_id]))
            session.run_to_check(grade_id)
        # A cell the student added (JupyterLab gives it a random id) makes a hook-less `add`.
        scratch = nbformat.v4.new_code_cell(
            "add = Add()\nx1, x2 = torch.rand(1), torch.rand(1)\noutput = add(x1, x2)"
        )
        assert session.run(scratch).status == "ok"
        verdict = session.run(session.cells[session.index("forward_add5_test")])
        assert "✓ forward_add5" not in verdict.text, verdict.text


@pytest.mark.nbgrader
def test_a_check_run_before_the_cell_under_the_answer_says_to_run_that_cell():
    """A correct answer whose run cell was skipped: the check says to run that cell (not that
    the hook is wrong), and passes once it ran."""
    correct = notebooks.parse_answers(answers("forward_hooks", "all_correct"))
    with StudentSession("forward_hooks") as session:
        session.run_all()
        for grade_id in ("forward_collect", "forward_add5", "pre_hook_replace", "mlp_report"):
            session.answer(grade_id, typed(session, grade_id, correct[grade_id]))
            assert session.run(session.cells[session.index(grade_id)]).status == "ok"
            check = session.cells[session.index(f"{grade_id}_test")]
            verdict = session.run(check)
            assert verdict.status == "ok" and "not done yet" in verdict.text, verdict.text
            assert "run the cell under your answer cell" in " ".join(verdict.text.split())
            session.run(session.cells[session.index(f"{grade_id}_run")])
            assert f"✓ {grade_id}" in session.run(check).text


@pytest.mark.nbgrader
def test_a_set_up_cell_run_again_after_the_answer_says_to_run_the_answer_again():
    correct = notebooks.parse_answers(answers("module_apply", "all_correct"))
    with StudentSession("module_apply") as session:
        session.run_all()
        session.answer(
            "apply_add_bias", typed(session, "apply_add_bias", correct["apply_add_bias"])
        )
        assert "✓ apply_add_bias" in session.run_to_check("apply_add_bias")[-1].text
        for cell_id in ("apply_add_bias_setup", "apply_add_bias_run"):  # a new `model`
            session.run(session.cells[session.index(cell_id)])
        verdict = session.run(session.cells[session.index("apply_add_bias_test")])
        text = " ".join(verdict.text.split())
        assert "`model` was made again after your answer cell ran" in text, text
