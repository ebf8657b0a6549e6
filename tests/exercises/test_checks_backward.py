"""Does every backward-notebook check accept right answers and name each listed mistake?"""

import pytest
import torch
from golden import ROOT
from golden import answers as answer_file
from notebook_runner import failure, run_notebook

from autograder import check
from autograder.exercises.backward_hooks.models import make_model
from autograder.exercises.kit.run import run_check

A = "backward_hooks"
HOOK_EXERCISES = ("backward_collect", "tensor_hook_W", "tensor_hook_scale", "backward_normalize")
# Forward runs before any gradient exists, and backward starts at output: these four come first.
ORDER = ["pre_hook", "forward", "forward_hook", "output_hook"]


def case(name: str) -> str:
    return answer_file(A, name)


def hook_cell(grade_id: str, body: str, register: str) -> str:
    return f"# %% {grade_id}\n{body}\n\n{register}\n"


def collect(body: str, register: str = "model.register_full_backward_hook(module_hook)") -> str:
    return hook_cell(
        "backward_collect",
        f"def module_hook(module, grad_input, grad_output):\n    {body}",
        register,
    )


def w_hook(body: str, register: str = "model.W.register_hook(tensor_hook)") -> str:
    return hook_cell("tensor_hook_W", f"def tensor_hook(grad):\n    {body}", register)


def scale(body: str, register: str = "x1.register_hook(double_grad)") -> str:
    return hook_cell("tensor_hook_scale", f"def double_grad(grad):\n    {body}", register)


def normalize(body: str) -> str:
    return hook_cell(
        "backward_normalize",
        f"def normalize_hook(module, grad_input, grad_output):\n    {body}",
        "model.register_full_backward_hook(normalize_hook)",
    )


def both(run, grade_id: str) -> list[str]:
    """The messages of the visible and the hidden check of `grade_id` (both must have failed)."""
    return [failure(run, f"{grade_id}_test"), failure(run, f"{grade_id}_hidden")]


# ---- the whole notebook ----------------------------------------------------------------------


def test_student_notebook_has_no_solution_text():
    text = (ROOT / "notebooks" / A / f"{A}.ipynb").read_text()
    for secret in ["answer.extend(grad_input)", "grad * 2", "/ total", '"x1 * x2", "W"']:
        assert secret not in text
    assert "BEGIN HIDDEN TESTS" not in text


def test_solution_values_match_hand_computed_gradients():
    run = run_notebook(A, solutions=True, until="backward_collect_test")
    x1, x2, w = run["x1"].detach(), run["x2"].detach(), run["model"].W.detach()
    expected = [x2 * w, x1 * w, torch.ones(1)]
    assert all(torch.allclose(g, e) for g, e in zip(run["answer"], expected, strict=True))


def test_running_an_answer_cell_again_never_stacks_hooks():
    # Each answer cell starts from a fresh Model (or fresh inputs), as a student reruns it.
    run = run_notebook(A, solutions=True, until="deprecated_intro", rerun=HOOK_EXERCISES)
    assert run.errors == {}
    assert all(error is None for error in run.results.values()), run.results
    assert len(run["model"]._backward_hooks) == 1  # backward_normalize's model
    run = run_notebook(A, solutions=True, until="tensor_hook_scale_run", rerun=HOOK_EXERCISES)
    assert len(run["x1"]._backward_hooks) == 1


def test_notebook_model_behaves_like_the_checkers_copy():
    run = run_notebook(A, solutions=True, until="backward_collect_intro")
    notebook_model, reference = run["Model"](), make_model()
    x1, x2 = torch.rand(3, requires_grad=True), torch.rand(3, requires_grad=True)
    assert torch.equal(notebook_model(x1, x2), reference(x1, x2))
    assert torch.equal(notebook_model.W, reference.W)


# ---- answers for the original course, and hooks of any name --------------------------------------


def test_original_answers_pasted_whole():
    run = run_notebook(A, case("seed001_answers"), until="tensor_hook_scale_intro")
    assert run.passed() == {
        "backward_collect_test",
        "backward_collect_hidden",
        "tensor_hook_W_test",
        "tensor_hook_W_hidden",
    }
    run = run_notebook(A, case("seed000_answers"), until="tensor_hook_scale_intro")
    assert run.passed() == {"backward_collect_test", "backward_collect_hidden"}
    for message in both(run, "tensor_hook_W"):
        assert "0-d tensor" in message and "shape (1,)" in message and "`extend`" in message


def test_hooks_are_found_by_what_is_registered_whatever_their_names():
    run = run_notebook(A, case("original_names"), until="deprecated_intro")
    assert run.passed() == {f"{g}_{kind}" for g in HOOK_EXERCISES for kind in ("test", "hidden")}


# ---- backward_collect ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answers", "phrase"),
    [
        (
            collect("answer.extend(grad_output); answer.extend(grad_input)"),
            "grad_output came before grad_input",
        ),
        (
            collect("answer.append(grad_input); answer.append(grad_output)"),
            "went in as one entry",
        ),
        (collect("answer.extend(grad_input)"), "Missing: output.grad"),
        (
            collect("answer.extend(grad_input + grad_output + grad_output)"),
            "Appears more than once: output.grad",
        ),
        (collect("print(grad_input)"), "added nothing to `answer`"),
        (
            collect(
                "answer.extend(grad_input); answer.extend(grad_output)",
                "model.register_backward_hook(module_hook)",
            ),
            "deprecated `register_backward_hook`",
        ),
        (
            collect("answer.extend(grad_input); answer.extend(grad_output)", "pass"),
            "no full backward hook is registered on `model`",
        ),
        (
            collect("answer.extend(grad_input); answer.extend(grad_output)\n    return grad_input"),
            "",  # returning grad_input unchanged changes nothing: right
        ),
    ],
)
def test_backward_collect_mistakes(answers, phrase):
    run = run_notebook(A, answers, until="tensor_hook_W_intro")
    if not phrase:
        assert {"backward_collect_test", "backward_collect_hidden"} <= run.passed()
        return
    for message in both(run, "backward_collect"):
        assert phrase in message, message


def test_deprecated_message_explains_why_and_what_to_run():
    answers = collect(
        "answer.extend(grad_input); answer.extend(grad_output)",
        "model.register_backward_hook(module_hook)",
    )
    message = failure(
        run_notebook(A, answers, until="tensor_hook_W_intro"), "backward_collect_test"
    )
    assert "last autograd operation" in message and "output * self.W" in message
    assert "register_full_backward_hook(module_hook)" in message
    assert "answer cell again" in message and "Restart" not in message


def test_hooks_registered_twice_in_one_cell_are_named():
    run = run_notebook(A, case("registered_twice"), until="backward_normalize_intro")
    for message in both(run, "backward_collect") + both(run, "tensor_hook_W"):
        assert "registered 2 times" in message and "answer cell again" in message
    for message in both(run, "tensor_hook_scale"):
        assert "4 times autograd's" in message and "registered 2 times on `x1`" in message


def test_hard_coded_answers_pass_visible_but_not_hidden():
    run = run_notebook(A, case("notebook_values_hard_coded"), until="deprecated_intro")
    for gid in HOOK_EXERCISES:
        assert f"{gid}_test" in run.passed()
        assert "On a fresh Model" in failure(run, f"{gid}_hidden")


def test_patching_the_class_passes_visible_but_not_hidden():
    run = run_notebook(A, case("patched_class"), until="backward_normalize_intro")
    assert "tensor_hook_scale_test" in run.passed()
    assert "unchanged" in failure(run, "tensor_hook_scale_hidden")


def test_hidden_checks_leave_the_notebook_as_it_was():
    run = run_notebook(A, case("all_correct"), until="backward_collect_hidden")
    answer, before = run["answer"], list(run["answer"])
    hooks = dict(run["model"]._backward_hooks)
    check("backward_collect", run, hidden=True)
    assert run["answer"] is answer and run["answer"] == before
    assert dict(run["model"]._backward_hooks) == hooks

    run = run_notebook(A, case("all_correct"), until="tensor_hook_scale_hidden")
    x1_grad, x1_hooks = run["x1"].grad.clone(), dict(run["x1"]._backward_hooks)
    check("tensor_hook_scale", run, hidden=True)
    assert torch.equal(run["x1"].grad, x1_grad) and dict(run["x1"]._backward_hooks) == x1_hooks


def test_hidden_checks_draw_fresh_models_and_inputs():
    spy = collect(
        "seen.append(grad_input[0].clone()); answer.extend(grad_input); answer.extend(grad_output)"
    )
    spy = spy.replace("def module_hook", "seen = []\n\ndef module_hook")
    run = run_notebook(A, spy, until="backward_collect_test")
    notebook_grad = run["x1"].grad.clone()
    seen_before = len(run["seen"])  # the notebook's own backward, and the visible check's
    for _ in range(2):
        check("backward_collect", run, hidden=True)
    hidden = run["seen"][seen_before:]
    assert len(hidden) == 6
    values = {round(g.item(), 6) for g in hidden}
    assert len(values) == 6 and round(notebook_grad.item(), 6) not in values


# ---- tensor_hook_W ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answers", "phrases"),
    [
        (
            w_hook("answer.append(grad)", "model.register_full_backward_hook(tensor_hook)"),
            ["no hook is registered on `model.W`", "registered on the module `model`"],
        ),
        (w_hook("answer.append(grad)", "pass"), ["no hook is registered on `model.W`"]),
        (w_hook("answer.append(grad)\n    return grad * 2"), ["changed W's gradient"]),
        (w_hook("print(grad)"), ["added nothing to `answer`"]),
    ],
)
def test_tensor_hook_w_mistakes(answers, phrases):
    run = run_notebook(A, answers, until="tensor_hook_scale_intro")
    for message in both(run, "tensor_hook_W"):
        assert all(phrase in message for phrase in phrases), message


# ---- tensor_hook_scale -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answers", "phrases"),
    [
        (scale("grad = grad * 2"), ["returns None", "Assigning to `grad`"]),
        (scale("grad *= 2\n    return grad"), ["in place"]),
        (scale("grad.mul_(2)"), ["in place"]),
        (scale("print(grad)"), ["returns None"]),
        (scale("return grad"), ["unchanged"]),
        (
            scale("return grad * 2", "x2.register_hook(double_grad)"),
            ["registered on `x2`, not on `x1`"],
        ),
        (
            scale(
                "return grad * 2", "x1.register_hook(double_grad)\nx2.register_hook(double_grad)"
            ),
            ["x2.grad", "only x1 should carry"],
        ),
        (scale("return grad * 3"), ["expected x1.grad = 2 × autograd's"]),
        (scale("return grad * 2", "pass"), ["no hook is registered on `x1`"]),
    ],
)
def test_tensor_hook_scale_mistakes(answers, phrases):
    run = run_notebook(A, answers, until="backward_normalize_intro")
    for message in both(run, "tensor_hook_scale"):
        assert all(phrase in message for phrase in phrases), message


def test_expected_scale_is_twice_hand_computed_gradient():
    run = run_notebook(A, solutions=True, until="tensor_hook_scale_test")
    w = run["model"].W.detach()
    assert torch.allclose(run["x1"].grad, 2 * run["x2"].detach() * w)
    assert torch.allclose(run["x2"].grad, run["x1"].detach() * w)


# ---- backward_normalize ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answers", "phrases"),
    [
        (
            normalize(
                "total = grad_input[0] + grad_input[1]\n    grad_input = (grad_input[0] / total, grad_input[1] / total)"
            ),
            ["returns None", "Assigning to `grad_input`"],
        ),
        (
            normalize(
                "total = grad_input[0] + grad_input[1]\n    for g in grad_input:\n        g /= total"
            ),
            ["in place"],
        ),
        (
            normalize("return (grad_input[0] / (grad_input[0] + grad_input[1]),)"),
            ["returns 1 value(s)", "so 2"],
        ),
        (
            normalize("return grad_input[0] / (grad_input[0] + grad_input[1])"),
            ["returns one tensor", "in a tuple"],
        ),
        (
            normalize("return (grad_input[0] * 0 + 0.5, grad_input[1] * 0 + 0.5)"),
            ["x1.grad / x2.grad"],
        ),
        (normalize("return (grad_input[0] / 10, grad_input[1] / 10)"), ["expected 1"]),
        (normalize("return grad_input"), ["unchanged"]),
        (normalize("return (None, None)"), ["x1.grad = None"]),
    ],
)
def test_backward_normalize_mistakes(answers, phrases):
    run = run_notebook(A, answers, until="deprecated_intro")
    for message in both(run, "backward_normalize"):
        assert all(phrase in message for phrase in phrases), message


def test_a_list_is_accepted_where_pytorch_accepts_it():
    answers = normalize("total = sum(grad_input)\n    return [g / total for g in grad_input]")
    run = run_notebook(A, answers, until="deprecated_intro")
    assert {"backward_normalize_test", "backward_normalize_hidden"} <= run.passed()


def test_the_fix_comes_with_the_failure_but_not_in_its_message():
    run = run_notebook(A, case("normalize_in_place"), until="backward_normalize_test")
    outcome = run_check("backward_normalize", run)
    assert outcome.status == "failed" and "in place" in outcome.message
    assert "/ total" in outcome.fix and "/ total" not in outcome.message


def test_normalize_registered_twice_is_still_right():
    # Normalizing twice changes nothing: the second hook divides by a sum that is already 1.
    answers = normalize(
        "total = grad_input[0] + grad_input[1]\n    return (grad_input[0] / total, grad_input[1] / total)"
    ).replace(
        "model.register_full_backward_hook(normalize_hook)",
        "model.register_full_backward_hook(normalize_hook)\n"
        "model.register_full_backward_hook(normalize_hook)",
    )
    run = run_notebook(A, answers, until="deprecated_intro")
    assert {"backward_normalize_test", "backward_normalize_hidden"} <= run.passed()
    x1, x2 = run["x1"].detach(), run["x2"].detach()
    assert torch.allclose(run["x1"].grad, x2 / (x1 + x2))  # x1.grad ∝ x2 * W, x2.grad ∝ x1 * W


# ---- deprecated_quiz -------------------------------------------------------------------------


def hand_computed_deprecated_answer() -> list[str]:
    # With x1 = 2, x2 = 3, W = 5 the old hook sits on `product * W` with product = 6: the
    # gradient w.r.t. the product is W = 5 and the one w.r.t. W is the product, 6.
    run = run_notebook(A, solutions=True, until="deprecated_quiz_intro")
    by_value = {5.0: "x1 * x2", 6.0: "W", 15.0: "x1", 10.0: "x2", 1.0: "output"}
    return [by_value[g.item()] for g in run["seen"][0]]


def test_deprecated_quiz_expects_what_torch_does():
    expected = hand_computed_deprecated_answer()
    assert expected == ["x1 * x2", "W"]
    for spelling in (expected, ["x1*x2", "w"], tuple(expected)):
        run = run_notebook(
            A,
            f"# %% deprecated_quiz\ndeprecated_grad_input = {list(spelling)!r}",
            until="event_order_intro",
        )
        assert "deprecated_quiz_test" in run.passed(), run.results


@pytest.mark.parametrize(
    ("value", "phrase"),
    [
        ('["x1", "x2"]', "grad_input[0] is not the gradient w.r.t. 'x1'"),
        ('["x1 * x2", "x2"]', "grad_input[1] is not"),
        ('["x1 * x2", "W", "output"]', "you listed 3 name(s)"),
        ('["x1 * x2", "bias"]', "'bias' is not one of"),
        ('"x1 * x2, W"', "should be a list"),
    ],
)
def test_deprecated_quiz_mistakes_point_to_the_demo_without_the_answer(value, phrase):
    run = run_notebook(
        A, f"# %% deprecated_quiz\ndeprecated_grad_input = {value}", until="event_order_intro"
    )
    message = failure(run, "deprecated_quiz_test")
    assert phrase in message
    if "one of" not in phrase and "a list" not in phrase:
        assert "Run the demo" in message
        assert "'x1 * x2', 'W'" not in message and "2 entries" not in message


# ---- event_order -----------------------------------------------------------------------------


def actual_events() -> list[str]:
    """What torch does, from the notebook's own set-up function (not the checker's copy)."""
    run = run_notebook(A, solutions=True, until="event_order_task")
    return run["record_events"]()


def predict(order) -> str:
    return f"# %% event_order\npredicted_order = {list(order)!r}"


def test_event_order_matches_the_notebooks_own_run():
    actual = actual_events()
    assert actual[: len(ORDER)] == ORDER and sorted(actual) == sorted(
        [*ORDER, "backward_pre_hook", "W_hook", "backward_hook", "x1_hook"]
    )
    assert "event_order_test" in run_notebook(A, predict(actual)).passed()


def test_event_order_names_the_first_wrong_step_without_the_answer():
    actual = actual_events()
    for index in range(len(actual) - 1):
        order = list(actual)
        order[index], order[index + 1] = order[index + 1], order[index]
        message = failure(run_notebook(A, predict(order)), "event_order_test")
        assert message.startswith(f"step {index + 1} is wrong"), message
        assert repr(order[index]) in message and repr(actual[index]) not in message
        assert "the cell under this check" in message


@pytest.mark.parametrize(
    ("order", "phrase"),
    [
        (["pre_hook", "forward", "backward"], "'backward' is not an event name"),
        (["pre_hook", "forward"], "Missing: forward_hook"),
        (["pre_hook"] * 8, "More than once: pre_hook"),
    ],
)
def test_event_order_malformed_predictions(order, phrase):
    assert phrase in failure(run_notebook(A, predict(order)), "event_order_test")


# ---- warnings --------------------------------------------------------------------------------


def test_a_torch_warning_does_not_reach_stderr(capfd):
    run = run_notebook(A, case("correct_but_torch_warns"), until="tensor_hook_W_test")
    capfd.readouterr()
    check("tensor_hook_W", run)
    check("tensor_hook_W", run, hidden=True)
    captured = capfd.readouterr()
    assert "UserWarning" in captured.out and "do not cost points" in captured.out
    assert captured.err == ""


def test_deprecated_registration_warning_stays_out_of_the_check_cell(capfd):
    run = run_notebook(A, case("all_correct"), until="deprecated_quiz_test")
    capfd.readouterr()
    check("deprecated_quiz", run)
    captured = capfd.readouterr()
    assert captured.err == "" and "note:" not in captured.out
