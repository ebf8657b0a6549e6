"""What `nbgrader generate_feedback` runs on an autograded notebook (nbgrader_config.py).

nbgrader's ClearHiddenTests removes the hidden tests' code from the feedback copy, but it reads
every cell, the students' own among them: a student string holding the words "BEGIN HIDDEN
TESTS" made it fail ("No end hidden tests statement found", or "Hidden test region detected in
a non-grade cell"), and that student got no feedback. Here only the grader's own test cells are
read; hidden test regions exist nowhere else (nbgrader restores test cells from the gradebook).
"""

from __future__ import annotations

from nbgrader import utils
from nbgrader.preprocessors import ClearHiddenTests


class ClearHiddenTestsOfTestCells(ClearHiddenTests):
    """ClearHiddenTests on the notebook's graded test cells; every other cell is left as is."""

    def preprocess_cell(self, cell, resources, cell_index):
        if not utils.is_grade(cell) or utils.is_solution(cell):
            return cell, resources
        return super().preprocess_cell(cell, resources, cell_index)
