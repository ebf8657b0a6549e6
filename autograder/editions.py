"""The course in another language: each edition is the English solution notebooks plus one
translation catalog per notebook, written out as a course folder of its own (`ko/` for Korean).

A catalog, `translations/<language>/<notebook>.po`, is gettext PO (read and written with Babel):
every entry's context (msgctxt) is a cell id and its msgid the English text it replaces. A
markdown cell is translated whole. In a code cell only what a student reads is: each comment (a
run of full-line comments is one entry, so a sentence may span lines in either language) and
each string literal that is prose (a space between words) or that the cell prints; identifiers,
grade ids and cell structure never change. An entry whose msgid is no longer in its cell is
*stale*: the edition is then not built, and the build names every such entry, so that a notebook
never goes out with English or outdated text in it.
"""

from __future__ import annotations

import ast
import copy
import io
import re
import shutil
import tokenize
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po, write_po
from nbformat import NotebookNode

from autograder import course, notebooks, parsing

LANGUAGES = ("ko",)
CATALOG_DATE = datetime(2026, 12, 2, tzinfo=UTC)  # fixed: a rewritten catalog diffs cleanly
# nbgrader's region markers: they must stay byte for byte what nbgrader looks for.
_NBGRADER_MARKER = re.compile(r"^#+\s*(BEGIN|END) (SOLUTION|HIDDEN TESTS)\b")
_PROSE = re.compile(r"[^\W\d_]+\s+[^\W\d_]+")  # two words with a space between them


class TranslationError(RuntimeError):
    """A catalog that does not fit its English notebook: stale, missing or unused entries."""


@dataclass(frozen=True)
class Fragment:
    """A piece of a cell's source that a translation replaces: source[start:end] is `text`."""

    start: int
    end: int
    text: str  # the msgid: the markdown, the comment lines (without indentation) or the literal
    kind: str  # "markdown", "comment" or "string"
    required: bool  # what a student reads: it must have a translation
    indent: str = ""  # of a comment block: each line of its translation gets it


def catalog_path(language: str, assignment: str, root: Path = course.ROOT) -> Path:
    return root / "translations" / language / f"{assignment}.po"


def edition_root(language: str, root: Path = course.ROOT) -> Path:
    """The edition's nbgrader course folder: its own config, solutions/ and notebooks/."""
    return root / language


def fragments(cell: NotebookNode) -> list[Fragment]:
    """What of `cell` a translation may replace, in source order."""
    source = cell.source
    if cell.cell_type == "markdown":
        return [Fragment(0, len(source), source, "markdown", True)] if source.strip() else []
    if cell.cell_type != "code":
        return []
    return _comment_blocks(source) + _strings(source)


def _offsets(source: str) -> list[int]:
    """The offset in `source` of the start of each line, 1-based like tokenize's rows."""
    starts = [0, 0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def _tokens(source: str) -> list[tokenize.TokenInfo]:
    return list(tokenize.generate_tokens(io.StringIO(source).readline))


def _comment_blocks(source: str) -> list[Fragment]:
    lines, starts = source.splitlines(), _offsets(source)
    blocks: list[list[tokenize.TokenInfo]] = []
    for token in _tokens(source):
        if token.type != tokenize.COMMENT or _NBGRADER_MARKER.match(token.string):
            continue
        row, col = token.start
        full_line = not lines[row - 1][:col].strip()
        previous = blocks[-1][-1] if blocks else None
        if (
            full_line
            and previous is not None
            and previous.start == (row - 1, col)
            and not lines[row - 2][:col].strip()
        ):
            blocks[-1].append(token)
        else:
            blocks.append([token])
    found = []
    for block in blocks:
        (row, col), (end_row, end_col) = block[0].start, block[-1].end
        indent = lines[row - 1][:col] if not lines[row - 1][:col].strip() else ""
        text = "\n".join(token.string for token in block)
        found.append(
            Fragment(starts[row] + col, starts[end_row] + end_col, text, "comment", True, indent)
        )
    return found


def _printed_positions(source: str) -> set[tuple[int, int]]:
    """Where the string literals passed straight to print(...) start."""
    positions = set()
    for node in ast.walk(parsing.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print":
            for arg in node.args:
                if isinstance(arg, ast.Constant | ast.JoinedStr):
                    positions.add((arg.lineno, arg.col_offset))
    return positions


def _strings(source: str) -> list[Fragment]:
    starts, printed = _offsets(source), _printed_positions(source)
    found = []
    for token in _tokens(source):
        if token.type != tokenize.STRING:
            continue
        words = re.sub(r"\{[^{}]*\}", " ", token.string)  # an f-string's fields are code
        readable = bool(_PROSE.search(words)) or (
            token.start in printed and re.search(r"[^\W\d_]{2}", words[1:]) is not None
        )
        (row, col), (end_row, end_col) = token.start, token.end
        found.append(
            Fragment(starts[row] + col, starts[end_row] + end_col, token.string, "string", readable)
        )
    return found


def template(nb: NotebookNode, language: str, assignment: str) -> Catalog:
    """A catalog of everything in `nb` that a translation must replace, msgstr left empty."""
    catalog = new_catalog(language, assignment)
    for cell in nb.cells:
        for fragment in fragments(cell):
            if fragment.required:
                catalog.add(fragment.text, context=cell.id, auto_comments=[fragment.kind])
    return catalog


def new_catalog(language: str, assignment: str) -> Catalog:
    catalog = Catalog(
        locale=language,
        domain=assignment,
        project="Hooklab",
        version=assignment,
        copyright_holder="Hooklab",
        msgid_bugs_address="",
        last_translator="Hooklab",
        language_team=f"Hooklab {language}",
        creation_date=CATALOG_DATE,
        revision_date=CATALOG_DATE,
        fuzzy=False,
    )
    _set_header(catalog, language, assignment)
    return catalog


def _set_header(catalog: Catalog, language: str, assignment: str) -> None:
    catalog.header_comment = (
        f"# The {language} edition of the notebook {assignment} (docs/korean-edition.md).\n"
        f"# msgctxt: a cell id of solutions/{assignment}/{assignment}.ipynb; msgid: its English\n"
        "# text; msgstr: the translation. `python -m autograder.editions update` merges changes."
    )


def read_catalog(language: str, assignment: str, root: Path = course.ROOT) -> Catalog:
    path = catalog_path(language, assignment, root)
    if not path.exists():
        return new_catalog(language, assignment)
    with path.open("rb") as file:
        return read_po(file, locale=language, domain=assignment)


def write_catalog(catalog: Catalog, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    catalog.revision_date = CATALOG_DATE
    buffer = io.BytesIO()
    write_po(buffer, catalog, width=100, include_previous=True, ignore_obsolete=False)
    path.write_bytes(buffer.getvalue())


def problems(nb: NotebookNode, catalog: Catalog) -> list[str]:
    """Everything that keeps `catalog` from translating `nb`, one sentence each; [] when none."""
    found = []
    cells = {cell.id: cell for cell in nb.cells}
    texts = {cell.id: {f.text: f for f in fragments(cell)} for cell in nb.cells}
    for message in catalog:
        if not message.id:
            continue  # the header
        where = f"{message.context}: {_first_line(message.id)!r}"
        if message.context not in cells:
            found.append(f"{where}: no cell of that id (stale)")
        elif message.id not in texts[message.context]:
            found.append(f"{where}: the English text changed (stale)")
        elif message.fuzzy:
            found.append(f"{where}: marked fuzzy, to be checked")
        elif not message.string:
            found.append(f"{where}: not translated yet")
        elif not _fits(fragment := texts[message.context][message.id], message.string):
            found.append(f"{where}: the translation is not a {fragment.kind}")
    for cell_id, by_text in texts.items():
        for text, fragment in by_text.items():
            if fragment.required and catalog.get(text, context=cell_id) is None:
                found.append(f"{cell_id}: {_first_line(text)!r}: missing from the catalog")
    return found


def _fits(fragment: Fragment, translation: str) -> bool:
    """Whether `translation` can stand where `fragment` is: comment lines, or one literal."""
    if fragment.kind == "comment":
        return all(line.startswith("#") for line in translation.strip("\n").splitlines())
    if fragment.kind == "string":
        try:
            tokens = [t for t in _tokens(translation) if t.type not in _LAYOUT]
        except (tokenize.TokenError, SyntaxError):
            return False
        return len(tokens) == 1 and tokens[0].type == tokenize.STRING
    return True


_LAYOUT = {tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER}


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text


def translate(nb: NotebookNode, catalog: Catalog, language: str) -> NotebookNode:
    """The edition of `nb` in `language`. TranslationError when the catalog does not fit it."""
    issues = problems(nb, catalog)
    if issues:
        raise TranslationError("\n".join(issues))
    edition = copy.deepcopy(nb)
    for cell in edition.cells:
        pieces = []
        for fragment in fragments(cell):
            message = catalog.get(fragment.text, context=cell.id)
            if message is not None:
                pieces.append((fragment, _fitted(fragment, message.string)))
        if cell.cell_type == "code":
            pieces += _language_arguments(cell.source, language)
        cell.source = _spliced(cell.source, pieces)
    edition.metadata.setdefault("hooklab", {})["language"] = language
    return edition


def _fitted(fragment: Fragment, translation: str) -> str:
    if fragment.kind != "comment":
        return translation
    return f"\n{fragment.indent}".join(translation.strip("\n").splitlines())


def _language_arguments(source: str, language: str) -> list[tuple[Fragment, str]]:
    """The string argument of each `use_language(...)` call, set to the edition's language."""
    tokens = _tokens(source)
    starts = _offsets(source)
    found = []
    for before, paren, token in zip(tokens, tokens[1:], tokens[2:], strict=False):
        if (before.string, paren.string, token.type) == ("use_language", "(", tokenize.STRING):
            (row, col), (end_row, end_col) = token.start, token.end
            start, end = starts[row] + col, starts[end_row] + end_col
            found.append((Fragment(start, end, token.string, "string", False), f'"{language}"'))
    return found


def _spliced(source: str, pieces: list[tuple[Fragment, str]]) -> str:
    for fragment, text in sorted(pieces, key=lambda piece: -piece[0].start):
        source = source[: fragment.start] + text + source[fragment.end :]
    return source


def editions(language: str, names: list[str] | None = None, root: Path = course.ROOT):
    """{assignment: its edition in `language`}; TranslationError naming every stale or missing
    entry of every notebook."""
    names = names or course.assignments(root)
    found, issues = {}, []
    for name in names:
        english = notebooks.read(course.notebook_path("solutions", name, root))
        try:
            found[name] = translate(english, read_catalog(language, name, root), language)
        except TranslationError as error:
            where = catalog_path(language, name, root).relative_to(root)
            issues += [f"{where}: {line}" for line in str(error).splitlines()]
    if issues:
        raise TranslationError(
            f"the {language} edition is not built: its catalogs do not fit solutions/\n"
            + "\n".join(issues)
            + f"\n(`python -m autograder.editions update {language}` marks what changed)"
        )
    return found


def write_solutions(language: str, names: list[str] | None = None, root: Path = course.ROOT):
    """Write <language>/solutions/ from solutions/ and the catalogs; nothing when any entry is
    stale or missing (TranslationError)."""
    editions_by_name = editions(language, names, root)
    target = edition_root(language, root)
    for name, nb in editions_by_name.items():
        notebooks.write(nb, course.notebook_path("solutions", name, target))


def build(language: str, names: list[str] | None = None, root: Path = course.ROOT) -> None:
    """The edition's solutions/, then its notebooks/ by nbgrader generate_assignment."""
    write_solutions(language, names, root)
    target = edition_root(language, root)
    for name in names or course.assignments(root):
        shutil.rmtree(target / "notebooks" / name, ignore_errors=True)
    course.build(names, root=target)


def update(language: str, names: list[str] | None = None, root: Path = course.ROOT) -> None:
    """Bring each catalog up to its English notebook: new text gets an empty entry, changed text
    a fuzzy one showing the previous English, removed text goes obsolete (#~)."""
    for name in names or course.assignments(root):
        english = notebooks.read(course.notebook_path("solutions", name, root))
        catalog = read_catalog(language, name, root)
        catalog.update(template(english, language, name), update_header_comment=False)
        write_catalog(catalog, catalog_path(language, name, root))


def main(argv: list[str] | None = None) -> int:
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m autograder.editions", description=__doc__)
    parser.add_argument("verb", choices=["update", "check", "build"])
    parser.add_argument("language", choices=LANGUAGES)
    parser.add_argument("assignments", nargs="*")
    args = parser.parse_args(argv)
    try:
        if args.verb == "update":
            update(args.language, args.assignments or None)
        elif args.verb == "check":
            editions(args.language, args.assignments or None)
        else:
            build(args.language, args.assignments or None)
    except TranslationError as error:
        print(error, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
