"""The torch sources a kernel template parses for tracebacks, kept between runs
(autograder/grade/speedups/traceback_cache.py): the next template reads them back, its kernels show
exactly the tracebacks a stock kernel shows, and nothing untrusted, foreign or stale is read."""

import linecache
import pickle
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from autograder import notebooks
from autograder.grade.kernels.template_client import Zygote
from autograder.grade.speedups import traceback_cache
from autograder.grade.worker.execute import execute_notebook

CELLS = [
    "import torch",
    # Through torch's module code: a pre-hook that raises, then a shape mistake.
    "def bad_hook(module, args):\n    raise ValueError('from a hook')\n"
    "layer = torch.nn.Linear(2, 2)\nlayer.register_forward_pre_hook(bad_hook)\nlayer(torch.ones(2))",
    "torch.nn.Linear(2, 1)(torch.ones(3))",
    # Through torch.nn.functional.
    "torch.nn.ReLU(inplace=True)(torch.ones(1, requires_grad=True))",
]


def _notebook() -> nbformat.NotebookNode:
    return notebooks.new_notebook([nbformat.v4.new_code_cell(s) for s in CELLS])


def _errors(nb: nbformat.NotebookNode) -> list[dict]:
    return [dict(o) for cell in nb.cells for o in cell.outputs if o.output_type == "error"]


def _tracebacks_in_a_kernel_of(zygote: Zygote, folder: Path, monkeypatch) -> list[dict]:
    monkeypatch.setattr(Zygote, "_current", zygote)
    ran = execute_notebook(nbformat.writes(_notebook()), str(folder)).notebook
    if zygote.info["sandboxed"]:  # its home is its private /tmp: paths under /tmp read ~/...
        ran = ran.replace("~/", "/tmp/")
    return _errors(nbformat.reads(ran, as_version=4))


@pytest.mark.nbgrader  # starts a cold kernel (import torch) like stock nbgrader
def test_the_next_template_reads_what_the_last_parsed_and_shows_the_same_tracebacks(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    kept = tmp_path / "cache" / "hooklab" / traceback_cache.FILE_NAME
    first = Zygote()
    try:
        assert first.info["traceback_sources"] == {"read": 0, "writing": True}
        parsed_here = _tracebacks_in_a_kernel_of(first, tmp_path, monkeypatch)
        written = Path(first.path).parent / traceback_cache.WRITTEN
        deadline = time.monotonic() + 60
        while not written.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        first.stop()
    assert kept.is_file() and kept.stat().st_mode & 0o077 == 0

    second = Zygote()
    try:
        sources = second.info["traceback_sources"]
        read_back = _tracebacks_in_a_kernel_of(second, tmp_path, monkeypatch)
    finally:
        second.stop()
    # torch's module.py, functional.py and the rest of the warm-up's files, none parsed again.
    assert sources["read"] >= 3 and sources["writing"] is False

    stock = _notebook()
    NotebookClient(stock, timeout=120, allow_errors=True).execute()
    assert len(_errors(stock)) == 3
    assert read_back == parsed_here == _errors(stock)


def _store(path: Path, versions: tuple, sources: dict) -> None:
    with open(path, "wb") as file:
        pickle.dump(versions, file)
        pickle.dump(sources, file)


def test_a_kept_file_is_read_only_for_the_same_libraries_and_unchanged_files(tmp_path):
    from stack_data.core import Source

    code = tmp_path / "parsed.py"
    code.write_text("def f():\n    return 1\n")
    parsed = Source.for_filename(str(code))
    key = (str(code), tuple(linecache.getlines(str(code))))
    sources = traceback_cache._sources()
    stored = tmp_path / traceback_cache.FILE_NAME

    def read() -> set:
        sources.pop(key, None)
        return traceback_cache.read(str(tmp_path))

    _store(stored, traceback_cache._versions(), {key: parsed})
    assert read() == {key}
    assert sources[key] is not parsed and sources[key].tree is not None
    assert sources[key].text == parsed.text

    _store(stored, ("other versions",), {key: parsed})
    assert read() == set() and key not in sources

    _store(stored, traceback_cache._versions(), {key: parsed})
    stored.write_bytes(stored.read_bytes()[:-100])  # cut short
    assert read() == set() and key not in sources

    code.write_text("def f():\n    return 2\n")  # changed since it was parsed
    linecache.checkcache(str(code))
    _store(stored, traceback_cache._versions(), {key: parsed})
    assert read() == set() and key not in sources

    stored.unlink()
    assert read() == set()


def test_only_a_file_the_grader_alone_can_write_is_brought_in(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    control = tmp_path / "control"
    control.mkdir()
    brought = control / traceback_cache.FILE_NAME

    # A run keeps what its template wrote, readable by the grader only.
    (control / traceback_cache.WRITTEN).write_bytes(b"parsed sources")
    traceback_cache.keep(str(control))
    kept = traceback_cache.cache_folder() / traceback_cache.FILE_NAME
    assert kept.read_bytes() == b"parsed sources" and kept.stat().st_mode & 0o777 == 0o600

    for file_mode, folder_mode in ((0o666, 0o700), (0o600, 0o777)):
        kept.chmod(file_mode)
        kept.parent.chmod(folder_mode)
        traceback_cache.bring_in(str(control))
        assert not brought.exists(), (oct(file_mode), oct(folder_mode))

    kept.chmod(0o600)
    kept.parent.chmod(0o700)
    traceback_cache.bring_in(str(control))
    assert brought.read_bytes() == b"parsed sources"


def test_a_template_writes_only_what_is_new_and_goes_on_when_it_cannot_fork(tmp_path, monkeypatch):
    from stack_data.core import Source

    code = tmp_path / "parsed.py"
    code.write_text("x = 1\n")
    Source.for_filename(str(code))
    forks = []

    def no_fork():
        forks.append(1)
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(traceback_cache.os, "fork", no_fork)
    # Everything it holds came from the kept file: nothing to write, no fork.
    assert traceback_cache.write_if_new(str(tmp_path), set(traceback_cache._sources())) is False
    assert forks == []
    # Something new, but no process to spare: it goes on without writing.
    assert traceback_cache.write_if_new(str(tmp_path), set()) is False
    assert forks == [1] and list(tmp_path.iterdir()) == [code]
