"""The walkthrough site (`make site`, scripts/site.py): built once into a temporary folder, it has
a page per solution notebook with its outputs (plots as images, the checks' pass messages) and
nothing of the hidden tests. Skipped where MkDocs is not installed, except in CI (CI=true)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder import course

ROOT = Path(__file__).resolve().parents[2]
ASSIGNMENTS = course.assignments()
# What only the hidden tests contain: their markers and the argument of the checks they call.
HIDDEN = ("BEGIN HIDDEN TESTS", "END HIDDEN TESTS", "hidden=True")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    if importlib.util.find_spec("mkdocs_jupyter") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("mkdocs-jupyter is not installed (extra `site`, in `dev`)")
        pytest.skip("mkdocs-jupyter is not installed (pip install -e '.[site]')")
    out = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, str(ROOT / "scripts" / "site.py"), str(out)], check=True)
    return out


def page(site: Path, assignment: str) -> str:
    return (site / assignment / "index.html").read_text(encoding="utf-8")


def source(assignment: str) -> str:
    return course.notebook_path("solutions", assignment).read_text(encoding="utf-8")


def test_one_page_per_notebook_linked_from_the_index(site):
    assert len(ASSIGNMENTS) == 5
    index = (site / "index.html").read_text(encoding="utf-8")
    for assignment in ASSIGNMENTS:
        assert (site / assignment / "index.html").is_file(), assignment
        assert re.search(rf'href="{assignment}/"', index), assignment


def test_plots_are_images(site):
    # The notebooks that draw with matplotlib (today cnn_hooks alone) show their figures as PNGs.
    plotting = {a for a in ASSIGNMENTS if "plt." in source(a)}
    assert "cnn_hooks" in plotting
    for assignment in ASSIGNMENTS:
        images = re.findall(r'<img [^>]*src="data:image/png;base64,', page(site, assignment))
        assert bool(images) == (assignment in plotting), assignment
    assert len(re.findall(r'<img [^>]*src="data:image/png', page(site, "cnn_hooks"))) >= 3


def test_every_visible_check_shows_its_pass_message(site):
    for assignment in ASSIGNMENTS:
        nb = nbformat.read(course.notebook_path("solutions", assignment), as_version=4)
        checks = [
            cell
            for cell in nb.cells
            if cell.metadata.get("nbgrader", {}).get("grade") and "HIDDEN" not in cell.source
        ]
        assert checks, assignment
        # One "✓ " per visible check at least (a message may hold more than one).
        assert page(site, assignment).count("✓ ") >= len(checks), assignment


def test_no_hidden_test_is_published(site):
    files = [path for path in site.rglob("*") if path.is_file()]
    assert any(path.suffix == ".html" for path in files)
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        for marker in HIDDEN:
            assert marker not in text, f"{marker!r} in {path.relative_to(site)}"
