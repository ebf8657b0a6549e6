"""Does `hooklab autograde` grade a course end to end and leave the instructor's files?"""

import csv
import shutil

import pytest
from golden import ROOT, expected_scores
from golden import answers as answer_text

from autograder import course
from autograder.cli import main

pytestmark = pytest.mark.nbgrader


def test_autograde_command_grades_and_writes_grades_csv_and_report(tmp_path, capsys):
    shutil.copy(ROOT / "nbgrader_config.py", tmp_path)
    shutil.copytree(ROOT / "solutions" / "forward_hooks", tmp_path / "solutions" / "forward_hooks")
    course.build(root=tmp_path)
    for case in ("all_correct", "blank"):
        nb = course.answered_notebook(answer_text("forward_hooks", case), "forward_hooks", tmp_path)
        course.submit(nb, case, "forward_hooks", tmp_path)

    assert main(["--root", str(tmp_path), "autograde", "forward_hooks", "-j", "2"]) == 0

    err = capsys.readouterr().err
    assert "graded 2, failed 0" in err
    with (tmp_path / "grades.csv").open(encoding="utf-8") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    for case in ("all_correct", "blank"):
        assert float(rows[case]["total"]) == sum(expected_scores("forward_hooks", case).values())
    assert (tmp_path / "reports" / "class.html").read_text(encoding="utf-8").count("<img") >= 2

    # Without --force, graded submissions are left alone.
    assert main(["--root", str(tmp_path), "autograde", "forward_hooks"]) == 0
    assert "skipped 2" in capsys.readouterr().err
