"""Does the comparison of `both` mode see a difference in a gradebook and in a course folder?"""

import shutil
import stat

from gradebook_record import course_record, differences
from nbgrader.api import Gradebook


def _graded_course(folder, auto_score):
    """A course folder whose gradebook has one graded submission of one notebook."""
    folder.mkdir()
    with Gradebook(f"sqlite:///{folder / 'gradebook.db'}") as gb:
        gb.add_assignment("ps1")
        gb.add_notebook("p1", "ps1")
        gb.add_grade_cell("q1", "p1", "ps1", max_score=2, cell_type="code")
        gb.add_student("foo")
        gb.add_submission("ps1", "foo")
        grade = gb.find_grade("q1", "p1", "ps1", "foo")
        grade.auto_score = auto_score
        gb.db.commit()
    (folder / "autograded" / "foo" / "ps1").mkdir(parents=True)
    return folder


def test_same_courses_have_no_differences(tmp_path):
    one = _graded_course(tmp_path / "one", 1.0)
    two = _graded_course(tmp_path / "two", 1.0)
    assert differences(course_record(one, None), course_record(two, None)) == []


def test_a_different_score_and_an_extra_file_are_differences(tmp_path):
    stock = _graded_course(tmp_path / "stock", 1.0)
    hooklab = _graded_course(tmp_path / "hooklab", 2.0)
    (hooklab / "grades.csv").write_text("")
    found = differences(course_record(stock, None), course_record(hooklab, None))
    notebook = "/gradebook.db/assignments/ps1/submissions/foo/notebooks/p1"
    assert found == [
        f'/files/grades.csv: only hooklab has it ("{_mode(hooklab / "grades.csv")}")',
        f"{notebook}/failed_tests: stock true, hooklab false",  # 1 of 2 points: a failed test
        # auto_score, manual_score, extra_credit, needs_manual_grade
        f"{notebook}/grades/q1: stock [1.0, null, null, true], hooklab [2.0, null, null, true]",
        f"{notebook}/score: stock 1.0, hooklab 2.0",
    ]


def test_a_folder_only_stock_leaves_is_a_difference(tmp_path):
    stock = _graded_course(tmp_path / "stock", 1.0)
    hooklab = _graded_course(tmp_path / "hooklab", 1.0)
    shutil.rmtree(hooklab / "autograded" / "foo")
    found = differences(course_record(stock, None), course_record(hooklab, None))
    mode = _mode(stock / "autograded" / "foo")
    assert found == [
        f'/files/autograded/foo/: only stock has it ("{mode}")',
        f'/files/autograded/foo/ps1/: only stock has it ("{mode}")',
    ]


def _mode(path):
    return oct(stat.S_IMODE(path.stat().st_mode))
