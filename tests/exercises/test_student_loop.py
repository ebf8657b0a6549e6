"""The student's loop, in a real kernel: Run All on the untouched notebook goes through without an
error, every check saying "not done yet"; then, exercise by exercise, each named mistake typed
into the answer cell and run down to the check gets its own diagnosis (never a traceback), and
the correct answer typed in after them passes there, without a restart and without running any
earlier cell again."""

from __future__ import annotations

import re

import pytest
from golden import answers, cases, expected_scores
from student_loop import StudentSession

from autograder import course, notebooks
from autograder.exercises.kit import registry

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
        for grade_id in converted:
            check = ran[f"{grade_id}_test"]
            assert check.status == "ok" and "not done yet" in check.text, check.text
            for case, source, passes in named_mistakes(assignment, grade_id):
                session.answer(grade_id, typed(session, grade_id, source))
                runs = session.run_to_check(grade_id)
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
