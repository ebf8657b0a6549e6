"""The sandboxed kernel template gets a copy of the grader's matplotlib font list, so that it does
not search the system's fonts again in every run (sandbox.template_matplotlib_folder)."""

import os
import subprocess
import sys

from autograder.grade.sandbox.bwrap import template_matplotlib_folder

REBUILT = "generated new fontManager"  # what matplotlib logs when it searches the fonts anew
IMPORT = "import logging; logging.basicConfig(level=logging.INFO); import matplotlib.font_manager"


def _import_matplotlib(config_folder: str) -> str:
    """What a fresh process logs while importing matplotlib's font manager."""
    env = {**os.environ, "MPLCONFIGDIR": config_folder}
    run = subprocess.run([sys.executable, "-c", IMPORT], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return run.stderr


def test_the_template_folder_holds_the_graders_font_list_and_nothing_else(tmp_path):
    grader = tmp_path / "grader"
    _import_matplotlib(str(grader))  # the grader's own font list, made as matplotlib makes it
    (grader / "unrelated.json").write_text("{}")
    folder = template_matplotlib_folder(str(tmp_path / "run"), {"MPLCONFIGDIR": str(grader)})
    lists = sorted(p.name for p in grader.glob("fontlist-v*.json"))
    assert lists and sorted(os.listdir(folder)) == lists
    assert REBUILT not in _import_matplotlib(folder)


def test_without_a_font_list_to_copy_matplotlib_searches_the_fonts(tmp_path):
    folder = template_matplotlib_folder(str(tmp_path / "run"), {"MPLCONFIGDIR": str(tmp_path)})
    assert os.listdir(folder) == []
    assert REBUILT in _import_matplotlib(folder)
