"""nbgrader's own Autograde converter with one change: the Execute step hands the notebook to a
worker and waits for it. Cell restoring, scoring and gradebook records are stock nbgrader."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

import nbformat
from nbconvert.writers import FilesWriter
from nbgrader.converters import Autograde
from nbgrader.converters.base import BaseConverter
from nbgrader.preprocessors import DeduplicateIds, Execute, NbGraderPreprocessor

from autograder.engine import gradebook_cache, schema_cache
from autograder.engine.dedupe import DropDuplicateIds
from autograder.engine.execute import Executed

schema_cache.install()
gradebook_cache.install()

Dispatch = Callable[[str, str], Executed]  # (notebook JSON, kernel cwd) -> executed notebook

# Grading threads share the parent process; each one says here where its notebooks execute.
_local = threading.local()


class RemoteExecute(NbGraderPreprocessor):
    """Stands where nbgrader's Execute stands, and runs the notebook through `_local.dispatch`.

    While it waits, it releases the gradebook lock its thread holds, so other submissions can
    use the gradebook; the parent process stays its only user (one SQLite writer).
    """

    def preprocess(self, nb, resources):
        lock, dispatch = _local.gradebook_lock, _local.dispatch
        cwd = resources.get("metadata", {}).get("path") or "."
        lock.release()
        try:
            executed = dispatch(nbformat.writes(nb), cwd)
        finally:
            lock.acquire()
        _local.executed.append(executed)
        return nbformat.reads(executed.notebook, as_version=nbformat.NO_CONVERT), resources


class EngineAutograde(Autograde):
    """Autograde whose execution happens elsewhere; see RemoteExecute."""

    def prepare(self, notebooks: list[str]) -> None:
        """What nbgrader's `start()` does before its loop, for one submission's notebooks (and
        without its chdir, which would move every grading thread at once)."""
        self.notebooks = notebooks
        self.writer = FilesWriter(parent=self, config=self.config)
        self.exporter = self.exporter_class(parent=self, config=self.config)

    def convert_single_notebook(self, notebook_filename: str) -> None:
        """nbgrader's two passes (sanitize, then autograde), minus its NBGRADER_EXECUTION
        setenv: grading threads would race on os.environ. The kernel gets the variable from
        the worker instead (see execute.py)."""
        self._sanitizing = True
        self._init_preprocessors()
        BaseConverter.convert_single_notebook(self, notebook_filename)
        build = self.writer.build_directory
        self._sanitizing = False
        self._init_preprocessors()
        try:
            BaseConverter.convert_single_notebook(
                self, os.path.join(build, os.path.basename(notebook_filename))
            )
        finally:
            self._sanitizing = True

    def _init_preprocessors(self) -> None:
        super()._init_preprocessors()
        replace = {Execute: RemoteExecute, DeduplicateIds: DropDuplicateIds}
        self.exporter._preprocessors = [
            next((new(parent=self.exporter) for old, new in replace.items() if type(pp) is old), pp)
            for pp in self.exporter._preprocessors
        ]


def bind_thread(dispatch: Dispatch, gradebook_lock: threading.Lock) -> list[Executed]:
    """Route this thread's executions through `dispatch`; returns the list they are logged to."""
    _local.dispatch, _local.gradebook_lock, _local.executed = dispatch, gradebook_lock, []
    return _local.executed
