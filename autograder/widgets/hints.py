"""Step-by-step hints for an exercise: a button that reveals one more hint per click.

Only revealed hints ever reach the front end (or a saved notebook's widget state); the text
fallback says how many hints there are and reveals none.
"""

from __future__ import annotations

import html
import re

from autograder.i18n import _, ngettext
from autograder.widgets import frontend

_CODE = re.compile(r"`([^`]+)`")


class Hints:
    """The hints of one exercise, in order, and how many of them are revealed."""

    def __init__(self, grade_id: str, hints: list[str]) -> None:
        if not hints or not all(isinstance(hint, str) and hint.strip() for hint in hints):
            raise ValueError("hints must be a non-empty list of non-empty strings")
        self.grade_id = grade_id
        self._hints = list(hints)
        self.revealed = 0

    def __len__(self) -> int:
        return len(self._hints)

    @property
    def shown(self) -> list[str]:
        return self._hints[: self.revealed]

    @property
    def exhausted(self) -> bool:
        return self.revealed == len(self._hints)

    def reveal_next(self) -> str | None:
        """Reveal the next hint and return it; None once every hint is revealed."""
        if self.exhausted:
            return None
        self.revealed += 1
        return self._hints[self.revealed - 1]

    def button_label(self) -> str:
        if self.exhausted:
            return _("No more hints")
        return _("Show hint {number} of {total}").format(number=self.revealed + 1, total=len(self))

    def shown_html(self) -> str:
        """The revealed hints as an HTML list; `code` in a hint becomes <code>."""
        if not self.revealed:
            return ""
        items = "".join(f"<li>{_inline_code(hint)}</li>" for hint in self.shown)
        return f"<ol>{items}</ol>"

    def fallback_text(self) -> str:
        return ngettext(
            "{count} hint available for {grade_id}. Open this notebook in JupyterLab and run "
            "this cell to reveal it.",
            "{count} hints available for {grade_id}. Open this notebook in JupyterLab and run "
            "this cell to reveal them one at a time.",
            len(self),
        ).format(count=len(self), grade_id=self.grade_id)


def _inline_code(text: str) -> str:
    return _CODE.sub(r"<code>\1</code>", html.escape(text, quote=False))


class HintPanel:
    """The hints as a widget: revealed hints above a button that reveals the next one."""

    def __init__(self, hints: Hints) -> None:
        import ipywidgets as widgets

        self.hints = hints
        self.button = widgets.Button(
            description=hints.button_label(),
            icon="lightbulb-o",
            layout={"width": "auto", "align_self": "flex-start"},
        )
        self.shown = widgets.HTML(value=hints.shown_html())
        self.button.on_click(lambda _button: self.reveal_next())
        code = f"<code>{html.escape(hints.grade_id)}</code>"
        heading = _("Hints for {grade_id}").format(grade_id=code)
        title = widgets.HTML(value=f"<b>{heading}</b>")
        self.widget = widgets.VBox([title, self.shown, self.button])
        self.widget.add_class("hooklab-hints")

    def reveal_next(self) -> None:
        self.hints.reveal_next()
        self.shown.value = self.hints.shown_html()
        self.button.description = self.hints.button_label()
        self.button.disabled = self.hints.exhausted


def exercise_hints(grade_id: str) -> list[str]:
    """The hints of `grade_id`'s exercise module, translated."""
    from autograder.exercises.kit import registry
    from autograder.i18n import _

    if registry.notebook_of(grade_id) is None:
        raise ValueError(f"no hints are written for {grade_id!r}: it is not an exercise")
    hints = getattr(registry.exercise(grade_id), "HINTS", None)
    if not hints:
        raise ValueError(f"no hints are written for {grade_id!r}")
    return [_(hint) for hint in hints]


def all_hints() -> dict[str, list[str]]:
    """grade id -> its hints, for every exercise that has them."""
    from autograder.exercises.kit import registry

    return {gid: exercise_hints(gid) for gid in registry.grade_ids()}


def show_hints(grade_id: str, hints: list[str] | None = None) -> None:
    """Show the hints of exercise `grade_id`, none revealed yet; each click reveals one more.

    Without `hints`, they are the exercise module's HINTS, in the notebook's language.
    """
    if hints is None:
        hints = exercise_hints(grade_id)
    state = Hints(grade_id, hints)
    frontend.show(lambda: HintPanel(state).widget, state.fallback_text())
