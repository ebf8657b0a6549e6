"""nbgrader's preprocessors as the worker runs them from the gradebook snapshot (pipeline.py)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from autograder import notebooks
from autograder.grade.worker.pipeline import SnapshotOverwriteKernelspec

PYTHON = {"name": "python3", "display_name": "Python 3", "language": "python"}


@pytest.mark.parametrize(
    ("stored", "submitted", "expected"),
    [
        (json.dumps(PYTHON), {"name": "other", "display_name": "Other"}, PYTHON),
        # Released without a kernelspec: the gradebook holds "{}", and the submitted one stays.
        (
            "{}",
            {"name": "other", "display_name": "Other"},
            {"name": "other", "display_name": "Other"},
        ),
        ("{}", None, None),
        (None, None, None),
    ],
)
def test_the_released_kernelspec_overwrites_the_submitted_one_as_nbgrader_does(
    stored, submitted, expected
):
    nb = notebooks.nbformat.v4.new_notebook()
    if submitted is not None:
        nb.metadata["kernelspec"] = dict(submitted)
    preprocessor = SnapshotOverwriteKernelspec()
    preprocessor.snapshot = SimpleNamespace(
        find_notebook=lambda notebook, assignment: SimpleNamespace(kernelspec=stored)
    )
    resources = {"nbgrader": {"notebook": "ps1", "assignment": "a"}}
    nb, _ = preprocessor.preprocess(nb, resources)
    assert nb.metadata.get("kernelspec") == expected
    notebooks.nbformat.validate(nb)  # a kernelspec-less notebook is still a valid notebook
