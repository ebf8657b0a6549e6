"""The one seam for speed-ups (autograder/grade/speedups/__init__.py): install(role) installs only
what is switched on and verified on the installed versions, says in one line what it leaves out
and why, says "speed-ups off" when they are off, and says which internal a speed-up found
missing. Each case runs in a fresh interpreter: installing patches the libraries for good."""

import importlib
import subprocess
import sys
import textwrap

import pytest

from autograder.grade import speedups
from autograder.grade.speedups.catalog import SPEEDUPS


def _run(code: str, **env: str) -> subprocess.CompletedProcess:
    """`code` in a fresh interpreter, with `env` added and HOOKLAB_SPEEDUPS unset unless given."""
    import os

    environment = {k: v for k, v in os.environ.items() if k != speedups.ENV} | env
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=environment,
    )
    assert done.returncode == 0, done.stderr
    return done


# What tells, in the grading process, whether two of the command's speed-ups are in place.
PATCHED = """
import nbgrader.api, nbgrader.nbgraderformat.common as common
print("gradebook-reuse" if nbgrader.api.Gradebook.__init__.__module__.startswith("autograder")
      else "stock gradebook")
print("stock jsonschema" if type(common.jsonschema).__name__ == "module" else "metadata-schemas")
"""


def test_every_speedup_names_its_installer_its_roles_and_the_versions_it_was_verified_on():
    from packaging.specifiers import SpecifierSet

    assert len({s.name for s in SPEEDUPS}) == len(SPEEDUPS)
    for speedup in SPEEDUPS:
        assert speedup.verified, speedup.name
        for versions in speedup.verified.values():
            assert SpecifierSet(versions) and "<" in versions, speedup.name  # a ceiling
        assert speedup.installs and set(speedup.installs) <= set(speedups.ROLES), speedup.name
        for installer in speedup.installs.values():
            module, _, function = installer.partition(":")
            imported = importlib.import_module(f"autograder.grade.speedups.{module}")
            assert callable(getattr(imported, function)), installer


def test_the_command_installs_its_speedups_and_says_nothing_when_all_are_verified():
    done = _run("from autograder.grade import speedups\nspeedups.install('command')\n" + PATCHED)
    assert done.stdout.split("\n")[:2] == ["gradebook-reuse", "metadata-schemas"]
    assert done.stderr == ""


def test_off_installs_nothing_and_the_run_says_speedups_off_once():
    code = (
        "from autograder.grade import speedups\n"
        "print(speedups.install('command'), speedups.install('worker'))\n" + PATCHED
    )
    done = _run(code, HOOKLAB_SPEEDUPS="off")
    assert done.stdout.split("\n")[:3] == ["[] []", "stock gradebook", "stock jsonschema"]
    assert done.stderr.splitlines() == ["hooklab: speed-ups off (HOOKLAB_SPEEDUPS=off)"]


def test_one_left_out_by_name_is_not_installed_the_others_are():
    code = "from autograder.grade import speedups\nspeedups.install('command')\n" + PATCHED
    done = _run(code, HOOKLAB_SPEEDUPS="-gradebook-reuse")
    assert done.stdout.split("\n")[:2] == ["stock gradebook", "metadata-schemas"]
    assert done.stderr == ""
    misspelt = _run(code, HOOKLAB_SPEEDUPS="-gradebook")
    assert "no speed-up named -gradebook" in misspelt.stderr
    assert misspelt.stdout.split("\n")[:2] == ["gradebook-reuse", "metadata-schemas"]


def test_outside_its_verified_versions_a_speedup_is_not_installed_and_one_line_says_why():
    # nbgrader's installed version taken out of what two speed-ups were verified on.
    code = """
        import dataclasses, importlib.metadata
        from autograder.grade import speedups
        from autograder.grade.speedups import catalog
        found = importlib.metadata.version("nbgrader")
        elsewhere = {"nbgrader": f"<{found}"}
        catalog.SPEEDUPS = tuple(
            dataclasses.replace(s, verified={**s.verified, **elsewhere})
            if "nbgrader" in s.verified else s
            for s in catalog.SPEEDUPS
        )
        catalog.BY_NAME.update({s.name: s for s in catalog.SPEEDUPS})
        speedups.SPEEDUPS = catalog.SPEEDUPS
        speedups.install("command")
        speedups.install("worker")
        print(found)
    """
    done = _run(textwrap.dedent(code) + PATCHED)
    found, *patched = done.stdout.split("\n")
    assert patched[:2] == ["stock gradebook", "stock jsonschema"]
    lines = done.stderr.splitlines()
    assert len(lines) == 1, lines  # one line for the run, however many roles install
    assert lines[0].startswith("hooklab: speed-ups not installed, not verified on these versions")
    assert "(grading is correct, only slower)" in lines[0]
    for name in ("gradebook-reuse", "metadata-schemas"):
        assert f"{name} (nbgrader {found} not in <{found})" in lines[0]


def test_a_speedup_that_finds_an_internal_missing_says_so_and_the_others_install():
    code = """
        import stack_data.core
        del stack_data.core._pygmented_with_ranges  # as a release without it would be
        from autograder.grade import speedups
        installed = speedups.install("template")
        print("tracebacks" in installed, "cell-input" in installed)
    """
    done = _run(code)
    assert done.stdout.split() == ["False", "True"]
    assert done.stderr.splitlines() == [
        "hooklab: speed-up tracebacks not installed: stack_data.core has no "
        "_pygmented_with_ranges (grading is correct, only slower)"
    ]


def test_the_kernel_template_is_told_the_setting_and_does_not_repeat_the_lines():
    code = """
        from autograder.grade import speedups
        speedups.configure("off", said=True)
        print(speedups.install("template"), speedups.setting())
    """
    done = _run(code)  # the environment says nothing: the grader's setting counts
    assert done.stdout.split() == ["[]", "off"] and done.stderr == ""


def test_an_unknown_role_is_refused():
    with pytest.raises(ValueError, match="unknown role"):
        speedups.install("grader")
