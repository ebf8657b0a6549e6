"""What the kit changes in the student's own Jupyter: an error that PyTorch raises from a hook
shows the notebook's frames and its cause, not PyTorch's frames (kit/cell_errors.py), and `%tb`
still shows every frame; a stub's trailing `...` shows nothing (kit/quiet_stubs.py). A graded
notebook keeps IPython's own outputs."""

from __future__ import annotations

import ast
import os
import re

import nbformat
import pytest
import torch
from golden import ROOT
from jupyter_client.manager import start_new_kernel
from student_loop import StudentSession
from torch import nn

from autograder.exercises.kit.cell_errors import TORCH_FILES, without_torch
from autograder.exercises.kit.quiet_stubs import QuietStub

ANSI = re.compile(r"\x1b\[[0-9;]*m")
WRONG_HOOK = """\
def report_size(module, input, output):
    print("input size:", input.size())

layer = nn.Linear(3, 2)
layer.register_forward_hook(report_size)
layer(torch.ones(1, 3))
"""


def test_the_frames_inside_torch_are_left_out_and_the_hook_is_kept():
    def report_size(module, input, output):
        return input.size()

    layer = nn.Linear(3, 2)
    layer.register_forward_hook(report_size)
    try:
        layer(torch.ones(1, 3))
    except AttributeError as error:
        raised = error.__traceback__
    tb = raised
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame.f_code)
        tb = tb.tb_next
    kept, left_out = without_torch(raised)
    names = []
    while kept is not None:
        names.append(kept.tb_frame.f_code)
        kept = kept.tb_next
    inside_torch = [code for code in frames if code.co_filename.startswith(TORCH_FILES)]
    assert inside_torch and left_out == len(inside_torch)
    assert names == [code for code in frames if code not in inside_torch]
    assert names[-1].co_name == "report_size"


@pytest.mark.parametrize(
    ("source", "silenced"),
    [
        ("# YOUR CODE HERE\n...", True),
        ("x = 1\n...  # a comment", True),
        ("...\nx = 1", False),
        ("x = ...", False),
        ("def f():\n    ...", False),
        ("print(...)", False),
    ],
)
def test_only_a_trailing_bare_ellipsis_is_silenced(source, silenced):
    tree = QuietStub().visit(ast.parse(source))
    assert isinstance(tree.body[-1], ast.Pass) is silenced
    if not silenced:
        assert ast.dump(tree) == ast.dump(ast.parse(source))


def _text(run) -> str:
    return ANSI.sub("", run.text)


@pytest.mark.nbgrader
def test_a_wrong_hook_in_the_students_jupyter_says_its_cause():
    with StudentSession("forward_hooks") as session:
        session.run_all()
        run = session.run(nbformat.v4.new_code_cell(WRONG_HOOK))
        text = _text(run)
        assert run.status == "error" and run.ename == "AttributeError", text
        assert TORCH_FILES not in text, text
        assert 'print("input size:", input.size())' in text  # the student's own line
        assert "AttributeError: 'tuple' object has no attribute 'size'" in text
        assert "What this usually means: PyTorch hands a hook its inputs" in text, text
        assert "inside PyTorch left out" in text

        full = _text(session.run(nbformat.v4.new_code_cell("%tb")))
        assert os.path.join("torch", "nn", "modules", "module.py") in full, full
        assert "What this usually means" not in full

        plain = session.run(nbformat.v4.new_code_cell("[][1]"))
        assert plain.status == "error" and "left out" not in _text(plain)


@pytest.mark.nbgrader
def test_a_graded_notebook_keeps_ipythons_own_outputs():
    env = {**os.environ, "NBGRADER_EXECUTION": "autograde"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(":")
    manager, client = start_new_kernel(kernel_name="python3", cwd=str(ROOT), env=env)
    try:
        setup = "import torch\nfrom torch import nn\nfrom autograder import check\n"
        reply = client.execute_interactive(setup, timeout=120)
        assert reply["content"]["status"] == "ok"
        outputs = []
        client.execute_interactive(WRONG_HOOK, timeout=120, output_hook=outputs.append)
        errors = [m["content"] for m in outputs if m["msg_type"] == "error"]
        text = ANSI.sub("", "\n".join(errors[0]["traceback"]))
        assert os.path.join("torch", "nn", "modules", "module.py") in text, text
        assert "What this usually means" not in text
        shown = []
        client.execute_interactive("# YOUR CODE HERE\n...", timeout=120, output_hook=shown.append)
        results = [m["content"]["data"] for m in shown if m["msg_type"] == "execute_result"]
        assert results == [{"text/plain": "Ellipsis"}], results
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
