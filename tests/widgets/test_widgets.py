"""The notebook widgets: hints revealed in order and never in the fallback, progress states that
follow real check results, feature maps that match the layers' real outputs, and text fallbacks
where no widget front end runs (plain Python, and a kernel driven by nbclient like nbconvert)."""

from __future__ import annotations

import contextlib
import io
import re

import nbformat
import pytest
import torch
from golden import answers, cases
from nbclient import NotebookClient
from notebook_runner import ROOT, run_notebook

from autograder import CheckFailed, NotDoneYet, check, course, notebooks
from autograder.cli import exercise_order
from autograder.exercises.cnn_hooks.models import make_digit_cnn
from autograder.widgets import progress, show_hints
from autograder.widgets.explorer import ExplorerPanel, FeatureMapExplorer, capture_feature_maps
from autograder.widgets.hints import HintPanel, Hints, all_hints
from autograder.widgets.progress import FAILED, NOT_DONE, NOT_RUN, PASSED, ProgressPanel

HINTS = all_hints()
SOLUTION_REGION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.DOTALL)
HIDDEN_REGION = re.compile(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", re.DOTALL)
HINTED = ["forward_hooks", "backward_hooks", "module_apply", "cnn_hooks", "hooks_in_practice"]


@pytest.fixture(autouse=True)
def fresh_progress():
    progress.forget()
    progress._panels.clear()
    yield
    progress.forget()
    progress._panels.clear()


# --- hints ---------------------------------------------------------------------------------


def test_hints_are_revealed_one_per_click_in_their_order():
    panel = HintPanel(Hints("demo", ["first `a`", "second", "third"]))
    assert panel.shown.value == "" and panel.button.description == "Show hint 1 of 3"
    seen = []
    for expected_label in ("Show hint 2 of 3", "Show hint 3 of 3", "No more hints"):
        panel.button.click()
        seen.append(re.findall(r"<li>(.*?)</li>", panel.shown.value))
        assert panel.button.description == expected_label
    assert seen == [
        ["first <code>a</code>"],
        ["first <code>a</code>", "second"],
        ["first <code>a</code>", "second", "third"],
    ]
    assert panel.button.disabled
    panel.button.click()  # a click too many changes nothing
    assert panel.hints.revealed == 3


def test_hint_text_is_escaped_as_html():
    hints = Hints("demo", ["compare `a < b` & <script>"])
    hints.reveal_next()
    assert (
        hints.shown_html() == "<ol><li>compare <code>a &lt; b</code> &amp; &lt;script&gt;</li></ol>"
    )


def test_without_a_widget_front_end_hints_are_counted_not_shown():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        show_hints("forward_collect")
    text = out.getvalue()
    assert f"{len(HINTS['forward_collect'])} hints available for forward_collect" in text
    for hint in HINTS["forward_collect"]:
        assert hint not in text


def test_unknown_exercise_or_empty_hints_are_refused():
    with pytest.raises(ValueError, match="no hints"):
        show_hints("no_such_exercise")
    with pytest.raises(ValueError):
        Hints("demo", [])


def test_every_exercise_of_a_notebook_with_hint_cells_has_hints_and_every_hint_an_exercise():
    all_exercises, hint_cells = set(), set()
    for assignment in course.assignments():
        nb = notebooks.read(course.notebook_path("solutions", assignment))
        cells = {cell.id: cell.source for cell in nb.cells}
        exercises = exercise_order(assignment, ROOT)
        all_exercises |= set(exercises)
        for exercise in exercises:
            if f"{exercise}_hints" in cells:
                assert f'show_hints("{exercise}")' in cells[f"{exercise}_hints"]
                hint_cells.add(exercise)
        if hint_cells & set(exercises):  # a notebook with hints has them for every exercise
            assert set(exercises) <= hint_cells, assignment
    for assignment in HINTED:
        assert set(exercise_order(assignment, ROOT)) <= hint_cells, f"{assignment} lacks hints"
    assert hint_cells <= set(HINTS)
    assert set(HINTS) <= all_exercises


def test_no_hint_contains_a_line_of_a_solution_or_hidden_test():
    hint_text = "\n".join(hint for hints in HINTS.values() for hint in hints)
    for assignment in course.assignments():
        source = notebooks.read(course.notebook_path("solutions", assignment))
        # As in the leak test: a line is secret when it appears only inside removed regions.
        public = "\n".join(
            HIDDEN_REGION.sub("", SOLUTION_REGION.sub("", cell.source)) for cell in source.cells
        )
        for cell in source.cells:
            for region in SOLUTION_REGION.findall(cell.source) + HIDDEN_REGION.findall(cell.source):
                for line in map(str.strip, region.splitlines()):
                    if line and not line.startswith("#") and line not in public:
                        assert line not in hint_text, f"hint gives away {cell.id}: {line}"


# --- progress ------------------------------------------------------------------------------


def exercise_states(assignment: str, run) -> dict[str, str]:
    """What the check cells of `run` say about each exercise: passed when its test cell and its
    hidden test cell (if any) passed, "not done yet" when every failure says so, else failed."""
    expected = {}
    for exercise in exercise_order(assignment, ROOT):
        errors = [
            run.results[c] for c in (f"{exercise}_test", f"{exercise}_hidden") if c in run.results
        ]
        failed = [e for e in errors if e is not None]
        if not failed:
            expected[exercise] = PASSED
        elif all(isinstance(e, NotDoneYet) for e in failed):
            expected[exercise] = NOT_DONE
        else:
            expected[exercise] = FAILED
    return expected


@pytest.mark.parametrize(
    ("assignment", "case"),
    [("forward_hooks", "all_correct"), ("forward_hooks", "blank"), ("forward_hooks", "tuple_appended"),
     ("backward_hooks", "grads_swapped"), ("module_apply", "bias_on_every_module")],
)  # fmt: skip
def test_progress_states_follow_the_real_check_results(assignment, case):
    assert (assignment, case) in cases()
    run = run_notebook(assignment, answers(assignment, case))
    panel = ProgressPanel(exercise_order(assignment, ROOT))
    expected = exercise_states(assignment, run)
    assert panel.states() == expected
    if case == "all_correct":
        assert set(expected.values()) == {PASSED}
    if case == "blank":
        assert set(expected.values()) == {NOT_DONE}
    if case not in ("all_correct", "blank"):
        assert FAILED in expected.values()


def test_a_panel_on_screen_redraws_when_a_check_runs():
    panel = ProgressPanel(["forward_bypass", "forward_add5"])
    html = panel.widget()
    progress._panels.append(panel)
    assert "0 of 2 exercises pass" in html.value and NOT_RUN in html.value
    check("forward_bypass", {"fire_count": 2})
    assert "1 of 2 exercises pass" in html.value
    assert panel.states() == {"forward_bypass": PASSED, "forward_add5": NOT_RUN}
    with pytest.raises(CheckFailed, match="forward_bypass"):
        check("forward_bypass", {"fire_count": 3})
    assert panel.states()["forward_bypass"] == FAILED and "0 of 2 exercises pass" in html.value
    assert f"✗ forward_bypass  {FAILED}" in panel.text()


def test_a_hidden_failure_outweighs_a_visible_pass():
    progress._record("demo", False, PASSED)
    assert progress.state("demo") == PASSED
    progress._record("demo", True, FAILED)
    assert progress.state("demo") == FAILED


def test_while_the_grader_runs_the_notebook_the_panel_counts_nothing(monkeypatch, capsys):
    # The grader runs the progress cell before any check: a count there would say "0 of N pass"
    # in the graded copy and the feedback of a full-marks student.
    check("forward_bypass", {"fire_count": 2})
    capsys.readouterr()
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    ProgressPanel(["forward_bypass", "forward_add5"]).show()
    shown = capsys.readouterr().out
    assert shown.strip() and "pass" in shown
    assert not re.search(r"\d+ of \d+", shown) and "forward_bypass" not in shown
    assert progress._panels == []  # nothing left to redraw into a printed text


def test_a_broken_panel_costs_no_points_and_writes_no_stderr():
    class BrokenPanel(ProgressPanel):
        def redraw(self):
            raise RuntimeError("front end gone")

    progress._panels.append(BrokenPanel(["forward_bypass"]))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        check("forward_bypass", {"fire_count": 2})
    assert out.getvalue().startswith("✓ forward_bypass") and "note" not in out.getvalue()
    assert err.getvalue() == ""
    assert progress.state("forward_bypass") == PASSED


# --- feature-map explorer ------------------------------------------------------------------


def test_captured_feature_maps_are_the_layers_real_outputs_and_no_hook_stays():
    torch.manual_seed(0)
    model, images = make_digit_cnn(), torch.rand(5, 1, 16, 16)
    maps = capture_feature_maps(model, images, ["block1.0", "block1", "pool", "block2"])
    with torch.no_grad():  # the same layers run by hand, without hooks
        conv1 = model.block1[0](images)
        block1 = torch.relu(conv1)
        pooled1 = model.pool(block1)
        block2 = torch.relu(model.block2[0](pooled1))
        pooled2 = model.pool(block2)
    # block1.0's output is overwritten by the in-place ReLU after it; the clone kept it.
    assert torch.equal(maps["block1.0"][0], conv1) and (conv1 < 0).any()
    assert torch.equal(maps["block1"][0], block1)
    assert [m.shape for m in maps["pool"]] == [pooled1.shape, pooled2.shape]
    assert torch.equal(maps["pool"][0], pooled1) and torch.equal(maps["pool"][1], pooled2)
    assert torch.equal(maps["block2"][0], block2)
    assert all(not m._forward_hooks for m in model.modules())


def test_explorer_lists_each_call_and_redraws_on_every_control():
    torch.manual_seed(0)
    model, images = make_digit_cnn(), torch.rand(3, 1, 16, 16)
    explorer = FeatureMapExplorer(model, images, ["block1", "pool", "block2"], labels=[7, 1, 4])
    assert list(explorer.views) == ["block1", "pool #1", "pool #2", "block2"]
    assert [explorer.channels(v) for v in explorer.views] == [8, 8, 16, 16]
    panel = ExplorerPanel(explorer)
    first = bytes(panel.image.value)
    assert first.startswith(b"\x89PNG")
    panel.layer.value = "block2"
    panel.channel.value = 15
    after_channel = bytes(panel.image.value)
    assert after_channel != first
    panel.digit.value = 2
    assert bytes(panel.image.value) != after_channel
    panel.layer.value = "pool #1"  # 8 channels: the slider follows
    assert panel.channel.max == 7 and panel.channel.value == 7
    expected = explorer.png("pool #1", 7, 2)
    assert bytes(panel.image.value) == expected


def test_explorer_opens_on_a_channel_that_shows_something():
    torch.manual_seed(0)
    model, images = make_digit_cnn(), torch.rand(2, 1, 16, 16)
    with torch.no_grad():  # channels 0 to 2 of block1 dead: their ReLU output is 0 everywhere
        model.block1[0].weight[:3] = 0
        model.block1[0].bias[:3] = -1
    explorer = FeatureMapExplorer(model, images, ["block1", "block2"])
    panel = ExplorerPanel(explorer)
    shown = explorer.feature_map("block1", panel.channel.value, 0)
    spreads = [float(m.max() - m.min()) for m in explorer.views["block1"][0]]
    assert spreads[:3] == [0.0, 0.0, 0.0]
    assert float(shown.max() - shown.min()) == max(spreads) > 0
    assert "values from" in panel.caption.value
    panel.channel.value = 0
    assert "0 everywhere" in panel.caption.value and "does not respond" in panel.caption.value


def test_the_notebooks_explorer_opens_on_a_live_channel():
    run = run_notebook("cnn_hooks", solutions=True, until="backward_intro")
    examples = run["examples"]
    explorer = FeatureMapExplorer(run["model"], examples, ["block1.0", "block1", "pool", "block2"])
    panel = ExplorerPanel(explorer)
    shown = explorer.feature_map(panel.layer.value, panel.channel.value, panel.digit.value)
    assert shown.max() > shown.min()


def test_explorer_refuses_a_layer_that_never_runs():
    model = make_digit_cnn()
    model.unused = torch.nn.Linear(2, 2)
    with pytest.raises(ValueError, match="did not run"):
        FeatureMapExplorer(model, torch.rand(1, 1, 16, 16), ["unused"])


# --- a real kernel without a widget front end (what nbconvert --execute and nbgrader do) ---


@pytest.mark.nbgrader
def test_under_nbconvert_execute_widgets_leave_text_and_the_progress_text_stays_current():
    student = notebooks.read(course.notebook_path("notebooks", "forward_hooks"))
    filled = notebooks.fill_answers(
        student, notebooks.parse_answers(answers("forward_hooks", "all_correct"))
    )
    wanted = ["setup", "progress", "add_class", "forward_add5_setup", "forward_add5_hints",
              "forward_add5", "forward_add5_run", "forward_add5_test"]  # fmt: skip
    nb = nbformat.v4.new_notebook(cells=[c for c in filled.cells if c.id in wanted])
    nb.metadata = filled.metadata
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    outputs = {cell.id: cell.outputs for cell in nb.cells}
    for cell_id, cell_outputs in outputs.items():
        for output in cell_outputs:
            assert output.output_type != "error" and output.get("name") != "stderr", cell_id

    [panel] = outputs["progress"]
    assert "application/vnd.jupyter.widget-view+json" in panel.data
    lines = panel.data["text/plain"].splitlines()
    assert lines[0] == f"Progress: 1 of {len(exercise_order('forward_hooks', ROOT))} exercises pass"
    assert any(re.fullmatch(rf"\s*✓ forward_add5\s+{PASSED}", line) for line in lines)
    assert any(re.fullmatch(rf"\s*· forward_collect\s+{NOT_RUN}", line) for line in lines)

    [hints] = outputs["forward_add5_hints"]
    assert "application/vnd.jupyter.widget-view+json" in hints.data
    assert hints.data["text/plain"].startswith(f"{len(HINTS['forward_add5'])} hints available")
    saved = nbformat.writes(nb)  # outputs and widget state, as a saved notebook would hold them
    for hint in HINTS["forward_add5"]:
        assert hint not in saved and hint.replace("`", "") not in saved
