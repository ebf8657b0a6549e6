"""The one seam for speed-ups, which replace internals of third-party libraries: `install(role)`
puts in place, in this process, the speed-ups of that role (catalog.py) that are switched on
and verified on the installed versions. Outside those versions a speed-up is not installed and
the run says so in one line; grading is then stock, only slower. HOOKLAB_SPEEDUPS=off turns
them all off; HOOKLAB_SPEEDUPS=-name,-name leaves those out (to measure one)."""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import os
import platform
import sys

from autograder.grade.speedups.base import Missing
from autograder.grade.speedups.catalog import BY_NAME, SPEEDUPS, SpeedUp

ENV = "HOOKLAB_SPEEDUPS"
# command: the grading process; worker: a grading worker (nbclient); template: a kernel
# template, before its imports (kernels inherit what it installs); torch: a template of a
# course that uses torch, before torch is imported; figures: a template once matplotlib.pyplot
# is imported; kernel: a forked kernel, once its application is made.
ROLES = ("command", "worker", "template", "torch", "figures", "kernel")

_installed: set[str] = set()
_said: set[str] = set()  # lines this process (or the one it was forked from) has printed
_setting: str | None = None  # set by configure(); else read from the environment


def configure(setting: str | None, *, said: bool = False) -> None:
    """Use `setting` (a HOOKLAB_SPEEDUPS value) in this process instead of the environment's:
    for the kernel template, whose grader passes it on. With `said`, the lines about versions
    and the setting are not printed here: the grader has printed them."""
    global _setting
    _setting = setting
    if said:
        _said.update(("off", "versions"))


def setting() -> str:
    """This process's HOOKLAB_SPEEDUPS value ("on" unless set)."""
    value = _setting if _setting is not None else os.environ.get(ENV, "")
    return value.strip() or "on"


def switched_on(name: str) -> bool:
    """Whether the speed-up `name` is switched on by the setting (whatever the versions)."""
    value = setting()
    if value.lower() == "off":
        return False
    left_out = {item.strip().removeprefix("-") for item in value.split(",") if item.strip()}
    return name not in left_out


def wanted(name: str) -> bool:
    """Switched on and verified on the installed versions: what install() would install."""
    speedup = BY_NAME[name]
    return switched_on(name) and _applies(speedup) and not outside_verified(speedup)


def installed(name: str) -> bool:
    """Whether this process installed `name` (or inherited it from the process it was forked
    from)."""
    return name in _installed


def install(role: str) -> list[str]:
    """Install the speed-ups of `role` that are wanted here; returns the names installed now.
    Prints, once per run, "speed-ups off", or one line naming those left out for their
    versions (of every role), and a line for each whose internals are missing."""
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r} (one of {', '.join(ROLES)})")
    if setting().lower() == "off":
        _say_once("off", f"speed-ups off ({ENV}=off)")
        return []
    _check_setting()
    _say_versions_once()
    done = []
    for speedup in SPEEDUPS:
        if role not in speedup.installs or f"{speedup.name}/{role}" in _installed:
            continue
        if not wanted(speedup.name):
            continue
        module, _, function = speedup.installs[role].partition(":")
        try:
            getattr(importlib.import_module(f"{__name__}.{module}"), function)()
        except Missing as missing:
            _say_once(
                f"missing {speedup.name}",
                f"speed-up {speedup.name} not installed: {missing} (grading is correct, "
                "only slower)",
            )
            continue
        _installed.update((speedup.name, f"{speedup.name}/{role}"))
        done.append(speedup.name)
    return done


def outside_verified(speedup: SpeedUp) -> str:
    """Why the installed versions are not those `speedup` was verified on ("" if they are)."""
    from packaging.specifiers import SpecifierSet  # not on the command's way to the template
    from packaging.version import Version

    reasons = []
    for distribution, versions in speedup.verified.items():
        found = _version(distribution)
        if found is None:
            reasons.append(f"{distribution} is not installed")
        elif Version(found) not in SpecifierSet(versions):
            reasons.append(f"{distribution} {found} not in {versions}")
    return "; ".join(reasons)


def _applies(speedup: SpeedUp) -> bool:
    return all(_version(distribution) is not None for distribution in speedup.only_with)


@functools.cache
def _version(distribution: str) -> str | None:
    if distribution == "python":
        return platform.python_version()
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _check_setting() -> None:
    value = setting()
    if value.lower() == "on":
        return
    unknown = [
        item.strip()
        for item in value.split(",")
        if item.strip() and item.strip().removeprefix("-") not in BY_NAME
    ]
    if unknown:
        _say_once(
            "setting", f"{ENV}={value}: no speed-up named {', '.join(unknown)} (see catalog.py)"
        )


def _say_versions_once() -> None:
    if "versions" in _said:
        return
    left_out = [
        f"{speedup.name} ({why})"
        for speedup in SPEEDUPS
        if switched_on(speedup.name) and _applies(speedup) and (why := outside_verified(speedup))
    ]
    _said.add("versions")
    if left_out:
        _say(
            "speed-ups not installed, not verified on these versions (grading is correct, only "
            f"slower): {', '.join(left_out)}"
        )


def _say_once(key: str, line: str) -> None:
    if key not in _said:
        _said.add(key)
        _say(line)


def _say(line: str) -> None:
    print(f"hooklab: {line}", file=sys.stderr, flush=True)
