"""jsonschema's "iri" format checks, with rfc3987_syntax loaded on demand: the same answers as
with the real module loaded up front, and nbformat imported without building its parser."""

import importlib.util
import json
import subprocess
import sys

import pytest

# jsonschema checks the "iri" formats with rfc3987_syntax only where it is installed (jupyter's
# packages bring it in through jsonschema[format-nongpl]); without it there is nothing to defer.
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("rfc3987_syntax") is None, reason="rfc3987_syntax is not installed"
)

STRINGS = [
    "http://example.org/ü",
    "https://example.org/a b",
    "::not an iri",
    "urn:isbn:0451450523",
    "relative/path?q=1#frag",
    "http://[::1]:80/",
    "http://[::1/",
    "",
    "%zz",
]

CHECKS = """
import json, jsonschema
checker = jsonschema.FormatChecker()
print(json.dumps([[checker.conforms(s, f) for f in ("iri", "iri-reference")] for s in {strings!r}]))
"""


INSTALL = "from autograder.grade import speedups\nspeedups.install('command')\n"


def run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout


def test_the_checks_answer_as_the_real_module_does():
    checks = CHECKS.format(strings=STRINGS)
    real = json.loads(run(checks))
    on_demand = json.loads(run(INSTALL + checks))
    assert on_demand == real
    assert {tuple(answers) for answers in real} != {(True, True)}  # some strings are refused


def test_nbformat_and_nbgrader_import_without_building_the_parser():
    code = (
        INSTALL
        + """
import sys, nbformat, nbgrader.api
from autograder.grade.speedups.iri_check_on_demand import _StandIn
print(isinstance(sys.modules["rfc3987_syntax"], _StandIn), "lark" in sys.modules)
"""
    )
    assert run(code).split() == ["True", "False"]


def test_other_uses_load_the_real_module():
    code = (
        INSTALL
        + """
import jsonschema, sys
import rfc3987_syntax
terms = rfc3987_syntax.RFC3987_SYNTAX_TERMS
from rfc3987_syntax import syntax_helpers
print(type(sys.modules["rfc3987_syntax"]).__name__, len(terms) > 10, syntax_helpers.__name__)
"""
    )
    assert run(code).split() == ["module", "True", "rfc3987_syntax.syntax_helpers"]


@pytest.mark.parametrize("first", ["jsonschema", "rfc3987_syntax"])
def test_nothing_changes_once_the_modules_are_imported_and_the_run_says_so(first):
    code = (
        f"import {first}\n{INSTALL}import sys\nprint(type(sys.modules['rfc3987_syntax']).__name__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "module"
    assert f"iri-checks-on-demand not installed: {first} is imported already" in done.stderr
