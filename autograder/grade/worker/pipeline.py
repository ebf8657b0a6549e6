"""Grade one submitted notebook, on a worker: nbgrader's sanitize and autograde passes with the
course's own preprocessors, execution in a warm kernel, and the scores SaveAutoGrades would save.

This is what `nbgrader autograde` does per notebook, minus everything that touches the gradebook
or the disk: gradebook lookups come from a snapshot, and the scores go back to the grading process
(batch.py), which alone writes the gradebook and the autograded file. Unlike nbconvert's exporter
it does not deep-copy and re-validate the notebook after every preprocessor, only after each pass.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from dataclasses import dataclass, field

import nbformat
from nbconvert.exporters.exporter import ResourcesDict
from nbformat import validator
from nbformat.v4 import nbjson, rwbase
from nbgrader import utils
from nbgrader.converters import Autograde
from nbgrader.preprocessors import (
    AssignLatePenalties,
    DeduplicateIds,
    Execute,
    OverwriteCells,
    OverwriteKernelspec,
    SaveAutoGrades,
)
from traitlets.config import Config

from autograder.grade.grader.snapshot import GradebookSnapshot
from autograder.grade.kernels.provisioner import WarmKernelManager
from autograder.grade.kernels.template_client import Zygote
from autograder.grade.worker.dedupe import DropDuplicateIds
from autograder.grade.worker.execute import run_in_warm_kernel
from autograder.grade.worker.verify import Guard

log = logging.getLogger("hooklab.pipeline")


@dataclass
class NotebookJob:
    """Everything a worker needs to grade one notebook; plain data, so it travels to Dask."""

    text: str  # the submitted notebook file, as text
    resources: dict  # nbgrader's per-notebook resources: student, assignment, notebook, db_url
    snapshot: GradebookSnapshot
    config: dict  # the course's traitlets config
    cwd: str  # the kernel's working folder (nbgrader uses the autograded submission folder)
    preload: list[str] = field(default_factory=list)  # modules the kernels should start with
    secret: str = ""  # the course secret the trusted verification derives its seeds from


@dataclass
class NotebookResult:
    output: str  # the autograded notebook, exactly as nbgrader's exporter would write it
    scores: dict[str, float | None] = field(default_factory=dict)  # grade id -> auto score
    comments: dict[str, str | None] = field(default_factory=dict)  # grade id -> auto comment
    seconds: float = 0.0  # execution time
    kernel_peak_rss_mb: float | None = None
    death: str = ""  # "kernel died (...) while running cell X", when it did
    weaker: str | None = None  # why the kernel ran without the sandbox, when it did


class SnapshotOverwriteKernelspec(OverwriteKernelspec):
    """OverwriteKernelspec reading the released kernelspec from the snapshot."""

    snapshot: GradebookSnapshot

    def preprocess(self, nb, resources):
        ids = resources["nbgrader"]
        stored = self.snapshot.find_notebook(ids["notebook"], ids["assignment"]).kernelspec
        # As nbgrader: a notebook released without kernelspec is stored as "{}", which is no
        # kernelspec to overwrite with (the parsed dict is tested, not the text).
        kernelspec = json.loads(stored) if stored is not None else None
        if kernelspec:
            nb.metadata["kernelspec"] = kernelspec
        return nb, resources


class SnapshotOverwriteCells(OverwriteCells):
    """OverwriteCells restoring locked and test cells from the snapshot."""

    snapshot: GradebookSnapshot

    def preprocess(self, nb, resources):
        self.notebook_id = resources["nbgrader"]["notebook"]
        self.assignment_id = resources["nbgrader"]["assignment"]
        self.gradebook = self.snapshot
        nb, resources = super(OverwriteCells, self).preprocess(nb, resources)
        if self.add_missing_cells:
            nb, resources = self.add_missing_grade_cells(nb, resources)
            nb, resources = self.add_missing_task_cells(nb, resources)
        return nb, resources


def _preprocessors(classes: list, config: Config, snapshot: GradebookSnapshot) -> list:
    """Instances of the configured preprocessor classes, with gradebook readers on the snapshot."""
    swap = {
        OverwriteKernelspec: SnapshotOverwriteKernelspec,
        OverwriteCells: SnapshotOverwriteCells,
        DeduplicateIds: DropDuplicateIds,  # nbgrader's leaves cells it then rejects (dedupe.py)
    }
    made = []
    for cls in classes:
        cls = swap.get(cls, cls)
        # Enabled or not as registered by nbgrader (`register_preprocessor(pp)`): nbgrader's own
        # are enabled by default, nbconvert's (ClearMetadataPreprocessor) only by config.
        instance = cls(config=config)
        if cls in (SnapshotOverwriteKernelspec, SnapshotOverwriteCells):
            instance.snapshot = snapshot
        made.append(instance)
    return made


def _run_pass(nb, resources, preprocessors):
    _, nb = validator.normalize(nb)
    for preprocessor in preprocessors:
        nb, resources = preprocessor(nb, resources)
    nbformat.validate(nb, relax_add_props=True)
    return nb, resources


def scores_and_comments(nb) -> tuple[dict[str, float | None], dict[str, str | None]]:
    """What SaveAutoGrades records for each cell: the auto score of every grade cell (nbgrader's
    determine_grade), and "No response." for a solution cell left as released."""
    scores, comments = {}, {}
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if utils.is_grade(cell):
            scores[grade_id], _ = utils.determine_grade(cell, log)
        if utils.is_solution(cell) or utils.is_task(cell):
            unchanged = cell.metadata.nbgrader.get("checksum") == utils.compute_checksum(cell)
            comments[grade_id] = "No response." if unchanged and not utils.is_task(cell) else None
    return scores, comments


def warm_up(kernel_name: str = "python3") -> None:
    """Do, in this process, the one-time work every grading process does on its first notebook:
    compile nbformat's schema validators, look up the kernel spec. Worker processes forked
    afterwards start with it done."""
    from nbformat.v4 import new_code_cell, new_notebook, new_output

    outputs = [
        new_output("stream", name="stdout", text=""),
        new_output("display_data", data={"text/plain": ""}),
        new_output("execute_result", data={"text/plain": ""}, execution_count=1),
        new_output("error", ename="", evalue="", traceback=[]),
    ]
    nb = new_notebook(cells=[new_code_cell("", outputs=outputs)])
    nbformat.validate(nb)
    nbformat.validate(nb, relax_add_props=True)
    with contextlib.suppress(Exception):  # a missing kernel spec fails later, per notebook
        WarmKernelManager(kernel_name=kernel_name).kernel_spec  # noqa: B018 (cached)


def grade_notebook(job: NotebookJob) -> NotebookResult:
    """Sanitize, execute and score one notebook; raises what nbgrader's conversion would raise."""
    config = Config(job.config)
    steps = Autograde(config=config)  # only for the configured preprocessor lists
    resources, metadata = ResourcesDict(), ResourcesDict()
    metadata["path"] = job.cwd
    resources.update(job.resources, metadata=metadata)
    resources["output_extension"] = ".ipynb"
    nb = nbformat.reads(job.text, as_version=4)
    nb, resources = _run_pass(
        nb, resources, _preprocessors(steps.sanitize_preprocessors, config, job.snapshot)
    )

    result = NotebookResult(output="")
    for cls in steps.autograde_preprocessors:
        if cls is Execute and not config.Execute.get("enabled", True):
            continue  # nbgrader's --no-execute: scored from the outputs as handed in
        if cls is Execute:
            Zygote.current().preload(job.preload)
            start = time.perf_counter()
            ids = job.resources["nbgrader"]
            guard = Guard(ids["student"], ids["assignment"], job.secret)
            run = run_in_warm_kernel(nb, job.cwd, config, guard)
            result.seconds = time.perf_counter() - start
            result.kernel_peak_rss_mb, result.death = run.kernel_peak_rss_mb, run.death
            result.weaker = run.weaker
        elif cls is SaveAutoGrades:
            result.scores, result.comments = scores_and_comments(nb)
        elif cls is not AssignLatePenalties:  # late penalties are the grading process's part
            (preprocessor,) = _preprocessors([cls], config, job.snapshot)
            nb, resources = preprocessor(nb, resources)
    nbformat.validate(nb, relax_add_props=True)
    output = writes_consuming(nb)
    result.output = output if output.endswith("\n") else output + "\n"
    return result


def writes_consuming(nb) -> str:
    """What nbformat.v4.writes(nb) writes, without validating the notebook again (it would only
    log) and without the deep copy it makes to leave `nb` as it was: here `nb` is done with, so
    its text fields are split into lines and its transient fields dropped in place."""
    nb = rwbase.strip_transient(rwbase.split_lines(nb))
    options = {"indent": 1, "sort_keys": True, "separators": (",", ": "), "ensure_ascii": False}
    return json.dumps(nb, cls=nbjson.BytesEncoder, **options)
