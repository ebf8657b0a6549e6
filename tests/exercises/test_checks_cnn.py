"""Does every CNN-notebook check accept right answers and name each listed mistake, with the
right cause?"""

import os
import random

os.environ["MPLBACKEND"] = "Agg"  # the notebook plots; in-process runs must not need a display

import matplotlib.pyplot as plt
import pytest
import torch
import torch.nn.functional as F
from golden import answers
from notebook_runner import run_notebook

from autograder import CheckFailed, NotDoneYet, check
from autograder.exercises.cnn_hooks import activation_recorder
from autograder.exercises.cnn_hooks.common import manual_forward
from autograder.exercises.cnn_hooks.grad_cam import cam_cases
from autograder.exercises.cnn_hooks.models import make_digit_cnn
from autograder.exercises.kit.hooks import hooks_left
from autograder.exercises.kit.run import FAILED, run_check

A = "cnn_hooks"
IDS = ("activation_recorder", "gradient_recorder", "grad_cam")
NEXT = {"activation_recorder": "gradient_recorder_intro", "gradient_recorder": "grad_cam_intro"}


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def solved():
    return run_notebook(A, solutions=True)


def failure(run, cell_id: str) -> str:
    error = run.results[cell_id]
    assert isinstance(error, CheckFailed), f"{cell_id} passed or crashed: {error!r}"
    assert not isinstance(error, NotDoneYet), f"{cell_id}: {error.message}"
    return error.message


def section(case: str, grade_id: str) -> str:
    text = answers(A, case)
    return text[text.index(f"# %% {grade_id}") :].split("\n# %% ")[0]


def test_solution_notebook_passes_every_check(solved):
    assert solved.errors == {}
    assert set(solved.results) == {f"{g}_{k}" for g in IDS for k in ("test", "hidden")}
    assert all(error is None for error in solved.results.values()), solved.results


def test_student_notebook_says_not_done_yet_everywhere_and_its_demos_cope():
    run = run_notebook(A)
    assert run.errors == {}  # the run cells and demos say "nothing to show" for the stubs
    assert run.results
    for cell_id, error in run.results.items():
        assert isinstance(error, NotDoneYet), f"{cell_id}: {error!r}"
    assert "Nothing to plot until Exercise 3 is done" in run.stdout


MISTAKES = [
    ("not_detached", "activation_recorder", "is not detached"),
    ("detach_without_clone", "activation_recorder", "overwrote the conv's output"),
    ("one_entry_per_module", "activation_recorder", "runs 2 times in one forward"),
    ("hooks_left_registered", "activation_recorder", "still registered after"),
    ("activations_without_finally", "activation_recorder", "when the model's forward raises"),
    ("notebook_digit_hard_coded", "activation_recorder", "works on the notebook's `digit`"),
    ("hooks_left_registered", "gradient_recorder", "still registered after"),
    ("tensor_hook_after_inplace", "gradient_recorder", "gradient w.r.t. the ReLU's output"),
    ("all_scores_backward", "gradient_recorder", "sum of all ten class scores"),
    ("full_backward_hook_inplace", "gradient_recorder", "`tensor.register_hook`"),
    ("gradients_of_inputs", "gradient_recorder", "w.r.t. the layer's input"),
    ("cam_keeps_batch_dim", "grad_cam", "extra dimensions of size 1"),
    ("cam_without_relu", "grad_cam", "ReLU is missing"),
    ("cam_upsampled", "grad_cam", "that is the image's size"),
    ("cam_softmax", "grad_cam", "softmax probability"),
    ("notebook_digit_hard_coded", "grad_cam", "works on the notebook's `digit`"),
]


@pytest.mark.parametrize(
    ("case", "grade_id", "phrase"), MISTAKES, ids=[f"{m[0]}-{m[1]}" for m in MISTAKES]
)
def test_named_mistakes_get_their_cause_in_both_checks(case, grade_id, phrase):
    run = run_notebook(A, section(case, grade_id), until=NEXT.get(grade_id, "summary"))
    for cell in (f"{grade_id}_test", f"{grade_id}_hidden"):
        assert phrase in failure(run, cell), failure(run, cell)


def test_other_mistakes_are_named():
    right = answers(A, "all_correct")
    wrong = (
        right.replace("records[name].append(output.detach().clone())", "records[name].append(output[0].detach().clone())")
        .replace("    if cam.max() > 0:\n        cam = cam / cam.max()\n", "")
    )  # fmt: skip
    run = run_notebook(A, wrong)
    assert "has shape (8, 16, 16), expected (1, 8, 16, 16)" in failure(
        run, "activation_recorder_test"
    )
    assert "not normalised" in failure(run, "grad_cam_test")
    assert "not normalised" in failure(run, "grad_cam_hidden")
    assert {"gradient_recorder_test", "gradient_recorder_hidden"} <= run.passed()


def test_the_copy_a_first_message_leaves_out_comes_as_the_fix():
    run = run_notebook(
        A, section("detach_without_clone", "activation_recorder"), until="gradient_recorder_intro"
    )
    outcome = run_check("activation_recorder", run)
    assert outcome.status == FAILED and outcome.fix == activation_recorder.FIX_COPY
    assert ".clone()" not in outcome.message


def test_a_stale_result_in_the_notebook_says_which_cell_to_run_again():
    run = run_notebook(A, answers(A, "all_correct"), until="gradient_recorder_intro")
    run["activations"] = {name: [] for name in run["layer_names"]}  # an earlier version's result
    outcome = run_check("activation_recorder", run)
    assert outcome.status == FAILED
    assert "Run the cell under your answer again" in outcome.message
    stale = run["model"].block1.register_forward_hook(lambda *args: None)
    try:
        outcome = run_check("activation_recorder", run)
        assert "still carries hooks" in outcome.message and "model = DigitCNN()" in outcome.message
    finally:
        stale.remove()


def test_a_full_backward_hook_works_where_nothing_is_in_place():
    # The same hook is right for layers whose output no in-place op touches: only the ReLU is at fault.
    full = section("full_backward_hook_inplace", "gradient_recorder")
    run = run_notebook(A, full, until="gradient_recorder_run")
    fn, model = run["record_gradients"], make_digit_cnn()
    x = torch.randn(2, 1, 16, 16)
    got = fn(model, x, 3, ["block2", "fc"])
    outputs, _, logits = manual_forward(model, x)
    expected = torch.autograd.grad(logits[:, 3].sum(), [outputs["block2"][0], logits])
    assert torch.allclose(got["block2"], expected[0]) and torch.allclose(got["fc"], expected[1])


# Seeds 43 and 284 once drew three hidden cases whose raw maps had no negative part, where a
# Grad-CAM without the ReLU gives the right map and so passed the hidden check.
@pytest.mark.parametrize("seed", [43, 284, *range(8)])
def test_every_seed_draws_a_hidden_case_that_catches_the_missing_relu(seed):
    run = run_notebook(A, section("cam_without_relu", "grad_cam"), until="grad_cam_run")
    without_relu = run["grad_cam"]
    cases = cam_cases(torch.Generator().manual_seed(seed))
    assert len(cases) == 3
    assert not all(
        torch.allclose(without_relu(model, layer, x, class_index), cam, atol=1e-6)
        for model, layer, x, class_index, cam in cases
    )


# The visible check's fresh case once showed no negative part in about one seed of three: a
# Grad-CAM without the ReLU passed there, and its wrong map in the notebook was called stale.
@pytest.fixture(scope="module")
def without_relu():
    return run_notebook(A, section("cam_without_relu", "grad_cam"), until="grad_cam_test")


@pytest.mark.parametrize("seed", range(12))
def test_the_visible_check_never_calls_a_missing_relu_a_stale_result(without_relu, seed):
    outcome = run_check("grad_cam", without_relu, seed=seed)
    assert outcome.status == FAILED
    assert "ReLU is missing" in outcome.message
    assert "right on a fresh model" not in outcome.message, outcome.message


# A map enlarged to the image's size is right on block1, which keeps the image's resolution; a
# clean clone's seed once drew three block1 cases and gave cam_upsampled the hidden points.
@pytest.mark.parametrize("seed", range(32))
def test_every_seed_draws_a_hidden_case_that_catches_an_enlarged_map(seed):
    run = run_notebook(A, section("cam_upsampled", "grad_cam"), until="grad_cam_run")
    enlarged = run["grad_cam"]
    cases = cam_cases(torch.Generator().manual_seed(seed))
    assert any(
        enlarged(model, layer, x, class_index).shape != cam.shape
        for model, layer, x, class_index, cam in cases
    )


def test_hidden_checks_leave_the_notebook_as_it_was(solved):
    model = solved["model"]
    before = {name: [t.clone() for t in ts] for name, ts in solved["activations"].items()}
    weights = [p.detach().clone() for p in model.parameters()]
    for grade_id in IDS:
        check(grade_id, solved, hidden=True)
    assert hooks_left(model) == []
    assert all(p.grad is None for p in model.parameters())
    assert all(torch.equal(a, b) for a, b in zip(weights, model.parameters(), strict=True))
    for name, tensors in solved["activations"].items():
        assert all(torch.equal(a, b) for a, b in zip(tensors, before[name], strict=True))


def test_hidden_checks_draw_fresh_inputs(solved):
    seen = []

    def spy(model, x, layer_names):
        seen.append(x.clone())
        return solved["record_activations"](model, x, layer_names)

    for _ in range(2):
        check("activation_recorder", {"record_activations": spy}, hidden=True)
    inputs = [x for x in seen if x.shape[1] == 1]  # not the inputs made to raise (3 channels)
    assert len(inputs) == 6
    assert len({(tuple(x.shape), x.flatten()[0].item()) for x in inputs}) == 6


def test_hidden_cases_follow_torchs_seed_not_pythons(solved):
    # The notebook seeds torch; Python's `random` differs in every kernel. Regrading the same
    # submission must draw the same cases, so that it gets the same messages.
    def cases_drawn(python_seed):
        seen = []

        def spy(model, x, layer_names):
            seen.append((tuple(x.shape), x.flatten()[:3].tolist(), model.fc.weight.shape))
            return solved["record_activations"](model, x, layer_names)

        random.seed(python_seed)
        torch.manual_seed(1)
        check("activation_recorder", {"record_activations": spy}, hidden=True)
        return seen

    assert cases_drawn(python_seed=1) == cases_drawn(python_seed=2)


def test_checker_forward_matches_the_model():
    for size in (8, 12, 16):
        model, x = make_digit_cnn((3, 5), size), torch.randn(2, 1, size, size)
        _, _, logits = manual_forward(model, x)
        assert torch.allclose(logits, model(x), atol=1e-6)


def test_notebook_gradients_and_cam_match_autograd(solved):
    # Computed here from scratch: a hook-free forward with separate (not in-place) ReLUs.
    model, x, cls = solved["model"], solved["digit"], solved["predicted_class"]
    c1 = model.block1[0](x)
    r1 = torch.relu(c1)
    c2 = model.block2[0](F.max_pool2d(r1, 2))
    r2 = torch.relu(c2)
    logits = model.fc(F.max_pool2d(r2, 2).flatten(1))
    g_c1, g_r1, g_c2, g_r2 = torch.autograd.grad(logits[0, cls], [c1, r1, c2, r2])
    got = solved["gradients"]
    for name, want in {"block1.0": g_c1, "block1": g_r1, "block2.0": g_c2, "block2": g_r2}.items():
        assert torch.allclose(got[name], want, atol=1e-6), name
    assert not torch.allclose(g_c1, g_r1)  # the in-place pitfall is real for this digit
    cam = torch.relu((g_r2.mean(dim=(2, 3), keepdim=True) * r2).sum(1))[0]
    assert torch.allclose(solved["cam"], cam / cam.max(), atol=1e-6)
    assert solved["cam"].shape == (8, 8)
    assert len(solved["activations"]["pool"]) == 2
    assert torch.allclose(solved["activations"]["block1.0"][0], c1, atol=1e-6)


def test_notebook_model_behaves_like_the_checkers_copy(solved):
    notebook_model, reference = solved["DigitCNN"](), make_digit_cnn()
    reference.load_state_dict(notebook_model.state_dict())
    x = torch.randn(3, 1, 16, 16)
    assert torch.equal(notebook_model(x), reference(x))
