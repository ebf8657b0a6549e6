"""The class reports (grades CSV and HTML report) on a small real nbgrader gradebook."""

from __future__ import annotations

import base64
import csv
import re
import statistics
import warnings
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

from autograder.grade.grader.notes import SubmissionNotes, write_notes
from autograder.i18n import translator
from autograder.reports import write_class_report, write_flags_csv, write_grades_csv
from autograder.reports.diagnostics import normalise

# nbgrader's own add_submission trips these SQLAlchemy autoflush warnings; they are not ours.
pytestmark = pytest.mark.filterwarnings("ignore:Object of type:sqlalchemy.exc.SAWarning")

# assignment -> graded cell -> points
CELLS = {
    "forward_hooks": {
        "forward_collect_test": 1.0,
        "forward_collect_hidden": 2.0,
        "forward_modify_test": 1.0,
        "forward_modify_hidden": 1.0,
    },
    "module_apply": {"apply_init_test": 1.0, "apply_bias_test": 2.0},
}
EXERCISES = {
    "forward_hooks": ["forward_collect", "forward_modify"],
    "module_apply": ["apply_init", "apply_bias"],
}
STUDENTS = ["erin", "alice", "dave", "bob", "carol"]  # erin submits nothing
# (student, assignment) -> graded cell -> auto score; a missing key is a missing submission.
SCORES = {
    ("alice", "forward_hooks"): {
        "forward_collect_test": 1.0,
        "forward_collect_hidden": 2.0,
        "forward_modify_test": 1.0,
        "forward_modify_hidden": 1.0,
    },
    ("bob", "forward_hooks"): {
        "forward_collect_test": 0.0,
        "forward_collect_hidden": 0.0,
        "forward_modify_test": 1.0,
        "forward_modify_hidden": 0.0,
    },
    ("carol", "forward_hooks"): {
        "forward_collect_test": 1.0,
        "forward_collect_hidden": 0.0,
        "forward_modify_test": 0.0,
        "forward_modify_hidden": 0.0,
    },
    ("dave", "forward_hooks"): dict.fromkeys(CELLS["forward_hooks"], 0.0),
    ("alice", "module_apply"): {"apply_init_test": 1.0, "apply_bias_test": 1.5},
    ("bob", "module_apply"): {"apply_init_test": 0.0, "apply_bias_test": 0.0},  # zero, not missing
    ("carol", "module_apply"): {"apply_init_test": 1.0, "apply_bias_test": 2.0},
}

COUNT = "`outputs` has {n} tensors, expected 3: got tensor([{a}, {b}]) shape (2, 4)"
RETURNED = "the hook returned tensor([{a}, {b}, …]) but the output was not changed"
SCRIPT = "`mode` is '<script>alert(1)</script>', expected 'return'"
# (student, assignment) -> graded cell -> (ename, mistake label, message without its headline)
FAILURES = {
    ("bob", "forward_hooks"): {
        "forward_collect_test": ("CheckFailed", "count", COUNT.format(n=2, a=0.1234, b=-2.5)),
        "forward_collect_hidden": ("CheckFailed", "count", COUNT.format(n=2, a=7.25, b=1e-3)),
        "forward_modify_hidden": ("CheckFailed", "returned", RETURNED.format(a=1.5, b=-0.75)),
    },
    ("carol", "forward_hooks"): {
        "forward_collect_hidden": ("CheckFailed", "count", COUNT.format(n=1, a=3, b=0.5)),
        "forward_modify_test": ("CheckFailed", "script", SCRIPT),
        "forward_modify_hidden": ("CheckFailed", "returned", RETURNED.format(a=-9, b=0.0625)),
    },
    ("dave", "forward_hooks"): {
        "forward_collect_test": ("NotDoneYet", "stub", "define `collect_hook` first."),
        "forward_collect_hidden": ("NotDoneYet", "stub", "define `collect_hook` first."),
        "forward_modify_test": ("NotDoneYet", "stub", "define `modify_hook` first."),
        "forward_modify_hidden": ("NameError", "name", "name 'modify_hook' is not defined"),
    },
    ("bob", "module_apply"): {
        "apply_init_test": ("CheckFailed", "init", "weights are 0.5, expected 1.0"),
        "apply_bias_test": ("CheckFailed", "bias", "no parameter `bias` on Linear(2, 3)"),
    },
}
HEADLINES = {
    "CheckFailed": "✗ {exercise}: {message}",
    "NotDoneYet": "… {exercise} is not done yet: {message}",
}


def exercise_of(cell: str) -> str:
    return cell.removesuffix("_test").removesuffix("_hidden")


def error_output(ename: str, cell: str, message: str) -> nbformat.NotebookNode:
    if ename in HEADLINES:
        text = HEADLINES[ename].format(exercise=exercise_of(cell), message=message)
        text += "\n  hint: a second line that must not be part of the diagnostic"
        return nbformat.v4.new_output("error", ename=ename, evalue=text, traceback=text.split("\n"))
    decorations = ["\x1b[0;31m-----------------------------\x1b[0m", f"\x1b[0;31m{ename}\x1b[0m"]
    return nbformat.v4.new_output(
        "error", ename=ename, evalue=message, traceback=[*decorations, f"{ename}: {message}"]
    )


def autograded_notebook(student: str, assignment: str) -> nbformat.NotebookNode:
    failures = FAILURES.get((student, assignment), {})
    demo = nbformat.v4.new_code_cell("raise ValueError('<b>demo</b>')")  # not graded: ignored
    demo.outputs = [error_output("CheckFailed", "demo_test", "an ungraded cell")]
    cells = [nbformat.v4.new_markdown_cell("# notebook"), demo]
    for cell_id in CELLS[assignment]:
        cell = nbformat.v4.new_code_cell(f'autograder.check("{exercise_of(cell_id)}", globals())')
        cell.metadata["nbgrader"] = {
            "grade": True,
            "grade_id": cell_id,
            "locked": True,
            "points": CELLS[assignment][cell_id],
            "schema_version": 3,
            "solution": False,
            "task": False,
        }
        if cell_id in failures:
            ename, _, message = failures[cell_id]
            cell.outputs = [error_output(ename, cell_id, message)]
        else:
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="✓ passed\n")]
        cells.append(cell)
    return nbformat.v4.new_notebook(cells=cells)


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """The gradebook and autograded/ folder of a small class (built once: commits are slow)."""
    tmp_path = tmp_path_factory.mktemp("course")
    db_url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(db_url) as gradebook:
        for assignment, cells in CELLS.items():
            gradebook.add_assignment(assignment)
            gradebook.add_notebook(assignment, assignment)
            for cell, points in cells.items():
                gradebook.add_grade_cell(
                    cell, assignment, assignment, max_score=points, cell_type="code"
                )
        for student in STUDENTS:
            gradebook.add_student(student)
        for (student, assignment), cell_scores in SCORES.items():
            gradebook.add_submission(assignment, student)
            for cell, score in cell_scores.items():
                gradebook.find_grade(cell, assignment, assignment, student).auto_score = score
        gradebook.db.commit()
    for student, assignment in SCORES:
        path = tmp_path / "autograded" / student / assignment / f"{assignment}.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(autograded_notebook(student, assignment), path)
    broken = tmp_path / "autograded" / "zed" / "forward_hooks" / "forward_hooks.ipynb"
    broken.parent.mkdir(parents=True)
    broken.write_text("{ not a notebook", encoding="utf-8")
    return db_url, tmp_path


def exercise_scores(cell_scores: dict[str, float], exercise: str) -> float:
    return sum(score for cell, score in cell_scores.items() if exercise_of(cell) == exercise)


def max_points(assignment: str, exercise: str | None = None) -> float:
    cells = CELLS[assignment]
    return sum(p for c, p in cells.items() if exercise is None or exercise_of(c) == exercise)


# ---------------------------------------------------------------------------------------- CSV


def test_grades_csv_has_a_row_per_student_and_the_scores_put_in(course, tmp_path):
    db_url, _ = course
    path = write_grades_csv(db_url, EXERCISES, tmp_path / "out" / "grades.csv")
    with path.open(newline="", encoding="utf-8") as file:
        header, *rows = list(csv.reader(file))

    exercises = [e for a in EXERCISES for e in EXERCISES[a]]
    assert header == ["student", *exercises, *(f"{a}_total" for a in EXERCISES), "total"]
    assert [row[0] for row in rows] == sorted(STUDENTS)
    for row in rows:
        student = row[0]
        got = dict(zip(header, row, strict=True))
        grand_total = None
        for assignment, names in EXERCISES.items():
            cell_scores = SCORES.get((student, assignment))
            if cell_scores is None:
                assert all(got[e] == "" for e in names), (student, assignment)
                assert got[f"{assignment}_total"] == ""
                continue
            for exercise in names:
                assert float(got[exercise]) == exercise_scores(cell_scores, exercise)
            total = sum(cell_scores.values())
            assert float(got[f"{assignment}_total"]) == total
            grand_total = (grand_total or 0.0) + total
        if grand_total is None:
            assert got["total"] == ""
        else:
            assert float(got["total"]) == grand_total


def test_grades_csv_tells_missing_from_zero(course, tmp_path):
    db_url, _ = course
    path = write_grades_csv(db_url, EXERCISES, tmp_path / "grades.csv")
    with path.open(newline="", encoding="utf-8") as file:
        rows = {row["student"]: row for row in csv.DictReader(file)}
    assert rows["bob"]["module_apply_total"] == "0"  # submitted, scored nothing
    assert rows["bob"]["apply_init"] == "0"
    assert rows["dave"]["module_apply_total"] == ""  # never submitted
    assert rows["dave"]["apply_init"] == ""
    assert rows["dave"]["total"] == "0"  # submitted forward_hooks, scored nothing
    assert rows["erin"]["total"] == ""  # submitted nothing
    assert rows["alice"]["apply_bias"] == "1.5"


def test_grades_csv_refuses_repeated_column_names(course, tmp_path):
    db_url, _ = course
    twice = {"forward_hooks": ["forward_collect"], "module_apply": ["forward_collect"]}
    with pytest.raises(ValueError, match="forward_collect"):
        write_grades_csv(db_url, twice, tmp_path / "grades.csv")


FORMULA_IDS = ["=cmd|' -C calc'!A0", "@SUM(1+1)", "+1", "-2", "\tx", "\rx", "plain"]


def test_grades_csv_and_flags_csv_neutralise_cells_a_spreadsheet_would_run(tmp_path):
    # OWASP's rule for CSV injection: a cell starting with = + - @, a tab or a carriage
    # return gets a leading single quote; a student's id is a folder name the student chose.
    db_url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(db_url) as gradebook:
        gradebook.add_assignment("forward_hooks")
        gradebook.add_notebook("forward_hooks", "forward_hooks")
        gradebook.add_grade_cell(
            "forward_collect_test", "forward_hooks", "forward_hooks", max_score=1, cell_type="code"
        )
        for student in FORMULA_IDS:
            gradebook.add_student(student)
    exercises = {"forward_hooks": ["forward_collect"]}
    with write_grades_csv(db_url, exercises, tmp_path / "grades.csv").open(newline="") as file:
        students = [row[0] for row in list(csv.reader(file))[1:]]
    expected = {s if s == "plain" else f"'{s}" for s in FORMULA_IDS}
    assert set(students) == expected
    for student in FORMULA_IDS:
        write_notes(tmp_path, SubmissionNotes(student, "forward_hooks", "failed", ("=1+1",)))
    with write_flags_csv(tmp_path, ["forward_hooks"], tmp_path / "flags.csv").open(
        newline=""
    ) as file:
        rows = list(csv.reader(file))[1:]
    assert {row[1] for row in rows} == expected and {row[3] for row in rows} == {"'=1+1"}


# --------------------------------------------------------------------------------- HTML report


class Tables(HTMLParser):
    """The text of each cell of each row of the tables with a given class."""

    def __init__(self, css_class: str) -> None:
        super().__init__()
        self.css_class = css_class
        self.rows: list[list[str]] = []
        self.inside = False
        self.cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.inside = dict(attrs).get("class") == self.css_class
        elif self.inside and tag == "tr":
            self.rows.append([])
        elif self.inside and tag == "td":
            self.cell = []

    def handle_endtag(self, tag):
        if tag == "table":
            self.inside = False
        elif tag == "td" and self.cell is not None:
            self.rows[-1].append("".join(self.cell))
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)


def table_rows(html: str, css_class: str) -> list[list[str]]:
    parser = Tables(css_class)
    parser.feed(html)
    return [row for row in parser.rows if row]  # header rows have no <td>


@pytest.fixture(scope="module")
def report(course, tmp_path_factory: pytest.TempPathFactory) -> str:
    db_url, root = course
    out = tmp_path_factory.mktemp("out")
    path = write_class_report(db_url, root, EXERCISES, out / "html" / "report.html")
    return path.read_text(encoding="utf-8")


def test_report_embeds_two_png_plots_per_assignment(report):
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', report)
    assert len(images) == 2 * len(EXERCISES)
    for data in images:
        assert base64.b64decode(data).startswith(b"\x89PNG\r\n\x1a\n")
    assert "<script" not in report.lower()
    assert "http://" not in report and "https://" not in report


def test_report_summary_counts_students_and_mean_and_median_totals(report):
    for assignment in EXERCISES:
        totals = [sum(s.values()) for (_, a), s in SCORES.items() if a == assignment]
        expected = (
            f"{len(totals)} of {len(STUDENTS)} students submitted; total: "
            f"mean {statistics.mean(totals):.2f}, median {statistics.median(totals):.2f}"
        )
        assert expected in report


def test_report_pass_rates_are_fractions_of_full_marks(report):
    rows = table_rows(report, "pass-rate")
    expected = []
    for assignment, exercises in EXERCISES.items():
        submitted = [s for (_, a), s in SCORES.items() if a == assignment]
        for exercise in exercises:
            full = max_points(assignment, exercise)
            passed = sum(exercise_scores(s, exercise) == full for s in submitted)
            expected.append([exercise, f"{passed}/{len(submitted)}"])
    assert [[name, rate.split(" ")[0]] for name, rate in rows] == expected


def expected_diagnostics() -> dict[str, dict[str, set[str]]]:
    """exercise -> mistake label -> the students whose notebook shows it."""
    found: dict[str, dict[str, set[str]]] = {}
    for (student, _), cells in FAILURES.items():
        for cell, (_, label, _) in cells.items():
            found.setdefault(exercise_of(cell), {}).setdefault(label, set()).add(student)
    return found


def test_report_groups_diagnostics_and_counts_students(report):
    rows = table_rows(report, "diagnostics")
    label_of = {
        message: label for cells in FAILURES.values() for _, label, message in cells.values()
    }
    expected = expected_diagnostics()
    shown: dict[str, list[tuple[str, int]]] = {}
    for row in rows:
        if len(row) == 2:  # an exercise without failures
            assert row[0] not in expected
            continue
        exercise, _, _, count, example = row
        shown.setdefault(exercise, []).append((label_of[example], int(count)))
    assert set(shown) == set(expected)
    for exercise, labels in expected.items():
        counts = [count for _, count in shown[exercise]]
        assert counts == sorted(counts, reverse=True), exercise
        assert len(shown[exercise]) == min(3, len(labels)), exercise
        for label, count in shown[exercise]:
            assert count == len(labels[label]), (exercise, label)
    # Different random values, one mistake: bob's two cells and carol's one count as two students.
    assert ("count", 2) in shown["forward_collect"]
    assert shown["forward_modify"][0] == ("returned", 2)
    # Four different mistakes on forward_modify: only the three most frequent are listed.
    assert len(expected["forward_modify"]) == 4


def test_report_strips_headlines_keeps_first_line_and_ignores_ungraded_cells(report):
    rows = [row for row in table_rows(report, "diagnostics") if len(row) == 5]
    kinds = {row[1] for row in rows}
    assert {"check failed", "not done yet", "NameError"} <= kinds
    for *_, example in rows:
        assert not example.startswith(("✗", "…")) and "is not done yet" not in example
        assert "hint:" not in example and "\x1b" not in example
    assert "an ungraded cell" not in report
    assert "tensor(…)" in report and "`outputs` has # tensors" in report


def test_report_escapes_student_output(report):
    assert "<script>alert(1)</script>" not in report
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in report
    assert "zed" in report  # the unreadable notebook is named, not a crash


def test_normalise_groups_values_but_keeps_names_with_digits():
    first = "got tensor([0.1, -2e-3, …]) shape (2, 4) at fc2, value 3.5."
    second = "got tensor(7.) shape (2, 4) at fc2, value -11."
    assert normalise(first) == normalise(second)
    assert normalise(first) != normalise(first.replace("fc2", "fc1"))
    assert normalise(first) != normalise(first.replace("(2, 4)", "(2,)"))


@pytest.fixture(scope="module")
def korean_report(course, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list]:
    """`hooklab report --lang ko` on the class, and the warnings it gave while drawing."""
    from autograder import cli

    db_url, root = course
    assert db_url == cli.course.gradebook_url(root)
    out = tmp_path_factory.mktemp("out-ko") / "class.html"
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.delenv("HOOKLAB_LANG", raising=False)
    monkeypatch.setattr(cli.course, "assignments", lambda root: list(EXERCISES))
    monkeypatch.setattr(cli, "exercise_order", lambda assignment, root: EXERCISES[assignment])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cli.main(["--root", str(root), "report", "--lang", "ko", "--output", str(out)]) == 0
    monkeypatch.undo()
    return out.read_text(encoding="utf-8"), caught


def test_the_korean_report_is_in_korean(korean_report, report):
    html, _warnings = korean_report
    ko = translator("ko")
    assert '<html lang="ko">' in html and '<html lang="en">' in report
    for heading in ("Hooklab class report", "Flags and failures", "exercise", "full marks"):
        assert ko(heading) != heading and ko(heading) in html and heading in report
        assert f">{heading}<" not in html
    mean = statistics.mean(sum(s.values()) for (_, a), s in SCORES.items() if a == "module_apply")
    assert f"{mean:.2f}" in html  # the numbers are the same as in the English report


def test_the_korean_reports_plots_have_no_missing_glyph(korean_report):
    """matplotlib warns "Glyph … missing from font(s)" for every character it draws as tofu."""
    html, caught = korean_report
    assert len(re.findall(r'src="data:image/png;base64,', html)) == 2 * len(EXERCISES)
    missing = [str(w.message) for w in caught if "missing from font" in str(w.message)]
    assert not missing, missing[:3]


@pytest.mark.parametrize("kind", ["CheckFailed", "NotDoneYet"])
def test_a_korean_notebooks_failures_group_like_english_ones(kind):
    """The report strips the headline of a failure in either language: a Korean class's
    diagnostics are its messages, not their `✗ <id>` / `… <id> 아직 안 함` prefix."""
    from autograder import feedback
    from autograder.i18n import speaking
    from autograder.reports.diagnostics import headline

    message = "`answer`이(가) 비어 있습니다. [x1, x2, output]이어야 합니다."
    with speaking("ko"):
        failure = getattr(feedback, kind)(message, grade_id="forward_collect")
        lines = str(failure).splitlines()
    assert lines[0] != message and lines[0].endswith(message)
    output = {"output_type": "error", "ename": kind, "evalue": "", "traceback": lines}
    assert headline(output)[1] == message
