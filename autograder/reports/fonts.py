"""Fonts for the report's plots that draw the report's language: Hangul needs a CJK font.

matplotlib's default font (DejaVu Sans) has no Hangul: Korean labels would come out as empty
boxes ("tofu"). Debian's fonts-nanum (or fonts-noto-cjk) ships fonts that have it; the plots
name them first and DejaVu Sans after, and matplotlib (>= 3.6) falls back glyph by glyph along
that list, so Latin text keeps its usual look.
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import matplotlib

from autograder.plot_fonts import BY_LANGUAGE, HANGUL_FAMILIES, installed

__all__ = ["HANGUL_FAMILIES", "families_for", "in_language_of", "installed", "speaking"]


def families_for(language: str) -> list[str]:
    """The font families the plots of a report in `language` use, fallback last."""
    wanted = BY_LANGUAGE.get(language, ())
    found = installed(wanted)
    if wanted and not found:
        warnings.warn(
            f"no font for {language!r} is installed (one of {', '.join(wanted)}; on Debian: "
            "apt-get install fonts-nanum): the plots' labels will show empty boxes",
            stacklevel=3,
        )
    return [*found, "DejaVu Sans"]


@contextlib.contextmanager
def speaking(language: str) -> Iterator[None]:
    """Figures made and drawn inside use fonts that have `language`'s letters."""
    with matplotlib.rc_context({"font.family": families_for(language)}):
        yield


def in_language_of(current: Callable[[], str]) -> Callable:
    """Decorate a function that makes and draws a figure: it runs `speaking(current())`."""

    def decorate(function: Callable) -> Callable:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with speaking(current()):
                return function(*args, **kwargs)

        return wrapper

    return decorate
