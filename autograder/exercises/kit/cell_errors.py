"""An error of the student's own cells that passed through PyTorch, as their Jupyter shows it: the
notebook's frames without PyTorch's, and the cause when the error is a known pitfall.

A wrong hook raises where PyTorch calls it, in the cell that runs the model rather than in the
answer cell, under a traceback that is mostly PyTorch's own frames; and Run All stops there,
before the check cell that would name the mistake. So that cell names it itself (diagnose.py).
Only in the student's own Jupyter: a graded notebook keeps IPython's tracebacks, as under stock
nbgrader. The handler is IPython's documented `set_custom_exc`; `%tb` still shows every frame.
"""

from __future__ import annotations

import contextlib
import os
import types
from typing import Any

import torch

from autograder.exercises.kit.diagnose import cause_of
from autograder.i18n import _, ngettext
from autograder.widgets.frontend import graded

TORCH_FILES = os.path.dirname(torch.__file__) + os.sep


def explain_in(shell: Any) -> bool:
    """Shorten and explain such errors in `shell` (IPython's); True when it does from now on.
    Nothing changes while nbgrader runs the notebook, or where another handler is set."""
    if shell is None or graded() or not hasattr(shell, "set_custom_exc"):
        return False
    if shell.custom_exceptions:  # someone else's handler (a course's, an extension's) stays
        return False
    shell.set_custom_exc((Exception,), show)
    return True


def show(shell: Any, etype: type, value: BaseException, tb: Any, tb_offset: Any = None) -> list:
    """Show the error as IPython would, without PyTorch's frames and with its cause, once."""
    kept, left_out = without_torch(tb)
    if left_out and not hasattr(value, "_render_traceback_"):  # others render themselves

        def shortened() -> list[str]:
            value.__dict__.pop("_render_traceback_", None)  # once: `%tb` then shows it all
            formatter = shell.InteractiveTB
            lines = formatter.structured_traceback(etype, value, kept, tb_offset=tb_offset)
            return [*lines, "", *_explanation(value, left_out)]

        # An exception type without a __dict__ is shown in full.
        with contextlib.suppress(AttributeError):
            value._render_traceback_ = shortened
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
    return []


def without_torch(tb: types.TracebackType | None) -> tuple[types.TracebackType | None, int]:
    """The traceback without the frames of PyTorch's own files, and how many it left out."""
    frames = []
    while tb is not None:
        frames.append(tb)
        tb = tb.tb_next
    kept = [t for t in frames if not t.tb_frame.f_code.co_filename.startswith(TORCH_FILES)]
    shortened = None
    for t in reversed(kept):
        shortened = types.TracebackType(shortened, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return shortened, len(frames) - len(kept)


def _explanation(error: BaseException, left_out: int) -> list[str]:
    lines = [
        ngettext(
            "({count} frame inside PyTorch left out; `%tb` shows it)",
            "({count} frames inside PyTorch left out; `%tb` shows them)",
            left_out,
        ).format(count=left_out)
    ]
    cause = cause_of(error)
    if cause:
        lines.append(_("What this usually means: {cause}").format(cause=cause))
    return lines
