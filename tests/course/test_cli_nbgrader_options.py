"""`hooklab autograde` takes nbgrader's command line and finds the course as nbgrader does: the
working folder (or the root its nbgrader_config.py names), nbgrader's options and
`--Class.trait=value`, and a clear refusal for what it cannot do yet."""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from golden import expected_scores, make_course, submit_cases

from autograder import gradebook
from autograder.cli import main

pytestmark = pytest.mark.nbgrader


@pytest.fixture(scope="module")
def course_folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("course")
    make_course(root, ["forward_hooks"])
    submit_cases(root, "forward_hooks", ["all_correct", "blank"])
    return root


def _totals(root) -> dict[str, float]:
    url = f"sqlite:///{root / 'gradebook.db'}"
    return {
        student: sum(cell.score for cell in cells)
        for student, cells in gradebook.scores(url, "forward_hooks").items()
    }


def test_the_course_is_the_working_folder_and_nbgraders_options_apply(
    course_folder, monkeypatch, capsys
):
    monkeypatch.chdir(course_folder)
    (course_folder / "submitted" / "empty" / "forward_hooks").mkdir(parents=True)
    # nbgrader's own trait option: blank is excluded, only all_correct is graded; a folder
    # without a notebook is passed over with a warning, as nbgrader does (no row, exit 0).
    assert main(["autograde", "forward_hooks", "--CourseDirectory.student_id_exclude=blank"]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "graded 1, failed 0" in err
    assert "No notebooks were matched in submitted/empty/forward_hooks/" in err
    assert sorted(p.name for p in (course_folder / "autograded").iterdir()) == ["all_correct"]
    assert _totals(course_folder)["all_correct"] == sum(
        expected_scores("forward_hooks", "all_correct").values()
    )
    # nbgrader's -f regrades; --student takes a glob as nbgrader's does.
    assert main(["autograde", "forward_hooks", "-f", "--student", "bl*", "-j", "2"]) == 0
    assert "graded 1, failed 0" in capsys.readouterr().err
    with (course_folder / "reports" / "grades.csv").open(encoding="utf-8") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    assert float(rows["blank"]["total"]) == sum(expected_scores("forward_hooks", "blank").values())


def test_a_working_folders_config_names_the_course_root(course_folder, tmp_path, monkeypatch):
    """nbgrader's way of grading a course from elsewhere: c.CourseDirectory.root in the working
    folder's nbgrader_config.py. The course's own config is read too (as nbgrader does)."""
    (tmp_path / "nbgrader_config.py").write_text(
        f"c = get_config()\nc.CourseDirectory.root = {str(course_folder)!r}\n", encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    db = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    (tmp_path / "elsewhere.db").write_bytes((course_folder / "gradebook.db").read_bytes())
    assert (
        main(["autograde", "forward_hooks", "--force", "--db", db, "--student", "all_correct"]) == 0
    )
    assert (course_folder / "autograded" / "all_correct" / "forward_hooks").is_dir()
    assert not (tmp_path / "autograded").exists() and not (tmp_path / "reports").exists()
    scores = gradebook.scores(db, "forward_hooks")["all_correct"]
    assert sum(c.score for c in scores) == sum(
        expected_scores("forward_hooks", "all_correct").values()
    )


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (["forward_hooks", "--assignment", "forward_hooks"], "cannot both be specified"),
    ],
)
def test_what_nbgrader_refuses_is_refused_in_one_sentence(
    arguments, expected, course_folder, monkeypatch, capsys
):
    monkeypatch.chdir(course_folder)
    before = (course_folder / "gradebook.db").read_bytes()
    assert main(["autograde", *arguments]) == 1
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err
    assert (course_folder / "gradebook.db").read_bytes() == before


def test_help_all_is_nbgraders_with_the_engines_options(capsys):
    from nbgrader.apps.autogradeapp import AutogradeApp

    AutogradeApp().print_help(classes=True)
    stock = set(re.findall(r"^--[\w.-]+", capsys.readouterr().out, re.M))
    with pytest.raises(SystemExit) as ended:
        main(["autograde", "--help-all"])
    assert ended.value.code == 0
    ours = set(re.findall(r"^--[\w.-]+", capsys.readouterr().out, re.M))
    assert len(stock) > 20 and stock <= ours
    assert {"--jobs", "--scheduler", "--summary-json", "--HooklabAutogradeApp.jobs"} <= ours


def test_only_a_course_of_hooklabs_assignments_gets_a_secret_file(tmp_path):
    """Another course's folder is left as nbgrader leaves it: no .hooklab-secret in it."""
    from autograder.grade.grader.batch import Batch
    from autograder.grade.worker.verify import SECRET_FILE

    other = Batch(tmp_path, "ps1")
    assert not (tmp_path / SECRET_FILE).exists() and len(other.secret) == 64
    ours = Batch(tmp_path, "forward_hooks")
    assert (tmp_path / SECRET_FILE).read_text().strip() == ours.secret


def test_a_second_run_on_a_course_being_graded_is_refused(course_folder, monkeypatch, capsys):
    from autograder.grade.preflight import course_lock

    monkeypatch.chdir(course_folder)
    before = (course_folder / "gradebook.db").read_bytes()
    with course_lock(course_folder):  # the run that is grading it
        assert main(["autograde", "forward_hooks", "--force"]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert f"another hooklab autograde is grading {course_folder} now" in err
    assert (course_folder / "gradebook.db").read_bytes() == before


def test_a_late_submission_and_its_penalty_are_in_its_summary_line(tmp_path, monkeypatch, capsys):
    from nbgrader.api import Gradebook

    root = make_course(tmp_path, ["forward_hooks"])
    submit_cases(root, "forward_hooks", ["all_correct"])
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        gb.update_or_create_assignment("forward_hooks", duedate="2026-12-01 12:00:00")
    (root / "submitted" / "all_correct" / "forward_hooks" / "timestamp.txt").write_text(
        "2026-12-01 14:30:00"
    )
    monkeypatch.chdir(root)
    assert main(["autograde", "forward_hooks", "--LateSubmissionPlugin.penalty_method=zero"]) == 0
    err = " ".join(capsys.readouterr().err.split())
    total = sum(expected_scores("forward_hooks", "all_correct").values())
    assert "forward_hooks/all_correct: submitted 150 min late; late penalty: " in err, err
    assert f"late penalty: {total:g} points" in err  # "zero": the penalty is the whole score


def test_nbgraders_warnings_become_sentences_of_the_summary_line():
    from autograder.grade.grader.converter import KeptWarnings, warnings_as_notes

    log = KeptWarnings()
    log.info("Overwriting files with master versions from the source directory")
    log.warning("%s is %s seconds late", "SubmittedAssignment<hw1 for frank>", 9000.0)
    log.warning("No submitted file: {}".format("/c/submitted/eve/hw1/files.ipynb"))
    log.warning("Late submission penalty: 3.0")
    log.warning("Late submission penalty: 3.0")
    log.error("No assignment with ID 'hw1' exists in the database")  # raised right after
    assert warnings_as_notes(log.kept) == [
        "submitted 150 min late",
        "files.ipynb was not handed in: it scores zero",
        "late penalty: 6 points",
    ]


NOBODY = 65534


def test_a_read_only_course_is_refused_in_one_sentence_before_grading(course_folder):
    """Run as a user who cannot write the course (as root, `nobody`: root writes anywhere)."""
    course = Path(tempfile.mkdtemp(prefix="hooklab-readonly-", dir="/tmp"))
    home = course / "home"
    try:
        shutil.copytree(
            course_folder, course / "course", ignore=shutil.ignore_patterns("autograded")
        )
        home.mkdir()
        for path in [course, *course.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        as_root = os.getuid() == 0
        if as_root:
            os.chown(home, NOBODY, NOBODY)
        else:
            (course / "course").chmod(0o555)
        done = subprocess.run(
            [sys.executable, "-m", "autograder", "autograde", "forward_hooks", "--force"],
            cwd=course / "course",
            env={**os.environ, "HOME": str(home)},
            capture_output=True,
            text=True,
            timeout=120,
            **({"user": NOBODY, "group": NOBODY, "extra_groups": []} if as_root else {}),
        )
        if as_root and "ModuleNotFoundError" in done.stderr:
            pytest.skip(f"nobody cannot run this checkout's Python: {done.stderr[-300:]}")
        err = " ".join(done.stderr.split())
        assert done.returncode == 1, done.stderr
        assert f"cannot write in {course / 'course'} (permission denied)" in err, done.stderr
        assert "Traceback" not in done.stderr and "failed forward_hooks/" not in err
    finally:
        (course / "course").chmod(0o755)
        shutil.rmtree(course, ignore_errors=True)


@pytest.mark.parametrize(
    ("raised", "expected", "status"),
    [
        (KeyboardInterrupt(), "hooklab: interrupted; the submissions graded so far are saved", 130),
        (
            PermissionError(13, "Permission denied", "/c/autograded"),
            "cannot write /c/autograded",
            1,
        ),
    ],
)
def test_ctrl_c_and_a_read_only_folder_end_in_one_line(
    raised, expected, status, monkeypatch, capsys
):
    from autograder import cli

    def grading(argv, root):
        raise raised

    monkeypatch.setattr(cli, "autograde", grading)
    assert main(["autograde", "forward_hooks"]) == status
    err = capsys.readouterr().err
    assert expected in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_timeout_given_as_nbgraders_executepreprocessor_option_is_the_one_reported(
    tmp_path, monkeypatch, capsys
):
    """nbgrader's Execute takes ExecutePreprocessor's options too: a cell stopped after the
    command line's 2 s is reported as timed out after 2 s, not after the course's default."""
    from golden import answers

    from autograder import course, notebooks

    make_course(tmp_path, ["forward_hooks"])
    config = tmp_path / "nbgrader_config.py"  # without the course's own Execute.timeout
    text = config.read_text(encoding="utf-8")
    assert "c.Execute.timeout = 60\n" in text
    config.write_text(text.replace("c.Execute.timeout = 60\n", ""), encoding="utf-8")
    correct = notebooks.parse_answers(answers("forward_hooks", "all_correct"))
    student = notebooks.read(course.notebook_path("notebooks", "forward_hooks", tmp_path))
    looping = notebooks.fill_answers(student, {**correct, "mlp_report": "while True:\n    pass"})
    course.submit(looping, "loops", "forward_hooks", tmp_path)
    monkeypatch.chdir(tmp_path)
    argv = ["autograde", "forward_hooks", "--ExecutePreprocessor.timeout=2"]
    assert main(argv) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "cell mlp_report timed out after 2 s" in err, err
