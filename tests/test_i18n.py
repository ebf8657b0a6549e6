"""The message catalogs: every extracted message has a Korean entry that keeps the English one's
placeholders and code; the committed template, .po and .mo are current; the language follows the
notebook (HOOKLAB_LANG overrides it), in the kernel, in the verifier and in the grading worker."""

from __future__ import annotations

import gettext
import re
import string
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import nbformat
import pytest
from babel.messages.pofile import read_po
from golden import ROOT, restored_notebook

from autograder import i18n
from autograder.exercises.kit.run import PASSED, run_check
from autograder.grade.verifier.host import verify
from autograder.grade.verifier.request import build_request
from autograder.grade.worker.verify import ENAME, Guard

LOCALE = ROOT / "autograder" / "locale"
POT = LOCALE / "hooklab.pot"
KO_PO = LOCALE / "ko" / "LC_MESSAGES" / "hooklab.po"
KO_MO = KO_PO.with_suffix(".mo")
HANGUL = re.compile(r"[\uac00-\ud7a3]")
CODE = re.compile(r"`[^`]*`")


def _catalog(path: Path):
    with path.open("rb") as file:
        return read_po(file)


def _forms(value) -> list[str]:
    return list(value) if isinstance(value, tuple | list) else [value]


def _fields(text: str) -> set[str]:
    """The str.format fields of `text`, with their conversion and format spec ({got!r:>4})."""
    return {
        f"{name}!{conversion}:{spec}"
        for _literal, name, spec, conversion in string.Formatter().parse(text)
        if name is not None
    }


@pytest.fixture(scope="module")
def korean():
    return _catalog(KO_PO)


@pytest.fixture(scope="module")
def template():
    return _catalog(POT)


@pytest.fixture
def language(monkeypatch):
    """A clean language state: no HOOKLAB_LANG, no edition chosen, and both restored after."""
    monkeypatch.delenv(i18n.LANG_ENV, raising=False)
    monkeypatch.setattr(i18n, "_chosen", None)
    return monkeypatch


def test_every_extracted_message_has_a_korean_entry(template, korean):
    missing = []
    for message in template:
        if not message.id:
            continue
        entry = korean.get(message.id)
        if entry is None or entry.fuzzy or not all(_forms(entry.string)):
            missing.append(_forms(message.id)[0])
    assert not missing, f"{len(missing)} messages lack a Korean entry: {missing[:5]}"


def test_korean_entries_keep_the_placeholders_and_code_spans(template, korean):
    wrong = []
    for message in template:
        if not message.id or message.id not in korean:
            continue
        english = _forms(message.id)[-1]  # the plural form has every placeholder
        for translated in _forms(korean[message.id].string):
            if _fields(translated) != _fields(english):
                wrong.append((english, "placeholders", _fields(english) ^ _fields(translated)))
            if set(CODE.findall(translated)) != set(CODE.findall(english)):
                spans = set(CODE.findall(english)) ^ set(CODE.findall(translated))
                wrong.append((english, "code", spans))
    assert not wrong, wrong[:5]


API_WORDS = {"forward hook", "pre-hook"}  # stay English (docs/glossary-ko.md)


def test_korean_entries_are_korean(template, korean):
    """Messages that are only code (`Add()`) or symbols stay as they are; the rest are Hangul."""
    english = []
    for message in template:
        if not message.id or message.id not in korean:
            continue
        text = _forms(message.id)[0]
        prose = CODE.sub("", re.sub(r"\{[^{}]*\}|\w+=\S*", "", text))
        if (
            text not in API_WORDS
            and re.search(r"[a-z]{3,} [a-z]{3,}", prose)
            and not HANGUL.search(_forms(korean[message.id].string)[0])
        ):
            english.append(text)
    assert not english, english[:5]


def test_the_committed_template_is_current(tmp_path, template):
    fresh = tmp_path / "fresh.pot"
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "messages.py"), "extract", str(fresh)],
        check=True,
        cwd=ROOT,
    )
    now = {message.id for message in _catalog(fresh) if message.id}
    committed = {message.id for message in template if message.id}
    assert now == committed, {
        "not in the committed .pot (run `make messages`)": sorted(map(str, now - committed))[:5],
        "gone from the source": sorted(map(str, committed - now))[:5],
    }


def test_the_committed_mo_is_compiled_from_the_po(korean):
    with KO_MO.open("rb") as file:
        compiled = gettext.GNUTranslations(file)
    stale = []
    for message in korean:
        if not message.id:
            continue
        if isinstance(message.id, tuple | list):
            got = compiled.ngettext(*message.id, 1)
        else:
            got = compiled.gettext(message.id)
        if got != _forms(message.string)[0]:
            stale.append(message.id)
    assert not stale, f"{len(stale)} entries differ from the .po (run `make messages`)"


# A check that fails: forward_collect with answer cells that collect nothing. The notebook's
# setup cell says its edition's language: `use_language("en")`, "ko" in the Korean edition
# (autograder/editions.py writes it so); `edition` makes this run that of the Korean edition.
def _failing_forward_collect(edition: str = "en") -> str:
    nb = restored_notebook("forward_hooks", "blank")
    request = build_request(nb, lambda grade_id, hidden: 7)
    namespace: dict = {"__name__": "__main__"}
    for source in request.shared:
        exec(source.replace('use_language("en")', f'use_language("{edition}")'), namespace)
    run = next(e for e in request.exercises if e.grade_id == "forward_collect")
    for source in [*run.setup, run.answer, *run.run]:
        exec(source, namespace)
    outcome = run_check("forward_collect", namespace, hidden=False, seed=7)
    assert outcome.status != PASSED, outcome
    return outcome.message


def test_hooklab_lang_ko_makes_a_failing_check_korean(language):
    english = _failing_forward_collect()
    language.setenv(i18n.LANG_ENV, "ko")
    korean = _failing_forward_collect()
    assert not HANGUL.search(english) and HANGUL.search(korean), (english, korean)


def test_hooklab_lang_en_overrides_the_edition(language):
    english = _failing_forward_collect()
    assert HANGUL.search(_failing_forward_collect(edition="ko"))
    language.setenv(i18n.LANG_ENV, "en")
    assert _failing_forward_collect(edition="ko") == english


def test_a_korean_request_gets_korean_verdicts(language):
    """The verifier (host.verify) answers a notebook of the Korean edition in Korean: the blank
    notebook's verdicts (not done yet) and the solution's (passed) alike, whatever the grader's
    own HOOKLAB_LANG says."""
    language.setenv(i18n.LANG_ENV, "en")
    for case in ("blank", "all_correct"):
        nb = restored_notebook("forward_hooks", case)
        seed = lambda grade_id, hidden: 11  # noqa: E731
        english = verify(build_request(nb, seed))
        korean = verify(build_request(nb, seed, language="ko"))
        assert english.keys() == korean.keys()
        for grade_id, by_check in korean.items():
            for hidden, verdict in by_check.items():
                assert verdict.passed == english[grade_id][hidden].passed
                assert HANGUL.search(verdict.message), (case, grade_id, verdict.message)
                assert not HANGUL.search(english[grade_id][hidden].message)


class _Recording:
    """A stand-in verifier that records the request it is started with and gives no verdict."""

    requests: ClassVar[list] = []

    def __init__(self, request: dict) -> None:
        self.requests.append(request)

    def verdicts(self) -> dict:
        return {}


def _korean_notebook():
    nb = nbformat.read(ROOT / "notebooks" / "forward_hooks" / "forward_hooks.ipynb", 4)
    nb.metadata.setdefault("hooklab", {})["language"] = "ko"
    return nb


def test_the_worker_asks_the_verifier_in_the_notebooks_language(language):
    _Recording.requests.clear()
    guard = Guard("alice", "forward_hooks", "secret", run_verifier=_Recording)
    guard.prepare(_korean_notebook(), executor=type("Executor", (), {})())
    assert [request["language"] for request in _Recording.requests] == ["ko"]


def test_the_workers_notes_are_in_the_notebooks_language(language):
    """A test cell left without a verdict gets a zero note in Korean in a Korean notebook, while
    the instructor's flags stay English."""
    nb = _korean_notebook()
    guard = Guard("alice", "forward_hooks", "secret", run_verifier=_Recording)
    guard.prepare(nb, executor=type("Executor", (), {})())
    for index, cell in enumerate(nb.cells):  # every cell ran, printing nothing
        if cell.cell_type == "code":
            cell.execution_count, cell.outputs = index + 1, []
            guard.replies[index] = "ok"
    flags = guard.verify(nb)
    notes = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.get("ename")]
    assert notes and all(o.ename == ENAME and HANGUL.search(o.evalue) for o in notes), notes[:2]
    english = ("tampering suspected", "This cell scores 0", "the grader")
    assert not [o.evalue for o in notes if any(words in o.evalue for words in english)]
    assert flags and not any(HANGUL.search(flag) for flag in flags), flags[:2]


def test_no_message_is_marked_inside_an_f_string():
    """Babel reads an f-string as one token (Python 3.11) and extracts nothing inside it: a
    `_("...")` there would never reach the catalog, and stay English."""
    import tokenize

    marked = re.compile(r"""\b(?:_|N_|ngettext)\(\s*["']""")
    found = []
    for path in sorted((ROOT / "autograder").rglob("*.py")):
        with path.open("rb") as file:
            for token in tokenize.tokenize(file.readline):
                prefix = token.string[:2].lower()
                if token.type == tokenize.STRING and "f" in prefix and marked.search(token.string):
                    found.append(f"{path.relative_to(ROOT)}:{token.start[0]}")
    assert not found, found


def test_a_tampering_note_is_in_the_notebooks_language():
    """The static scan's finding, written into the answer cell and into its test cell's zero,
    is said in Korean in a Korean notebook, down to what the cell does."""
    nb = _korean_notebook()
    answer = next(c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("solution"))
    answer.source = "import torch\ntorch.allclose = lambda *a, **k: True\n"
    guard = Guard("alice", "forward_hooks", "secret", run_verifier=_Recording)
    guard.prepare(nb, executor=type("Executor", (), {})())
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            cell.execution_count, cell.outputs = index + 1, []
            guard.replies[index] = "ok"
    flags = guard.verify(nb)
    warned = "".join(o.get("text", "") for o in answer.outputs)
    assert "torch.allclose" in warned and HANGUL.search(warned), warned
    assert "changes" not in warned and "tampering" not in warned, warned
    assert any("tampering suspected" in flag and "changes torch.allclose" in flag for flag in flags)
