"""Does the static scan (autograder/grade/worker/scan.py) flag the constructs that tamper with grading,
and leave honest submissions, the solutions and legitimate code alone? (Source only: nothing
runs.)"""

import pytest
from golden import ROOT, SUBMISSIONS

from autograder import notebooks
from autograder.grade.worker.scan import PROTECTED_ROOTS, scan_source
from autograder.grade.worker.verify import scan_cells


def test_the_scan_finds_nothing_in_honest_submissions_and_solutions():
    for path in sorted(SUBMISSIONS.glob("*/*.py")):
        for grade_id, source in notebooks.parse_answers(notebooks.read_answers(path)).items():
            assert scan_source(source, grade_id) == [], path
    for path in sorted((ROOT / "solutions").glob("*/*.ipynb")):
        assert scan_cells(notebooks.read(path)) == [], path


TAMPERING = {
    "torch.allclose = lambda *a, **k: True": "changes torch.allclose",
    "import torch as t\nt.Tensor.__eq__ = f": "changes t.Tensor.__eq__",
    "setattr(torch, 'equal', f)": "calls setattr on torch",
    "import builtins\nbuiltins.print = f": "changes builtins.print",
    "get_ipython().set_custom_exc((Exception,), f)": "set_custom_exc",
    "import sys\nsys.modules['autograder'] = m": "changes sys.modules['autograder']",
    "import autograder\nautograder.check = f": "changes autograder.check",
    "from autograder.checks import registry": "imports autograder.checks",
    "import ctypes": "imports ctypes",
    "exec(code)": "runs code built at run time",
    "globals()['check'] = f": "changes globals()['check']",
    "def check(*a):\n    pass": "rebinds check",
    "class A(list):\n    def __eq__(self, o):\n        return True": "redefines __eq__",
    "import os\nos._exit(0)": "ends the kernel",
    "raise SystemExit": "raises SystemExit",
    "x = 'application/vnd.hooklab.evidence+json'": "private evidence format",
    "import sys\nf = sys._getframe(1)": "walks the interpreter's frames",
}


@pytest.mark.parametrize("source", TAMPERING)
def test_the_scan_flags_tampering_constructs(source):
    found = scan_source(source, "cell")
    assert any(TAMPERING[source] in finding.what for finding in found), found


def test_a_remembered_scan_names_the_cell_it_was_asked_about():
    # Findings are remembered per source; the cell in each finding is the caller's.
    source = "import torch as t\nt.allclose = lambda *a, **k: True\nimport ctypes"
    fresh = scan_source(source, "first", protected=set(PROTECTED_ROOTS))
    assert [f.cell for f in fresh] == ["first", "first"]
    assert scan_source(source, "first") == fresh
    again = scan_source(source, "second")
    assert [(f.cell, f.line, f.what) for f in again] == [("second", f.line, f.what) for f in fresh]


@pytest.mark.parametrize(
    "source",
    [
        "module.bias = nn.Parameter(torch.zeros(3))",
        "Add.forward = forward",
        "x = torch.rand(3)\nx.grad = None",
        "from autograder import check",
        "from autograder.widgets import show_hints\n\nshow_hints('forward_collect')",
        "handle.remove()",
        "torch.manual_seed(0)",
    ],
)
def test_the_scan_leaves_legitimate_code_alone(source):
    assert scan_source(source, "cell") == []
