"""Build the walkthrough site (`make site`, docs/site.md): every solution notebook, its hidden tests
removed, executed, then rendered by MkDocs with mkdocs-jupyter, with an index page made from the
README's notebook table.

    python scripts/site.py [OUT]      OUT defaults to site/ at the repo root
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbgrader.preprocessors import ClearHiddenTests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from autograder import course  # noqa: E402

SOLUTION_MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")
# mkdocs-jupyter renders the notebooks as they are (already executed here), with their outputs.
CONFIG = """\
site_name: Hooklab walkthrough
site_description: The solution notebooks of Hooklab, executed, with their outputs and plots.
docs_dir: docs
site_dir: {out}
theme:
  name: material
plugins:
  - mkdocs-jupyter:
      execute: false
      include_source: false
nav:
  - index.md
{nav}
"""


def walkthrough(assignment: str) -> nbformat.NotebookNode:
    """The solution notebook as a reader sees it: no hidden test, no cell left holding only the
    comment that stood above one, no solution markers (the answers themselves stay)."""
    nb = nbformat.read(course.notebook_path("solutions", assignment), as_version=4)
    nb, _ = ClearHiddenTests().preprocess(nb, {})
    kept = []
    for cell in nb.cells:
        lines = [line for line in cell.source.splitlines() if line.strip() not in SOLUTION_MARKERS]
        code = [line for line in lines if line.strip() and not line.lstrip().startswith("#")]
        if cell.cell_type == "code" and not code:
            continue  # what was left of a hidden-test cell: its comment
        cell.source = "\n".join(lines)
        kept.append(cell)
    nb.cells = kept
    return nb


def execute(nb: nbformat.NotebookNode, assignment: str) -> None:
    """Run it as Jupyter would, from its own folder; a failing cell stops the build."""
    cwd = course.notebook_path("solutions", assignment).parent
    resources = {"metadata": {"path": cwd}}
    NotebookClient(nb, timeout=600, kernel_name="python3", resources=resources).execute()


def index_page(assignments: list[str]) -> str:
    """The README's notebook table, each name a link to its page."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    rows = [line for line in readme if line.startswith("|")][:2]
    for line in readme:
        match = re.match(r"\| `(\w+)` \|", line)
        if match and match.group(1) in assignments:
            name = match.group(1)
            rows.append(line.replace(f"`{name}`", f"[{name}]({name}.ipynb)", 1))
    return (
        "# Hooklab walkthrough\n\n"
        "The solution notebooks of Hooklab, executed: every answer with its outputs, plots and "
        "the checks' messages. The exercises themselves are in `notebooks/`.\n\n"
        + "\n".join(rows)
        + "\n"
    )


def build(out: Path) -> None:
    # Inline plots in the kernels even where the caller's environment selects a headless backend.
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    assignments = course.assignments()
    with tempfile.TemporaryDirectory(prefix="hooklab-site-") as tmp:
        docs = Path(tmp) / "docs"
        docs.mkdir()
        for assignment in assignments:
            nb = walkthrough(assignment)
            execute(nb, assignment)
            nbformat.write(nb, docs / f"{assignment}.ipynb")
            print(f"executed {assignment}", flush=True)
        (docs / "index.md").write_text(index_page(assignments), encoding="utf-8")
        nav = "\n".join(f"  - {name}.ipynb" for name in assignments)
        config = Path(tmp) / "mkdocs.yml"
        config.write_text(CONFIG.format(out=out.resolve(), nav=nav), encoding="utf-8")
        mkdocs = [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-f", str(config)]
        # Silences the banner Material prints on every build (docs/site.md says where it leads).
        env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
        # From the temporary folder: mkdocs-jupyter keeps its cache in .cache/ under the cwd.
        subprocess.run(mkdocs, check=True, env=env, cwd=tmp)
    print(f"site: {out}/index.html")


if __name__ == "__main__":
    build(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "site")
