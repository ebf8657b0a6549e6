"""Resource limits of every kernel, set in the zygote's forked child before it becomes a kernel,
and the tie that ends a forked process with its parent."""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import signal
from dataclasses import asdict, dataclass

MIB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """Hard and soft limits (setrlimit) for one kernel; None leaves a limit as inherited.

    `processes` (RLIMIT_NPROC) counts processes and threads per user and user namespace, and
    Linux does not apply it to root in the host's user namespace. In the sandbox each kernel has
    a user namespace of its own, so it counts that kernel's processes only; without the sandbox
    it counts every process of the kernel's user, and is not set at all for root.
    `wall_seconds` is enforced by the zygote, which kills a kernel still running after it.
    """

    address_space_mb: int | None = 2048  # RLIMIT_AS: a memory bomb gets MemoryError
    cpu_seconds: int | None = 120  # RLIMIT_CPU: SIGXCPU, then SIGKILL, kills the kernel
    file_size_mb: int | None = 64  # RLIMIT_FSIZE: a larger write fails with EFBIG
    core_dumps: bool = False  # RLIMIT_CORE 0: a crashing kernel writes no core file
    processes: int | None = 256  # RLIMIT_NPROC: a fork bomb fails (see above)
    wall_seconds: int | None = 600  # the whole notebook, even if a cell ignores interrupts

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict | None) -> Limits:
        return cls(**(values or {}))

    def rlimits(self, count_processes: bool | None = None) -> dict[int, int]:
        """{resource.RLIMIT_*: value} for what this object limits; RLIMIT_NPROC only where it
        counts (`count_processes`, by default: when not root)."""
        if count_processes is None:
            count_processes = os.geteuid() != 0
        chosen: dict[int, int | None] = {
            resource.RLIMIT_AS: self.address_space_mb and self.address_space_mb * MIB,
            resource.RLIMIT_CPU: self.cpu_seconds,
            resource.RLIMIT_FSIZE: self.file_size_mb and self.file_size_mb * MIB,
            resource.RLIMIT_CORE: None if self.core_dumps else 0,
            resource.RLIMIT_NPROC: self.processes if count_processes else None,
        }
        return {key: value for key, value in chosen.items() if value is not None}

    def apply(self, count_processes: bool | None = None) -> None:
        """Set the limits on this process (and so on everything it starts)."""
        for key, soft in self.rlimits(count_processes).items():
            hard = resource.getrlimit(key)[1]
            # CPU: SIGXCPU at the soft limit (the kernel dies of it), SIGKILL 5 s later.
            ceiling = soft + 5 if key == resource.RLIMIT_CPU else soft
            if hard != resource.RLIM_INFINITY:  # only root may raise a hard limit
                soft, ceiling = min(soft, hard), min(ceiling, hard)
            resource.setrlimit(key, (soft, ceiling))


PR_SET_PDEATHSIG = 1  # linux/prctl.h: the signal a process gets when its parent ends


def end_with_parent(parent: int | None = None) -> None:
    """Have Linux SIGKILL this process when its parent ends; end now if it has already
    (`parent`: its pid as the parent knew it, by default the current parent's).

    Without it, what a grader killed on its own (SIGKILL, the OOM killer) leaves behind goes on
    waiting for work that never comes, and holds its memory, for good. Linux sends the signal
    when the *thread* that forked this process ends, so fork from one that outlives it."""
    parent = os.getppid() if parent is None else parent
    with contextlib.suppress(OSError, AttributeError):  # not Linux: no prctl
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)
