"""nbgrader configuration of the Korean edition (한국어판), a course of its own in this folder.

It is the English course's configuration (../nbgrader_config.py) with its own course id:
solutions/ (written by `python -m autograder build` from ../solutions and
../translations/ko) is the source and notebooks/ the release, with the same assignment names.
Run nbgrader from this folder (`cd ko && nbgrader autograde forward_hooks`).
"""

from pathlib import Path

c = get_config()  # noqa: F821 - injected by traitlets when nbgrader loads this file

english = Path(__file__).resolve().parent.parent / "nbgrader_config.py"
if not english.is_file():  # load_subconfig passes over a missing file in silence
    raise FileNotFoundError(english)
load_subconfig(str(english))  # noqa: F821 - injected by traitlets, like get_config

c.CourseDirectory.course_id = "hooklab-ko"
