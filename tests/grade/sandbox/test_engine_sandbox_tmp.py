"""The sandbox must hold when the Python environment and the autograder package live under /tmp
(a CI checkout, a clone in /tmp): the sandbox's own /tmp and each kernel's private /tmp would
hide them. A grader runs (in a process of its own) from a virtual environment made under /tmp
and a copy of the package there, with the sandbox required, and a kernel checks that it imports
from them, cannot write to them, and sees nothing else of the host's /tmp."""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

import autograder
from autograder.grade.kernels.template_client import ZYGOTE_ENV
from autograder.grade.sandbox.bwrap import SANDBOX_ENV, SandboxSettings
from autograder.grade.sandbox.working_folder import KERNEL_CWD

pytestmark = pytest.mark.nbgrader

GRADER = """
import json, sys
import nbformat
from autograder.grade.worker.execute import execute_notebook
code, site, cwd = sys.argv[1:]
nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
config = {"WarmKernelManager": {"sandbox": {"mode": "bwrap", "expose": [site]}}}
executed = nbformat.reads(execute_notebook(nbformat.writes(nb), cwd, config).notebook, 4)
print(executed.cells[0].outputs[-1].get("text") or executed.cells[0].outputs[-1])
"""

KERNEL = """
import json, os, sys
import autograder, torch
from ipykernel.kernelapp import IPKernelApp
def attempt(action):
    try:
        return repr(action())
    except OSError as error:
        return type(error).__name__
holder, secret = {holder!r}, {secret!r}
print(json.dumps({{
    "package": autograder.__file__,
    "prefix": sys.prefix,
    "connection": IPKernelApp.instance().connection_file,
    "tensor": torch.ones(2).sum().item(),
    "holder": sorted(os.listdir(holder)),
    "top": sorted(os.listdir("/tmp")),
    "secret": attempt(lambda: open(secret).read()),
    "host file": attempt(lambda: open({host_file!r}).read()),
    "write package": attempt(lambda: open(os.path.join(holder, "src/autograder/x.py"), "w")),
    "write prefix": attempt(lambda: open(os.path.join(sys.prefix, "x"), "w")),
    "scratch": attempt(lambda: open("/tmp/mine", "w").write("ok")),
}}))
"""


def _bwrap_runs() -> bool:
    bwrap = shutil.which("bwrap")
    command = [bwrap or "bwrap", "--ro-bind", "/", "/", "--tmpfs", "/tmp", "true"]
    return bwrap is not None and subprocess.run(command, capture_output=True).returncode == 0


@pytest.fixture()
def holder():
    """A folder in the host's /tmp (whatever TMPDIR says) holding a venv and the package."""
    folder = tempfile.mkdtemp(prefix="hooklab-tmpenv-", dir="/tmp")
    yield Path(folder)
    shutil.rmtree(folder, ignore_errors=True)


def test_an_environment_and_package_under_tmp_are_shown_and_nothing_else(holder):
    if not _bwrap_runs():
        pytest.skip("bubblewrap cannot run here (missing, or no namespaces)")
    venv = holder / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    # The venv finds this environment's packages (torch, nbclient) through a .pth file; the
    # sandbox shows them read-only through `expose`, as a course could.
    site = sysconfig.get_paths()["purelib"]
    (next(venv.glob("lib/python*/site-packages")) / "hooklab_test.pth").write_text(site + "\n")
    ignore = shutil.ignore_patterns("__pycache__")
    package = Path(autograder.__file__).parent
    shutil.copytree(package, holder / "src" / "autograder", ignore=ignore)
    (holder / "secret.txt").write_text("the host's /tmp")
    host_file = Path(tempfile.mkstemp(prefix="hooklab-host-", dir="/tmp")[1])
    code = KERNEL.format(
        holder=str(holder), secret=str(holder / "secret.txt"), host_file=str(host_file)
    )
    # The kernel's working folder (an autograded folder in a course): empty, since what is in it
    # is copied into the kernel's /tmp (sandbox/working_folder.py).
    work = holder / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k != ZYGOTE_ENV}
    env.update({SANDBOX_ENV: "bwrap", "PYTHONPATH": str(holder / "src")})
    try:
        done = subprocess.run(
            [str(venv / "bin" / "python"), "-c", GRADER, code, site, str(work)],
            capture_output=True,
            text=True,
            env=env,
            cwd=holder,
            timeout=300,
        )
    finally:
        host_file.unlink()
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    run_folder = Path(seen["connection"]).parents[2].name
    # This environment's site-packages, exposed, is in /tmp too when its checkout is.
    exposed = [Path(site).parts[2]] if Path(site).parts[1] == "tmp" else []
    assert seen == {
        "package": str(holder / "src" / "autograder" / "__init__.py"),
        "prefix": str(venv),
        "connection": seen["connection"],
        "tensor": 2.0,
        "holder": ["src", "venv"],  # no secret.txt
        # Also there: the kernel's own folder of the zygote's run folder (its connection file),
        # what IPython writes in its home, /tmp, and its working folder.
        "top": sorted([".ipython", holder.name, run_folder, Path(KERNEL_CWD).name, *exposed]),
        "secret": "FileNotFoundError",
        "host file": "FileNotFoundError",
        "write package": "OSError",  # read-only file system
        "write prefix": "OSError",
        "scratch": "2",
    }, seen


@pytest.mark.parametrize("folder", ["/tmp", "/tmp/", "/", "/dev"])
def test_a_folder_the_sandbox_makes_afresh_cannot_be_exposed(folder):
    with pytest.raises(ValueError, match="cannot expose"):
        SandboxSettings.from_dict({"expose": [folder]})


def test_a_folder_inside_tmp_can_be_exposed():
    assert SandboxSettings.from_dict({"expose": ["/tmp/cc/.venv/"]}).expose == ("/tmp/cc/.venv",)
