"""The `hooklab` command: build the student notebooks, grade the sample class, print the table."""

from __future__ import annotations

import argparse
import atexit
import os
import sys
import threading
import time
import tomllib
from pathlib import Path
from typing import NoReturn

from autograder import course
from autograder.grade import collector
from autograder.grade.problems import CannotGrade
from autograder.grade.settings import DEFAULT_JOBS, start_kernel_template, working_course_root
from autograder.i18n import LANGUAGES


def exercise_order(assignment: str, root: Path) -> list[str]:
    """The exercises of an assignment, in notebook order: the grade ids of its solution cells."""
    from autograder import notebooks

    nb = notebooks.read(course.notebook_path("solutions", assignment, root))
    return [
        notebooks.grade_id(cell)
        for cell in nb.cells
        if cell.metadata.get("nbgrader", {}).get("solution")
        and any(
            notebooks.grade_id(other) == f"{notebooks.grade_id(cell)}_test" for other in nb.cells
        )
    ]


def submit_samples(root: Path) -> list[str]:
    """Submit the sample class of samples/class.toml: each student hands in, per assignment, a
    named submission's answer file filled into the student notebook."""
    from autograder import notebooks

    roster = tomllib.loads((root / "samples" / "class.toml").read_text(encoding="utf-8"))
    for student, handed_in in roster.items():
        for assignment in course.assignments(root):
            name = handed_in.get(assignment)
            answers = root / "tests" / "submissions" / assignment / f"{name}.py"
            text = notebooks.read_answers(answers) if name else ""
            nb = course.answered_notebook(text, assignment, root)
            course.submit(nb, student, assignment, root)
    return sorted(roster)


def demo(args: argparse.Namespace) -> int:
    root = args.root
    start = time.perf_counter()
    if not args.stock:
        start_kernel_template(root)  # it imports torch while the notebooks are built
    print("Building the student notebooks (nbgrader generate_assignment) ...", flush=True)
    course.build(root=root)
    students = submit_samples(root)
    names = course.assignments(root)
    print(f"Submitted {len(students)} sample students x {len(names)} assignments.", flush=True)
    if args.stock:
        for assignment in names:
            print(f"Grading {assignment} (nbgrader autograde) ...", flush=True)
            course.autograde(assignment, root=root)
    else:
        results = _engine_autograde()(root, names, force=True, jobs=DEFAULT_JOBS)
        if any(r.status == "failed" for r in results):
            return 1
    show_results(root)
    print(f"Gradebook: {root / 'gradebook.db'}  ({time.perf_counter() - start:.0f} s)")
    return 0


def _engine_autograde():
    """The engine's autograde, imported (torch and nbgrader with it) with the collector paused,
    once this process's speed-ups are installed (some must come before those imports)."""
    from autograder.grade import speedups

    with collector.paused_for_imports():
        speedups.install("command")
        from autograder.grade.run import autograde

    return autograde


def show_results(root: Path) -> None:
    """Print the score tables of the course's gradebook; write reports/grades.csv, flags.csv and
    the class report (in reports/: `nbgrader export` writes its own grades.csv in the root)."""
    from autograder import reports  # matplotlib and nbgrader: not before grading needs them

    orders = {a: exercise_order(a, root) for a in course.assignments(root)}
    db = course.gradebook_url(root)
    reports.print_tables(db, orders)
    csv_path = reports.write_grades_csv(db, orders, root / "reports" / "grades.csv")
    flags_path = reports.write_flags_csv(root, list(orders), root / "reports" / "flags.csv")
    html_path = reports.write_class_report(db, root, orders, root / "reports" / "class.html")
    print(f"Grades: {csv_path}\nFlags: {flags_path}\nClass report: {html_path}")


def build(args: argparse.Namespace) -> int:
    from autograder import editions  # Babel: only the build needs it

    course.build(args.assignments or None, root=args.root)
    print("notebooks/ regenerated from solutions/")
    for language in editions.LANGUAGES:
        if not (Path(args.root) / "translations" / language).is_dir():
            continue  # a course (or a copy of one) without that edition
        editions.build(language, args.assignments or None, root=args.root)
        print(f"{language}/ regenerated from solutions/ and translations/{language}/")
    return 0


def autograde(argv: list[str], root: Path | None) -> int:
    """`hooklab [--root COURSE] autograde <nbgrader autograde's arguments>`: the course, the
    options and the config files are nbgrader's (grade/app.py); without --root the course is
    the one nbgrader finds from the working folder."""
    if root is not None and not root.is_dir():
        raise CannotGrade(f"no course folder at {root}")
    started_with = None
    if not any(a == "--scheduler" or a.startswith("--scheduler=") for a in argv):
        # It imports torch on one core while this process imports the engine (which does not
        # need torch) on the other; with the sandbox settings of the course as guessed here.
        started_with = start_kernel_template(root or working_course_root())
    engine = _engine_autograde()
    from autograder.grade.app import parse
    from autograder.grade.kernels.template_client import Zygote
    from autograder.grade.settings import sandbox_settings

    run = parse(argv, root).course()
    Zygote.settle(started_with, sandbox_settings(run.config))
    results = engine(
        run.root,
        run.assignments,
        students=run.students,
        force=run.force,
        jobs=run.jobs,
        scheduler=run.scheduler,
        summary_json=run.summary_json,
        config=run.config,
    )
    if not results:  # as stock nbgrader: a run that matched no submission is an error
        print("hooklab: no submissions to grade", file=sys.stderr)
        return 1
    failed = sum(r.status == "failed" for r in results)
    if not run.db_given and course.assignments(run.root):  # a Hooklab course: its tables too
        show_results(run.root)
    return 1 if failed else 0


def table(args: argparse.Namespace) -> int:
    show_results(args.root or working_course_root())
    return 0


def report(args: argparse.Namespace) -> int:
    """Write the class report (reports/class.html) in the language asked for."""
    from autograder import reports
    from autograder.i18n import speaking

    root = args.root or working_course_root()
    orders = {a: exercise_order(a, root) for a in course.assignments(root)}
    path = args.output or root / "reports" / "class.html"
    with speaking(args.lang):
        reports.write_class_report(course.gradebook_url(root), root, orders, path)
    print(f"Class report: {path}")
    return 0


def _split_autograde(argv: list[str]) -> tuple[Path | None, list[str]] | None:
    """(--root, the rest) when the verb is `autograde`, whose arguments are nbgrader's to parse
    (grade/app.py); None for the other verbs."""
    root, index = None, 0
    while index < len(argv) and argv[index].startswith("--root"):
        if argv[index] == "--root" and index + 1 < len(argv):
            root, index = Path(argv[index + 1]), index + 2
        elif argv[index].startswith("--root="):
            root, index = Path(argv[index].split("=", 1)[1]), index + 1
        else:
            return None
    if index < len(argv) and argv[index] == "autograde":
        return root, argv[index + 1 :]
    return None


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="hooklab", description=__doc__)
    parser.add_argument(
        "--root",
        type=Path,
        help="the course folder (default: for demo and build this checkout, for the others the "
        "course nbgrader finds from the working folder)",
    )
    verbs = parser.add_subparsers(dest="verb", required=True)
    demo_parser = verbs.add_parser(
        "demo", help="build, grade the bundled sample class, print the table"
    )
    demo_parser.add_argument(
        "--stock", action="store_true", help="grade with stock `nbgrader autograde`"
    )
    build_parser = verbs.add_parser(
        "build", help="regenerate notebooks/ from solutions/, and each translated edition (ko/)"
    )
    build_parser.add_argument("assignments", nargs="*")
    verbs.add_parser("table", help="print the score table; write reports/grades.csv and the report")
    report_parser = verbs.add_parser("report", help="write the class report, in a language")
    report_parser.add_argument("--lang", choices=LANGUAGES, default="en", help="its language")
    report_parser.add_argument(
        "--output", type=Path, help="where to write it (default: reports/class.html)"
    )
    verbs.add_parser(
        "autograde",
        help="a faster drop-in for `nbgrader autograde`: its options and config, warm kernels, "
        "in parallel (-j N workers, --scheduler ADDRESS, --summary-json FILE; "
        "`hooklab autograde --help-all` lists them all)",
    )
    course.use_environment_bin()
    try:
        grading = _split_autograde(argv)
        if grading is not None:
            return autograde(grading[1], grading[0])
        args = parser.parse_args(argv)
        if args.verb == "autograde":  # e.g. after --root=... given twice: say how it goes
            parser.error("give --root once, before autograde")
        if args.verb in ("demo", "build"):
            args.root = args.root or course.ROOT
        handlers = {"demo": demo, "build": build, "table": table, "report": report}
        return handlers[args.verb](args)
    except RuntimeError as error:  # editions.TranslationError too: it lists what is stale
        print(f"hooklab: {error}", file=sys.stderr)
        return 1
    except PermissionError as error:  # a read-only course folder, most often
        print(f"hooklab: cannot write {error.filename}: {error.strerror}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(
            "hooklab: interrupted; the submissions graded so far are saved; run it again "
            "for the rest",
            file=sys.stderr,
        )
        return 130


def exit_without_teardown(code: int) -> NoReturn:
    """End the command with exit status `code` as `sys.exit` would, except for the interpreter's
    teardown. The atexit handlers run (they stop the kernel template and remove its folder) and
    the output is flushed; then the process ends without freeing the engine's objects (torch's
    among them) one by one, which the instructor would wait for (~0.1 s after grading).

    With another thread still running, Python's own exit (which waits for it) is used."""
    if any(not t.daemon and t is not threading.main_thread() for t in threading.enumerate()):
        sys.exit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: Python's own exit says 120
            code = code or 120
    os._exit(code)


def run() -> NoReturn:
    """The `hooklab` and `python -m autograder` entry point."""
    exit_without_teardown(main())


if __name__ == "__main__":
    run()
