"""Does every apply-notebook check accept right answers and name each listed mistake?"""

import re

import pytest
import torch
from golden import ROOT, cases
from golden import answers as answer_file
from notebook_runner import failure, run_notebook
from torch import nn

from autograder import CheckFailed, NotDoneYet, check, notebooks
from autograder.exercises.kit.judge import Suspicious
from autograder.exercises.kit.run import run_check
from autograder.exercises.module_apply import apply_init_bias, apply_linear, apply_nn_init
from autograder.exercises.module_apply.models import make_model, make_tiny_lm

A = "module_apply"
SEED_TASKS = ["apply_init_ones", "apply_add_bias", "apply_init_bias", "apply_linear"]
ISINSTANCE = "isinstance(module, (Function_A, Function_B, Function_C, Function_D))"
ADD_BIAS = f"""# %% apply_add_bias
def add_bias(module):
    if {ISINSTANCE}:
        module.b = Parameter(torch.rand(2))

returned_module = model.apply(add_bias)
"""
INIT_BIAS = f"""# %% apply_init_bias
def weight_initialization(module):
    if {ISINSTANCE}:
        module.W.data.fill_(1.0)
        module.b.data.fill_(1.0)

returned_module = model.apply(weight_initialization)
"""


def case(name: str) -> str:
    return answer_file(A, name)


def cells(*grade_ids: str) -> set[str]:
    return {f"{g}_{kind}" for g in grade_ids for kind in ("test", "hidden")}


def init_ones(condition: str, prelude: str = "", body: str = "module.W.fill_(1.0)") -> str:
    return f"""# %% apply_init_ones
{prelude}
def weight_initialization(module):
    if {condition}:
        with torch.no_grad():
            {body}

returned_module = model.apply(weight_initialization)
"""


def linear(body: str) -> str:
    return f"""# %% apply_linear
def linear_transformation(module):
    {body}

returned_module = model.apply(linear_transformation)
"""


def nn_init(body: str) -> str:
    return f"# %% apply_nn_init\ndef init_weights(module):\n    {body}\n\nnet = net.apply(init_weights)\n"


def source_of(cell_id: str) -> str:
    nb = notebooks.read(ROOT / "solutions" / A / f"{A}.ipynb")
    return next(cell.source for cell in nb.cells if cell.id == cell_id)


# ---- the whole notebook ----------------------------------------------------------------------


def test_notebook_classes_behave_like_the_checkers_copies():
    run = run_notebook(A, solutions=True, until="apply_nn_init_setup")
    mine, reference = run["Model"](), make_model()
    reference.load_state_dict(mine.state_dict())
    x = torch.rand(1, 2)
    assert torch.equal(mine(x), reference(x))
    names = [[type(m).__name__ for m in model.modules()] for model in (mine, reference)]
    assert names[0] == names[1]
    net, reference = run["TinyLM"](), make_tiny_lm()
    reference.load_state_dict(net.state_dict())
    tokens = torch.randint(0, 500, (2, 5))
    assert torch.equal(net(tokens), reference(tokens))


def test_the_order_quiz_answer_is_what_torch_does_on_the_notebooks_model():
    run = run_notebook(A, solutions=True, until="apply_order_reveal")
    visited = []
    run["Model"]().apply(lambda module: visited.append(type(module).__name__))
    assert run["predicted_order"] == visited
    assert visited[-1] == "Model" and len(visited) == 7  # structural: post-order, 7 modules


def test_the_reveal_does_not_call_pre_order_the_reverse_of_apply_order():
    model = make_model()
    visited = []
    model.apply(lambda module: visited.append(type(module).__name__))
    listed = [type(module).__name__ for module in model.modules()]
    assert listed != visited[::-1]  # why "the other way round" was wrong
    reveal = source_of("apply_order_reveal")
    assert "other way round" not in reveal and "not apply's order reversed" in reveal
    assert ", ".join(f"`{name}`" for name in listed[:3]) in reveal.replace("\n", " ")
    assert ", ".join(f"`{name}`" for name in visited[::-1][:3]) in reveal.replace("\n", " ")


def test_running_an_answer_cell_again_never_piles_up():
    # Each answer cell starts from a fresh model (Exercise 5 from the same Parameters on fresh
    # modules), as a student reruns it.
    answers = ("apply_init_ones", "apply_add_bias", "apply_init_bias", "apply_linear")
    run = run_notebook(A, solutions=True, until="apply_nn_init_intro", rerun=answers)
    assert run.errors == {}
    assert all(error is None for error in run.results.values()), run.results
    hooks = [len(m._forward_hooks) for m in run["model"].modules() if hasattr(m, "W")]
    assert hooks == [1, 1, 1, 1]


def test_a_wrong_hook_from_an_earlier_run_stays_behind():
    run = run_notebook(A, solutions=True, until="apply_linear")
    answer = source_of("apply_linear")
    wrong = re.sub(
        r"### BEGIN SOLUTION\n.*### END SOLUTION\n",
        "if isinstance(module, Function_D):\n"
        "        module.register_forward_hook(lambda m, i, o: o.nonexistent)\n",
        answer,
        flags=re.DOTALL,
    )
    for source in (wrong, answer, source_of("apply_linear_run")):
        exec(source, run)
    check("apply_linear", run)
    check("apply_linear", run, hidden=True)


def test_the_chained_exercises_prepare_what_they_continue_from():
    run = run_notebook(A, solutions=True, until="apply_order_intro")  # the shared cells
    apply_init_bias.prepare(run)
    model = run["model"]
    assert isinstance(model, run["Model"]) and run["returned_module"] is model
    biases = [dict(m.named_parameters(recurse=False)).get("b") for m in model.modules()]
    assert sum(b is not None and b.shape == (2,) for b in biases) == 4
    apply_linear.prepare(run)
    assert all(torch.equal(p, torch.ones_like(p)) for p in run["model"].parameters())


# ---- seed 001 and the accepted variants --------------------------------------------------------


def test_seed001_answers_pasted_whole_get_full_marks_with_a_shape_note():
    run = run_notebook(A, case("seed001_answers"), until="apply_nn_init_intro")
    assert run.passed() >= cells(*SEED_TASKS)
    assert "changed shape from (2, 2) to (1,)" in run.stdout


@pytest.mark.parametrize(
    ("condition", "prelude"),
    [
        ("module.__class__.__name__.split('_')[0] == 'Function'", ""),
        (ISINSTANCE, ""),
        (
            "isinstance(module, FUNCTIONS)",
            "FUNCTIONS = (Function_A, Function_B, Function_C, Function_D)",
        ),
        ("type(module) in (Function_A, Function_B, Function_C, Function_D)", ""),
    ],
)
def test_every_way_of_selecting_the_function_modules_is_accepted(condition, prelude):
    run = run_notebook(A, init_ones(condition, prelude), until="apply_add_bias_intro")
    assert run.passed() >= cells("apply_init_ones"), run.results


@pytest.mark.parametrize(
    "body",
    [
        "if isinstance(module, (Function_A, Function_B, Function_C, Function_D)):\n"
        "        module.register_forward_hook(lambda m, i, o: i[0] @ m.W + m.b)",
        "if isinstance(module, (Function_A, Function_B, Function_C, Function_D)):\n"
        "        module.forward = lambda x: x @ module.W.T + module.b",
    ],
    ids=["x @ W + b", "forward replaced on the instance"],
)
def test_either_reading_and_any_route_for_linear_pass(body):
    run = run_notebook(A, ADD_BIAS + INIT_BIAS + linear(body), until="apply_nn_init_intro")
    assert run.passed() >= cells("apply_linear")


# ---- mistakes ---------------------------------------------------------------------------------

NOT_D = ["held for Function_A", "not for Function_D (model.cd.d)", "misses some"]


@pytest.mark.parametrize(
    ("name", "cell_ids", "phrases"),
    [
        ("bias_plain_tensor", cells("apply_add_bias"), ["plain tensor, not a Parameter"]),
        ("bias_wrong_shape", cells("apply_add_bias"), ["should have shape (2,)", "shape (1,)"]),
        (
            "bias_on_every_module",
            cells("apply_add_bias"),
            ["not Function modules", "Layer_AB (model.ab)", "replaced Function_B"],
        ),
        ("bias_shared_parameter", cells("apply_add_bias"), ["share one Parameter"]),
        (
            "name_test_misses_function_d",
            cells("apply_init_ones", "apply_add_bias", "apply_init_bias", "apply_linear"),
            NOT_D,
        ),
        ("chained_add_bias_misses_function_d", cells("apply_add_bias"), NOT_D),
        ("returned_module_not_model", cells("apply_init_ones"), ["should be `model` itself"]),
        (
            "init_replaces_with_plain_tensor",
            cells("apply_init_bias"),
            ["TypeError: cannot assign", "refuses to replace it by a plain tensor", "in place"],
        ),
        (
            "init_fill_without_no_grad",
            cells("apply_init_bias"),
            ["leaf Variable", "torch.no_grad()"],
        ),
        (
            "init_bias_new_parameters",
            cells("apply_init_bias"),
            ["new objects in place of the Parameters `W` and `b`", "in place", "optimizer"],
        ),
        (
            "init_ones_plain_tensor",
            cells("apply_init_ones"),
            ["`W` is a plain tensor, no longer a registered Parameter", "model.parameters()"],
        ),
        (
            "condition_matches_nothing",
            cells("apply_init_ones"),
            ["changed nothing", "Layer_AB (model.ab)", "none of them did the condition"],
        ),
        (
            "linear_hook_no_return",
            cells("apply_linear"),
            ["what the original Function modules compute", "returning the new value"],
        ),
        ("linear_assumes_ones", {"apply_linear_hidden"}, ["four affine maps", "symmetric"]),
        ("wrong_predictions", {"apply_order_test"}, ["model.modules()", "pre-order"]),
        (
            "init_by_class_name",
            cells("apply_nn_init"),
            ["name test", "Head (net.head)", "NonDynamicallyQuantizableLinear (net.attn.out_proj)"],
        ),
        ("init_touches_layernorm", cells("apply_nn_init"), ["changed LayerNorm (net.norm)"]),
        ("init_ignores_bias_none", cells("apply_nn_init"), ["bias=False", "is not None"]),
    ],
)
def test_each_listed_mistake_is_named(name, cell_ids, phrases):
    run = run_notebook(A, case(name))
    for cell_id in cell_ids:
        message = failure(run, cell_id)
        for phrase in phrases:
            assert phrase in message, (cell_id, message)


@pytest.mark.parametrize(
    ("assignment", "name"), [(a, c) for a, c in cases() if a in (A, "backward_hooks")]
)
def test_no_named_submission_meets_a_checker_error(assignment, name):
    run = run_notebook(assignment, answer_file(assignment, name))
    for cell_id, error in run.results.items():
        assert "could not" not in getattr(error, "message", ""), (cell_id, error.message)


def test_no_module_matched_is_said_only_when_the_condition_never_held():
    # The `if` holds for the four Function modules, but the code under it changes a copy.
    body = "module.W.clone().fill_(1.0)"
    message = failure(
        run_notebook(A, init_ones(ISINSTANCE, body=body), until="apply_add_bias_intro"),
        "apply_init_ones_test",
    )
    assert "changed nothing" not in message and "did not set `W` to 1" in message


def test_a_plain_tensor_hiding_the_parameter_is_named():
    body = "module.__dict__['W'] = torch.ones(2, 2)"
    run = run_notebook(A, init_ones(ISINSTANCE, body=body), until="apply_add_bias_intro")
    for cell_id in cells("apply_init_ones"):
        assert "hides the registered Parameter `W`" in failure(run, cell_id)


def test_the_fix_comes_with_the_failure_but_not_in_its_message():
    run = run_notebook(A, case("bias_plain_tensor"), until="apply_add_bias_test")
    outcome = run_check("apply_add_bias", run)
    assert outcome.status == "failed" and "plain tensor" in outcome.message
    assert "Parameter(torch.rand(2))" in outcome.fix
    assert "Parameter(torch.rand(2))" not in outcome.message


def test_parameters_turned_into_buffers_get_a_fix_for_both():
    buffers = case("init_bias_new_parameters").replace(
        "        module.W = Parameter(torch.ones(2, 2))\n        module.b = Parameter(torch.ones(2))",
        "        del module.W, module.b\n"
        "        module.register_buffer('W', torch.ones(2, 2))\n"
        "        module.register_buffer('b', torch.ones(2))",
    )
    run = run_notebook(A, buffers, until="apply_init_bias_test")
    outcome = run_check("apply_init_bias", run)
    assert outcome.status == "failed" and "`W` and `b` should stay registered" in outcome.message
    assert "module.W.fill_(1.0)" in outcome.fix and "module.b.fill_(1.0)" in outcome.fix


def test_wrong_std_is_reported_with_the_measured_statistics():
    body = (
        "if isinstance(module, (nn.Linear, nn.Embedding)):\n"
        "        nn.init.normal_(module.weight, mean=0.0, std=0.2)\n"
        "    if isinstance(module, nn.Linear) and module.bias is not None:\n"
        "        nn.init.zeros_(module.bias)"
    )
    run = run_notebook(A, nn_init(body))
    for cell_id in cells("apply_nn_init"):
        message = failure(run, cell_id)
        assert "not normal with mean 0 and std 0.02" in message
        assert re.search(r"Linear \(net\.mlp\): weight mean [-0-9.]+, std 0\.(19|20)", message)


# ---- chained tasks are graded on their own -------------------------------------------------------


def test_a_wrong_add_bias_costs_nothing_later_and_is_noted():
    run = run_notebook(A, case("chained_add_bias_misses_function_d"), until="apply_nn_init_intro")
    assert not run.passed() & cells("apply_add_bias")
    assert cells("apply_init_bias", "apply_linear") <= run.passed()
    assert run.stdout.count("Function_D (model.cd.d) has no b, because add_bias") == 2


# ---- hard-coded and patched answers ------------------------------------------------------------


def test_a_hook_right_only_for_the_notebooks_ones_passes_visible_and_fails_hidden():
    run = run_notebook(A, case("linear_assumes_ones"), until="apply_nn_init_intro")
    assert run.results["apply_linear_test"] is None, run.results["apply_linear_test"]
    assert isinstance(run.results["apply_linear_hidden"], CheckFailed)


def test_forged_notebook_values_with_functions_that_do_nothing_are_not_done():
    run = run_notebook(A, case("hard_coded_and_patched"), until="apply_nn_init_intro")
    for cell_id in cells(*SEED_TASKS):
        assert isinstance(run.results[cell_id], NotDoneYet), (cell_id, run.results[cell_id])


# ---- hidden checks: fresh inputs, and the notebook left as it was --------------------------------

RECORDING_LINEAR = """
seen = []

def linear_transformation(module):
    def hook(module, input, output):
        seen.append(input[0].detach().clone())
        return input[0] @ module.W.T + module.b

    if isinstance(module, FUNCTIONS):
        module.register_forward_hook(hook)

FUNCTIONS = (Function_A, Function_B, Function_C, Function_D)
"""


def test_hidden_checks_draw_fresh_inputs_and_leave_the_notebook_as_it_was():
    run = run_notebook(A, solutions=True, until="apply_nn_init_intro")
    exec(RECORDING_LINEAR, run)
    notebook_classes = {name: run[name] for name in ("Function_A", "Model", "FUNCTIONS")}
    hooks_before = len(run["model"].ab.a._forward_hooks)
    inputs = []
    for _ in range(2):
        run["seen"].clear()
        check("apply_linear", run, hidden=True)
        inputs.append(list(run["seen"]))
    shapes = {tuple(t.shape) for t in inputs[0]}
    assert {(2,), (1, 2)} <= shapes
    assert not any(torch.equal(a, b) for a in inputs[0] for b in inputs[1] if a.shape == b.shape)
    assert all(run[name] is value for name, value in notebook_classes.items())
    assert len(run["model"].ab.a._forward_hooks) == hooks_before


def test_hidden_init_check_uses_models_of_other_sizes():
    run = run_notebook(A, solutions=True)
    seen = []
    original = run["init_weights"]

    def recording(module):
        seen.append(tuple(module.weight.shape) if isinstance(module, torch.nn.Embedding) else None)
        original(module)

    run["init_weights"] = recording
    check("apply_nn_init", run, hidden=True)
    assert len({shape for shape in seen if shape}) == 2


# ---- the judge of apply_nn_init --------------------------------------------------------------


def _lm_init(std: float, *, norms: bool = False, bias: bool = True):
    def init(module):
        kinds = (nn.Linear, nn.Embedding, nn.LayerNorm) if norms else (nn.Linear, nn.Embedding)
        if isinstance(module, kinds):
            nn.init.normal_(module.weight, mean=0.0, std=std)
        if bias and isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    return init


@pytest.mark.parametrize(
    ("init", "words"),
    [
        (_lm_init(0.02), None),
        (_lm_init(0.2), "is not normal(0, 0.02)"),
        (_lm_init(0.02, norms=True), "norm.weight is not exactly 1.0"),
        (_lm_init(0.02, bias=False), "mlp.bias is not exactly 0.0"),
        (lambda module: None, "embed.weight is not normal"),
    ],
)
def test_the_nn_init_judge_judges_the_sampled_distribution(init, words):
    """Evidence of a wrong init (as a check fooled in the kernel would record) is refused."""
    nets = apply_nn_init.fresh_lms(torch.Generator().manual_seed(7), hidden=True)
    for net in nets:
        net.apply(init)
    evidence = {f"fresh{t}": apply_nn_init.lm_evidence(net) for t, net in enumerate(nets)}
    if words is None:
        apply_nn_init.judge_hidden(torch.Generator().manual_seed(7), evidence)
        return
    with pytest.raises(Suspicious, match=re.escape(words)):
        apply_nn_init.judge_hidden(torch.Generator().manual_seed(7), evidence)
