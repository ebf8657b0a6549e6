"""`hooklab autograde`'s command line: nbgrader's own AutogradeApp, so that options, config files
and the course root are nbgrader's (the working folder's and Jupyter's nbgrader_config.py,
`--config`, `--Class.trait=value`, `--student`, `--db`, `-f`, the working folder on sys.path),
with the engine's options added and the grading handed to the engine instead of nbgrader's
Autograde converter."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from nbgrader.apps.autogradeapp import AutogradeApp
from nbgrader.apps.autogradeapp import aliases as nbgrader_aliases
from nbgrader.apps.autogradeapp import flags as nbgrader_flags
from traitlets import Int, TraitError, Unicode, validate
from traitlets.config import Config

from autograder import course as hooklab_course
from autograder.grade.problems import CannotGrade
from autograder.grade.settings import DEFAULT_JOBS

ENGINE_ALIASES = {
    "j": "HooklabAutogradeApp.jobs",
    "jobs": "HooklabAutogradeApp.jobs",
    "scheduler": "HooklabAutogradeApp.scheduler",
    "summary-json": "HooklabAutogradeApp.summary_json",
}


class HooklabAutogradeApp(AutogradeApp):
    name = "hooklab-autograde"
    description = (
        "Autograde submitted notebooks as `nbgrader autograde` does (its options and config), "
        "with warm kernels, in parallel; several assignments at once, or every assignment of "
        "the course's solutions/ when none is named."
    )
    aliases: ClassVar[dict] = {**nbgrader_aliases, **ENGINE_ALIASES}
    flags: ClassVar[dict] = dict(nbgrader_flags)

    jobs = Int(DEFAULT_JOBS, help="worker processes").tag(config=True)
    scheduler = Unicode("", help="a Dask scheduler address: execute on that cluster").tag(
        config=True
    )
    summary_json = Unicode(
        "", help="also write the summary (counts, seconds, peak kernel RSS) to this file, as JSON"
    ).tag(config=True)

    @validate("jobs")
    def _at_least_one_job(self, proposal):
        if proposal["value"] < 1:
            raise TraitError(f"--jobs: needs at least 1, not {proposal['value']}")
        return proposal["value"]

    def course(self) -> Course:
        """What to grade, as the parsed command line and config files say (no assignment named:
        every one of the course's solutions/); raises CannotGrade for what nbgrader refuses."""
        root = Path(self.coursedir.root).resolve()
        named = list(self.extra_args)
        configured = self.coursedir.assignment_id
        if named and configured:
            raise CannotGrade(
                "the assignment cannot both be specified in config and as an argument"
            )
        assignments = named or ([configured] if configured else hooklab_course.assignments(root))
        if not assignments:
            raise CannotGrade(
                "an assignment id must be specified, either as an argument or with --assignment"
            )
        return Course(
            root=root,
            config=self.config,  # the engine reads a copy of it, with the root above (settings.py)
            assignments=assignments,
            students=self.coursedir.student_id or "*",
            # traitlets puts -f on the most specific class that has the trait: Autograde.
            force=bool(
                self.config.Autograde.get("force", self.config.BaseConverter.get("force", False))
            ),
            jobs=self.jobs,
            scheduler=self.scheduler or None,
            summary_json=Path(self.summary_json) if self.summary_json else None,
            db_given="db_url" in self.config.CourseDirectory,
        )

    def start(self) -> None:  # the engine grades (cli.autograde), not nbgrader's converter
        pass


@dataclass
class Course:
    """One `hooklab autograde` run's course and options, as the app parsed them."""

    root: Path
    config: Config
    assignments: list[str]
    students: str
    force: bool
    jobs: int
    scheduler: str | None
    summary_json: Path | None
    db_given: bool  # a gradebook named on the command line or in config: not the course's own


def parse(argv: list[str], root: Path | None) -> HooklabAutogradeApp:
    """nbgrader's parse of `argv` (and its config files); `root`, hooklab's `--root`, is the
    course folder whose nbgrader_config.py is read too, as nbgrader's own `root` argument."""
    app = HooklabAutogradeApp()
    # A course config's relative root ("." in this course's) is made absolute against the
    # working folder, with a warning; with --root that is replaced below, so not worth one.
    app.log.addFilter(lambda record: "is not absolute, standardizing" not in record.getMessage())
    app.initialize(argv, root=str(root) if root else "")
    if root:  # over the root its config names (this course's says ".", the working folder)
        app.coursedir.root = str(root.resolve())
    return app
