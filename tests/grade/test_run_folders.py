"""Run folders: what a killed run leaves in the temporary folder is removed by the next sweep,
and nothing a living process holds, nor anything not a run folder of this user, ever is."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autograder.grade import run_folders


def _maker(temporary, body: str = "") -> tuple[subprocess.Popen, str]:
    """A process that makes a run folder in `temporary`, runs `body`, then waits to be killed."""
    code = "\n".join(
        [
            "import os, sys, time",
            "from autograder.grade import run_folders",
            'path = run_folders.make("verdicts")',
            body,
            "print(path, flush=True)",
            "time.sleep(600)",
        ]
    )
    env = {**os.environ, "TMPDIR": str(temporary)}
    process = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env
    )
    return process, process.stdout.readline().strip()


def _end(process: subprocess.Popen) -> None:
    process.kill()
    process.wait()


def test_a_folder_whose_maker_was_killed_is_swept(tmp_path):
    maker, path = _maker(tmp_path)
    (Path(path) / "kernels").mkdir()
    (Path(path) / "kernels" / "big").write_bytes(b"x" * 4096)
    assert run_folders.sweep(str(tmp_path)) == []  # its maker lives
    assert os.path.isdir(path)
    _end(maker)
    assert run_folders.sweep(str(tmp_path)) == [path]
    assert not os.path.exists(path)


def test_a_folder_is_in_use_while_a_process_forked_by_its_maker_lives(tmp_path):
    # The maker forks a child (as the grader forks its workers), then dies on its own.
    body = "child = os.fork()\nif child == 0:\n    time.sleep(600)\nprint(child, flush=True)"
    maker, child = _maker(tmp_path, body)  # it prints the child's pid first
    path = maker.stdout.readline().strip()
    _end(maker)
    try:
        assert run_folders.sweep(str(tmp_path)) == []
        assert os.path.isdir(path)
    finally:
        os.kill(int(child), signal.SIGKILL)
    deadline = time.monotonic() + 10
    while run_folders.sweep(str(tmp_path)) != [path] and time.monotonic() < deadline:
        time.sleep(0.05)  # the child's files close as it ends
    assert not os.path.exists(path)


def test_a_folder_made_and_removed_in_this_process(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(run_folders.tempfile, "tempdir", None)  # read TMPDIR again
    with run_folders.folder("run") as path:
        assert os.path.dirname(path) == str(tmp_path)
        assert os.path.basename(path).startswith("hooklab-run-")
        assert run_folders.sweep(str(tmp_path)) == []
    assert not os.path.exists(path)
    assert path not in run_folders._held
    with pytest.raises(ValueError):
        run_folders.make("bench")


def _dead_folder(where, name: str, lock: bytes | None) -> str:
    path = where / name
    path.mkdir()
    if lock is not None:
        (path / run_folders.LOCK).write_bytes(lock)
    return str(path)


def test_only_this_users_run_folders_that_nothing_holds_are_swept(tmp_path):
    dead = _dead_folder(tmp_path, "hooklab-verdicts-abc", run_folders.READY)
    other_name = _dead_folder(tmp_path, "hooklab-bench-abc", run_folders.READY)
    no_lock = _dead_folder(tmp_path, "hooklab-run-nolock", None)
    being_made = _dead_folder(tmp_path, "hooklab-run-new", b"")  # created, not yet locked
    long_unlocked = _dead_folder(tmp_path, "hooklab-run-old", b"")
    old = time.time() - run_folders.UNLOCKED_FOR - 60
    os.utime(os.path.join(long_unlocked, run_folders.LOCK), (old, old))
    (tmp_path / "hooklab-run-file").write_text("not a folder")
    os.symlink(other_name, tmp_path / "hooklab-zygote-link")
    swept = run_folders.sweep(str(tmp_path))
    assert sorted(swept) == sorted([dead, long_unlocked])
    for kept in (other_name, no_lock, being_made):
        assert os.path.isdir(kept), kept
    assert (tmp_path / "hooklab-run-file").exists()
    assert os.path.islink(tmp_path / "hooklab-zygote-link")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs a second user: run as root")
def test_another_users_folder_is_left(tmp_path):
    theirs = _dead_folder(tmp_path, "hooklab-zygote-theirs", run_folders.READY)
    os.chown(theirs, 65534, 65534)
    assert run_folders.sweep(str(tmp_path)) == []
    assert os.path.isdir(theirs)


def test_a_missing_temporary_folder_sweeps_nothing(tmp_path):
    assert run_folders.sweep(str(tmp_path / "gone")) == []


def test_a_temporary_folder_too_long_for_the_kernels_sockets_puts_the_zygotes_in_tmp(
    tmp_path, monkeypatch
):
    deep = tmp_path / ("a-long-folder-name-" * 3) / ("and-another-one-" * 3)
    deep.mkdir(parents=True)
    monkeypatch.setattr(run_folders.tempfile, "tempdir", str(deep))
    with run_folders.folder("zygote") as zygote, run_folders.folder("verdicts") as verdicts:
        assert os.path.dirname(zygote) == "/tmp"
        assert os.path.dirname(verdicts) == str(deep)
        longest = os.path.join(zygote, "kernels", "v12345678", "verifier.sock")
        assert len(longest) <= run_folders.SOCKET_PATH_MAX
    monkeypatch.setattr(run_folders, "SHORT", str(tmp_path / "none"))
    with pytest.raises(RuntimeError, match="set TMPDIR to a shorter one"):
        run_folders.make("zygote")
