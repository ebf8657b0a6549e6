"""The course on disk: where solutions, student notebooks and runtime folders live, and which
assignments exist. Mirrors nbgrader_config.py at the repo root."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions"
NOTEBOOKS = ROOT / "notebooks"
SAMPLES = ROOT / "samples"
GRADEBOOK_URL = f"sqlite:///{ROOT / 'gradebook.db'}"


def assignments() -> list[str]:
    """Every assignment: a folder of solutions/ holding a notebook of the same name."""
    return sorted(p.parent.name for p in SOLUTIONS.glob("*/*.ipynb") if p.stem == p.parent.name)


def nbgrader(*args: str, root: Path = ROOT, check: bool = True) -> subprocess.CompletedProcess:
    """Run the stock nbgrader command line in `root` (which holds an nbgrader_config.py)."""
    env = dict(os.environ)
    # nbgrader starts `alembic` by name: the environment's own bin folder must come first.
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    command = [sys.executable, "-m", "nbgrader", *args]
    result = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)
    if check and result.returncode != 0:
        raise RuntimeError(f"`nbgrader {' '.join(args)}` failed:\n{result.stdout}{result.stderr}")
    return result


def build(names: list[str] | None = None, *, db_url: str = GRADEBOOK_URL) -> list[Path]:
    """Generate the student notebooks in notebooks/ from solutions/ with `nbgrader
    generate_assignment`, which also records the source cells in the gradebook at `db_url`."""
    written = []
    for name in names or assignments():
        target = NOTEBOOKS / name
        if target.exists():
            shutil.rmtree(target)
        nbgrader("generate_assignment", name, "--force", f"--db={db_url}")
        written.append(target / f"{name}.ipynb")
    return written
