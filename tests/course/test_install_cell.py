"""Does every notebook open with the install cell, and does that cell install only when it
should: never where the package is found, never under nbgrader, and what HOOKLAB_INSTALL names
otherwise? (The cell runs here with pip stubbed; tests/course/test_selfstudy.py runs the real pip.)"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import course, notebooks

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from notebook_cells import INSTALL_CELL_ID, INSTALL_SOURCE  # noqa: E402


@pytest.mark.parametrize("assignment", course.assignments())
@pytest.mark.parametrize("folder", ["solutions", "notebooks"])
def test_the_first_code_cell_of_every_notebook_is_the_install_cell(folder, assignment):
    nb = notebooks.read(course.notebook_path(folder, assignment))
    first = next(cell for cell in nb.cells if cell.cell_type == "code")
    assert first.id == INSTALL_CELL_ID and first.source == INSTALL_SOURCE
    # Locked, never graded: the grader restores it as released and reads it as the course's code.
    meta = first.metadata.get("nbgrader", {})
    assert meta.get("locked") and not meta.get("grade") and not meta.get("solution")


class Pip:
    """Stands in for subprocess.run; `installs` says whether the package is there afterwards."""

    def __init__(self, monkeypatch, *, found_before: bool, installs: bool, returncode: int = 0):
        self.calls: list[list[str]] = []
        self.found = found_before
        self.installs, self.returncode = installs, returncode
        real_find_spec = importlib.util.find_spec

        def find_spec(name, *args):
            if name == "autograder":
                return real_find_spec(name) if self.found else None
            return real_find_spec(name, *args)

        monkeypatch.setattr(importlib.util, "find_spec", find_spec)
        monkeypatch.setattr(subprocess, "run", self)

    def __call__(self, command, **kwargs):
        self.calls.append(command)
        self.found = self.installs
        return subprocess.CompletedProcess(command, self.returncode, "pip said this", "")


def run_cell() -> None:
    exec(compile(INSTALL_SOURCE, "install", "exec"), {"__name__": "__main__"})


def missing(monkeypatch, tmp_path) -> None:
    """No package, not under nbgrader, nothing named by HOOKLAB_INSTALL, in an empty folder."""
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    monkeypatch.delenv("HOOKLAB_INSTALL", raising=False)
    monkeypatch.chdir(tmp_path)


def test_where_the_package_is_found_the_cell_does_nothing(monkeypatch, capsys):
    pip = Pip(monkeypatch, found_before=True, installs=True)
    run_cell()
    assert pip.calls == [] and capsys.readouterr().out == ""


def test_under_nbgrader_the_cell_never_installs_even_without_the_package(monkeypatch, capsys):
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    pip = Pip(monkeypatch, found_before=False, installs=True)
    run_cell()
    assert pip.calls == [] and capsys.readouterr().out == ""


def test_it_installs_the_newest_wheel_beside_the_notebook_or_what_hooklab_install_names(
    monkeypatch, tmp_path
):
    missing(monkeypatch, tmp_path)
    older, newer = (
        tmp_path / "hooklab-0.1.0-py3-none-any.whl",
        tmp_path / "hooklab-0.2.0-py3-none-any.whl",
    )
    newer.write_bytes(b"")
    older.write_bytes(b"")
    os.utime(older, (1, 1))  # downloaded earlier
    (tmp_path / "other-1.0-py3-none-any.whl").write_bytes(b"")
    pip = Pip(monkeypatch, found_before=False, installs=True)
    run_cell()
    monkeypatch.setenv("HOOKLAB_INSTALL", "--find-links '/a dir' hooklab[lab]")
    pip.found = False
    run_cell()
    monkeypatch.setenv("HOOKLAB_INSTALL", "")  # set, but to nothing (`%env HOOKLAB_INSTALL=`)
    pip.found = False
    run_cell()
    installed = [call[call.index("install") + 1 :] for call in pip.calls]
    assert installed == [
        ["--quiet", newer.name],
        ["--quiet", "--find-links", "/a dir", "hooklab[lab]"],
        ["--quiet", newer.name],
    ]
    assert all(call[0] == sys.executable for call in pip.calls)  # the kernel's own environment


def stop(error: pytest.ExceptionInfo) -> str:
    """What IPython shows for the cell's error: its own rendering, one sentence, no traceback."""
    shown = error.value._render_traceback_()
    assert len(shown) == 1
    return shown[0]


def test_with_no_wheel_it_never_asks_an_index_and_says_where_to_put_one(monkeypatch, tmp_path):
    # `hooklab` is not published: asking PyPI for it could only install someone else's package.
    missing(monkeypatch, tmp_path)
    pip = Pip(monkeypatch, found_before=False, installs=True)
    with pytest.raises(Exception) as error:
        run_cell()
    assert pip.calls == []
    assert "no hooklab-*.whl" in stop(error) and "run this cell again" in stop(error)


def test_a_failed_install_stops_run_all_with_pips_words(monkeypatch, capsys, tmp_path):
    missing(monkeypatch, tmp_path)
    (tmp_path / "hooklab-0.1.0-py3-none-any.whl").write_bytes(b"")
    Pip(monkeypatch, found_before=False, installs=False, returncode=1)
    with pytest.raises(Exception) as error:
        run_cell()
    assert "pip could not install Hooklab" in stop(error)
    assert "pip said this" in capsys.readouterr().out


def test_an_install_the_running_kernel_cannot_see_asks_for_a_restart(monkeypatch, tmp_path):
    missing(monkeypatch, tmp_path)
    monkeypatch.setenv("HOOKLAB_INSTALL", "-e /some/checkout")  # an editable install's .pth
    Pip(monkeypatch, found_before=False, installs=False, returncode=0)
    with pytest.raises(Exception) as error:
        run_cell()
    assert "Restart the kernel" in stop(error)
