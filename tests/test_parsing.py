"""Two threads parsing at once (the grading threads of one process) both get their trees: a
collection in the middle of one parse lets the other run, which, without the lock, made
CPython 3.11 fail one of them with SystemError (autograder/parsing.py)."""

from __future__ import annotations

import gc
import threading
import time
from pathlib import Path

from autograder import parsing

SOURCE = (Path(parsing.__file__).parent / "grade" / "worker" / "scan.py").read_text()


def test_two_threads_parse_at_once_without_a_system_error():
    failures: list[str] = []

    def switch_threads(phase: str, info: dict) -> None:
        if phase == "start":
            time.sleep(0)  # the other thread runs in the middle of this one's collection

    def parse_often() -> None:
        for _ in range(30):
            try:
                parsing.parse(SOURCE)
            except SystemError as error:
                failures.append(str(error))
                return

    threshold = gc.get_threshold()
    gc.callbacks.append(switch_threads)
    gc.set_threshold(50)
    try:
        threads = [threading.Thread(target=parse_often) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        gc.set_threshold(*threshold)
        gc.callbacks.remove(switch_threads)
    assert failures == []
