"""Does every apply-notebook check accept right answers and name each listed mistake?"""

import re

import pytest
import torch
from golden import answers as answer_file
from notebook_runner import failure, run_notebook

from autograder import CheckFailed, check
from autograder.models.apply import make_model, make_tiny_lm

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


def init_ones(condition: str, prelude: str = "") -> str:
    return f"""# %% apply_init_ones
{prelude}
def weight_initialization(module):
    if {condition}:
        with torch.no_grad():
            module.W.fill_(1.0)

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
            cells("apply_init_ones", "apply_add_bias") | {"apply_init_bias_hidden"},
            ["Function_D (model.cd.d)", "misses some"],
        ),
        (
            "name_test_misses_function_d",
            {"apply_linear_hidden"},
            ["Function_D (model.cd.d) still computes its own operation", "misses some"],
        ),
        (
            "chained_add_bias_misses_function_d",
            {"apply_init_bias_test", "apply_linear_test"},
            ["Function_D (model.cd.d)", "add_bias (the exercise above) did not add it"],
        ),
        ("returned_module_not_model", {"apply_init_ones_test"}, ["should be `model` itself"]),
        (
            "init_replaces_with_plain_tensor",
            cells("apply_init_bias"),
            [
                "TypeError: cannot assign",
                "refuses to replace a registered Parameter",
                ".data.fill_(1.)",
            ],
        ),
        (
            "init_fill_without_no_grad",
            cells("apply_init_bias"),
            ["leaf Variable", "torch.no_grad()"],
        ),
        (
            "linear_hook_no_return",
            cells("apply_linear"),
            ["what the original Function modules compute", "return"],
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


def test_a_wrong_add_bias_costs_nothing_in_the_later_hidden_tests():
    run = run_notebook(A, case("chained_add_bias_misses_function_d"), until="apply_nn_init_intro")
    assert not run.passed() & cells("apply_add_bias")
    assert {"apply_init_bias_hidden", "apply_linear_hidden"} <= run.passed()


# ---- hard-coded and patched answers ------------------------------------------------------------


@pytest.mark.parametrize("name", ["hard_coded_and_patched", "linear_assumes_ones"])
def test_answers_right_only_in_the_notebook_pass_visible_and_fail_hidden(name):
    run = run_notebook(A, case(name), until="apply_nn_init_intro")
    tasks = SEED_TASKS if name == "hard_coded_and_patched" else ["apply_linear"]
    for task in tasks:
        assert run.results[f"{task}_test"] is None, run.results[f"{task}_test"]
        assert isinstance(run.results[f"{task}_hidden"], CheckFailed)


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
