"""A course whose notebooks do not use torch: `hooklab autograde` gives its kernels no torch, as a
stock kernel has none (settings.course_uses_torch), and a student's cell that imports torch
still runs; a course whose notebooks use torch or Hooklab's checks keeps the warm torch."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from golden import ROOT

from autograder.grade.kernels.template_client import ZYGOTE_ENV
from autograder.grade.settings import course_uses_torch, load_config

BIN = Path(sys.executable).parent


def _test_cell(grade_id: str, source: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["nbgrader"] = {
        "schema_version": 3,
        "grade": True,
        "solution": False,
        "locked": True,
        "grade_id": grade_id,
        "points": 1,
    }
    return cell


def _write(path: Path, cells: list) -> None:
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


def _course(root: Path, source: str) -> Path:
    (root / "nbgrader_config.py").write_text(
        'c = get_config()\nc.CourseDirectory.course_id = "x"\n'
    )
    _write(root / "source" / "hw" / "hw.ipynb", [_test_cell("probe", source)])
    return root


@pytest.mark.parametrize(
    ("source", "uses"),
    [
        ("import math\nprint(math.pi)", False),
        ("import numpy as np  # not torch", False),
        ("x = 'import torch'", False),
        ("import torch", True),
        ("from torch import nn", True),
        ("import math\n  from autograder import check", True),
    ],
)
def test_a_course_uses_torch_when_a_notebook_imports_it_or_hooklabs_checks(tmp_path, source, uses):
    root = _course(tmp_path, source)
    assert course_uses_torch(root, load_config(root)) is uses


def test_a_course_without_notebooks_to_read_and_hooklabs_own_course_use_torch(tmp_path):
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\n")
    assert course_uses_torch(tmp_path, load_config(tmp_path)) is True
    # Hooklab's course: its source folder is solutions/ (nbgrader_config.py says so).
    assert course_uses_torch(ROOT, load_config(ROOT)) is True


@pytest.mark.parametrize(("text", "uses"), [("{not json", True), ('{"cells": ["x", 3]}', False)])
def test_a_notebook_it_cannot_read_means_torch_and_odd_cells_are_passed_over(tmp_path, text, uses):
    root = _course(tmp_path, "import math")
    (root / "release" / "hw").mkdir(parents=True)
    (root / "release" / "hw" / "odd.ipynb").write_text(text)
    assert course_uses_torch(root, load_config(root)) is uses


@pytest.mark.nbgrader
def test_a_kernel_of_a_course_without_torch_has_none_and_can_still_import_it(tmp_path):
    root = _course(tmp_path, "import sys\nprint('torch' in sys.modules)")
    done = subprocess.run(
        [str(BIN / "nbgrader"), "generate_assignment", "hw"], cwd=root, capture_output=True
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    released = nbformat.read(root / "release" / "hw" / "hw.ipynb", as_version=4)
    # A cell the student added: it imports torch, which works as in any kernel.
    released.cells.append(
        nbformat.v4.new_code_cell("import torch\nprint(torch.ones(3).sum().item())")
    )
    submitted = root / "submitted" / "s1" / "hw"
    submitted.mkdir(parents=True)
    nbformat.write(released, submitted / "hw.ipynb")
    stock_root = tmp_path.parent / f"{tmp_path.name}-stock"
    shutil.copytree(root, stock_root)
    env = {k: v for k, v in os.environ.items() if k != ZYGOTE_ENV}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(":")
    command = [sys.executable, "-m", "autograder", "autograde", "hw"]
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    graded = json.loads((root / "autograded" / "s1" / "hw" / "hw.ipynb").read_text())
    printed = [
        "".join(o.get("text", "")) for cell in graded["cells"] for o in cell.get("outputs", [])
    ]
    assert printed == ["False\n", "3.0\n"], printed
    # The course folder is left as nbgrader's own autograde leaves it: the same files, and no
    # key of Hooklab's in the autograded notebook.
    stock = subprocess.run(
        [str(BIN / "nbgrader"), "autograde", "hw"], cwd=stock_root, capture_output=True
    )
    assert stock.returncode == 0, stock.stderr.decode()[-2000:]
    assert _files(root) == _files(stock_root)
    stock_graded = json.loads((stock_root / "autograded" / "s1" / "hw" / "hw.ipynb").read_text())
    assert graded["metadata"].keys() == stock_graded["metadata"].keys()


def _files(root: Path) -> list[str]:
    return sorted(str(path.relative_to(root)) for path in root.rglob("*"))
