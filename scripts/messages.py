"""The message catalogs (`make messages`): extract, update and compile them with Babel.

    python scripts/messages.py                  extract autograder/ into locale/hooklab.pot,
                                                merge it into each language's .po, compile the .mo
    python scripts/messages.py extract OUT.pot  only extract, into OUT.pot (the staleness test)

Every `_()`, `N_()` and `ngettext()` of autograder/ is extracted (autograder/i18n.py is their
front). The compiled .mo files are committed beside their .po: gettext reads them at run time,
so neither a student's install nor an editable one needs Babel or a build step
(docs/i18n.md).
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "autograder"
LOCALE = PACKAGE / "locale"
DOMAIN = "hooklab"
KEYWORDS = {"_": None, "N_": None, "ngettext": (1, 2)}
LANGUAGES = ("ko",)
EPOCH = datetime(2026, 12, 1, tzinfo=UTC)


def _catalog(**fields) -> Catalog:
    # A fixed date and team: re-running `make messages` on unchanged sources changes no file.
    return Catalog(
        project="hooklab",
        version="0.1",
        copyright_holder="Hooklab",
        msgid_bugs_address="",
        creation_date=EPOCH,
        revision_date=EPOCH,
        last_translator="Hooklab",
        language_team="Hooklab",
        charset="utf-8",
        fuzzy=False,
        **fields,
    )


def extract() -> Catalog:
    """Every marked message of autograder/, with where it is used."""
    catalog = _catalog()
    found = extract_from_dir(
        PACKAGE,
        method_map=[("**.py", "python")],
        keywords=KEYWORDS,
        comment_tags=("TRANSLATORS:",),
        strip_comment_tags=True,
    )
    for filename, line, message, comments, context in found:
        location = (str(Path("autograder") / filename), line)
        catalog.add(message, None, [location], auto_comments=comments, context=context)
    return catalog


def _write(catalog: Catalog, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as file:
        write_po(file, catalog, width=100, omit_header=False, sort_output=True)


def update(template: Catalog) -> None:
    """Merge `template` into each language's .po (new messages come in untranslated, gone ones
    are dropped) and compile it."""
    for language in LANGUAGES:
        po = LOCALE / language / "LC_MESSAGES" / f"{DOMAIN}.po"
        catalog = _catalog(locale=language)
        if po.exists():
            with po.open("rb") as file:
                for message in read_po(file, locale=language):
                    if message.id:
                        catalog[message.id] = message
        catalog.update(template, no_fuzzy_matching=True, update_creation_date=False)
        catalog.obsolete.clear()
        _write(catalog, po)
        with (po.with_suffix(".mo")).open("wb") as file:
            write_mo(file, catalog, use_fuzzy=False)
        done = sum(1 for m in catalog if m.id and all(_strings(m)) and not m.fuzzy)
        print(f"{po.relative_to(ROOT)}: {done} of {len(template)} messages translated")


def _strings(message) -> tuple[str, ...]:
    """A message's translations: one, or one per plural form."""
    return tuple(message.string) if isinstance(message.string, tuple | list) else (message.string,)


def main(argv: list[str]) -> None:
    template = extract()
    if argv[:1] == ["extract"]:
        _write(template, Path(argv[1]))
        return
    _write(template, LOCALE / f"{DOMAIN}.pot")
    update(template)


if __name__ == "__main__":
    main(sys.argv[1:])
