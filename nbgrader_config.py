"""nbgrader configuration: solutions/ is the source and notebooks/ the release of this course.

Run `nbgrader generate_assignment <assignment>` or `nbgrader autograde <assignment>` from the repo
root. Submissions go to submitted/<student>/<assignment>/, grading output to autograded/ and
feedback/, and the gradebook to gradebook.db; all of these are git-ignored.
"""

c = get_config()  # noqa: F821 - injected by traitlets when nbgrader loads this file

c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "notebooks"
c.CourseDirectory.course_id = "hooklab"

# Native (C++) torch messages bypass Python's warnings module and land on stderr, which nbgrader
# scores as a failed test. The checks already reroute Python warnings to stdout; this catches the
# rest when it is only a warning.
c.IgnorePattern.pattern = r"(?i)\bwarn(ing)?\b|NNPACK"
c.Execute.timeout = 60
# A stub that does nothing instead of raising NotImplementedError: an untouched notebook then runs
# top to bottom (Run All goes through every exercise), and each check says "not done yet".
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\n..."}

# Student feedback shows each test cell's outputs (the checks' messages) but not the hidden tests'
# code: nbgrader's own ClearHiddenTests runs on the feedback copy too (jupyter/nbgrader#917), on
# the test cells only, so that a student's own cell mentioning its delimiters cannot make it fail
# (autograder/grade/feedback.py).
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
    "autograder.grade.feedback.ClearHiddenTestsOfTestCells",
]
# Feedback and the formgrader render the students' outputs and Markdown through nbconvert's
# HTMLExporter: sanitized, no script runs in the student's or the instructor's browser.
c.HTMLExporter.sanitize_html = True
