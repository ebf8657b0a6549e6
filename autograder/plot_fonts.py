"""Fonts for the figures a notebook draws: matplotlib's default font has no Hangul, so the
Korean edition's plot titles would come out as empty boxes without a fallback font."""

from __future__ import annotations

from autograder import i18n

# Families that draw Hangul and that Debian (fonts-nanum, fonts-noto-cjk, fonts-unfonts-core)
# or the notebook's own machine may have, the first found wins.
HANGUL_FAMILIES = (
    "NanumGothic",
    "NanumBarunGothic",
    "Noto Sans CJK KR",
    "Noto Sans KR",
    "UnDotum",
    "Malgun Gothic",
    "Apple SD Gothic Neo",
)


# The same fonts by file name, for a font installed after matplotlib cached its list of fonts.
HANGUL_FILES = ("NanumGothic.", "NanumBarunGothic.", "NotoSansCJK", "NotoSansKR", "UnDotum.")


def hangul_family() -> str | None:
    """An installed font family with Hangul glyphs, or None."""
    from matplotlib import font_manager

    manager = font_manager.fontManager
    installed = {font.name for font in manager.ttflist}
    found = next((family for family in HANGUL_FAMILIES if family in installed), None)
    if found is None:
        for path in sorted(font_manager.findSystemFonts()):
            if any(name in path.rsplit("/", 1)[-1] for name in HANGUL_FILES):
                manager.addfont(path)
                return font_manager.FontProperties(fname=path).get_name()
    return found


def use_plot_fonts() -> None:
    """In an edition whose script the default font lacks (Korean), put a font that has it after
    the default one: Latin letters keep their look and Hangul falls back to it, glyph by glyph.
    Nothing for English, or when no such font is installed."""
    if i18n.language() != "ko":
        return
    family = hangul_family()
    if family is None:
        return
    import matplotlib as mpl

    families = [f for f in mpl.rcParams["font.family"] if f != family]
    mpl.rcParams["font.family"] = [*families, family]
