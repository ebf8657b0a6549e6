"""Showing a widget with a plain-text fallback, for front ends that cannot draw widgets.

A widget goes out as one display bundle holding both the widget view and a `text/plain`
description. JupyterLab draws the widget; nbconvert, nbgrader and HTML exports without widget
state keep the text. Outside a kernel (plain Python, the in-process test runner), and while
nbgrader runs the notebook (it sets NBGRADER_EXECUTION: nobody is there to click, and no widget
state is kept), the text is printed. ipywidgets is imported only here, and only when a widget is
about to be shown.
"""

from __future__ import annotations

import os
import sys
from typing import Any


def graded() -> bool:
    """True when nbgrader (or hooklab) executes the notebook to grade or validate it."""
    return bool(os.environ.get("NBGRADER_EXECUTION"))


def kernel_shell() -> Any | None:
    """The IPython shell of the running Jupyter kernel, or None outside a kernel."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return None
    shell = ipython.get_ipython()
    return shell if getattr(shell, "kernel", None) is not None else None


class Shown:
    """A widget on screen (or its text, printed) that can be redrawn with a new text."""

    def __init__(self, widget: Any | None, text: str) -> None:
        self.widget = widget
        self._handle = None
        if widget is None:
            print(text)
            return
        from IPython.display import display

        self._handle = display(_bundle(widget, text), raw=True, display_id=True)

    def update_text(self, text: str) -> None:
        """Replace the text fallback (front ends that draw the widget redraw the same widget)."""
        if self._handle is not None:
            self._handle.update(_bundle(self.widget, text), raw=True)


def show(make_widget, text: str) -> Shown:
    """Display `make_widget()` with `text` as fallback inside a kernel that someone is using;
    elsewhere print `text`."""
    interactive = kernel_shell() is not None and not graded()
    return Shown(make_widget() if interactive else None, text)


def _bundle(widget: Any, text: str) -> dict[str, Any]:
    bundle = dict(widget._repr_mimebundle_())
    bundle["text/plain"] = text
    return bundle
