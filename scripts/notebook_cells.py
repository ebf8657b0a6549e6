"""Put the install cell into the solution notebooks: their first code cell, which tells a
self-learner how to install Hooklab (Colab, a downloaded notebook) and installs it when the
`autograder` package is missing. Running it again rewrites that cell in place (same id) and
touches no other cell. Then `python -m autograder build` regenerates notebooks/.

What the cell does, and why it is safe where the package is installed and under grading, is in
docs/self-study.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograder import course, notebooks  # noqa: E402

INSTALL_CELL_ID = "install"
# Where the package is installed (a course's JupyterLab, the grader) this is one find_spec: a
# look at sys.path, no import. nbgrader sets NBGRADER_EXECUTION while it runs a notebook: grading
# never installs anything, whatever the environment lacks.
INSTALL_SOURCE = """\
# Working on your own (Colab, a downloaded notebook)? This cell installs Hooklab, the package
# with this notebook's checks and hints, when it is missing; where it is installed it does nothing.
# It installs the Hooklab wheel in this notebook's folder (hooklab-*.whl; in Colab, upload it to
# the Files pane first), or what the environment variable HOOKLAB_INSTALL names: a wheel or a
# requirement (%env HOOKLAB_INSTALL=... in a cell above this one).
# By hand instead:    %pip install hooklab-0.1.0-py3-none-any.whl
#   from a checkout:  pip install -e ".[lab]"   (in a terminal, then start Jupyter)
import glob, importlib.util, os, shlex, subprocess, sys


# Shown as its message alone: Run All stops here with a sentence, not a traceback.
class HooklabMissing(Exception):
    def _render_traceback_(self):
        return [str(self)]


if importlib.util.find_spec("autograder") is None and not os.environ.get("NBGRADER_EXECUTION"):
    wheels = sorted(glob.glob("hooklab-*.whl"), key=os.path.getmtime)
    wanted = shlex.split(os.environ.get("HOOKLAB_INSTALL") or "") or wheels[-1:]
    if not wanted:
        raise HooklabMissing(
            "Hooklab is not installed, and this notebook's folder has no hooklab-*.whl. "
            "Put your course's wheel there (in Colab: the Files pane), then run this cell again."
        )
    print("Installing", *wanted, "with pip (a minute or two) ...")
    pip = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", *wanted], capture_output=True, text=True
    )
    importlib.invalidate_caches()
    if pip.returncode != 0:
        print(pip.stdout[-3000:], pip.stderr[-3000:])
        raise HooklabMissing("pip could not install Hooklab: see its words above.")
    if importlib.util.find_spec("autograder") is None:
        raise HooklabMissing(
            "Hooklab is installed, but this kernel started before it. "
            "Restart the kernel (in Colab: Runtime, Restart session), then run the notebook again."
        )
    print("Hooklab is installed.")"""


def install_cell():
    # Locked: nbgrader restores it as released, and the grader reads it as the course's code.
    return notebooks.locked(INSTALL_CELL_ID, INSTALL_SOURCE)


def add_install_cell(assignment: str) -> None:
    path = ROOT / "solutions" / assignment / f"{assignment}.ipynb"
    nb = notebooks.read(path)
    cells = [cell for cell in nb.cells if cell.id != INSTALL_CELL_ID]
    first_code = next(i for i, cell in enumerate(cells) if cell.cell_type == "code")
    cells.insert(first_code, install_cell())
    nb.cells = cells
    notebooks.write(nb, path)
    print(f"{assignment}: install cell before {cells[first_code + 1].id}")


if __name__ == "__main__":
    for name in sys.argv[1:] or course.assignments():
        add_install_cell(name)
