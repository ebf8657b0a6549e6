"""The sandbox for a grader that is not root (how most instructors run it). bubblewrap then puts
the zygote in a user namespace where it is root, and each kernel maps that root into a user
namespace of its own, which Linux allows only to a process that could set file capabilities.
Run as root (as CI is), the test grades as `nobody` in a process of its own, with the sandbox
required; run as another user, the whole suite takes this path anyway."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from autograder.grade.kernels.template_client import ZYGOTE_ENV
from autograder.grade.sandbox.bwrap import SANDBOX_ENV

pytestmark = pytest.mark.nbgrader
NOBODY = 65534

GRADER = """
import json, sys
import nbformat
from autograder import notebooks
from autograder.grade.worker.execute import execute_notebook
nb = notebooks.new_notebook([nbformat.v4.new_code_cell(sys.argv[1])])
ran = nbformat.reads(execute_notebook(nbformat.writes(nb), sys.argv[2]).notebook, 4)
print(json.dumps(ran.cells[0].outputs))
"""

KERNEL = """import json, multiprocessing, os, socket
def child():
    print("child", flush=True)
process = multiprocessing.get_context("fork").Process(target=child)
process.start()
process.join()
try:  # the grader's own folder, which it may write to outside the sandbox
    open({home!r} + "/pwned", "w")
    home = "written"
except OSError as error:
    home = type(error).__name__
print(json.dumps({{"uid": os.getuid(), "interfaces": socket.if_nameindex(), "home": home}}))
"""


def _as_nobody(command: list[str], home: Path, **kwargs) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != ZYGOTE_ENV}
    env.update({SANDBOX_ENV: "bwrap", "HOME": str(home), "XDG_CACHE_HOME": str(home / "cache")})
    return subprocess.run(
        command,
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
        **kwargs,
    )


@pytest.fixture()
def home():
    folder = Path(tempfile.mkdtemp(prefix="hooklab-nobody-", dir="/tmp"))
    os.chown(folder, NOBODY, NOBODY)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_a_grader_that_is_not_root_gets_the_sandbox(home):
    if os.geteuid() != 0:
        pytest.skip("not root: every sandbox test already runs as a grader that is not root")
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    reach = _as_nobody([sys.executable, "-c", "import autograder, torch"], home)
    if reach.returncode != 0:
        pytest.skip(f"nobody cannot run this checkout's Python: {reach.stderr[-300:]}")
    namespaces = _as_nobody(["bwrap", "--unshare-user", "--ro-bind", "/", "/", "true"], home)
    if namespaces.returncode != 0:  # e.g. unprivileged user namespaces turned off on this host
        pytest.skip(f"bwrap cannot run here as a user that is not root: {namespaces.stderr}")
    code = KERNEL.format(home=str(home))
    done = _as_nobody([sys.executable, "-c", GRADER, code, str(home)], home, timeout=300)
    # With the sandbox required, a zygote that cannot isolate a kernel is an error, not a
    # quiet fallback to limits only.
    assert done.returncode == 0, done.stderr[-3000:]
    outputs = json.loads(done.stdout.splitlines()[-1])
    printed = "".join(output.get("text", "") for output in outputs)
    assert "child" in printed, outputs  # through the kernel's own loopback
    # The child's print reaches the notebook through ipykernel's forwarding, which may deliver
    # its "child" and its newline on either side of the kernel's own line.
    lines = printed.replace("child", "\n").splitlines()
    seen = json.loads(next(line for line in lines if line.startswith("{")))
    # Root in its own user namespace: the grader's uid outside, no capabilities.
    assert seen == {"uid": 0, "interfaces": [[1, "lo"]], "home": "FileNotFoundError"}, outputs
    assert not (home / "pwned").exists()
