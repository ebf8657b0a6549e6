"""A verifier's child (sandbox/apart.py) writes only to a /tmp of its own, and still reads what
its Python needs from under the host's /tmp: a package an editable install's finder maps there
(no folder of sys.path names it, and the host loaded it after its first child), a file beside
it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

CHILD_READS = textwrap.dedent(
    """
    import importlib.abc, importlib.util, json, os, sys
    root = sys.argv[1]

    class Finder(importlib.abc.MetaPathFinder):  # as setuptools' editable installs map a package
        def find_spec(self, name, path=None, target=None):
            if name == "mapped_only":
                return importlib.util.spec_from_file_location(
                    name, os.path.join(root, "mapped_only", "__init__.py"),
                    submodule_search_locations=[os.path.join(root, "mapped_only")])
            return None

    sys.meta_path.insert(0, Finder())
    from autograder.grade.sandbox import apart

    if os.fork() != 0:  # the host must have one thread, as a verifier does
        sys.exit(os.waitstatus_to_exitcode(os.wait()[1]))
    assert apart.own_namespaces()
    first = apart.fork_apart()  # a child before the host loaded the package
    if first == 0:
        os._exit(0)
    os.waitpid(first, 0)
    import mapped_only  # loaded by the host after that, as a shared cell's imports are
    read, write = os.pipe()
    child = apart.fork_apart()
    if child == 0:
        seen = {}
        try:
            import mapped_only.later  # not imported by the host: read from under /tmp
            seen["imported"] = mapped_only.later.VALUE
            seen["data"] = open(os.path.join(root, "mapped_only", "data.txt")).read()
            open("/tmp/mine.txt", "w").write("ok")
            seen["own tmp"] = sorted(os.listdir("/tmp"))
            try:
                open(os.path.join(root, "mapped_only", "planted.py"), "w").write("x = 1")
                seen["writes the package"] = True
            except OSError:
                seen["writes the package"] = False
        except Exception as error:
            seen["error"] = repr(error)
        os.write(write, json.dumps(seen).encode())
        os._exit(0)
    os.close(write)
    print(os.read(read, 65536).decode(), flush=True)
    os.waitpid(child, 0)
    os._exit(0)
    """
)


@pytest.mark.skipif(os.geteuid() != 0, reason="a user namespace of its own needs root here")
def test_a_child_imports_a_mapped_package_under_tmp_and_writes_only_its_own_tmp(tmp_path):
    assert str(tmp_path).startswith("/tmp/")
    package = tmp_path / "mapped_only"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "later.py").write_text("VALUE = 42\n")
    (package / "data.txt").write_text("beside the package")
    marker = f"/tmp/hooklab-test-apart-{os.getpid()}"  # in the host's /tmp only
    open(marker, "w").close()
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD_READS, str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        os.unlink(marker)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout)
    assert "mine.txt" in seen.pop("own tmp") and os.path.basename(marker) not in done.stdout
    assert seen == {"imported": 42, "data": "beside the package", "writes the package": False}
    assert not (package / "planted.py").exists()
    assert not os.path.exists("/tmp/mine.txt")  # the child's /tmp was its own
