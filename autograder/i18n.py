"""The language of everything a student reads: messages come from one gettext catalog per language.

Every student-facing string is written in English inside `_()` (or `ngettext`), with named
placeholders filled afterwards (`_("got {got}").format(got=...)`), so that Babel can extract it
into `autograder/locale/hooklab.pot` and each language's catalog can translate it whole. The
language is, in order: the HOOKLAB_LANG environment variable (a student's override), the one a
notebook's edition sets with `use_language`, then English. Code that writes into a notebook
other than its own process's (the grading worker, for many notebooks in turn) asks for that
notebook's language explicitly: `notebook_language(nb)`, then `translator(language)`.
"""

from __future__ import annotations

import contextlib
import gettext
import os
from collections.abc import Callable, Iterator, Mapping
from functools import cache
from pathlib import Path

DOMAIN = "hooklab"
LOCALE_DIR = Path(__file__).parent / "locale"
LANGUAGES = ("en", "ko")
LANG_ENV = "HOOKLAB_LANG"

_chosen: str | None = None  # set by a notebook edition (use_language)
_forced: str | None = None  # set by a command's --lang, for its duration (speaking)


def use_language(language: str) -> None:
    """Make `language` the notebook's language (its edition's), unless HOOKLAB_LANG overrides."""
    global _chosen
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, not {language!r}")
    _chosen = language


@contextlib.contextmanager
def speaking(language: str) -> Iterator[None]:
    """Everything inside is in `language`, HOOKLAB_LANG notwithstanding (a command's --lang)."""
    global _forced
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, not {language!r}")
    before, _forced = _forced, language
    try:
        yield
    finally:
        _forced = before


def language() -> str:
    if _forced:
        return _forced
    wanted = os.environ.get(LANG_ENV, "").strip().lower()[:2]
    if wanted in LANGUAGES:
        return wanted
    return _chosen or "en"


@cache
def _translations(language: str) -> gettext.NullTranslations:
    if language == "en":
        return gettext.NullTranslations()
    return gettext.translation(DOMAIN, LOCALE_DIR, [language], fallback=True)


def _(message: str) -> str:
    """`message` in the current language."""
    return _translations(language()).gettext(message)


def ngettext(singular: str, plural: str, count: int) -> str:
    return _translations(language()).ngettext(singular, plural, count)


def N_(message: str) -> str:
    """Mark `message` for translation where it is defined; `_` translates it where it is used."""
    return message


def translator(language: str) -> Callable[[str], str]:
    """The `_` of `language` itself, whatever the process's language is."""
    return _translations(language if language in LANGUAGES else "en").gettext


def notebook_language(nb: Mapping) -> str:
    """The language of a notebook's edition: its metadata `hooklab.language`, else English."""
    chosen = (nb.get("metadata", {}).get("hooklab") or {}).get("language", "en")
    return chosen if chosen in LANGUAGES else "en"


class Phrase(str):
    """An English sentence made from a marked template, that remembers the template and its
    fields, so that it can be said again in another language (`render`)."""

    template: str
    fields: dict

    def __new__(cls, template: str, **fields: object) -> Phrase:
        text = super().__new__(cls, template.format(**fields))
        text.template, text.fields = template, fields
        return text


def render(text: str, tr: Callable[[str], str]) -> str:
    """`text` through `tr`: a Phrase's template translated and its fields rendered in turn; a
    plain string is looked up whole (a constant marked with N_), or left as it is."""
    if isinstance(text, Phrase):
        fields = {name: render(value, tr) if isinstance(value, str) else value
                  for name, value in text.fields.items()}  # fmt: skip
        return tr(text.template).format(**fields)
    return tr(text)
