"""The part of the gradebook that grading a notebook reads, copied once per batch.

nbgrader's sanitizing preprocessors (OverwriteKernelspec, OverwriteCells) look up the released
notebook's cells in the gradebook, one query per cell. A snapshot answers the same lookups from
memory, so those preprocessors can run unchanged in worker processes (or on a Dask cluster) that
never open the gradebook: the grading process stays its only user.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from types import SimpleNamespace

from nbgrader.api import Gradebook, MissingEntry

from autograder import parsing
from autograder.exercises.kit import registry

# Modules that set themselves up with the running IPython when first imported.
SETS_UP_WITH_IPYTHON = ("ipywidgets", "matplotlib_inline", "autograder.widgets")


def _sets_up_with_ipython(module: str) -> bool:
    return any(module == name or module.startswith(f"{name}.") for name in SETS_UP_WITH_IPYTHON)


@dataclass
class NotebookRecord:
    """A released notebook as the gradebook knows it (plain data, so it pickles)."""

    name: str
    kernelspec: str | None
    # name, cell_type, locked, source, checksum of every cell nbgrader recorded
    source_cells: list[dict] = field(default_factory=list)
    graded_cells: dict[str, float] = field(default_factory=dict)  # grade and task cells: max score
    grade_cell_names: list[str] = field(default_factory=list)
    solution_cell_names: list[str] = field(default_factory=list)
    task_cell_names: list[str] = field(default_factory=list)


class GradebookSnapshot:
    """Answers the Gradebook lookups of nbgrader's sanitizing preprocessors for one assignment."""

    def __init__(self, assignment: str, notebooks: dict[str, NotebookRecord]) -> None:
        self.assignment, self.notebooks = assignment, notebooks

    @classmethod
    def read(cls, db_url: str, assignment: str) -> GradebookSnapshot:
        records = {}
        with Gradebook(db_url) as gb:
            for notebook in gb.find_assignment(assignment).notebooks:
                records[notebook.name] = NotebookRecord(
                    name=notebook.name,
                    kernelspec=notebook.kernelspec,
                    source_cells=[
                        {
                            "name": c.name,
                            "cell_type": c.cell_type,
                            "locked": c.locked,
                            "source": c.source,
                            "checksum": c.checksum,
                        }
                        for c in notebook.source_cells
                    ],
                    graded_cells={
                        c.name: c.max_score for c in [*notebook.grade_cells, *notebook.task_cells]
                    },
                    grade_cell_names=[c.name for c in notebook.grade_cells],
                    solution_cell_names=[c.name for c in notebook.solution_cells],
                    task_cell_names=[c.name for c in notebook.task_cells],
                )
        return cls(assignment, records)

    def imported_modules(self) -> list[str]:
        """The modules the released code cells import at top level: the kernel template imports
        them before forking (zygote.py), so that the kernels do not each import them again.

        Left out: modules that set themselves up with the running IPython when imported, which
        they could not do in the template (it has none).
        """
        found: list[str] = []
        for record in self.notebooks.values():
            for cell in record.source_cells:
                if cell["cell_type"] != "code":
                    continue
                try:
                    tree = parsing.parse(cell["source"])
                except SyntaxError:
                    continue
                for node in tree.body:
                    if isinstance(node, ast.Import):
                        found += [alias.name for alias in node.names]
                    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                        found.append(node.module)
        # The exercises its notebooks grade, and what their verifier needs: imported once in
        # the template instead of in every verifier.
        for record in self.notebooks.values():
            for cell in record.source_cells:
                notebook = registry.notebook_of(cell.get("name", ""))
                if notebook:
                    found.append(f"autograder.exercises.{notebook}.{cell['name']}")
        if any(m.startswith("autograder.exercises.") for m in found):
            found += ["autograder.grade.verifier.host", "IPython.core.inputtransformer2"]
        return sorted({m for m in found if not _sets_up_with_ipython(m)})

    # --- the Gradebook methods the preprocessors call, with the same MissingEntry errors ---

    def __enter__(self) -> GradebookSnapshot:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def _record(self, notebook: str, assignment: str) -> NotebookRecord:
        if assignment != self.assignment or notebook not in self.notebooks:
            raise MissingEntry(f"No such notebook: {assignment}/{notebook}")
        return self.notebooks[notebook]

    def find_source_cell(self, name: str, notebook: str, assignment: str) -> SimpleNamespace:
        for cell in self._record(notebook, assignment).source_cells:
            if cell["name"] == name:
                return SimpleNamespace(**cell)
        raise MissingEntry(f"No such source cell: {assignment}/{notebook}/{name}")

    def find_graded_cell(self, name: str, notebook: str, assignment: str) -> SimpleNamespace:
        graded = self._record(notebook, assignment).graded_cells
        if name not in graded:
            raise MissingEntry(f"No such grade cell: {assignment}/{notebook}/{name}")
        return SimpleNamespace(name=name, max_score=graded[name])

    def find_notebook(self, name: str, assignment: str) -> SimpleNamespace:
        """The notebook with the relationships OverwriteCells' add_missing_cells walks."""
        record = self._record(name, assignment)

        def cells(names: list[str]) -> list[SimpleNamespace]:
            return [self.find_graded_cell(n, name, assignment) for n in names]

        return SimpleNamespace(
            name=record.name,
            kernelspec=record.kernelspec,
            source_cells=[SimpleNamespace(**cell) for cell in record.source_cells],
            grade_cells=cells(record.grade_cell_names),
            solution_cells=[SimpleNamespace(name=n) for n in record.solution_cell_names],
            task_cells=cells(record.task_cell_names),
        )
