"""The cost of one verifier child: a plain fork and end of a torch-loaded process, against a
fork into namespaces of its own (autograder/grade/sandbox/apart.py), per fork, in ms.

    .venv/bin/python scripts/fork_cost.py [forks]

Needs a system that grants user namespaces (as the verifier does); docs/performance.md.
"""

from __future__ import annotations

import os
import resource
import sys
import time

import matplotlib.pyplot  # noqa: F401  (a host holds what a kernel template holds)
import torch  # noqa: F401

from autograder.grade.sandbox import apart


def per_fork(fork, forks: int) -> str:
    def children_cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    cpu, child, wall = time.process_time(), children_cpu(), time.perf_counter()
    for _ in range(forks):
        pid = fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    cpu, child = time.process_time() - cpu, children_cpu() - child
    wall = time.perf_counter() - wall
    return (
        f"host {1000 * cpu / forks:.2f} ms, child {1000 * child / forks:.2f} ms, "
        f"wall {1000 * wall / forks:.2f} ms"
    )


def main() -> int:
    forks = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    print(f"plain fork:      {per_fork(os.fork, forks)}", flush=True)
    host = os.fork()  # own_namespaces wants a process of one thread, and never returns to it
    if host != 0:
        return os.waitstatus_to_exitcode(os.waitpid(host, 0)[1])
    if not apart.own_namespaces():
        print("this system refuses a user namespace: no fork apart to measure")
        os._exit(0)
    print(f"fork apart:      {per_fork(apart.fork_apart, forks)}", flush=True)
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
