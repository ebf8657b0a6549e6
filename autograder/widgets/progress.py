"""The progress panel: which exercises of the notebook pass, updated each time a check runs.

`check()` reports every result here through `recording()`. Recording is a dict update plus, for
each panel on screen, a redraw; it never raises and never writes to stderr, because it runs
inside graded test cells, where any stderr output costs the student the cell's points.
"""

from __future__ import annotations

import contextlib
import html
import warnings
from collections.abc import Iterator

from autograder.feedback import CheckFailed, NotDoneYet
from autograder.i18n import N_, _, ngettext
from autograder.widgets import frontend

NOT_RUN, PASSED, NOT_DONE, FAILED = "not checked yet", "passed", "not done yet", "failed"
# When the visible and the hidden check of one exercise disagree, the worse one is shown.
_SEVERITY = {NOT_RUN: 0, PASSED: 1, NOT_DONE: 2, FAILED: 3}
_SYMBOL = {NOT_RUN: "·", PASSED: "✓", NOT_DONE: "…", FAILED: "✗"}
_COLOUR = {NOT_RUN: "#777", PASSED: "#1a7f37", NOT_DONE: "#9a6700", FAILED: "#cf222e"}
# What the panel says for each state (the states themselves are keys, never shown untranslated).
_LABEL = {
    NOT_RUN: N_("not checked yet"),
    PASSED: N_("passed"),
    NOT_DONE: N_("not done yet"),
    FAILED: N_("failed"),
}

GRADED_NOTE = N_(
    "While you work, this panel shows which exercises pass. In the graded copy, each "
    "exercise's result is under its check cells."
)

_results: dict[tuple[str, bool], str] = {}  # (grade id, hidden) -> state of its latest run
_panels: list[ProgressPanel] = []  # the panels on screen, newest last


def state(grade_id: str) -> str:
    """The exercise's state: the worse of its visible and hidden checks' latest results."""
    found = [_results[key] for key in ((grade_id, False), (grade_id, True)) if key in _results]
    return max(found, key=_SEVERITY.__getitem__, default=NOT_RUN)


def forget() -> None:
    """Drop every recorded result (a fresh kernel starts this way)."""
    _results.clear()
    _redraw()


def record(grade_id: str, hidden: bool, outcome: str) -> None:
    """Record the outcome of a check run: PASSED, NOT_DONE or FAILED."""
    _record(grade_id, hidden, outcome)


@contextlib.contextmanager
def recording(grade_id: str, *, hidden: bool = False) -> Iterator[None]:
    """Record how the check run inside the `with` block ended: passed, or how it failed."""
    try:
        yield
    except NotDoneYet:
        _record(grade_id, hidden, NOT_DONE)
        raise
    except CheckFailed:
        _record(grade_id, hidden, FAILED)
        raise
    _record(grade_id, hidden, PASSED)


def _record(grade_id: str, hidden: bool, outcome: str) -> None:
    _results[(grade_id, hidden)] = outcome
    _redraw()


def _redraw() -> None:
    for panel in list(_panels):
        # A broken front end connection must not turn a result into an error or stderr output.
        with contextlib.suppress(Exception), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            panel.redraw()


class ProgressPanel:
    """The state of each of a notebook's exercises, as a widget and as text."""

    def __init__(self, exercises: list[str]) -> None:
        if not exercises:
            raise ValueError("show_progress needs the notebook's exercise ids")
        self.exercises = list(exercises)
        self._html = None
        self._shown: frontend.Shown | None = None

    def states(self) -> dict[str, str]:
        return {grade_id: state(grade_id) for grade_id in self.exercises}

    def summary(self) -> str:
        passed = sum(s == PASSED for s in self.states().values())
        total = len(self.exercises)
        return ngettext(
            "{passed} of {total} exercise passes", "{passed} of {total} exercises pass", total
        ).format(passed=passed, total=total)

    def text(self) -> str:
        width = max(map(len, self.exercises))
        lines = [_("Progress: {summary}").format(summary=self.summary())]
        for grade_id, outcome in self.states().items():
            label = _(_LABEL[outcome])
            lines.append(f"  {_SYMBOL[outcome]} {grade_id:{width}}  {label}")
        return "\n".join(lines)

    def html(self) -> str:
        rows = "".join(
            f"<tr><td style='color:{_COLOUR[s]};padding-right:0.6em'>{_SYMBOL[s]}</td>"
            f"<td style='padding-right:1.5em'><code>{html.escape(grade_id)}</code></td>"
            f"<td style='color:{_COLOUR[s]}'>{html.escape(_(_LABEL[s]))}</td></tr>"
            for grade_id, s in self.states().items()
        )
        heading = html.escape(_("Progress: {summary}").format(summary=self.summary()))
        return f"<b>{heading}</b><table>{rows}</table>"

    def widget(self):
        import ipywidgets as widgets

        self._html = widgets.HTML(value=self.html())
        self._html.add_class("hooklab-progress")
        return self._html

    def show(self) -> None:
        if frontend.graded():
            # The grader runs the notebook top to bottom: no check has run when this cell does,
            # and its result would be "0 of N pass" on a full-marks copy.
            print(_(GRADED_NOTE))
            return
        self._shown = frontend.show(self.widget, self.text())
        # Running the progress cell again replaces its panel; only the new one needs redraws.
        _panels[:] = [panel for panel in _panels if panel.exercises != self.exercises]
        _panels.append(self)

    def redraw(self) -> None:
        if self._html is not None:
            self._html.value = self.html()
        if self._shown is not None:
            self._shown.update_text(self.text())


def show_progress(exercises: list[str]) -> None:
    """Show a panel listing `exercises` (grade ids) as passed, failed, not done yet or not
    checked yet; it updates itself whenever a check cell runs."""
    ProgressPanel(exercises).show()
