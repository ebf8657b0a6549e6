"""The instructor's class report: one self-contained HTML page of plots and common mistakes.

Its text is in the current language (autograder/i18n.py; `hooklab report --lang ko`), and its
plots are drawn with a font that has the language's letters (fonts.py)."""

from __future__ import annotations

import base64
import io
import statistics
from dataclasses import dataclass
from html import escape
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, PercentFormatter

from autograder.grade.grader.notes import SubmissionNotes, read_notes
from autograder.gradebook import by_exercise, scores
from autograder.i18n import N_, _, language
from autograder.reports import fonts
from autograder.reports.diagnostics import Diagnostic, read_failures, top_diagnostics
from autograder.reports.grades_csv import all_students, number

TOP = 3  # diagnostics shown per exercise
STATUSES = (N_("graded"), N_("failed"))  # a submission's, shown translated
NUMBERS_NOTE = N_(
    "Numbers and tensor values are shown as # and tensor(…), so the same mistake with different "
    "random values counts once; each student counts once."
)
FLAGS_NOTE = N_(
    "What the grader noted about each submission: tampering suspected, a kernel that died, cells "
    "that timed out, files it refused, submissions it could not grade (also in flags.csv)."
)
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 2em; }
table { border-collapse: collapse; margin: .5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: .25em .6em; text-align: left; vertical-align: top; }
td.count, td.rate { text-align: right; }
code { white-space: pre-wrap; }
figure { margin: 1em 0; }
.note { color: #666; }
"""


@dataclass
class AssignmentStats:
    """What the report shows of one assignment; only students who submitted it count."""

    name: str
    exercises: list[str]
    totals: dict[str, float]  # student -> total points
    max_total: float
    passed: dict[str, int]  # exercise -> students with full marks on it
    diagnostics: dict[str, list[Diagnostic]]
    unreadable: list[str]
    noted: list[SubmissionNotes]  # submissions with flags or failure reasons


def assignment_stats(db_url: str, root: Path, name: str, exercises: list[str]) -> AssignmentStats:
    per_student = scores(db_url, name)
    totals = {student: sum(c.score for c in cells) for student, cells in per_student.items()}
    max_total = max((sum(c.max_score for c in cells) for cells in per_student.values()), default=0)
    passed = dict.fromkeys(exercises, 0)
    for cells in per_student.values():
        for exercise, (score, max_score) in by_exercise(cells).items():
            if exercise in passed and max_score > 0 and score >= max_score - 1e-9:
                passed[exercise] += 1
    failures, unreadable = read_failures(root, name)
    diagnostics = top_diagnostics(failures, TOP)
    noted = [r for r in read_notes(root, name) if r.notes or r.status == "failed"]
    return AssignmentStats(
        name, exercises, totals, max_total, passed, diagnostics, unreadable, noted
    )


def png(figure: Figure) -> str:
    """The figure as an <img> tag holding a base64 PNG, rendered with the Agg backend."""
    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    return base64.b64encode(buffer.getvalue()).decode("ascii")


@fonts.in_language_of(language)
def histogram(stats: AssignmentStats) -> str:
    figure = Figure(figsize=(6.4, 3.2), layout="constrained")
    axes = figure.add_subplot()
    values = list(stats.totals.values())
    top = stats.max_total or max(values, default=1.0) or 1.0
    whole = float(top).is_integer() and all(float(v).is_integer() for v in values)
    if whole and top <= 40:  # one bar per possible whole score
        bins = [edge - 0.5 for edge in range(int(top) + 2)]
    else:
        bins = [top * i / 20 for i in range(21)]
    axes.hist(values, bins=bins, color="#4C72B0", edgecolor="white")
    axes.set_xlim(bins[0], bins[-1])
    axes.set_xlabel(_("total points (out of {points})").format(points=number(top)))
    axes.set_ylabel(_("students"))
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_title(
        _("{assignment}: totals of {count} submissions").format(
            assignment=stats.name, count=len(values)
        )
    )
    if not values:
        axes.text(0.5, 0.5, _("no submissions"), transform=axes.transAxes, ha="center")
    return png(figure)


@fonts.in_language_of(language)
def pass_chart(stats: AssignmentStats) -> str:
    count = len(stats.totals)
    labels = stats.exercises
    rates = [stats.passed[e] / count if count else 0.0 for e in labels]
    figure = Figure(figsize=(6.4, 1.2 + 0.32 * max(len(labels), 1)), layout="constrained")
    axes = figure.add_subplot()
    positions = range(len(labels))
    axes.barh(list(positions), rates, color="#55A868")
    axes.set_yticks(list(positions), labels)
    axes.invert_yaxis()
    axes.set_xlim(0, 1)
    axes.xaxis.set_major_formatter(PercentFormatter(1.0))
    for position, rate in zip(positions, rates, strict=True):
        axes.text(min(rate, 0.88) + 0.01, position, f"{rate:.0%}", va="center", fontsize=8)
    axes.set_title(
        _("{assignment}: students with full marks, of {count} submissions").format(
            assignment=stats.name, count=count
        )
    )
    return png(figure)


def _figure(data: str, alt: str, caption: str) -> str:
    return (
        f'<figure><img src="data:image/png;base64,{data}" alt="{escape(alt)}">'
        f"<figcaption>{escape(caption)}</figcaption></figure>"
    )


def summary(stats: AssignmentStats, class_size: int) -> str:
    values = list(stats.totals.values())
    if not values:
        text = _("{submitted} of {size} students submitted.")
        return f'<p class="summary">{escape(text.format(submitted=0, size=class_size))}</p>'
    text = _(
        "{submitted} of {size} students submitted; total: mean {mean}, median {median} "
        "of {points} points."
    ).format(
        submitted=len(values),
        size=class_size,
        mean=f"{statistics.mean(values):.2f}",
        median=f"{statistics.median(values):.2f}",
        points=number(stats.max_total),
    )
    return f'<p class="summary">{escape(text)}</p>'


def pass_table(stats: AssignmentStats) -> str:
    count = len(stats.totals)
    rows = []
    for exercise in stats.exercises:
        passed = stats.passed[exercise]
        rate = f"{passed}/{count} ({passed / count:.0%})" if count else "–"
        rows.append(f'<tr><td>{escape(exercise)}</td><td class="rate">{rate}</td></tr>')
    head = _header_row(_("exercise"), _("full marks"))
    return f'<table class="pass-rate">{head}{"".join(rows)}</table>'


def diagnostics_table(stats: AssignmentStats) -> str:
    head = _header_row(_("exercise"), _("kind"), _("diagnostic"), _("students"), _("example"))
    rows = []
    for exercise in stats.exercises + sorted(set(stats.diagnostics) - set(stats.exercises)):
        found = stats.diagnostics.get(exercise, [])
        if not found:
            none = escape(_("no failed checks"))
            rows.append(
                f'<tr><td>{escape(exercise)}</td><td colspan="4" class="note">{none}</td></tr>'
            )
        for diagnostic in found:
            rows.append(
                f"<tr><td>{escape(exercise)}</td><td>{escape(_(diagnostic.kind))}</td>"
                f"<td><code>{escape(diagnostic.pattern)}</code></td>"
                f'<td class="count">{diagnostic.students}</td>'
                f"<td><code>{escape(diagnostic.example)}</code></td></tr>"
            )
    return f'<table class="diagnostics">{head}{"".join(rows)}</table>'


def notes_table(stats: AssignmentStats) -> str:
    """Every flag and failure reason of the assignment's submissions, a row per submission."""
    if not stats.noted:
        none = escape(_("No submission was flagged or failed."))
        return f'<p class="note">{none}</p>'
    head = _header_row(_("student"), _("status"), _("flags and failure reasons"))
    rows = []
    for record in stats.noted:
        items = "".join(f"<li>{escape(note)}</li>" for note in record.notes)
        rows.append(
            f"<tr><td>{escape(record.student)}</td><td>{escape(_(record.status))}</td>"
            f"<td><ul>{items}</ul></td></tr>"
        )
    return f'<table class="flags">{head}{"".join(rows)}</table>'


def _header_row(*names: str) -> str:
    return "<tr>" + "".join(f"<th>{escape(name)}</th>" for name in names) + "</tr>"


def _heading(text: str) -> str:
    return f"<h3>{escape(text)}</h3>"


def section(stats: AssignmentStats, class_size: int) -> str:
    name = escape(stats.name)
    parts = [
        f'<section id="{name}"><h2>{name}</h2>',
        summary(stats, class_size),
        _figure(
            histogram(stats),
            _("histogram of {assignment} totals").format(assignment=stats.name),
            _("Totals per student."),
        ),
        _figure(
            pass_chart(stats),
            _("pass rate per exercise of {assignment}").format(assignment=stats.name),
            _("Fraction of the students who submitted that got full marks on each exercise."),
        ),
        pass_table(stats),
        _heading(_("Most frequent diagnostics (top {top} per exercise)").format(top=TOP)),
        f'<p class="note">{escape(_(NUMBERS_NOTE))}</p>',
        diagnostics_table(stats),
        _heading(_("Flags and failures")),
        f'<p class="note">{escape(_(FLAGS_NOTE))}</p>',
        notes_table(stats),
    ]
    if stats.unreadable:
        who = ", ".join(stats.unreadable)
        text = _("Autograded notebooks that could not be read: {students}.").format(students=who)
        parts.append(f'<p class="note">{escape(text)}</p>')
    parts.append("</section>")
    return "\n".join(parts)


def render(db_url: str, root: Path, assignments: dict[str, list[str]]) -> str:
    """The whole report as an HTML string (no scripts, no external resources)."""
    class_size = len(all_students(db_url))
    sections = [
        section(assignment_stats(db_url, root, name, exercises), class_size)
        for name, exercises in assignments.items()
    ]
    title = escape(_("Hooklab class report"))
    size = escape(_("{count} students in the gradebook.").format(count=class_size))
    return "\n".join(
        [
            "<!DOCTYPE html>",
            f'<html lang="{language()}"><head><meta charset="utf-8">',
            f"<title>{title}</title>",
            f"<style>{STYLE}</style></head><body>",
            f"<h1>{title}</h1>",
            f"<p>{size}</p>",
            *sections,
            "</body></html>",
            "",
        ]
    )


def write_class_report(
    db_url: str, root: Path, assignments: dict[str, list[str]], path: Path
) -> Path:
    """Write the class report for `assignments` ({assignment: exercise ids in order}) to `path`:
    per assignment, a histogram of the totals, the pass rate per exercise, and the most frequent
    diagnostics read from root/autograded/<student>/<assignment>/<assignment>.ipynb."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(db_url, Path(root), assignments), encoding="utf-8")
    return path
