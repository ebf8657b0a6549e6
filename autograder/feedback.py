"""What a student sees: check failures as short messages (no traceback) and tensor summaries."""

from __future__ import annotations

import torch

from autograder.i18n import _


class CheckFailed(Exception):
    """A check found a mistake. Its message names the mistake, shows expected vs got and says
    why; `fix`, the code-level fix, is shown only after the same check failed several times.

    IPython renders `_render_traceback_` instead of a traceback, so the student sees only the
    message, while nbgrader still sees an error output and scores the cell zero.
    """

    def __init__(self, message: str, *, grade_id: str = "", fix: str = "") -> None:
        super().__init__(message)
        self.message, self.grade_id, self.fix = message, grade_id, fix

    def headline(self) -> str:
        return _("✗ {grade_id}").format(grade_id=self.grade_id or "check")

    def __str__(self) -> str:
        return f"{self.headline()}: {self.message}"

    def _render_traceback_(self) -> list[str]:
        return str(self).splitlines()


class NotDoneYet(CheckFailed):
    """The exercise still holds its stub, or something it needs is not defined yet."""

    def headline(self) -> str:
        return _("… {grade_id} is not done yet").format(grade_id=self.grade_id or "check")


def describe(value: object) -> str:
    """A one-line summary of a value for feedback: type, shape and (short) values."""
    if isinstance(value, torch.Tensor):
        shape = tuple(value.shape)
        flat = value.detach().flatten()
        shown = ", ".join(f"{v:.4g}" for v in flat[:6].tolist())
        more = ", …" if flat.numel() > 6 else ""
        if value.dim() == 0:
            return _("tensor({values}) (0-d, shape ())").format(values=shown)
        return _("tensor([{values}]) shape {shape}").format(values=shown + more, shape=shape)
    if isinstance(value, tuple | list):
        kind = type(value).__name__
        inner = ", ".join(describe(v) for v in value[:4])
        more = ", …" if len(value) > 4 else ""
        return _("{kind} of {count}: [{items}]").format(
            kind=kind, count=len(value), items=inner + more
        )
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
