"""Do an autograded notebook's outputs show no hidden test's code, no seed and no markup that
runs, whatever the student's kernel printed? (autograder/grade/worker/hygiene.py)"""

from types import SimpleNamespace

import nbformat

from autograder.grade.worker import hygiene
from autograder.grade.worker.verify import Guard

SEED_CALL = 'check("forward_collect", globals(), hidden=True, seed=1234567890123)'
HIDDEN = f"# Hidden tests\n### BEGIN HIDDEN TESTS\n{SEED_CALL}\n### END HIDDEN TESTS"


def _notebook(*outputs) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell("print(In)")
    cell.outputs = list(outputs)
    return nbformat.v4.new_notebook(cells=[cell])


def _text(nb) -> str:
    return nbformat.writes(nb)


def test_every_copy_of_a_hidden_line_and_a_seed_is_scrubbed_from_every_kind_of_output():
    history = repr(["", "import torch", HIDDEN])  # what print(In) shows
    nb = _notebook(
        nbformat.v4.new_output("stream", name="stdout", text=history),
        nbformat.v4.new_output("execute_result", data={"text/plain": history}, execution_count=1),
        nbformat.v4.new_output(
            "display_data", data={"text/html": f"<pre>{SEED_CALL}</pre>".replace('"', "&quot;")}
        ),
        nbformat.v4.new_output("display_data", data={"application/json": {"history": HIDDEN}}),
        nbformat.v4.new_output("error", ename="E", evalue=SEED_CALL, traceback=[history]),
        nbformat.v4.new_output("stream", name="stdout", text="seed 1234567890123\n"),
    )
    secrets = {"1234567890123"} | hygiene.secret_lines([HIDDEN])
    assert hygiene.scrub(nb, secrets) > 0
    text = _text(nb)
    assert "1234567890123" not in text and "BEGIN HIDDEN TESTS" not in text
    assert "hidden=True" not in text and "hidden=True" not in text.replace("&quot;", '"')
    assert hygiene.HIDDEN in nb.cells[0].outputs[0].text


def test_the_guard_counts_every_seed_and_every_hidden_line_as_a_secret():
    guard = Guard("alice", "forward_hooks", "a course secret")
    answer = nbformat.v4.new_code_cell("def report_hook(module, input, output): ...")
    test = nbformat.v4.new_code_cell('check("mlp_report", globals())')
    hidden = nbformat.v4.new_code_cell(
        '### BEGIN HIDDEN TESTS\ncheck("mlp_report", globals(), hidden=True)'
    )
    answer.metadata["nbgrader"] = {"grade": False, "grade_id": "mlp_report", "solution": True}
    for cell, grade_id in ((test, "mlp_report_test"), (hidden, "mlp_report_hidden")):
        cell.metadata["nbgrader"] = {"grade": True, "grade_id": grade_id, "locked": True}
    nb = nbformat.v4.new_notebook(cells=[answer, test, hidden])
    kept_from_the_kernel = hidden.source
    guard.prepare(nb, executor=SimpleNamespace())
    assert nb.cells[2].source == ""  # the kernel never runs the hidden cell
    secrets = guard.secrets()
    assert {str(guard.seed("mlp_report", False)), str(guard.seed("mlp_report", True))} <= secrets
    assert kept_from_the_kernel.splitlines()[-1].strip() in secrets


def test_scripts_event_handlers_and_unknown_mimetypes_are_removed_and_widget_state_dropped():
    attack = "<script>alert(1)</script><img src=x onerror=alert(2)><b>kept</b>"
    nb = _notebook(
        nbformat.v4.new_output("display_data", data={"text/html": attack, "text/plain": "x"}),
        nbformat.v4.new_output("display_data", data={"application/javascript": "alert(3)"}),
        nbformat.v4.new_output("display_data", data={"text/markdown": "<script>alert(4)</script>"}),
        nbformat.v4.new_output("display_data", data={"image/svg+xml": "<svg onload=alert(5)/>"}),
    )
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    hygiene.sanitize(nb)
    outputs = nb.cells[0].outputs
    html = outputs[0].data["text/html"]
    assert "<script" not in html and "<img" not in html  # left as text, escaped
    assert "<b>kept</b>" in html and outputs[0].data["text/plain"] == "x"
    assert "<script>" not in outputs[2].data["text/markdown"]
    assert [dict(o.data) for o in outputs[1::2]] == [{}, {}]
    assert "widgets" not in nb.metadata
