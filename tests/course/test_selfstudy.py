"""Self-study with one install: a student notebook alone in an empty folder, in a fresh venv that
has only torch and a Jupyter kernel, installs Hooklab from the built wheel through its first cell
(the student dependencies alone, no grading stack) and runs; its solution then runs clean.

Run alone it prints what the student install costs: `pytest -m selfstudy -n 0 -s`. With
HOOKLAB_SELFSTUDY_CONSTRAINTS (a pip constraints file; scripts/check_floors.sh gives the floors)
every pip install of the test, the first cell's too, is held to it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from jupyter_client import KernelManager
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient

from autograder import course

pytestmark = pytest.mark.selfstudy

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = "forward_hooks"
TORCH = "torch==2.13.0"  # the local CPU wheel: see scripts/setup.sh
# What `pip install hooklab[grader]` adds and a student must not need.
GRADING_STACK = {
    "nbgrader", "nbformat", "nbclient", "nbconvert", "jupyterlab", "distributed", "dask",
    "psycopg", "sqlalchemy", "rich", "orjson",
}  # fmt: skip
CONSTRAINTS = os.environ.get("HOOKLAB_SELFSTUDY_CONSTRAINTS")


def pip(python: Path, *args: str) -> None:
    held = ["-c", CONSTRAINTS] if CONSTRAINTS else []
    command = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*command, *held, *args], check=True)


def installed(python: Path) -> dict[str, str]:
    listed = subprocess.run(
        [str(python), "-m", "pip", "list", "--format=freeze", "--disable-pip-version-check"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return dict(line.lower().replace("_", "-").split("==", 1) for line in listed)


def size_mb(folder: Path) -> float:
    files = (Path(root) / name for root, _, names in os.walk(folder) for name in names)
    return sum(path.lstat().st_size for path in files) / 1e6


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """Hooklab's wheel, built from a copy of the sources (a build writes build/ beside them)."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(
        ROOT / "autograder", source / "autograder", ignore=shutil.ignore_patterns("__pycache__")
    )
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            str(source),
        ],
        check=True,
    )
    (built,) = out.glob("hooklab-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """A fresh venv with torch and ipykernel (the kernel any Jupyter brings), nothing of ours."""
    folder = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
    python = folder / "bin" / "python"
    pip(python, TORCH)
    pip(python, "ipykernel")
    return folder


def kernel_manager(venv: Path, kernels: Path) -> KernelManager:
    spec = kernels / "selfstudy"
    spec.mkdir(parents=True, exist_ok=True)
    argv = [str(venv / "bin" / "python"), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "selfstudy", "language": "python"}),
        encoding="utf-8",
    )
    return KernelManager(
        kernel_name="selfstudy", kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernels)])
    )


def kernel_env(venv: Path, wheel: Path) -> dict[str, str]:
    """The student's environment: no PYTHONPATH to this checkout, the venv first on PATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["HOOKLAB_INSTALL"] = str(wheel)
    if CONSTRAINTS:
        env["PIP_CONSTRAINT"] = CONSTRAINTS
    return env


def text_of(cell) -> str:
    parts = []
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            parts.append(output.text)
        elif output.output_type == "error":
            parts.append(f"{output.ename}: {output.evalue}\n" + "\n".join(output.traceback))
        else:
            parts.append(str(output.get("data", {}).get("text/plain", "")))
    return "\n".join(parts)


def copy_alone(folder_name: str, tmp_path: Path) -> tuple[Path, nbformat.NotebookNode]:
    """The notebook copied alone into an empty folder, as a downloaded notebook would be."""
    folder = tmp_path / folder_name
    folder.mkdir()
    target = folder / f"{NOTEBOOK}.ipynb"
    shutil.copy(course.notebook_path(folder_name, NOTEBOOK), target)
    return folder, nbformat.read(target, as_version=4)


@pytest.fixture(scope="module")
def student_run(venv, wheel, tmp_path_factory):
    """The untouched student notebook, cell by cell, up to its first "not done yet"."""
    tmp_path = tmp_path_factory.mktemp("student")
    folder, nb = copy_alone("notebooks", tmp_path)
    before = installed(venv / "bin" / "python")
    client = NotebookClient(
        nb, km=kernel_manager(venv, tmp_path / "kernels"), timeout=900, allow_errors=True
    )
    started = time.monotonic()
    ran = []
    with client.setup_kernel(env=kernel_env(venv, wheel), cwd=str(folder)):
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            client.execute_cell(cell, index)
            ran.append(cell)
            if "not done yet" in text_of(cell):
                break
    return before, ran, time.monotonic() - started


def test_a_student_notebook_alone_installs_hooklab_and_runs_to_not_done_yet(student_run, venv):
    before, ran, seconds = student_run
    after = installed(venv / "bin" / "python")
    first = ran[0]
    assert first.id == "install"
    assert "Hooklab is installed." in text_of(first), text_of(first)
    for cell in ran:
        assert "ImportError" not in text_of(cell) and "ModuleNotFoundError" not in text_of(cell), (
            f"{cell.id}: {text_of(cell)[-2000:]}"
        )
    assert "not done yet" in text_of(ran[-1]), "no check said 'not done yet'"
    assert "hooklab" in after and "hooklab" not in before
    assert not GRADING_STACK & set(after), (
        f"the student install brought {GRADING_STACK & set(after)}"
    )
    print(
        f"\nself-study: {len(before)} packages with torch and ipykernel, {len(after)} after the "
        f"first cell installed Hooklab ({len(after) - len(before)} more: "
        f"{' '.join(sorted(set(after) - set(before)))}); venv {size_mb(venv):.0f} MB; "
        f"{seconds:.0f} s from the first cell to the first 'not done yet'"
    )


def test_its_solution_runs_clean_and_the_first_cell_then_does_nothing(student_run, venv, tmp_path):
    folder, nb = copy_alone("solutions", tmp_path)
    client = NotebookClient(nb, km=kernel_manager(venv, tmp_path / "kernels"), timeout=600)
    started = time.monotonic()
    client.execute(env=kernel_env(venv, Path("/nonexistent/hooklab.whl")), cwd=str(folder))
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            assert output.output_type != "error", f"{cell.id}: {text_of(cell)[-2000:]}"
    install = next(cell for cell in nb.cells if cell.cell_type == "code")
    assert install.id == "install" and install.outputs == []
    print(f"\nself-study: the solution notebook ran clean in {time.monotonic() - started:.0f} s")
