"""Print a pip constraints file that holds every dependency of Hooklab (and of the extras named)
at the lowest version pyproject.toml admits (`name==floor`; the highest floor where a name is
listed twice). scripts/check_floors.sh installs with it, so that the floors are versions CI has run.

    python scripts/floors.py             the student install's floors
    python scripts/floors.py grader      ... and the grading stack's
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]


def requirements(extras: list[str]) -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    listed = list(project["dependencies"])
    for extra in extras:
        listed += project["optional-dependencies"][extra]
    return [r for r in map(Requirement, listed) if canonicalize_name(r.name) != project["name"]]


def floors(extras: list[str]) -> dict[str, Version]:
    """{name: lowest admitted version}, for every requirement with a `>=` or `==` bound."""
    lowest: dict[str, Version] = {}
    for requirement in requirements(extras):
        bounds = [Version(s.version) for s in requirement.specifier if s.operator in (">=", "==")]
        if not bounds:
            raise SystemExit(f"{requirement}: no floor (every dependency needs one)")
        name = canonicalize_name(requirement.name)
        lowest[name] = max([*bounds, lowest.get(name, bounds[0])])
    return lowest


if __name__ == "__main__":
    for name, version in sorted(floors(sys.argv[1:]).items()):
        print(f"{name}=={version}")
