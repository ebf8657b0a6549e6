"""The Korean edition (ko/): built from the English solutions and translations/ko/, nothing else.

Every cell has a current translation or nothing a student reads; a Korean code cell is the English
one but for its strings and comments; a stale entry stops the build; the committed ko/ files are
what the build writes; and under stock nbgrader the Korean solutions score full marks and the
untouched Korean student notebooks zero.
"""

import ast
import re
import shutil
import warnings
from concurrent.futures import ThreadPoolExecutor

import nbformat
import pytest
from golden import ROOT, answers, cases, expected_scores

from autograder import course, editions, gradebook, notebooks
from autograder.cli import main

ASSIGNMENTS = course.assignments()  # a notebook without a catalog fails: nothing is translated
KO = editions.edition_root("ko")
HANGUL = re.compile(r"[\uac00-\ud7a3]")


def english(assignment):
    return notebooks.read(course.notebook_path("solutions", assignment))


def korean(folder, assignment, root=KO):
    return notebooks.read(course.notebook_path(folder, assignment, root))


class _Shape(ast.NodeTransformer):
    """Strings emptied; an f-string reduced to its fields, in any order (a Korean sentence puts
    them where its word order wants them)."""

    def visit_Constant(self, node):
        return ast.Constant("") if isinstance(node.value, str) else node

    def visit_JoinedStr(self, node):
        fields = [self.visit(v) for v in node.values if isinstance(v, ast.FormattedValue)]
        return ast.JoinedStr(sorted(fields, key=ast.dump))


def code_shape(source: str) -> str:
    """The cell's syntax tree but for its strings (comments are not in it)."""
    return ast.dump(_Shape().visit(ast.parse(source)))


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_cell_has_a_current_translation_or_nothing_to_translate(assignment):
    catalog = editions.read_catalog("ko", assignment)
    assert editions.problems(english(assignment), catalog) == []
    for cell in english(assignment).cells:
        if cell.cell_type == "markdown":
            message = catalog.get(cell.source, context=cell.id)
            assert HANGUL.search(message.string), f"{cell.id} is not in Korean"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_translations_say_hook_as_korean_pytorch_users_do(assignment):
    text = "\n".join(m.string for m in editions.read_catalog("ko", assignment) if m.id)
    assert "훅" not in text  # the glossary (docs/korean-edition.md): hook stays hook


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_korean_code_is_the_english_code_but_for_strings_and_comments(assignment):
    source, edition = english(assignment), korean("solutions", assignment)
    assert [(c.id, c.cell_type) for c in edition.cells] == [
        (c.id, c.cell_type) for c in source.cells
    ]
    for en, ko in zip(source.cells, edition.cells, strict=True):
        assert ko.metadata == en.metadata, en.id
        if en.cell_type == "code":
            assert code_shape(ko.source) == code_shape(en.source), en.id
            # nbgrader's region markers, kept byte for byte
            markers = re.compile(r"^\s*#+ (BEGIN|END) .*$", re.M)
            assert markers.findall(ko.source) == markers.findall(en.source), en.id
    assert edition.metadata["hooklab"]["language"] == "ko"
    setup = next(c for c in edition.cells if c.id == "setup")
    assert 'use_language("ko")' in setup.source
    assert 'use_language("en")' in next(c for c in source.cells if c.id == "setup").source


def test_code_shape_sees_a_changed_name_or_call():
    assert code_shape('print("a")  # x') == code_shape('print("나")  # 나')
    assert code_shape('print("a")') != code_shape('print("a" + str(1))')
    assert code_shape("hook(m, i, o)") != code_shape("hook(m, o)")
    assert code_shape('f"{a} and {b:.2f}"') == code_shape('f"{b:.2f}인데 {a}"')
    assert code_shape('f"{a} and {b}"') != code_shape('f"{a}와 {b + 1}"')


@pytest.fixture
def small_course(tmp_path):
    """A course of one assignment with its Korean catalog, to be changed by a test."""
    shutil.copytree(ROOT / "solutions" / "forward_hooks", tmp_path / "solutions" / "forward_hooks")
    shutil.copytree(ROOT / "translations", tmp_path / "translations")
    return tmp_path


def edit_english(root, cell_id, change):
    path = course.notebook_path("solutions", "forward_hooks", root)
    nb = notebooks.read(path)
    cell = next(c for c in nb.cells if c.id == cell_id)
    cell.source = change(cell.source)
    notebooks.write(nb, path)


@pytest.mark.parametrize(
    ("cell_id", "change", "reported"),
    [
        ("add_intro", lambda s: s.replace("tiny", "small"), "add_intro: '## The `Add` module'"),
        (
            "forward_collect",
            lambda s: s.replace("hooks from an earlier run are gone", "old hooks go"),
            "forward_collect: '# a fresh Add",
        ),
        ("demo_first_hooks", lambda s: s + '\nprint("a new label")', "'\"a new label\"'"),
    ],
    ids=["markdown", "comment", "new string"],
)
def test_a_stale_or_missing_translation_stops_the_build_and_is_named(
    small_course, cell_id, change, reported
):
    editions.write_solutions("ko", root=small_course)  # the committed catalog fits
    built = course.notebook_path("solutions", "forward_hooks", small_course / "ko")
    before = built.read_bytes()
    edit_english(small_course, cell_id, change)
    with pytest.raises(editions.TranslationError) as raised:
        editions.write_solutions("ko", root=small_course)
    assert reported in str(raised.value)
    assert built.read_bytes() == before, "a stale edition was written"


def test_update_keeps_what_fits_and_marks_the_changed_entry_fuzzy(small_course):
    edit_english(small_course, "add_intro", lambda s: s.replace("tiny", "very small"))
    editions.update("ko", ["forward_hooks"], root=small_course)
    catalog = editions.read_catalog("ko", "forward_hooks", small_course)
    intro = next(m for m in catalog if m.context == "add_intro")
    assert intro.fuzzy and "very small" in intro.id and HANGUL.search(intro.string)
    # the translator sees the English it was made from
    po = editions.catalog_path("ko", "forward_hooks", small_course).read_text(encoding="utf-8")
    assert re.search(r"^#\| msgid .*this tiny module", po, re.M)
    problems = editions.problems(english_of(small_course), catalog)
    assert problems == ["add_intro: '## The `Add` module': marked fuzzy, to be checked"]


def english_of(root):
    return notebooks.read(course.notebook_path("solutions", "forward_hooks", root))


def test_a_translation_that_would_add_code_is_refused(small_course):
    path = editions.catalog_path("ko", "forward_hooks", small_course)
    text = path.read_text(encoding="utf-8")
    path.write_text(
        text.replace('msgstr "\\"첫 번째로 등록\\""', 'msgstr "\\"첫\\" + str(1)"'),
        encoding="utf-8",
    )
    with pytest.raises(editions.TranslationError, match=r"hook_order_demo.*not a string"):
        editions.write_solutions("ko", root=small_course)


@pytest.fixture(scope="module")
def built_course(tmp_path_factory):
    """The course copied (English solutions, catalogs, both configs) and the edition built."""
    root = tmp_path_factory.mktemp("course")
    shutil.copytree(ROOT / "solutions", root / "solutions")
    shutil.copytree(ROOT / "translations", root / "translations")
    shutil.copy(ROOT / "nbgrader_config.py", root)
    (root / "ko").mkdir()
    shutil.copy(KO / "nbgrader_config.py", root / "ko")
    editions.build("ko", ASSIGNMENTS, root=root)
    return root


@pytest.mark.nbgrader
@pytest.mark.parametrize("folder", ["solutions", "notebooks"])
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_committed_korean_notebooks_are_what_the_build_writes(built_course, folder, assignment):
    fresh = course.notebook_path(folder, assignment, built_course / "ko")
    committed = course.notebook_path(folder, assignment, KO)
    assert fresh.read_bytes() == committed.read_bytes(), f"ko/{folder}/{assignment} is stale"
    assert {p.name for p in fresh.parent.iterdir()} == {p.name for p in committed.parent.iterdir()}
    nb = notebooks.read(committed)
    nbformat.validate(nb)
    assert committed.read_text(encoding="utf-8") == notebooks.canonical(nb)
    ids = [cell.id for cell in nb.cells]
    assert len(ids) == len(set(ids))
    assert all(c.outputs == [] for c in nb.cells if c.cell_type == "code")


@pytest.fixture(scope="module")
def graded(built_course):
    """The Korean solution and untouched student notebook of every assignment, graded by stock
    `nbgrader autograde` in ko/, one assignment per core, each with its own gradebook copy."""
    root = built_course / "ko"
    for assignment in ASSIGNMENTS:
        course.submit(korean("solutions", assignment, root), "solution", assignment, root)
        course.submit(korean("notebooks", assignment, root), "untouched", assignment, root)

    def autograde(assignment):
        own = root / f"gradebook-{assignment}.db"
        shutil.copy(root / "gradebook.db", own)
        course.autograde(assignment, root=root, db_url=f"sqlite:///{own}")
        return assignment, gradebook.scores(f"sqlite:///{own}", assignment)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return root, dict(pool.map(autograde, ASSIGNMENTS))


@pytest.mark.nbgrader
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_korean_solution_notebook_scores_full_marks_under_stock_nbgrader(graded, assignment):
    root, scores = graded
    cells = scores[assignment]["solution"]
    assert cells and all(c.score == c.max_score for c in cells), cells
    executed = notebooks.read(course.notebook_path("autograded/solution", assignment, root))
    for cell in executed.cells:
        for output in cell.get("outputs", []):
            assert output.output_type != "error", f"{cell.id}: {output.get('evalue')}"
            # matplotlib's warning for a letter its fonts lack, drawn as an empty box
            assert "missing from font" not in output.get("text", ""), f"{cell.id}: tofu"


@pytest.mark.nbgrader
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_untouched_korean_student_notebook_scores_zero_without_crashing(graded, assignment):
    root, scores = graded
    assert all(cell.score == 0 for cell in scores[assignment]["untouched"])
    executed = notebooks.read(course.notebook_path("autograded/untouched", assignment, root))
    assert executed.metadata["hooklab"]["language"] == "ko"
    for cell in executed.cells:
        errors = [o for o in cell.get("outputs", []) if o.output_type == "error"]
        if cell.metadata.get("nbgrader", {}).get("grade"):
            assert errors, f"{cell.id} has no error output"
            assert errors[0].ename == "NotDoneYet", f"{cell.id}: {errors[0].ename}"
            assert "Traceback" not in "\n".join(errors[0].traceback), cell.id
        else:
            assert not errors, f"{cell.id} crashed: {errors[0].evalue}"


@pytest.fixture(scope="module")
def engine_graded(built_course, tmp_path_factory):
    """Every named submission, its answers filled into the Korean student notebook, graded by
    `hooklab autograde` in a copy of the built ko/ course."""
    parent = tmp_path_factory.mktemp("engine")
    shutil.copy(built_course / "nbgrader_config.py", parent)
    root = parent / "ko"
    for name in ("solutions", "notebooks", "nbgrader_config.py", "gradebook.db"):
        source = built_course / "ko" / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, root / name)
    for assignment, case in cases():
        nb = course.answered_notebook(answers(assignment, case), assignment, root)
        course.submit(nb, case, assignment, root)
    db = f"sqlite:///{root / 'gradebook.db'}"
    assert main(["--root", str(root), "autograde", *ASSIGNMENTS, "-j", "2", "--db", db]) == 0
    return root, {assignment: gradebook.scores(db, assignment) for assignment in ASSIGNMENTS}


@pytest.mark.nbgrader
@pytest.mark.parametrize(("assignment", "case"), cases(), ids=[f"{a}/{c}" for a, c in cases()])
def test_named_submission_scores_in_the_korean_edition_as_in_the_english(
    engine_graded, assignment, case
):
    _, scores = engine_graded
    got = {cell.cell: cell.score for cell in scores[assignment][case]}
    assert got == expected_scores(assignment, case)


def verdict_lines(cell) -> list[str]:
    """What a graded cell tells the student: its errors and its ✓ / ✗ lines."""
    lines = []
    for output in cell.get("outputs", []):
        if output.output_type == "error":
            lines.append(f"{output.ename}: {output.evalue}")
        text = output.get("text", "")
        lines += [line for line in text.splitlines() if line.startswith(("✓", "✗"))]
    return lines


@pytest.mark.nbgrader
@pytest.mark.parametrize(("assignment", "case"), cases(), ids=[f"{a}/{c}" for a, c in cases()])
def test_a_korean_notebook_gets_its_verdicts_in_korean(engine_graded, assignment, case):
    root, _ = engine_graded
    nb = notebooks.read(course.notebook_path(f"autograded/{case}", assignment, root))
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade"):
            english = [line for line in verdict_lines(cell) if not HANGUL.search(line)]
            assert not english, f"{cell.id}: {english}"


def test_figures_get_a_hangul_font_in_the_korean_edition_only(monkeypatch):
    import matplotlib as mpl
    from matplotlib import font_manager
    from matplotlib.figure import Figure

    from autograder.plot_fonts import HANGUL_FAMILIES, installed, use_plot_fonts

    def no_font_listing(*args, **kwargs):
        raise AssertionError("the English edition listed the machine's fonts")

    with mpl.rc_context():
        before = list(mpl.rcParams["font.family"])
        monkeypatch.setenv("HOOKLAB_LANG", "en")
        with monkeypatch.context() as english:
            english.setattr(font_manager, "findSystemFonts", no_font_listing)
            use_plot_fonts()
        assert mpl.rcParams["font.family"] == before
        monkeypatch.setenv("HOOKLAB_LANG", "ko")
        use_plot_fonts()
        found = installed(HANGUL_FAMILIES)
        assert found, "no Hangul font installed (Debian: fonts-nanum)"
        assert mpl.rcParams["font.family"] == [*before, *found]
        figure = Figure()
        figure.subplots().set_title("block2의 입력: feature map 8개")
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a missing glyph is a UserWarning
            figure.canvas.draw()


IDENTIFIER = re.compile(r"(?<![A-Za-z0-9_.])[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+(?![A-Za-z0-9_])")


def _identifiers_lost(catalog) -> list[tuple[str, str]]:
    """(name, translation) for every snake_case name of an English text that its translation
    no longer has as it is (a glossary word put inside it: `record_그래디언트s`)."""
    lost = []
    for message in catalog:
        if not message.id or not message.string:
            continue
        source, text = (
            (message.id[0], message.string[0])
            if isinstance(message.id, tuple)
            else (message.id, message.string)
        )
        for name in set(IDENTIFIER.findall(source)):
            if not re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", text):
                lost.append((name, text))
    return lost


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_names_in_the_code_stay_as_they_are_in_the_translations(assignment):
    assert _identifiers_lost(editions.read_catalog("ko", assignment)) == []


def test_names_in_the_code_stay_as_they_are_in_the_checks_messages():
    from babel.messages.pofile import read_po

    path = ROOT / "autograder" / "locale" / "ko" / "LC_MESSAGES" / "hooklab.po"
    with path.open("rb") as file:
        assert _identifiers_lost(read_po(file)) == []
