"""Are the dependencies what docs/dependencies.md says: every import declared, the student
install free of the grading stack, a lock that fits pyproject.toml and holds no CUDA package?"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
# What a student notebook imports from the package (its set-up, hint, progress and data cells).
STUDENT_IMPORTS = ["autograder", "autograder.exercises", "autograder.widgets", "autograder.digits"]


def requirements(*groups: str) -> list[Requirement]:
    listed = []
    for group in groups:
        listed += (
            PROJECT["dependencies"] if group == "base" else PROJECT["optional-dependencies"][group]
        )
    return [r for r in map(Requirement, listed) if canonicalize_name(r.name) != PROJECT["name"]]


def names(*groups: str) -> set[str]:
    return {canonicalize_name(r.name) for r in requirements(*groups)}


def closure(roots: set[str]) -> set[str]:
    """The distributions `roots` need, transitively, as installed here."""
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = canonicalize_name(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.distribution(name).requires or []
        except metadata.PackageNotFoundError:
            continue
        for line in requires:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return seen


def imported_distributions() -> dict[str, set[str]]:
    """{distribution: files of autograder/ that import it}, for every third-party import."""
    owners = metadata.packages_distributions()
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "autograder").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top in sys.stdlib_module_names or top in ("autograder", "__future__"):
                    continue
                for owner in owners.get(top, [top]):
                    found.setdefault(canonicalize_name(owner), set()).add(path.name)
    return found


def test_every_distribution_the_package_imports_is_declared():
    declared = names("base", "grader")
    undeclared = {d: files for d, files in imported_distributions().items() if d not in declared}
    assert not undeclared, undeclared


def test_a_student_notebooks_imports_load_nothing_of_the_grading_stack():
    grading_only = closure(names("grader")) - closure(names("base"))
    assert {"nbgrader", "nbformat", "sqlalchemy", "pyzmq"} <= grading_only  # the sets are right
    modules = {
        top
        for top, owners in metadata.packages_distributions().items()
        if {canonicalize_name(o) for o in owners} & grading_only
    }
    probe = (
        f"import importlib, json, sys\nfor m in {STUDENT_IMPORTS!r}: importlib.import_module(m)\n"
    )
    probe += "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    loaded = json.loads(
        subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, check=True
        ).stdout
    )
    assert not modules & set(loaded), (
        f"a student notebook's imports load {sorted(modules & set(loaded))}"
    )


def locked() -> dict[str, Version]:
    text = (ROOT / "requirements.lock").read_text(encoding="utf-8")
    pins = re.findall(r"^([A-Za-z0-9_.-]+)==([^\s;]+)", text, re.MULTILINE)
    return {canonicalize_name(name): Version(version) for name, version in pins}


def test_the_lock_fits_every_range_of_pyproject_and_names_no_cuda_package():
    pins = locked()
    assert not [n for n in pins if n.startswith(("nvidia-", "cuda-")) or n in ("triton", "torch")]
    assert PROJECT["name"] not in pins
    for requirement in requirements("base", "grader", "dev"):
        name = canonicalize_name(requirement.name)
        if name == "torch":
            continue
        assert name in pins, f"{requirement} is not in requirements.lock"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"requirements.lock has {name} {pins[name]}, pyproject.toml wants {requirement}"
        )


def test_the_torch_installed_first_is_one_release_everywhere_and_admitted_by_pyproject():
    named = {}
    for path in (
        "scripts/setup.sh",
        "scripts/lock.sh",
        "environment.yml",
        "tests/course/test_selfstudy.py",
    ):
        text = (ROOT / path).read_text(encoding="utf-8")
        named[path] = {a or b for a, b in re.findall(r"torch==(\d[\w.]*)|TORCH=(\d[\w.]*)", text)}
    releases = set().union(*named.values())
    assert len(releases) == 1 and all(named.values()), named
    (torch,) = [r for r in requirements("base") if r.name == "torch"]
    assert torch.specifier.contains(releases.pop())
