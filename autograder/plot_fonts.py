"""Fonts that have a language's letters, for matplotlib figures: its default font (DejaVu Sans)
has no Hangul, so Korean titles would come out as empty boxes ("tofu"). The notebooks' figures
(use_plot_fonts, from a notebook's setup cell) and the class report (reports/fonts.py) use it.
Debian's fonts-nanum (or fonts-noto-cjk) ships fonts that have Hangul; matplotlib (>= 3.6)
falls back glyph by glyph along the list of font families it is given.
"""

from __future__ import annotations

import contextlib

from autograder import i18n

# Families that draw Hangul, in order of preference: Debian's fonts-nanum, fonts-noto-cjk.
HANGUL_FAMILIES = ("NanumGothic", "NanumBarunGothic", "Noto Sans CJK KR", "Noto Sans CJK JP")
BY_LANGUAGE = {"ko": HANGUL_FAMILIES}
# Their files' names: matplotlib's font list is cached once per machine, so a font installed
# after that (apt-get install fonts-nanum) is found by looking for its file.
HANGUL_FILES = ("nanum", "notosanscjk", "notoserifcjk")


def installed(families: tuple[str, ...]) -> list[str]:
    """Those of `families` that matplotlib can find on this machine, in the same order."""
    if not families:
        return []  # English: no need to list the machine's font files (fc-list) per kernel
    from matplotlib import font_manager  # not before a figure needs it

    names = {font.name for font in font_manager.fontManager.ttflist}
    if not any(family in names for family in families):
        known = {font.fname for font in font_manager.fontManager.ttflist}
        for path in font_manager.findSystemFonts():
            if path not in known and any(part in path.lower() for part in HANGUL_FILES):
                with contextlib.suppress(OSError, RuntimeError, ValueError):
                    font_manager.fontManager.addfont(path)
        names = {font.name for font in font_manager.fontManager.ttflist}
    return [family for family in families if family in names]


def use_plot_fonts() -> None:
    """In an edition whose letters the default font lacks (Korean), put fonts that have them
    after the default one for the figures the notebook draws: Latin letters keep their look and
    Hangul falls back to them. Nothing for English, or when no such font is installed."""
    found = installed(BY_LANGUAGE.get(i18n.language(), ()))
    if not found:
        return
    import matplotlib as mpl

    families = [f for f in mpl.rcParams["font.family"] if f not in found]
    mpl.rcParams["font.family"] = [*families, *found]
