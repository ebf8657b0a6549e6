"""Does the static scan (autograder/grade/worker/scan.py) flag the constructs that tamper with grading,
and leave honest submissions, the solutions and legitimate code alone? (Source only: nothing
runs.)"""

import nbformat
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
    "from autograder.exercises.kit import registry": "imports autograder.exercises",
    "import ctypes": "imports ctypes",
    "exec(code)": "runs code from a string (exec)",
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


# What IPython runs that Python's parser alone does not see: magics, shell commands, help, and
# one-line cells run as a magic by automagic; code run through the shell; the package's insides.
DYNAMIC = {
    "%config InlineBackend.figure_formats = ['png']\nimport autograder.exercises": "imports autograder.exercises",
    "%config IPCompleter.greedy = True": "runs the magic %config",
    "!echo hi": "runs a shell command",
    "files = !ls": "runs a shell command",
    "%%bash\necho hi": "runs the magic %%bash",
    "%run other.py": "runs the magic %run",
    "reset -f": "runs the magic %reset",  # valid Python (reset - f), run as %reset by automagic
    "load_ext autoreload": "runs the magic %load_ext",
    "get_ipython().run_cell('x = 1')": "runs code through the IPython shell (run_cell)",
    "get_ipython().run_line_magic('config', 'X.y = 1')": "runs the magic %config",
    "shell = get_ipython()\nshell.run_cell(code)": "runs code through the IPython shell (run_cell)",
    "get_ipython().events.register('pre_run_cell', f)": "runs code through the IPython shell (events)",
    "ip = get_ipython()\nip.input_transformers_cleanup.append(f)": "input_transformers_cleanup",
    "get_ipython().input_transformers_post.append(f)": "input_transformers_post",
    "get_ipython().ast_transformers.append(t)": "ast_transformers",
    "from IPython import get_ipython": "uses the IPython shell",
    "exec('a' + 'b')": "runs code from a string (exec)",
    "eval(text)": "runs code from a string (eval)",
    "code = compile(text, 'x', 'exec')": "runs code from a string (compile)",
    "run = exec\nrun(text)": "runs code from a string (exec)",
    "import importlib\nm = importlib.import_module('autograder.exercises.kit.judge')": "imports importlib",
    "from importlib import import_module\nimport_module(name)": "imports by name at run time",
    "m = __import__('autograder')": "imports by name (__import__)",
    "import autograder": "imports autograder",
    "import autograder.exercises.kit.judge as j": "imports autograder.exercises",
    "from autograder.exercises.kit import judge": "imports autograder.exercises.kit",
    "from autograder import check as c": "imports autograder",
    "from autograder.widgets import hints": "imports autograder.widgets",
    "name = 'autograder.exercises'": "names the grader's package",
    "import sys\nmods = sys.modules": "reaches the interpreter's modules",
    "from sys import modules": "reaches the interpreter's modules",
    "g = show_hints.__globals__": "reaches into the interpreter's internals (__globals__)",
    "g = getattr(f, '__globals__')": "reaches __globals__ by name",
    "import pickle\npickle.loads(data)": "imports pickle",
    "x = __builtins__": "reaches the interpreter's builtins",
    "%timeit exec(text)": "in %timeit: runs code from a string (exec)",
    "%%time\nimport autograder": "in %time: imports autograder",
    "%psource autograder.check": "runs the magic %psource",
    "x = 1\n" * 40_000: "too long to scan",
}


@pytest.mark.parametrize("source", DYNAMIC)
def test_the_scan_reads_cells_as_ipython_runs_them(source):
    found = scan_source(source, "cell")
    assert any(DYNAMIC[source] in finding.what and finding.tampers for finding in found), found


# Overwrites every callable of the package's modules: it left kernels not answering for the
# length of a cell's time-out (tests/redteam/ grades it).
OVERWRITE_CALLABLES = """\
import sys
for _name, _module in list(sys.modules.items()):
    if _name.startswith("autograder") and _module is not None:
        for _attribute in list(vars(_module)):
            if callable(getattr(_module, _attribute)):
                setattr(_module, _attribute, lambda *a, **k: None)
"""


def test_the_scan_flags_code_that_overwrites_the_packages_callables():
    whats = [f.what for f in scan_source(OVERWRITE_CALLABLES, "cell") if f.tampers]
    assert any("sys.modules" in what for what in whats), whats


def test_the_scan_flags_the_red_teams_universal_forge():
    source = (ROOT / "tests" / "redteam" / "cells" / "universal_forge.ipy").read_text()
    assert source.startswith("%")  # a magic first: Python's parser alone gives up on the cell
    whats = [f.what for f in scan_source(source, "cell") if f.tampers]
    assert any("imports autograder" in what for what in whats), whats


@pytest.mark.parametrize(
    "source",
    [
        "%matplotlib inline",
        "x?",
        "torch.rand?",
        "%timeit torch.rand(3)",
        "%timeit -n 10 -r 2 torch.rand(3)",
        "%%time\nx = torch.rand(3)",
        "%who",
        "history = []",  # an assignment, never a magic
        "history",  # %history only shows the inputs
    ],
)
def test_the_scan_leaves_magics_that_only_show_things_alone(source):
    assert scan_source(source, "cell") == []


def test_a_cell_that_does_not_parse_is_a_finding_that_costs_nothing_if_it_did_not_run():
    (finding,) = scan_source("def f(:\n    pass", "cell")
    assert "does not parse" in finding.what and not finding.tampers
    ran = notebooks.new_notebook([notebooks.demo("broken", "def f(:\n    pass")])
    syntax_error = nbformat.v4.new_output("error", ename="SyntaxError", evalue="", traceback=[])
    ran.cells[0].execution_count, ran.cells[0].outputs = 1, [syntax_error]
    assert [f.tampers for f in scan_cells(ran)] == [False]
    # Run without a syntax error, it was read otherwise by the kernel than by the scan.
    ran.cells[0].outputs = []
    (finding,) = scan_cells(ran)
    assert finding.tampers and "yet the kernel ran it" in finding.what
