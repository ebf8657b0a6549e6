"""The trusted step around execution (worker/verify.py): hidden test cells kept from the kernel
and answered by the notebook's verifier, a visible pass kept only when the verifier agrees,
zero for a cell that did not run, hid its error or sits under a tampering answer cell; stable
seeds from the course secret."""

from __future__ import annotations

import copy
import linecache
import sys
from types import SimpleNamespace

import pytest
from golden import ROOT

from autograder import notebooks
from autograder.grade.verifier.client import VerifierFailed
from autograder.grade.verifier.host import verify
from autograder.grade.verifier.protocol import Request, Verdict
from autograder.grade.worker.verify import ENAME, Guard, seed_for

ASSIGNMENTS = ["forward_hooks", "backward_hooks", "module_apply", "cnn_hooks", "hooks_in_practice"]


class InProcessVerifier:
    """The notebook's verifier (host.py) run in this process, as a Verification is driven."""

    def __init__(self, request: dict) -> None:
        self.request = request

    def verdicts(self) -> dict:
        return verify(Request.from_dict(self.request))

    def again(self) -> InProcessVerifier:
        return self


def _grade_id(cell) -> str:
    return cell.metadata.get("nbgrader", {}).get("grade_id", "")


def _run(nb, guard: Guard) -> Guard:
    """Execute `nb` in-process as the grader would, around `guard`: each code cell's outputs are
    an error output when it raised, a stream output when it printed."""
    executor = SimpleNamespace()
    guard.prepare(nb, executor)
    namespace: dict = {"__name__": "__main__"}
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        cell.outputs, status = [], "ok"
        try:
            # Its own file name, with its source in linecache as IPython keeps it: the checks read
            # the student's functions' source (is a hook still the stub?), and another test's
            # cell of the same id must not be what they find.
            name = f"<test_verify {id(nb)} {cell.id}>"
            linecache.cache[name] = (len(cell.source), None, cell.source.splitlines(True), name)
            exec(compile(cell.source, name, "exec"), namespace)
        except Exception as error:
            output = notebooks.nbformat.v4.new_output(
                "error", ename=type(error).__name__, evalue=str(error), traceback=[]
            )
            cell.outputs.append(output)
            status = "error"
        cell.execution_count = index + 1
        executor.on_cell_executed(
            cell=cell, cell_index=index, execute_reply={"content": {"status": status}}
        )
    return guard


@pytest.fixture(scope="module", params=ASSIGNMENTS)
def executed(request):
    """The solution notebook run with its verifier: (assignment, guard, executed notebook)."""
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv("MPLBACKEND", "Agg")  # the CNN notebook draws
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    nb = notebooks.read(ROOT / "solutions" / request.param / f"{request.param}.ipynb")
    guard = _run(nb, Guard("alice", request.param, "course secret", run_verifier=InProcessVerifier))
    monkeypatch.undo()
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")
    raised = {
        cell.id: output.get("evalue", "")[:300]
        for cell in nb.cells
        for output in cell.get("outputs", [])
        if output.get("output_type") == "error"
    }
    assert not raised, f"the solution raised in-process: {raised}"
    return request.param, guard, nb


def _verified(guard: Guard, nb, verdicts=None):
    """`guard.verify` on a copy of `nb`, with the verifier's verdicts changed by `verdicts`."""
    nb = copy.deepcopy(nb)
    guard = copy.copy(guard)
    if verdicts is not None:
        guard._verifier = SimpleNamespace(verdicts=lambda: verdicts)
    flags = guard.verify(nb)
    zeroed = {
        _grade_id(c) for c in nb.cells if any(o.get("ename") == ENAME for o in c.get("outputs", []))
    }
    failed = {
        _grade_id(c)
        for c in nb.cells
        if any(o.get("ename") == "CheckFailed" for o in c.get("outputs", []))
    }
    return flags, zeroed, failed, nb


def _exercise(guard: Guard) -> str:
    return sorted(guard.exercises)[0]


def test_hidden_cells_never_reach_the_kernel_and_the_solution_keeps_every_point(executed):
    _, guard, nb = executed
    assert guard.exercises, "the notebook has registered exercises"
    blanked = {_grade_id(nb.cells[index]) for index in guard.blanked}
    assert blanked == {f"{gid}_hidden" for gid in guard.exercises if f"{gid}_hidden" in _ids(nb)}
    assert all(not nb.cells[index].source for index in guard.blanked)  # as the kernel got them
    assert all("check(" in source for source in guard.blanked.values())
    flags, zeroed, failed, verified = _verified(guard, nb)
    assert (flags, zeroed, failed) == ([], set(), set())
    for index, source in guard.blanked.items():
        cell = verified.cells[index]
        assert cell.source == source  # restored for the autograded notebook
        assert cell.outputs[0].text.startswith("✓ ")  # the verifier's verdict


def _ids(nb) -> set[str]:
    return {_grade_id(cell) for cell in nb.cells}


def test_a_visible_pass_the_verifier_does_not_confirm_scores_zero(executed):
    _, guard, nb = executed
    exercise = _exercise(guard)
    verdicts = copy.deepcopy(guard._verifier.verdicts())
    for hidden in verdicts[exercise]:
        verdicts[exercise][hidden] = Verdict(False, "the hooks did not run")
    flags, zeroed, failed, verified = _verified(guard, nb, verdicts)
    cells = {f"{exercise}_test"} | ({f"{exercise}_hidden"} & _ids(nb))
    assert failed == cells and not zeroed and not flags
    shown = next(c for c in verified.cells if _grade_id(c) == f"{exercise}_test").outputs[0]
    assert "the hooks did not run" in shown.evalue


def test_a_missing_verdict_or_a_flag_scores_zero_and_says_why(executed):
    _, guard, nb = executed
    exercise = _exercise(guard)
    verdicts = copy.deepcopy(guard._verifier.verdicts())
    del verdicts[exercise]
    flags, zeroed, _, _ = _verified(guard, nb, verdicts)
    assert f"{exercise}_test" in zeroed and "did not get a verdict" in " ".join(flags)
    verdicts = copy.deepcopy(guard._verifier.verdicts())
    verdicts[exercise][False] = Verdict(False, "", flag="tampering suspected: forged outcome")
    flags, zeroed, _, _ = _verified(guard, nb, verdicts)
    assert f"{exercise}_test" in zeroed and "forged outcome" in " ".join(flags)


def test_an_answer_cell_that_tampers_zeroes_its_exercise_only(executed):
    _, guard, nb = executed
    exercise = _exercise(guard)
    tampered = copy.deepcopy(nb)
    answer = next(c for c in tampered.cells if _grade_id(c) == exercise)
    answer.source += "\nimport autograder.grade\n"
    flags, zeroed, _, _ = _verified(guard, tampered)
    mine = {f"{exercise}_test"} | ({f"{exercise}_hidden"} & _ids(nb))
    assert zeroed == mine, flags
    assert any("tampers with grading" in flag for flag in flags)


def test_hidden_errors_and_cells_that_did_not_run_score_zero(executed):
    _, guard, nb = executed
    name = f"{_exercise(guard)}_test"
    index = next(i for i, c in enumerate(nb.cells) if _grade_id(c) == name)
    hidden_error = copy.deepcopy(guard)
    hidden_error.hidden_errors = {index}
    flags, zeroed, _, _ = _verified(hidden_error, nb)
    assert zeroed == {name} and "error output was hidden" in flags[0]
    not_run = copy.deepcopy(nb)
    not_run.cells[index].execution_count = None
    not_run.cells[index].outputs = []
    unreplied = copy.deepcopy(guard)
    unreplied.replies = {i: s for i, s in guard.replies.items() if i != index}
    flags, zeroed, _, _ = _verified(unreplied, not_run)
    assert zeroed == {name} and "did not run" in flags[0]


def test_a_verifier_that_fails_twice_is_a_grader_fault():
    def broken(request: dict):
        raise OSError("no verifier")

    nb = notebooks.read(ROOT / "solutions" / "forward_hooks" / "forward_hooks.ipynb")
    with pytest.raises(VerifierFailed, match="failed twice"):
        Guard("alice", "forward_hooks", "s", run_verifier=broken).prepare(nb, SimpleNamespace())


def test_test_cells_of_other_courses_keep_nbgraders_scoring():
    """A course without Hooklab's exercises: its test cells run in the kernel as nbgrader runs
    them; only a cell that did not run or hid its error is zeroed."""
    cells = [
        notebooks.nbformat.v4.new_code_cell("def add(a, b):\n    return a + b"),
        notebooks.nbformat.v4.new_code_cell("assert add(1, 2) == 3"),
        notebooks.nbformat.v4.new_code_cell("assert add(2, 2) == 4"),
    ]
    cells[0].metadata["nbgrader"] = {"solution": True, "grade_id": "add", "grade": False}
    for index in (1, 2):
        meta = {"grade": True, "grade_id": f"test{index}", "points": 1, "solution": False}
        cells[index].metadata["nbgrader"] = meta
    nb = notebooks.nbformat.v4.new_notebook(cells=cells)
    guard = _run(nb, Guard("alice", "ps1", "s", run_verifier=InProcessVerifier))
    assert guard.exercises == set() and guard._verifier is None
    assert [c.source for c in nb.cells] == [c.source for c in cells]
    guard.hidden_errors = {2}
    flags, zeroed, failed, _ = _verified(guard, nb)
    assert zeroed == {"test2"} and not failed and len(flags) == 1


def test_the_guard_records_hidden_errors_and_keeps_nbgraders_own_hook():
    seen = []
    executor = SimpleNamespace(on_cell_executed=lambda **kwargs: seen.append(kwargs["cell_index"]))
    nb = notebooks.nbformat.v4.new_notebook(cells=[notebooks.nbformat.v4.new_code_cell("x")] * 2)
    guard = Guard("alice", "a")
    guard.prepare(nb, executor)
    error = notebooks.nbformat.v4.new_output("error", ename="E", evalue="", traceback=[])
    shown = notebooks.nbformat.v4.new_code_cell("x", outputs=[error])
    executor.on_cell_executed(
        cell=nb.cells[0], cell_index=0, execute_reply={"content": {"status": "error"}}
    )
    executor.on_cell_executed(
        cell=shown, cell_index=1, execute_reply={"content": {"status": "error"}}
    )
    assert guard.hidden_errors == {0} and seen == [0, 1]


def test_the_guard_takes_student_assignment_and_secret_from_the_run():
    guard = Guard.for_run("/course/autograded/alice/forward_hooks", {"Verify": {"secret": "k"}})
    assert (guard.student, guard.assignment, guard.secret) == ("alice", "forward_hooks", "k")
    assert guard.seed("x", True) == seed_for("k", "alice", "forward_hooks", "x/hidden")
    assert guard.seed("x", True) != guard.seed("x", False)


def test_seeds_are_stable_and_differ_per_student_cell_and_secret():
    seed = seed_for("s", "alice", "a", "x")
    assert seed == seed_for("s", "alice", "a", "x")
    others = {seed_for("s", "bob", "a", "x"), seed_for("s", "alice", "a", "y")}
    others.add(seed_for("t", "alice", "a", "x"))
    assert seed not in others and len(others) == 3


def test_a_syntax_error_the_kernel_showed_gets_no_second_note_in_the_notebook():
    """The scan cannot read a cell that does not parse; when the kernel showed its SyntaxError,
    the notebook (and so the student's feedback) gets no grader line beside it, as with stock
    nbgrader; the instructor's flags still list it."""
    cells = [
        notebooks.nbformat.v4.new_code_cell("squares = [n * n for n in range(3)"),
        notebooks.nbformat.v4.new_code_cell("assert squares == [0, 1, 4]"),
    ]
    cells[0].metadata["nbgrader"] = {"solution": True, "grade_id": "squares", "grade": False}
    cells[1].metadata["nbgrader"] = {"grade": True, "grade_id": "t", "points": 1, "solution": False}
    nb = notebooks.nbformat.v4.new_notebook(cells=cells)
    guard = _run(nb, Guard("alice", "ps1", "s", run_verifier=InProcessVerifier))
    assert [o.get("ename") for o in nb.cells[0].outputs] == ["SyntaxError"]
    flags, _, _, verified = _verified(guard, nb)
    assert [o.output_type for o in verified.cells[0].outputs] == ["error"]
    assert any("cannot be read" in flag for flag in flags)
    # Not run at all (a kernel that died before it): the note says what the kernel never did.
    nb.cells[0].outputs, nb.cells[0].execution_count = [], None
    _, _, _, verified = _verified(guard, nb)
    assert any("cannot be read" in o.get("text", "") for o in verified.cells[0].outputs)


def test_prose_in_a_manually_graded_code_cell_is_not_flagged():
    """nbgrader's manually graded answers may be code cells; prose there raises a SyntaxError
    in the kernel, in sight of the person who grades it, and is no flag. The same prose in an
    autograded answer cell still is."""
    prose = "It only tries divisors up to the square root because larger ones pair with smaller."
    cells = [notebooks.nbformat.v4.new_code_cell(prose), notebooks.nbformat.v4.new_code_cell(prose)]
    manual = {"grade": True, "solution": True, "grade_id": "explain", "points": 2}
    cells[0].metadata["nbgrader"] = manual
    cells[1].metadata["nbgrader"] = {"solution": True, "grade_id": "answer", "grade": False}
    nb = notebooks.nbformat.v4.new_notebook(cells=cells)
    guard = _run(nb, Guard("alice", "ps1", "s", run_verifier=InProcessVerifier))
    assert [o.get("ename") for o in nb.cells[0].outputs] == ["SyntaxError"]
    flags, _, _, verified = _verified(guard, nb)
    assert flags == [flag for flag in flags if "cell answer" in flag] and len(flags) == 1
    assert [o.output_type for o in verified.cells[0].outputs] == ["error"]
