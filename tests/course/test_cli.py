"""Does `hooklab autograde` grade a course end to end and leave the instructor's files?"""

import csv
import json
import subprocess
import sys

import pytest
from golden import expected_scores, make_course, submit_cases

from autograder.cli import main

pytestmark = pytest.mark.nbgrader


def test_autograde_command_grades_and_writes_grades_csv_and_report(tmp_path, capsys):
    make_course(tmp_path, ["forward_hooks"])
    submit_cases(tmp_path, "forward_hooks", ["all_correct", "blank"])

    summary_path = tmp_path / "summary.json"
    grade = ["autograde", "forward_hooks", "-j", "2", "--summary-json", str(summary_path)]
    assert main(["--root", str(tmp_path), *grade]) == 0

    err = capsys.readouterr().err
    assert "graded 2, failed 0" in err
    summary = json.loads(summary_path.read_text())
    assert (summary["graded"], summary["failed"], summary["skipped"]) == (2, 0, 0)
    assert f"peak kernel RSS {summary['peak_kernel_rss_mb']:.0f} MB" in err
    with (tmp_path / "reports" / "grades.csv").open(encoding="utf-8") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    for case in ("all_correct", "blank"):
        assert float(rows[case]["total"]) == sum(expected_scores("forward_hooks", case).values())
    assert (tmp_path / "reports" / "class.html").read_text(encoding="utf-8").count("<img") >= 2

    # Without --force, graded submissions are left alone.
    assert main(["--root", str(tmp_path), "autograde", "forward_hooks"]) == 0
    assert "skipped 2" in capsys.readouterr().err


def test_autograde_starts_the_kernel_template_before_its_heavy_imports(tmp_path):
    # The template imports torch on one core while the command imports the engine on the
    # other: started after that import, every run would wait for it longer.
    code = f"""
import sys
from autograder import cli
started = []
cli.start_kernel_template = lambda root: started.append(sorted({{"torch", "nbgrader"}} & set(sys.modules)))
db = "sqlite:///{tmp_path}/gradebook.db"
code = cli.main(["--root", {str(tmp_path)!r}, "autograde", "nothing_submitted", "--db", db])
import gc
print(code, started, gc.isenabled())  # the collector, paused for the imports, runs again
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # 1: nothing of that name to grade (test_bad_input_...), said after the imports.
    assert done.stdout.split("\n")[0] == "1 [[]] True", done.stdout + done.stderr


def _exit_status_and_output(code: str) -> tuple[int, str]:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return done.returncode, done.stdout


EXIT_PROGRAM = """
import atexit, sys, threading, time
from autograder.cli import exit_without_teardown

class TornDown:
    def __del__(self):
        print("torn down")

kept = TornDown()  # freed by the interpreter's teardown, which the command skips
atexit.register(print, "atexit ran")
if "thread" in sys.argv:
    threading.Thread(target=lambda: (time.sleep(0.3), print("thread done"))).start()
print("graded")
exit_without_teardown(3)
"""


def test_the_command_exits_with_its_status_after_atexit_without_the_teardown():
    status, output = _exit_status_and_output(EXIT_PROGRAM)
    assert (status, output.splitlines()) == (3, ["graded", "atexit ran"])


def test_the_command_waits_for_a_running_thread_as_python_does():
    status, output = _exit_status_and_output(EXIT_PROGRAM.replace("sys.argv", "['thread']"))
    assert status == 3
    assert output.splitlines()[:3] == ["graded", "thread done", "atexit ran"]


@pytest.fixture(scope="module")
def small_course(tmp_path_factory):
    root = tmp_path_factory.mktemp("course")
    make_course(root, ["forward_hooks"])
    submit_cases(root, "forward_hooks", ["blank"])
    return root


BAD_INPUT = {
    # case: (arguments after --root COURSE, what the one-line error must say)
    "unknown assignment": (
        ["autograde", "nosuch"],
        "no assignment nosuch in the gradebook sqlite:///{root}/gradebook.db and no submissions "
        "of it in {root}/submitted; the gradebook's assignments: forward_hooks",
    ),
    "no submission matches": (
        ["autograde", "forward_hooks", "--student", "zz*"],
        "hooklab: no submissions to grade",
    ),
    "gradebook cannot be opened": (
        ["autograde", "forward_hooks", "--db", "sqlite:///{root}/no/such/folder/gradebook.db"],
        "cannot open the gradebook sqlite:///{root}/no/such/folder/gradebook.db: unable to open "
        "database file",
    ),
    "PostgreSQL refuses the connection": (
        ["autograde", "forward_hooks", "--db", "postgresql://grader:s3cret@127.0.0.1:1/class"],
        "cannot open the gradebook postgresql://grader:***@127.0.0.1:1/class: connection failed",
    ),
    "the URL's driver is not installed": (
        ["autograde", "forward_hooks", "--db", "mysql://grader:s3cret@127.0.0.1/class"],
        "cannot open the gradebook mysql://grader:***@127.0.0.1/class: No module named",
    ),
    "summary folder missing": (
        ["autograde", "forward_hooks", "--summary-json", "{root}/no/such/folder/summary.json"],
        "cannot write the summary to {root}/no/such/folder/summary.json: no folder",
    ),
    "no Dask scheduler there": (
        ["autograde", "forward_hooks", "--scheduler", "tcp://127.0.0.1:1"],
        "cannot reach the Dask scheduler at tcp://127.0.0.1:1: Timed out trying to connect",
    ),
}


@pytest.mark.parametrize("case", BAD_INPUT)
def test_bad_input_is_one_clear_sentence_and_nothing_is_graded(case, small_course, capsys):
    import dask
    import distributed  # noqa: F401  (its config defaults first: the set below restores only its key)

    arguments, expected = BAD_INPUT[case]
    root = small_course
    before = (root / "gradebook.db").read_bytes()
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        code = main(["--root", str(root), *(a.format(root=root) for a in arguments)])
    err = capsys.readouterr().err
    assert code == 1
    assert expected.format(root=root) in " ".join(err.split()), err
    assert "Traceback" not in err and "s3cret" not in err
    assert (root / "gradebook.db").read_bytes() == before  # nothing graded, nothing changed
    assert not (root / "autograded").exists()


def test_a_folder_that_is_no_course_is_refused_and_left_as_it_was(tmp_path, capsys):
    assert main(["--root", str(tmp_path), "autograde", "ps1"]) == 1
    assert "no assignment ps1 in the gradebook" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # no gradebook.db made to find that out


def test_a_missing_course_folder_and_zero_jobs_are_refused(tmp_path, capsys):
    assert main(["--root", str(tmp_path / "nope"), "autograde"]) == 1
    assert f"hooklab: no course folder at {tmp_path / 'nope'}" in capsys.readouterr().err
    with pytest.raises(SystemExit) as refused:  # nbgrader's exit status for bad config
        main(["--root", str(tmp_path), "autograde", "--jobs", "0"])
    assert refused.value.code == 1
    assert "--jobs: needs at least 1, not 0" in capsys.readouterr().err
