"""The grading sandbox, seen from outside: its settings, whether bubblewrap works on this
machine, the bwrap command that runs the zygote inside it, and the environment kernels get.

The zygote runs in bubblewrap with a read-only view made of the system directories, the Python
environment and the autograder package only (no course, no home, no gradebook), its own /tmp,
no network and its own process, IPC and host-name namespaces. Each kernel it forks then gets
namespaces of its own on top, a network one with only its own loopback (see isolation.py).
Where bubblewrap is missing or fails, kernels run with resource limits only, and
`Zygote.weaker` says so in every result.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import autograder

SANDBOX_ENV = "HOOKLAB_SANDBOX"  # "off" forces the weaker mode, "bwrap" requires the sandbox
NOBODY = 65534
FRESH = ("/dev", "/proc", "/tmp")  # made anew in the sandbox, not the host's
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
# Variables a kernel may inherit from the grader; everything else (tokens, database URLs, paths
# into the course) stays outside.
KERNEL_ENV = ("PATH", "LANG", "LANGUAGE", "TERM", "TZ", "PYTHONHASHSEED", "PYTHONUNBUFFERED")
WEAKER = (
    "NOT SANDBOXED ({why}): kernels run with resource limits only; a submission can read the "
    "course files, use the network and reach other kernels (see docs/threat-model.md)"
)


@dataclass(frozen=True)
class SandboxSettings:
    """How kernels are isolated; `c.WarmKernelManager.sandbox = {...}` in nbgrader_config.py."""

    mode: str = "auto"  # auto: bubblewrap if it works here, else limits only (loudly); bwrap; off
    scratch_mb: int = 256  # each kernel's private /tmp (a tmpfs: it counts as memory)
    kernel_uid: int = NOBODY  # the user kernels run as when the grader is root
    expose: tuple[str, ...] = ()  # more host folders kernels may read (read-only)

    @classmethod
    def from_dict(cls, values: dict | None) -> SandboxSettings:
        values = dict(values or {})
        if os.environ.get(SANDBOX_ENV):
            values["mode"] = os.environ[SANDBOX_ENV]
        if values.get("mode", "auto") not in ("auto", "bwrap", "off"):
            raise ValueError(f"sandbox mode must be auto, bwrap or off, not {values['mode']!r}")
        values["expose"] = tuple(os.path.normpath(p) for p in values.get("expose", ()))
        # Shown after the fresh /dev, /proc and /tmp (and in each kernel over its own /tmp), such
        # a folder would show the host's instead: other kernels' folders, read-only scratch.
        for folder in values["expose"]:
            if any(os.path.commonpath([folder, fresh]) == folder for fresh in FRESH):
                raise ValueError(f"the sandbox cannot expose {folder}: it holds {', '.join(FRESH)}")
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in known})

    def to_dict(self) -> dict:
        return asdict(self)


def package_folder() -> str:
    return str(Path(autograder.__file__).resolve().parent)


def readable_paths() -> list[str]:
    """Host folders the sandbox shows (read-only) besides the system: the Python environment
    and the autograder package, and nothing else of the folder that holds them."""
    package = package_folder()
    python = {sys.prefix, sys.base_prefix, sys.exec_prefix, str(Path(sys.executable).parent)}
    python.add(str(Path(os.path.realpath(sys.executable)).parent.parent))
    chosen = sorted(p for p in python | {package} if os.path.isdir(p) and p not in SYSTEM_DIRS)
    # Inside a folder already shown: nothing to add.
    shown = [*SYSTEM_DIRS, *chosen]
    return [p for p in chosen if not any(p.startswith(d + "/") for d in shown)]


def shown_paths(settings: SandboxSettings) -> list[str]:
    """Every host folder bound into the sandbox besides the system, a folder before the ones
    inside it (bound later, on top of it)."""
    return sorted({*readable_paths(), *settings.expose})


def import_root() -> str | None:
    """The folder the zygote must find the autograder package in (on its PYTHONPATH), or None
    where any interpreter of this environment finds it anyway. The grader may have imported it
    from a checkout through PYTHONPATH or its working folder, neither of which the zygote gets:
    it would import another copy, or none (only this package folder is shown)."""
    root = str(Path(package_folder()).parent)
    # Putting site-packages on PYTHONPATH would put it before the standard library.
    site = {os.path.realpath(sysconfig.get_paths()[key]) for key in ("purelib", "platlib")}
    return None if root in site else root


def bwrap_command(run_dir: str, settings: SandboxSettings) -> list[str] | None:
    """The bwrap arguments that run a command in the sandbox, or None without bubblewrap.

    As root, bwrap runs privileged (no user namespace of its own) and keeps for the zygote the
    capabilities it needs to give each kernel namespaces, then a non-root user, and to signal it;
    otherwise it runs in a user namespace where the zygote is root, with CAP_SETFCAP too: since
    Linux 5.12 only a process that could set file capabilities may map root (the zygote's uid)
    into the user namespace it makes, as each kernel does.
    """
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return None
    command = [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net"]
    command += ["--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    # CAP_SYS_CHROOT with CAP_SYS_ADMIN: to enter a kernel's mount namespace and seal its
    # folder once its sockets exist (isolation.seal_folder_of); kernels drop every capability.
    capabilities = ["CAP_SYS_ADMIN", "CAP_SETUID", "CAP_SETGID", "CAP_KILL", "CAP_SYS_CHROOT"]
    if os.geteuid() != 0:
        command += ["--unshare-user", "--uid", "0", "--gid", "0"]
        capabilities.append("CAP_SETFCAP")
    command += ["--cap-drop", "ALL"]
    for capability in capabilities:
        command += ["--cap-add", capability]
    command += ["--tmpfs", "/"]
    for folder in SYSTEM_DIRS:
        if os.path.islink(folder):
            command += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            command += ["--ro-bind", folder, folder]
    # bwrap mounts in the order given: the fresh /dev, /proc and /tmp come before the folders
    # shown, which may lie under them (a checkout and its .venv in /tmp) and must stay visible.
    command += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    shown = shown_paths(settings)
    # bwrap would create the folders above them for root only (0700); kernels are not root.
    parents = {str(parent) for folder in shown for parent in Path(folder).parents}
    for parent in sorted(parents - {"/", *SYSTEM_DIRS, *FRESH}):
        command += ["--perms", "0755", "--dir", parent]
    for folder in shown:
        command += ["--ro-bind", folder, folder]
    command += ["--bind", run_dir, run_dir, "--remount-ro", "/", "--chdir", "/tmp"]
    return command


def kernel_environment(env: dict[str, str], extra: dict[str, str]) -> dict[str, str]:
    """The environment of a sandboxed kernel: a few harmless variables of the grader's, the
    single-thread settings, `extra`, and its private /tmp as home and temporary folder."""
    kept = {k: v for k, v in env.items() if k in KERNEL_ENV or k.startswith(("LC_", "JPY_"))}
    kept.update({k: v for k, v in env.items() if k.endswith("_NUM_THREADS")})
    return {**kept, **extra, "HOME": "/tmp", "TMPDIR": "/tmp", "MPLCONFIGDIR": "/tmp/.mpl"}


def template_matplotlib_folder(run_dir: str, env: dict[str, str]) -> str:
    """A matplotlib folder for the sandboxed template, in the run folder, holding a copy of the
    grader's font list when it has one: with a folder of its own and no list, matplotlib would
    search the system's fonts again (fc-list and a tenth of a second) in every run."""
    folder = os.path.join(run_dir, "matplotlib")
    os.makedirs(folder, exist_ok=True)
    # matplotlib.get_cachedir()'s rule, without importing matplotlib on the command's start-up.
    home = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    grader = Path(env.get("MPLCONFIGDIR") or os.path.join(home, "matplotlib"))
    for font_list in grader.glob("fontlist-v*.json"):
        shutil.copyfile(font_list, os.path.join(folder, font_list.name))
    return folder
