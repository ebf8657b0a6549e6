"""The verdicts the grading workers have already got from verifiers, by the exact code judged.

An exercise's verdict depends only on what its verifier child runs: the notebook's shared
locked cells, the exercise's own locked cells, the student's answer cell, and which checks run
(visible, hidden) in which language with which time-out. Two students who hand in the same
answer cell (short answers often coincide, and every untouched stub does) get the verdict that
code earned, so a worker asks a verifier only for the exercises no worker has judged yet in this
run. The seed that drew the fresh cases is left out of the key on purpose: every seed is one the
student's code could not know, and the named submissions' verdicts are tested to hold for any
seed (tests/exercises/test_submissions.py).

Only the local workers of one grading run share verdicts: they are forked inside
`shared_folder`, which makes a folder of the run's own, and keep what they read from it in
memory too. Elsewhere (a test's in-process grading, Dask workers that outlive a run) nothing is
kept. Kernels never see that
folder when sandboxed (their /tmp is a tmpfs of their own); each entry carries an HMAC under a
key that exists only in the grader's and its workers' memory, so an entry that anything else
wrote or changed is ignored. Verdicts that come from the grader's circumstances rather than the
code (a child that timed out or was killed) are not kept.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

from autograder.grade import run_folders
from autograder.grade.verifier.protocol import Verdict

MAX_KEPT = 20_000  # exercises in memory; a batch far larger than any class starts afresh past it

_kept: dict[str, dict[bool, Verdict]] = {}
_folder: Path | None = None
_signing_key = secrets.token_bytes(32)  # inherited by forked workers; never written anywhere


def key(shared: list[str], exercise: dict, language: str, timeout: float) -> str:
    """What an exercise's verdicts depend on, as a digest."""
    content = {
        "shared": shared,
        "grade_id": exercise["grade_id"],
        "setup": exercise["setup"],
        "answer": exercise["answer"],
        "run": exercise["run"],
        "checks": sorted(bool(hidden) for hidden, _seed in exercise["checks"]),
        "language": language,
        "timeout": timeout,
    }
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()


@contextlib.contextmanager
def shared_folder() -> Iterator[Path]:
    """A folder, removed afterwards, where the workers forked inside this block share verdicts."""
    global _folder
    with run_folders.folder("verdicts") as folder:
        _folder = Path(folder)
        try:
            yield _folder
        finally:
            _folder = None
            _kept.clear()


def known(digest: str) -> dict[bool, Verdict] | None:
    """The verdicts judged before in this run for code with this digest, or None."""
    if _folder is None:
        return None
    if digest in _kept:
        return _kept[digest]
    try:
        entry = json.loads((_folder / f"{digest}.json").read_text())
        body = entry["verdicts"]
        if not hmac.compare_digest(entry["mac"], _mac(digest, body)):
            return None
        verdicts = {bool(int(hidden)): Verdict(**v) for hidden, v in json.loads(body).items()}
    except (OSError, ValueError, TypeError, KeyError):
        return None
    _remember(digest, verdicts)
    return verdicts


def keep(digest: str, verdicts: dict[bool, Verdict]) -> None:
    """Remember these verdicts for code with this digest, unless one of them is transient."""
    if _folder is None or any(verdict.transient for verdict in verdicts.values()):
        return
    _remember(digest, verdicts)
    body = json.dumps({str(int(hidden)): asdict(v) for hidden, v in verdicts.items()})
    entry = json.dumps({"verdicts": body, "mac": _mac(digest, body)})
    with contextlib.suppress(OSError):  # a full disk costs a verifier run, not a grade
        temporary = _folder / f".{digest}.{os.getpid()}"
        temporary.write_text(entry)
        os.replace(temporary, _folder / f"{digest}.json")


def _remember(digest: str, verdicts: dict[bool, Verdict]) -> None:
    if len(_kept) >= MAX_KEPT:
        _kept.clear()
    _kept[digest] = dict(verdicts)


def _mac(digest: str, body: str) -> str:
    return hmac.new(_signing_key, f"{digest}\n{body}".encode(), hashlib.sha256).hexdigest()
