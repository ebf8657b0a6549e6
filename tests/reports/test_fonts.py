"""The report's plots draw Hangul with a real font: no missing-glyph boxes ("tofu") in the PNG."""

from __future__ import annotations

import io
import warnings

import matplotlib
import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ft2font import FT2Font
from matplotlib.image import imread

from autograder.reports import fonts

SYLLABLES = "학생총점"  # distinct Hangul syllables: a font draws four different glyphs


def _pixels(text: str) -> np.ndarray:
    """`text` alone, drawn on a small figure, as the RGBA pixels of its PNG."""
    figure = Figure(figsize=(1.0, 0.6), dpi=60)
    FigureCanvasAgg(figure)
    figure.text(0.1, 0.3, text, fontsize=24)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    buffer.seek(0)
    return imread(buffer)


def _glyph_images(language: str | None) -> list[np.ndarray]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the control below draws tofu on purpose
        if language is None:
            with matplotlib.rc_context({"font.family": ["DejaVu Sans"]}):
                return [_pixels(c) for c in SYLLABLES]
        with fonts.speaking(language):
            return [_pixels(c) for c in SYLLABLES]


def _all_equal(images: list[np.ndarray]) -> bool:
    return all(np.array_equal(images[0], image) for image in images[1:])


def test_a_font_that_covers_hangul_is_installed_and_chosen():
    families = fonts.families_for("ko")
    assert families[0] in fonts.HANGUL_FAMILIES, families
    path = matplotlib.font_manager.findfont(families[0], fallback_to_default=False)
    font = FT2Font(path)
    assert all(font.get_char_index(ord(c)) for c in SYLLABLES), path


def test_without_it_every_syllable_is_the_same_box():
    """The control: DejaVu Sans has no Hangul, so four different syllables give one picture
    (the missing-glyph box), which is what the next test must not see."""
    assert _all_equal(_glyph_images(None))


def test_with_it_each_syllable_is_drawn_as_itself():
    images = _glyph_images("ko")
    assert not any(np.array_equal(images[i], images[j]) for i in range(4) for j in range(i + 1, 4))
    tofu = _glyph_images(None)[0]
    assert not any(np.array_equal(image, tofu) for image in images)


def test_drawing_korean_gives_no_missing_glyph_warning():
    with warnings.catch_warnings(record=True) as caught, fonts.speaking("ko"):
        warnings.simplefilter("always")
        _pixels("총점 (만점 10점)")
    assert not [w for w in caught if "missing from font" in str(w.message)]


def test_an_uninstalled_font_is_said_not_silently_drawn_as_boxes(monkeypatch):
    monkeypatch.setattr(fonts, "installed", lambda families: [])
    with pytest.warns(UserWarning, match="fonts-nanum"):
        assert fonts.families_for("ko") == ["DejaVu Sans"]
