"""Does the trusted verifier accept honest evidence, and refuse missing, forged, malformed or
wrong evidence, hidden errors and cells that never ran? (In-process, no kernel; one test asks
the verifier process the kernel template forks for the same verdicts.) The static scan it also
uses is test_scan.py's."""

import base64
import copy
import io
import json
import math
import sys
from types import SimpleNamespace

import pytest
import torch
from golden import ROOT

from autograder import notebooks
from autograder.checks.evidence import MIMETYPE, Evidence, decode, encode, plain
from autograder.checks.trusted import VERIFIERS
from autograder.grade.kernels.template_client import Zygote
from autograder.grade.verifier.client import LocalVerifiers
from autograder.grade.worker.verify import ENAME, Guard, seed_for

ASSIGNMENTS = ["forward_hooks", "backward_hooks", "module_apply", "cnn_hooks", "hooks_in_practice"]
# Test cells with a trusted verifier, per notebook (the table in docs/threat-model.md).
COVERED = {
    "forward_hooks": 16,
    "backward_hooks": 10,
    "module_apply": 9,
    "cnn_hooks": 6,
    "hooks_in_practice": 12,
}


def _is_test(cell) -> bool:
    meta = cell.metadata.get("nbgrader", {})
    return cell.cell_type == "code" and meta.get("grade") and not meta.get("solution")


def _run(nb, monkeypatch) -> tuple:
    """Execute `nb` in-process as the grader would (seeded by a Guard), recording each cell's
    outputs: evidence, and an error output for a cell that raised."""
    guard = Guard("alice", "assignment", "course secret")
    executor = SimpleNamespace()
    guard.prepare(nb, executor)
    current: list = []
    monkeypatch.setattr(Evidence, "emit", lambda self: current.append(self.output()))
    namespace: dict = {"__name__": "__main__"}
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        current.clear()
        cell.outputs, status = [], "ok"
        try:
            exec(compile(cell.source, f"<cell {cell.id}>", "exec"), namespace)
        except Exception as error:
            cell.outputs.append(
                notebooks.nbformat.v4.new_output(
                    "error", ename=type(error).__name__, evalue=str(error), traceback=[]
                )
            )
            status = "error"
        for data in current:
            cell.outputs.append(notebooks.nbformat.v4.new_output("display_data", data=data))
        cell.execution_count = index + 1
        executor.on_cell_executed(
            cell=cell, cell_index=index, execute_reply={"content": {"status": status}}
        )
    return guard, nb


@pytest.fixture(scope="module", params=ASSIGNMENTS)
def executed(request):
    """The solution notebook run with seeds: (assignment, guard, executed notebook)."""
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv("MPLBACKEND", "Agg")  # the CNN notebook draws
    nb = notebooks.read(ROOT / "solutions" / request.param / f"{request.param}.ipynb")
    guard, nb = _run(nb, monkeypatch)
    monkeypatch.undo()
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")
    return request.param, guard, nb


def _verified(guard, nb):
    nb = copy.deepcopy(nb)
    flags = guard.verify(nb)
    zeroed = {c.id for c in nb.cells if any(o.get("ename") == ENAME for o in c.get("outputs", []))}
    return flags, zeroed, nb


def test_honest_evidence_passes_and_is_removed(executed):
    _, guard, nb = executed
    covered = [
        c for c in nb.cells if _is_test(c) and any(MIMETYPE in o.get("data", {}) for o in c.outputs)
    ]
    assert covered, "no check emitted evidence"
    flags, zeroed, result = _verified(guard, nb)
    assert flags == [] and zeroed == set()
    assert MIMETYPE not in json.dumps(result)
    assert "seed=" not in json.dumps(result)  # the seeds are not left in the graded notebook


def test_every_covered_cell_refuses_missing_or_wrong_evidence(executed):
    assignment, guard, nb = executed
    tested = 0
    for index, cell in enumerate(nb.cells):
        evidence = [o for o in cell.get("outputs", []) if MIMETYPE in o.get("data", {})]
        if not evidence or not _is_test(cell):
            continue
        payload = evidence[0].data[MIMETYPE]
        if (payload["grade_id"], payload["hidden"]) not in VERIFIERS:
            continue
        missing = copy.deepcopy(nb)
        missing.cells[index].outputs = []
        flags, zeroed, _ = _verified(guard, missing)
        assert zeroed == {cell.id}, flags
        assert "left no evidence" in flags[0]
        wrong = copy.deepcopy(nb)
        values = {k: _perturb(v) for k, v in decode(payload["data"]).items()}
        wrong_payload = wrong.cells[index].outputs[-1].data[MIMETYPE]
        wrong_payload["data"] = encode(values)
        flags, zeroed, _ = _verified(guard, wrong)
        assert zeroed == {cell.id}, (cell.id, flags)
        assert "disagrees" in flags[0]
        tested += 1
    assert tested == COVERED[assignment]


def test_the_verifier_process_gives_the_verdicts_the_verifiers_give_here(executed):
    """Workers ask the verifier process the kernel template forks (verifier_process.py) instead
    of importing torch: it must refuse and accept exactly what the verifiers do in-process."""
    _, guard, nb = executed
    index, _ = _first_covered(nb, hidden=True)
    cases = {"honest": copy.deepcopy(nb)}
    cases["wrong values everywhere"] = wrong = copy.deepcopy(nb)
    for cell in wrong.cells:
        for output in cell.get("outputs", []):
            payload = output.get("data", {}).get(MIMETYPE)
            if payload:
                payload["data"] = encode(
                    {k: _perturb(v) for k, v in decode(payload["data"]).items()}
                )
    cases["malformed"] = malformed = copy.deepcopy(nb)
    malformed.cells[index].outputs[-1].data[MIMETYPE]["data"] = {"pickle": "gASVAAAAAAAAAAB9lC4="}
    cases["no data"] = empty = copy.deepcopy(nb)
    del empty.cells[index].outputs[-1].data[MIMETYPE]["data"]
    remote = Zygote.current().verifiers
    for name, case in cases.items():
        here = _verified(guard, case)
        guard.verifiers = remote
        try:
            there = _verified(guard, case)
        finally:
            guard.verifiers = LocalVerifiers()
        assert there[:2] == here[:2], name
        assert bool(here[0]) is (name != "honest"), (name, here[0])


def _perturb(value):
    """A wrong answer of the same shape: tensors, numbers, strings and flags all changed."""
    if isinstance(value, torch.Tensor):
        return value + 0.5
    if isinstance(value, list):
        return [_perturb(v) for v in value]
    if isinstance(value, dict):
        return {k: _perturb(v) for k, v in value.items()}
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    return value + "?" if isinstance(value, str) else value


def _pickled(values) -> str:
    """`values` as torch.save wrote evidence before the format was JSON."""
    buffer = io.BytesIO()
    torch.save(values, buffer)
    return base64.b64encode(buffer.getvalue()).decode()


ONE_FLOAT = base64.b64encode(bytes(4)).decode()  # the bytes of one float32 zero
MALFORMED = {
    "a pickled object": _pickled({"answer0": [1]}),
    "an unknown kind of object": {"pickle": "gASVAAAAAAAAAAB9lC4="},
    "a dict beside its marker": {"dict": {}, "extra": 1},
    "a dtype it does not know": {"dict": {"answer0": {"tensor": ["object", [1], ONE_FLOAT]}}},
    "bytes that do not fill the shape": {"dict": {"x": {"tensor": ["float32", [2], ONE_FLOAT]}}},
    "a list, not a dict of values": [{"dict": {}}],
    "a negative size": {"dict": {"x": {"tensor": ["float32", [-1], ONE_FLOAT]}}},
    "data that is not base64": {"dict": {"x": {"tensor": ["float32", [1], "%%%%"]}}},
}


def test_the_evidence_format_carries_plain_data_exactly():
    values = {
        "floats": torch.randn(3, 4, dtype=torch.float64),
        "every other": torch.arange(10, dtype=torch.int32)[::2],
        "flags": [torch.tensor(True), torch.zeros(0, 3), torch.tensor(2.5, dtype=torch.bfloat16)],
        "complex": torch.randn(2, dtype=torch.complex64).conj(),
        "nested": {"tensor": 1, "dict": [None, "text", False, float("inf"), -float("inf")]},
    }
    # Through strict JSON (no NaN or Infinity literals), as kernel messages carry it.
    back = decode(json.loads(json.dumps(encode(plain(values)), allow_nan=False)))
    assert back.keys() == values.keys() and back["nested"] == values["nested"]
    assert math.isnan(decode(json.loads(json.dumps(encode({"x": float("nan")}))))["x"])
    pairs = [(back["floats"], values["floats"]), (back["every other"], values["every other"])]
    pairs += list(zip(back["flags"], values["flags"], strict=True))
    pairs += [(back["complex"], values["complex"].resolve_conj())]
    for got, sent in pairs:
        assert got.dtype == sent.dtype and got.shape == sent.shape and torch.equal(got, sent)
    # A dtype the format does not carry arrives as a name, which no verifier accepts.
    assert encode(torch.zeros(2, dtype=torch.uint16)) == "<tensor of dtype uint16>"


@pytest.mark.parametrize("case", MALFORMED)
def test_decoding_refuses_anything_but_the_format(case):
    with pytest.raises(ValueError):
        decode(MALFORMED[case])


class AlwaysEqual(list):
    def __eq__(self, other):
        return True


def _first_covered(nb, hidden: bool):
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            payload = output.get("data", {}).get(MIMETYPE)
            if payload and payload["hidden"] is hidden and _is_test(cell):
                return index, payload
    raise AssertionError("no covered cell")


def test_forged_objects_wrong_seeds_and_duplicates_are_refused(executed):
    _, guard, nb = executed
    index, _ = _first_covered(nb, hidden=True)
    cases = {
        "is malformed": lambda p: p.update(data=_pickled({"answer0": AlwaysEqual([1])})),
        "for other inputs": lambda p: p.update(seed=p["seed"] + 1),
    }
    for words, change in cases.items():
        forged = copy.deepcopy(nb)
        change(forged.cells[index].outputs[-1].data[MIMETYPE])
        flags, zeroed, _ = _verified(guard, forged)
        assert zeroed == {nb.cells[index].id} and words in flags[0], flags
    doubled = copy.deepcopy(nb)
    doubled.cells[index].outputs.append(copy.deepcopy(doubled.cells[index].outputs[-1]))
    flags, zeroed, _ = _verified(guard, doubled)
    assert zeroed == {nb.cells[index].id} and "2 pieces of evidence" in flags[0]


def test_hidden_errors_and_cells_that_did_not_run_score_zero(executed):
    _, guard, nb = executed
    index, _ = _first_covered(nb, hidden=False)
    hidden_error = copy.deepcopy(nb)
    guard.hidden_errors.add(index)
    try:
        flags, zeroed, _ = _verified(guard, hidden_error)
    finally:
        guard.hidden_errors.discard(index)
    assert zeroed == {nb.cells[index].id} and "error output was hidden" in flags[0]
    not_run = copy.deepcopy(nb)
    not_run.cells[index].execution_count = None
    not_run.cells[index].outputs = []
    saved = guard.replies.pop(index)
    try:
        flags, zeroed, _ = _verified(guard, not_run)
    finally:
        guard.replies[index] = saved
    assert zeroed == {nb.cells[index].id} and "did not run" in flags[0]


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
