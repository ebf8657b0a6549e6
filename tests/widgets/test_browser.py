"""The student experience in a real browser: JupyterLab 4 with nbgrader's and ipywidgets'
extensions, driven by Playwright in Debian's headless Chromium.

A student opens a notebook, runs all cells (execution stops at the first unfinished exercise),
answers that exercise, runs its check and sees it pass, in the check's output and in the progress
panel, and opens its hints one at a time. nbgrader's Validate button and formgrader page load;
the CNN notebook's feature-map explorer redraws for each control. Screenshots go to the pytest
tmp folder; their paths are printed (`pytest -s` shows them).
"""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path

import pytest
from golden import answers, make_course
from lab_server import running_lab

from autograder import course, notebooks
from autograder.cli import exercise_order
from autograder.widgets.hints import exercise_hints

pytestmark = pytest.mark.browser
# In CI (which sets CI=true, and whose .ci/run installs Chromium) a missing Playwright or Chromium
# is a failure, not a skip; HOOKLAB_REQUIRE_BROWSER=1 asks for the same elsewhere.
REQUIRED = os.environ.get("CI", "").lower() == "true" or bool(
    os.environ.get("HOOKLAB_REQUIRE_BROWSER")
)
if REQUIRED:
    from playwright import sync_api
else:
    sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect

ASSIGNMENT = "forward_hooks"
EXERCISE = "forward_collect"
EXPLORER_ASSIGNMENT = "cnn_hooks"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
SLOW = 180_000  # ms: two shared cores run the browser, the server and a torch kernel at once

if not Path(CHROMIUM).exists():
    if REQUIRED:
        raise RuntimeError(f"no Chromium at {CHROMIUM}: apt-get install chromium")
    pytest.skip("Debian's chromium is not installed", allow_module_level=True)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    exchange = tmp_path_factory.mktemp("exchange")  # not /usr/local/share: formgrader warns there
    root = make_course(
        tmp_path_factory.mktemp("course"),
        [ASSIGNMENT, EXPLORER_ASSIGNMENT],
        config=f"c.Exchange.root = {str(exchange)!r}",
    )
    # The Korean edition's student notebook, as a Korean class gets it (the committed build).
    korean = Path("ko") / "notebooks" / ASSIGNMENT
    shutil.copytree(course.ROOT / korean, root / korean)
    with running_lab(root, tmp_path_factory.mktemp("jupyter")) as server:
        yield server


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    with sync_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=CHROMIUM,
            args=CHROMIUM_ARGS,
            headless=True,
            viewport={"width": 1280, "height": 1300},
        )
        context.set_default_timeout(SLOW)
        expect.set_options(timeout=SLOW)
        yield context
        context.close()


@pytest.fixture
def shots(tmp_path_factory):
    return tmp_path_factory.mktemp("screenshots")


def cell_index(cell_id: str, assignment: str = ASSIGNMENT) -> int:
    """The position of a cell in the student notebook (JupyterLab numbers its cells this way)."""
    nb = notebooks.read(course.notebook_path("notebooks", assignment))
    return [cell.id for cell in nb.cells].index(cell_id)


def cell(page, cell_id: str, assignment: str = ASSIGNMENT):
    return cell_at(page, cell_index(cell_id, assignment))


def cell_at(page, index: int):
    return page.locator(f".jp-Notebook-cell[data-windowed-list-index='{index}']")


def open_notebook(browser, lab, assignment: str = ASSIGNMENT, release: str = "notebooks"):
    page = browser.new_page()
    # `reset`: a fresh layout, not the tabs an earlier page left open (Run All must not go there).
    page.goto(lab.page(f"lab/tree/{release}/{assignment}/{assignment}.ipynb", "reset"))
    expect(page.locator(".jp-NotebookPanel")).to_have_count(1)
    expect(page.locator(".jp-NotebookPanel")).to_be_visible()
    # The kernel is up when the status bar names it and calls it idle.
    expect(page.locator(".jp-StatusBar-Widget", has_text="Idle").first).to_be_visible()
    return page


def run_menu(page, item: str) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{re.escape(item)}$")).click()


def type_over(page, cell_id: str, text: str) -> None:
    """Replace a cell's source as a student does: click into its editor, select all, type."""
    target = cell(page, cell_id)
    editor = target.locator(".cm-content")
    editor.click()
    # Control+A selects every cell, not the editor's text, unless this cell is being edited.
    expect(target).to_have_class(re.compile(r"\bjp-mod-active\b"))
    expect(page.locator(".jp-Notebook.jp-mod-editMode")).to_have_count(1)
    expect(editor).to_be_focused()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(text)
    for line in text.strip().splitlines():
        expect(editor).to_contain_text(line.strip())


# Records the texts a cell's prompt takes ("[ ]:", "[*]:", "[12]:"), so a run is seen to end.
WATCH_PROMPT = """prompt => {
    prompt.hooklabSeen = [];
    new MutationObserver(() => prompt.hooklabSeen.push(prompt.textContent.trim()))
        .observe(prompt, {childList: true, characterData: true, subtree: true});
}"""
RUN_ENDED = "prompt => prompt.hooklabSeen.includes('[*]:') && prompt.textContent.trim() !== '[*]:'"


def run_cells(page, first_id: str, last_id: str, attempts: int = 3) -> None:
    """Shift+Enter from one code cell down to another (code cells all), each run to its end
    before the next.

    A cell whose request reaches the kernel while it is still aborting what Run All queued behind
    an error is aborted too (ipykernel's stop_on_error; its prompt goes back to "[ ]:"): on a busy
    machine the browser can be that quick. Such a cell is run again.
    """
    for index in range(cell_index(first_id), cell_index(last_id) + 1):
        target = cell_at(page, index)
        prompt = target.locator(".jp-InputPrompt")
        seen = []
        for _ in range(attempts):
            prompt.click()  # selects the cell, in command mode
            expect(target).to_have_class(re.compile(r"\bjp-mod-active\b"))
            expect(page.locator(".jp-Notebook.jp-mod-commandMode")).to_have_count(1)
            prompt.evaluate(WATCH_PROMPT)
            page.keyboard.press("Shift+Enter")
            page.wait_for_function(RUN_ENDED, arg=prompt.element_handle())
            seen = prompt.evaluate("prompt => prompt.hooklabSeen")
            if re.fullmatch(r"\[\d+\]:", prompt.inner_text().strip()):
                break
            print(f"\ncell {index} was aborted (its prompt: {seen}); running it again")
        else:
            raise AssertionError(f"cell {index} never ran in {attempts} tries; its prompt: {seen}")


def test_student_answers_an_exercise_and_sees_it_pass_with_widgets(browser, lab, shots):
    start = time.monotonic()
    page = open_notebook(browser, lab)
    run_menu(page, "Run All Cells")
    # Run All goes through the untouched notebook: each exercise says it is not done yet.
    # The cell's whole output area: a failure shows its message and a one-line error under it.
    check_output = cell(page, f"{EXERCISE}_test").locator(".jp-OutputArea").first
    expect(check_output).to_contain_text(f"{EXERCISE} is not done yet")
    expect(check_output).not_to_contain_text("Traceback")
    progress = cell(page, "progress").locator(".jupyter-widgets.hooklab-progress")
    count = len(exercise_order(ASSIGNMENT, course.ROOT))
    expect(progress).to_contain_text(f"0 of {count} exercises pass")

    # A wrong answer first (a named mistake), run from the answer cell down to its check: its
    # diagnosis, as formatted text. Then the right one, the same way: it passes, no restart.
    fresh = "add = Add()\nanswer = []\n"
    wrong = notebooks.parse_answers(answers(ASSIGNMENT, "tuple_appended"))[EXERCISE]
    type_over(page, EXERCISE, fresh + wrong)
    run_cells(page, EXERCISE, f"{EXERCISE}_test")
    expect(check_output).to_contain_text(f"✗ {EXERCISE}")
    expect(check_output).to_contain_text("tuple")
    expect(check_output).not_to_contain_text("Traceback")
    cell(page, EXERCISE).scroll_into_view_if_needed()
    page.locator(".jp-NotebookPanel").screenshot(path=shots / "exercise_fails.png")

    right = notebooks.parse_answers(answers(ASSIGNMENT, "all_correct"))[EXERCISE]
    type_over(page, EXERCISE, fresh + right)
    run_cells(page, EXERCISE, f"{EXERCISE}_test")
    expect(check_output).to_contain_text(f"✓ {EXERCISE}")
    expect(progress).to_contain_text(f"1 of {count} exercises pass")
    expect(progress.locator("tr", has_text=EXERCISE)).to_contain_text("passed")

    # The hint cell ran once, in Run All: its panel has revealed nothing yet.
    hints = cell(page, f"{EXERCISE}_hints").locator(".hooklab-hints")
    button = hints.locator(".widget-button")
    expect(button).to_have_text(re.compile("Show hint 1 of 3"))
    expect(hints.locator("li")).to_have_count(0)
    button.click()
    expect(hints.locator("li")).to_have_count(1)
    expect(hints.locator("li").first).to_have_text(exercise_hints(EXERCISE)[0].replace("`", ""))
    expect(button).to_have_text(re.compile("Show hint 2 of 3"))
    expect(hints).not_to_contain_text(exercise_hints(EXERCISE)[1].replace("`", ""))

    cell(page, f"{EXERCISE}_hints").scroll_into_view_if_needed()
    page.locator(".jp-NotebookPanel").screenshot(path=shots / "exercise_passes.png")
    progress.screenshot(path=shots / "progress_panel.png")
    print(f"\nscreenshots: {shots}  ({time.monotonic() - start:.0f} s in the notebook)")
    page.close()


def test_a_korean_student_sees_the_diagnostic_and_the_hint_in_korean(browser, lab, shots):
    """The Korean edition (same cells, same ids): Run All, a wrong answer, its check and its
    first hint, all in Korean; API words (tuple's code) stay as written."""
    from autograder.i18n import speaking, translator

    ko = translator("ko")
    page = open_notebook(browser, lab, release="ko/notebooks")
    run_menu(page, "Run All Cells")
    check_output = cell(page, f"{EXERCISE}_test").locator(".jp-OutputArea").first
    not_done = ko("… {grade_id} is not done yet").format(grade_id=EXERCISE)
    assert "not done yet" not in not_done  # the catalog has it
    expect(check_output).to_contain_text(not_done.replace("`", ""))

    fresh = "add = Add()\nanswer = []\n"
    wrong = notebooks.parse_answers(answers(ASSIGNMENT, "tuple_appended"))[EXERCISE]
    type_over(page, EXERCISE, fresh + wrong)
    run_cells(page, EXERCISE, f"{EXERCISE}_test")
    # The diagnosis of a tuple appended whole (kit/compare.py), its placeholders filled in.
    english = (
        "`{what}[{index}]` is a {kind} of {count} ({value}): the whole {kind} went in as one "
        "entry. Hooks receive inputs and gradients as tuples; `{what}` needs the tensors inside "
        "it, one entry each."
    )
    expect(check_output).to_contain_text(f"✗ {EXERCISE}")
    for piece in re.split(r"\{\w+\}", ko(english).replace("`", "")):
        if len(piece.strip()) > 4:
            expect(check_output).to_contain_text(piece.strip())
    expect(check_output).not_to_contain_text("Hooks receive inputs and gradients as tuples")

    hints = cell(page, f"{EXERCISE}_hints").locator(".hooklab-hints")
    expect(hints).to_contain_text(ko("Hints for {grade_id}").format(grade_id=EXERCISE))
    button = hints.locator(".widget-button")
    expect(button).to_have_text(ko("Show hint {number} of {total}").format(number=1, total=3))
    button.click()
    with speaking("ko"):
        first_hint = exercise_hints(EXERCISE)[0].replace("`", "")
    expect(hints.locator("li").first).to_have_text(first_hint)
    assert re.search("[가-힣]", first_hint)

    cell(page, f"{EXERCISE}_hints").scroll_into_view_if_needed()
    page.locator(".jp-NotebookPanel").screenshot(path=shots / "korean_exercise_fails.png")
    print(f"\nscreenshot: {shots / 'korean_exercise_fails.png'}")
    page.close()


def test_nbgrader_validate_button_reports_on_the_notebook(browser, lab, shots):
    page = open_notebook(browser, lab)
    page.locator(".validate-button").click()
    dialog = page.locator(".jp-Dialog")
    expect(dialog).to_contain_text("Validation Results")
    # The untouched exercises do not pass yet; validate names one of their check cells.
    expect(dialog).to_contain_text("forward_add5")
    dialog.screenshot(path=shots / "validate.png")
    print(f"\nscreenshot: {shots / 'validate.png'}")
    page.close()


def test_formgrader_lists_the_assignment(browser, lab, shots):
    page = browser.new_page()
    page.goto(lab.page("formgrader"))
    expect(page.locator("body")).to_contain_text("Manage Assignments")
    expect(page.locator("#main_table, table").first).to_contain_text(ASSIGNMENT)
    page.screenshot(path=shots / "formgrader.png")
    print(f"\nscreenshot: {shots / 'formgrader.png'}")
    page.close()


def test_feature_map_explorer_draws_and_follows_its_controls(browser, lab, shots):
    page = open_notebook(browser, lab, EXPLORER_ASSIGNMENT)
    run_menu(page, "Run All Cells")
    explorer = cell(page, "feature_map_explorer", EXPLORER_ASSIGNMENT).locator(".hooklab-explorer")
    picture = explorer.locator("img")
    expect(picture).to_have_attribute("src", re.compile("."))
    layer = explorer.locator("select")
    expect(layer.locator("option")).to_have_count(6)  # pool runs twice: "pool #1", "pool #2"
    drawn = [picture.get_attribute("src")]
    layer.select_option("block2.0")  # the conv output before the in-place ReLU: signed values
    expect(picture).not_to_have_attribute("src", drawn[-1])
    drawn.append(picture.get_attribute("src"))
    channel, image = explorer.locator(".widget-slider .noUi-handle").all()
    readouts = explorer.locator(".widget-readout")
    opened_on = int(readouts.first.inner_text())  # the first layer's liveliest channel
    for slider in (channel, image):  # a key press moves a slider by one step
        slider.focus()
        page.keyboard.press("ArrowRight")
        expect(picture).not_to_have_attribute("src", drawn[-1])
        drawn.append(picture.get_attribute("src"))
    expect(readouts).to_have_text([str(opened_on + 1), "1"])
    explorer.screenshot(path=shots / "feature_map_explorer.png")
    print(f"\nscreenshot: {shots / 'feature_map_explorer.png'}")
    page.close()
