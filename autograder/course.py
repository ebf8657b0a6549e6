"""The course on disk, as nbgrader sees it: solutions/ is the source, notebooks/ the release, and
submitted/, autograded/, feedback/ and gradebook.db the runtime part (see nbgrader_config.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nbformat import NotebookNode

ROOT = Path(__file__).resolve().parents[1]


def gradebook_url(root: Path) -> str:
    return f"sqlite:///{root / 'gradebook.db'}"


COURSE_ORDER = [
    "forward_hooks",
    "backward_hooks",
    "module_apply",
    "cnn_hooks",
    "hooks_in_practice",
]


def assignments(root: Path = ROOT) -> list[str]:
    """Every assignment (a folder of solutions/ holding a notebook of the same name), in the
    order the course teaches them."""
    found = (root / "solutions").glob("*/*.ipynb")
    names = {p.parent.name for p in found if p.stem == p.parent.name}
    rank = {name: index for index, name in enumerate(COURSE_ORDER)}
    return sorted(names, key=lambda name: (rank.get(name, len(rank)), name))


def notebook_path(folder: str, assignment: str, root: Path = ROOT) -> Path:
    return root / folder / assignment / f"{assignment}.ipynb"


def use_environment_bin() -> None:
    """Put this Python environment's bin folder first on PATH: nbgrader's gradebook starts
    `alembic` by name, which fails when the environment is used without being activated."""
    bin_dir = str(Path(sys.executable).parent)
    if os.environ.get("PATH", "").split(os.pathsep)[0] != bin_dir:
        os.environ["PATH"] = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"


def nbgrader(*args: str, root: Path = ROOT) -> subprocess.CompletedProcess:
    """Run the stock nbgrader command line in `root`, which holds an nbgrader_config.py."""
    use_environment_bin()
    command = [sys.executable, "-m", "nbgrader", *args]
    result = subprocess.run(command, cwd=root, capture_output=True, text=True)
    if result.returncode != 0 and "Address already in use" in result.stdout + result.stderr:
        # jupyter_client finds a kernel's TCP ports free, then the kernel binds them: another
        # process (a command side by side) can take one in between. The one command here that
        # starts kernels, autograde, runs with --force: running it once more is safe.
        result = subprocess.run(command, cwd=root, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"`nbgrader {' '.join(args)}` failed:\n{result.stdout}{result.stderr}")
    return result


def build(names: list[str] | None = None, *, root: Path = ROOT, db_url: str | None = None) -> None:
    """Generate notebooks/<a>/ from solutions/<a>/ with `nbgrader generate_assignment`, which
    also records the source and test cells in the gradebook that autograde restores them from."""
    for name in names or assignments(root):
        target = root / "notebooks" / name
        if target.exists():
            shutil.rmtree(target)
        db = f"--db={db_url or gradebook_url(root)}"
        nbgrader("generate_assignment", name, "--force", db, root=root)


def submit(nb: NotebookNode, student: str, assignment: str, root: Path = ROOT) -> Path:
    """Place a notebook where `nbgrader collect` would: submitted/<student>/<assignment>/."""
    # nbformat (through notebooks) is imported when needed, not with this module: the grading
    # command reads its settings from here before it starts the kernel template.
    from autograder import notebooks

    path = notebook_path(f"submitted/{student}", assignment, root)
    notebooks.write(nb, path)
    return path


def answered_notebook(answers_text: str, assignment: str, root: Path = ROOT) -> NotebookNode:
    """The student notebook of `assignment` with an answer file's sections filled in."""
    from autograder import notebooks

    student_nb = notebooks.read(notebook_path("notebooks", assignment, root))
    return notebooks.fill_answers(student_nb, notebooks.parse_answers(answers_text))


def autograde(assignment: str, *, root: Path = ROOT, db_url: str | None = None) -> None:
    """Grade every submission of `assignment` with stock `nbgrader autograde`."""
    db = f"--db={db_url or gradebook_url(root)}"
    nbgrader("autograde", assignment, "--force", db, root=root)
