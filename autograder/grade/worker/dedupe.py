"""nbgrader's DeduplicateIds, without the crash it causes on a duplicated grade cell.

Stock DeduplicateIds keeps the last cell of a repeated grade id and empties the nbgrader
metadata of the others (`{}`); CheckCellMetadata then refuses that empty metadata as "schema
version 0" and the whole submission fails. Here the emptied metadata is removed instead, so the
copies are ordinary cells and the notebook is graded (verify.py notes copies of test cells).
"""

from __future__ import annotations

from nbgrader.preprocessors import DeduplicateIds


class DropDuplicateIds(DeduplicateIds):
    def preprocess(self, nb, resources):
        nb, resources = super().preprocess(nb, resources)
        for cell in nb.cells:
            if cell.metadata.get("nbgrader") == {}:
                del cell.metadata["nbgrader"]
        return nb, resources
