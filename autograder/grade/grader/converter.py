"""The grading process's side of `nbgrader autograde`: nbgrader's own Autograde converter for
everything that touches the gradebook or the course folders (destination, student and submission
records, copied files, permissions), and the two gradebook writes of its autograde pass
(SaveAutoGrades, AssignLatePenalties) for a notebook a worker has graded (see pipeline.py)."""

from __future__ import annotations

import logging
import os
import re
import shutil
from pathlib import Path

import nbformat
from nbconvert.exporters.exporter import ResourcesDict
from nbconvert.writers import FilesWriter
from nbgrader.api import Comment, Grade, Gradebook, MissingEntry
from nbgrader.converters import Autograde
from nbgrader.preprocessors import AssignLatePenalties
from sqlalchemy.orm import joinedload

from autograder.grade.worker.pipeline import NotebookResult

STAGING = ".{assignment}.hooklab-partial"  # beside autograded/<student>/<assignment>
REPLACED = ".{assignment}.hooklab-replaced"  # the same, regraded: its previous folder


class KeptWarnings(logging.LoggerAdapter):
    """nbgrader's log for one submission. What it warns about (a late submission and its
    penalty, a notebook that was not handed in) is kept for the submission's line in the summary
    rather than printed among the progress bars; its info messages go nowhere."""

    def __init__(self) -> None:
        super().__init__(logging.getLogger("hooklab.nbgrader"), {})
        self.kept: list[str] = []

    def isEnabledFor(self, level: int) -> bool:
        return level >= logging.WARNING

    def log(self, level: int, msg: object, *args, **kwargs) -> None:
        if level != logging.WARNING:  # errors come with the exception nbgrader raises next
            return
        try:
            self.kept.append(str(msg) % args if args else str(msg))
        except (TypeError, ValueError):
            self.kept.append(str(msg))


_LATE = re.compile(r" is ([\d.]+) seconds late$")
_NOT_SUBMITTED = "No submitted file: "
_PENALTY = "Late submission penalty: "


def warnings_as_notes(kept: list[str]) -> list[str]:
    """nbgrader's warnings about a submission as sentences of its summary line."""
    notes, penalties = [], []
    for warning in kept:
        if late := _LATE.search(warning):
            minutes = float(late.group(1)) / 60
            notes.append(f"submitted {minutes:.0f} min late")
        elif warning.startswith(_NOT_SUBMITTED):
            name = Path(warning[len(_NOT_SUBMITTED) :]).name
            notes.append(f"{name} was not handed in: it scores zero")
        elif warning.startswith(_PENALTY) and _is_number(warning[len(_PENALTY) :]):
            penalties.append(float(warning[len(_PENALTY) :]))
        else:
            notes.append(warning)
    if penalties:  # one per notebook
        notes.append(f"late penalty: {sum(penalties):g} points")
    return list(dict.fromkeys(notes))  # nbgrader says some twice


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


class EngineAutograde(Autograde):
    """Autograde whose notebooks are sanitized, executed and scored by workers.

    A submission's autograded folder appears only once its grades are saved: it is filled in a
    staging folder beside it and renamed into place at the end. nbgrader skips a submission
    whose folder exists, so a grader killed half-way must not leave one behind, or its rerun
    would skip a submission that has no grades.
    """

    staging = False  # while True, the destination is the staging folder

    def _format_dest(self, assignment_id: str, student_id: str, escape: bool = False) -> str:
        final = super()._format_dest(assignment_id, student_id, escape)
        if not self.staging:
            return final
        return str(Path(final).parent / STAGING.format(assignment=Path(final).name))

    def init_destination(self, assignment_id: str, student_id: str) -> bool:
        """nbgrader's, except that --force leaves a graded submission's folder in place until
        its new one replaces it (finish_staging): submissions are staged well ahead of grading
        (batch.py), and a run stopped half-way must not have removed the results of those it
        had not regraded yet."""
        if not self.force or self.coursedir.notebook_id != "*":
            return super().init_destination(assignment_id, student_id)
        excluded = (self.coursedir.student_id_exclude or "").split(",")
        return student_id not in excluded

    def start_staging(self, assignment: str, student: str) -> None:
        """From now on write to a fresh staging folder (left over from a killed run or not).
        Grading some notebooks (--notebook) starts it from a copy of the autograded folder, so
        the notebooks graded before stay, as nbgrader leaves them in place."""
        final = self.destination(assignment, student)
        self.staging = True
        staged = Path(self._format_dest(assignment, student))
        shutil.rmtree(staged, ignore_errors=True)
        if self.coursedir.notebook_id != "*" and final.is_dir():
            shutil.copytree(final, staged, symlinks=True)

    def finish_staging(self, assignment: str, student: str) -> None:
        """Put the completed folder in place: one rename, so it is there whole or not at all."""
        staged = Path(self._format_dest(assignment, student))
        self.staging = False
        staged.mkdir(parents=True, exist_ok=True)
        final = Path(self._format_dest(assignment, student))
        if not final.exists():
            os.replace(staged, final)
            return
        # Regraded (--force): the previous folder goes only now, moved aside first, since a
        # folder cannot be renamed over one that has files.
        previous = final.parent / REPLACED.format(assignment=final.name)
        shutil.rmtree(previous, ignore_errors=True)  # left over from a killed run
        os.replace(final, previous)
        os.replace(staged, final)
        # The new folder is in place: what is left of the old one must not fail the submission.
        shutil.rmtree(previous, ignore_errors=True)

    def discard(self, assignment: str, student: str) -> None:
        """Remove what grading a failed submission left, as nbgrader does: its autograded
        folder, or with --notebook only this run's notebooks in it."""
        if self.coursedir.notebook_id != "*":
            self.finish_staging(assignment, student)
            final = self.destination(assignment, student)
            for notebook in self.notebooks:
                (final / Path(notebook).name).unlink(missing_ok=True)
            return
        for staging in (True, False):
            self.staging = staging
            shutil.rmtree(self._format_dest(assignment, student), ignore_errors=True)
        _remove_if_empty(Path(self._format_dest(assignment, student)).parent)

    def drop_staging(self, assignment: str, student: str) -> None:
        """Remove the staging folder of a submission that is not graded after all (the run was
        stopped first); an earlier autograded folder stays."""
        self.staging = True
        staged = Path(self._format_dest(assignment, student))
        self.staging = False
        shutil.rmtree(staged, ignore_errors=True)
        _remove_if_empty(staged.parent)

    def prepare(self, notebooks: list[str]) -> None:
        """What nbgrader's `start()` does before its loop, for one submission's notebooks (and
        without its chdir, which would move every grading thread at once)."""
        self.notebooks = notebooks
        self.writer = FilesWriter(parent=self, config=self.config)
        self.exporter = self.exporter_class(parent=self, config=self.config)

    def notebook_resources(self, notebook_filename: str) -> ResourcesDict:
        """nbgrader's resources for one submitted notebook (student, assignment, notebook, db)."""
        resources = ResourcesDict()
        resources.update(self.init_single_notebook_resources(notebook_filename))
        resources["output_extension"] = ".ipynb"
        return resources

    def destination(self, assignment: str, student: str) -> Path:
        return Path(self._format_dest(assignment, student))

    def save(self, resources: ResourcesDict, result: NotebookResult) -> None:
        """Record a graded notebook as nbgrader's autograde pass does: scores and comments, the
        late penalty, then the autograded file."""
        ids = resources["nbgrader"]
        save_auto_grades(ids, result)
        penalties = AssignLatePenalties(parent=self, config=self.config)
        penalties.preprocess(nbformat.v4.new_notebook(), resources)
        self.write_single_notebook(result.output, resources)


def _remove_if_empty(student_folder: Path) -> None:
    """A student's autograded folder made only for a staging folder that is gone now."""
    if student_folder.is_dir() and not any(student_folder.iterdir()):
        student_folder.rmdir()


def save_auto_grades(ids: dict, result: NotebookResult) -> None:
    """SaveAutoGrades' records, in one transaction instead of one commit per cell.

    For each grade cell: its auto score, and whether it needs manual grading (it does when a
    grader scored it before, or when there is no auto score). For each solution cell: the
    automatic comment. The values come from nbgrader's own rules (pipeline.scores_and_comments).
    """
    with Gradebook(ids["db_url"]) as gb:
        notebook = gb.find_submission_notebook(ids["notebook"], ids["assignment"], ids["student"])
        # Each record's name is its cell's: loaded with it in one query, not one query per cell.
        grades = {grade.name: grade for grade in _with_cells(gb, Grade, notebook)}
        comments = {comment.name: comment for comment in _with_cells(gb, Comment, notebook)}
        for name, score in result.scores.items():
            if name not in grades:
                raise MissingEntry(f"No such grade: {name}")
            grade = grades[name]
            grade.auto_score = score
            grade.needs_manual_grade = grade.manual_score is not None or score is None
        for name, text in result.comments.items():
            if name not in comments:
                raise MissingEntry(f"No such comment: {name}")
            comments[name].auto_comment = text
        gb.db.commit()


def _with_cells(gb: Gradebook, record: type, notebook) -> list:
    """The notebook's Grade or Comment records, each with its cell loaded."""
    query = gb.db.query(record).options(joinedload(record.cell))
    return query.filter(record.notebook_id == notebook.id).all()
