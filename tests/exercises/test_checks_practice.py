"""Does every hooks-in-practice check accept right answers and name each listed mistake?"""

import pytest
import torch
from golden import answers as answer_file
from notebook_runner import failure, run_notebook

from autograder import check, notebooks
from autograder.checks.practice_memory import kept_alive, storage_bytes, watch_saved
from autograder.models.practice import make_block, make_mlp, make_tiny_gpt

A = "hooks_in_practice"
EXERCISES = [
    "dead_relu_stats",
    "grad_clip_hook",
    "optimizer_in_backward",
    "kwargs_always_call",
    "activation_memory",
    "init_weights",
]


def case(name: str) -> str:
    return answer_file(A, name)


def cells(*grade_ids: str) -> set[str]:
    return {f"{g}_{kind}" for g in grade_ids for kind in ("test", "hidden")}


def with_section(grade_id: str, code: str) -> str:
    """The all_correct answers with one exercise replaced by `code`."""
    answers = notebooks.parse_answers(case("all_correct"))
    answers[grade_id] = code
    return "\n".join(f"# %% {g}\n{source}\n" for g, source in answers.items())


def assert_named(answers: str, cell_ids: set[str], phrases: list[str]) -> None:
    run = run_notebook(A, answers)
    for cell_id in cell_ids:
        message = failure(run, cell_id)
        for phrase in phrases:
            assert phrase in message, (cell_id, message)
    others = cells(*EXERCISES) - cells(*{c.rpartition("_")[0] for c in cell_ids})
    assert others <= run.passed(), {c: run.results[c] for c in others - run.passed()}


# ---- the whole notebook --------------------------------------------------------------------------


def test_notebook_classes_behave_like_the_checkers_copies():
    run = run_notebook(A, solutions=True)
    mlp, reference = run["MLP"](), make_mlp()
    reference.load_state_dict(mlp.state_dict())
    x = torch.randn(3, 16)
    assert torch.equal(mlp(x), reference(x))
    block, reference = run["block"], make_block(8)
    reference.load_state_dict(block.state_dict())
    mask = torch.rand(4, 8)
    assert torch.equal(block(run["x_block"], mask=mask), reference(run["x_block"], mask=mask))
    gpt, reference = run["TinyGPT"](), make_tiny_gpt()
    reference.load_state_dict(gpt.state_dict())
    tokens = torch.randint(0, 128, (2, 9))
    assert torch.equal(gpt(tokens), reference(tokens))
    names = [[type(m).__name__ for m in net.modules()] for net in (gpt, reference)]
    assert names[0] == names[1]


def test_all_correct_passes_everything():
    run = run_notebook(A, case("all_correct"))
    assert run.passed() == cells(*EXERCISES), run.results


# ---- the named submissions -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "grade_id", "phrases"),
    [
        ("dead_counts_zero_entries", "dead_relu_stats", ["output *entries*", ".all(dim=0)"]),
        ("clip_in_place_no_return", "grad_clip_hook", ["in place", "must not modify"]),
        ("clip_weights_only", "grad_clip_hook", ["layers.0.bias", "not clipped", "biases too"]),
        ("optimizer_no_zero_grad", "optimizer_in_backward", ["still hold a .grad", "zero_grad"]),
        (
            "optimizer_zero_grad_first",
            "optimizer_in_backward",
            ["did not change", "step() before zero_grad()"],
        ),
        ("kwargs_without_always_call", "kwargs_always_call", ["always_call=True", "output=None"]),
        (
            "kwargs_wrong_signature",
            "kwargs_always_call",
            ["TypeError", "hook(module, args, kwargs, output)"],
        ),
        ("memory_not_detached", "activation_memory", ["keep their autograd graphs", "detach()"]),
        ("init_no_residual_scaling", "init_weights", ["0.02 / sqrt(2 * n_layer)", "c_proj"]),
        ("init_by_type_name", "init_weights", ["CastedLinear is a subclass", "isinstance"]),
    ],
)
def test_each_listed_mistake_is_named(name, grade_id, phrases):
    assert_named(case(name), cells(grade_id), phrases)


# ---- more mistakes, one exercise at a time ---------------------------------------------------------

RELU_LEFT = """def relu_stats(model, x):
    stats = {}
    for name, module in model.named_modules():
        if isinstance(module, nn.ReLU):
            def hook(module, args, output, name=name):
                stats[name] = (output == 0).all(dim=0).float().mean().item()
            module.register_forward_hook(hook)
    model(x)
    return stats"""

RELU_ALIVE = RELU_LEFT.replace("(output == 0).all(dim=0)", "(output > 0).any(dim=0)").replace(
    "    model(x)\n", "    with torch.no_grad():\n        model(x)\n    remove_all(model)\n"
)
REMOVE_ALL = """
def remove_all(model):
    for module in model.modules():
        module._forward_hooks.clear()
"""

CLIP_RETURNS_NONE = """def add_grad_clipping(model, clip_value):
    def clip(grad):
        grad = grad.clamp(-clip_value, clip_value)
    return [p.register_hook(clip) for p in model.parameters()]"""

CLIP_ON_OUTPUT = """def add_grad_clipping(model, clip_value):
    def on_output(module, args, output):
        output.register_hook(lambda grad: grad.clamp(-clip_value, clip_value))
    return [model.register_forward_hook(on_output)]"""

ONE_OPTIMIZER_NO_ZERO_GRAD = """def attach_optimizer_in_backward(model, make_optimizer):
    optimizer = make_optimizer(model.parameters())
    return [p.register_post_accumulate_grad_hook(lambda p: optimizer.step())
            for p in model.parameters()]"""

KWARGS_PLAIN_PRE_HOOK = """def trace_calls(module, log):
    def enter(module, args):
        log.append(("enter", []))
    def leave(module, args, kwargs, output):
        log.append(("exit", "raised" if output is None else "returned"))
    return [module.register_forward_pre_hook(enter),
            module.register_forward_hook(leave, with_kwargs=True, always_call=True)]"""

KWARGS_HOOK_RAISES = (
    KWARGS_PLAIN_PRE_HOOK.replace(
        'def enter(module, args):\n        log.append(("enter", []))',
        'def enter(module, args, kwargs):\n        log.append(("enter", sorted(kwargs)))',
    )
    .replace(
        "module.register_forward_pre_hook(enter)",
        "module.register_forward_pre_hook(enter, with_kwargs=True)",
    )
    .replace('"raised" if output is None else "returned"', 'output.shape and "returned"')
)

KWARGS_PRE_RETURNS_KWARGS = KWARGS_HOOK_RAISES.replace(
    'log.append(("enter", sorted(kwargs)))',
    'log.append(("enter", sorted(kwargs)))\n        return kwargs',
).replace('output.shape and "returned"', '"raised" if output is None else "returned"')

KWARGS_LOGS_THE_DICT = KWARGS_PRE_RETURNS_KWARGS.replace(
    'log.append(("enter", sorted(kwargs)))\n        return kwargs', 'log.append(("enter", kwargs))'
)

RECORD = """
def record_layer(model, layer_name, batches):
    outputs = []
    with model.get_submodule(layer_name).register_forward_hook(
        lambda m, a, out: outputs.append(out.detach())
    ):
        for batch in batches:
            model(batch)
    return outputs"""

BYTES_OWN_ONLY = (
    """def bytes_kept_alive(tensors):
    storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in tensors}
    return sum(storages.values())"""
    + RECORD
)
BYTES_ELEMENTS = (
    """def bytes_kept_alive(tensors):
    return sum(t.numel() * t.element_size() for t in tensors)"""
    + RECORD
)
BYTES_NO_DEDUPE = (
    """def bytes_kept_alive(tensors):
    total = sum(t.untyped_storage().nbytes() for t in tensors)
    todo = [t.grad_fn for t in tensors if t.grad_fn is not None]
    seen = set()
    while todo:
        node = todo.pop()
        if node in seen:
            continue
        seen.add(node)
        for attr in dir(node):
            value = getattr(node, attr) if attr.startswith("_saved_") else None
            if isinstance(value, torch.Tensor):
                total += value.untyped_storage().nbytes()
        todo += [n for n, _ in node.next_functions if n is not None]
    return total"""
    + RECORD
)

INIT = """def init_gpt(model):
    def fn(m):
        {body}

    model.apply(fn)
    for name, p in model.named_parameters():
        if name.endswith("c_proj.weight"):
            nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt({depth}))"""
RIGHT_BODY = """if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)
        if isinstance(m, nn.LayerNorm):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)"""
HASATTR_BODY = """if hasattr(m, "weight"):
            nn.init.normal_(m.weight, std=0.02)
        if getattr(m, "bias", None) is not None:
            nn.init.zeros_(m.bias)"""


@pytest.mark.parametrize(
    ("grade_id", "code", "named_cells", "phrases"),
    [
        ("dead_relu_stats", RELU_LEFT, cells("dead_relu_stats"), ["hooks are still registered"]),
        ("dead_relu_stats", REMOVE_ALL + RELU_ALIVE, cells("dead_relu_stats"), ["alive"]),
        ("grad_clip_hook", CLIP_RETURNS_NONE, cells("grad_clip_hook"), ["it returns None"]),
        ("grad_clip_hook", CLIP_ON_OUTPUT, cells("grad_clip_hook"), ["another tensor"]),
        (
            "optimizer_in_backward",
            ONE_OPTIMIZER_NO_ZERO_GRAD,
            cells("optimizer_in_backward"),
            ["as far as this many steps", "more than once"],
        ),
        (
            "kwargs_always_call",
            KWARGS_PLAIN_PRE_HOOK,
            cells("kwargs_always_call"),
            ["no keyword arguments", "with_kwargs=True"],
        ),
        (
            "kwargs_always_call",
            KWARGS_HOOK_RAISES,
            cells("kwargs_always_call"),
            ["the hook itself raised", "output is None"],
        ),
        (
            "kwargs_always_call",
            KWARGS_PRE_RETURNS_KWARGS,
            cells("kwargs_always_call"),
            ["(new_args, new_kwargs)", "should return None"],
        ),
        (
            "kwargs_always_call",
            KWARGS_LOGS_THE_DICT,
            cells("kwargs_always_call"),
            ["not what the calls should produce", "'mask': tensor("],
        ),
        ("activation_memory", BYTES_OWN_ONLY, cells("activation_memory"), ["_saved_"]),
        ("activation_memory", BYTES_ELEMENTS, cells("activation_memory"), ["whole storage"]),
        ("activation_memory", BYTES_NO_DEDUPE, cells("activation_memory"), ["storage once"]),
        (
            "init_weights",
            INIT.format(body=HASATTR_BODY, depth="2 * model.n_layer"),
            cells("init_weights"),
            ["LayerNorm must end with weight 1", "hasattr"],
        ),
        (
            "init_weights",
            INIT.format(body=RIGHT_BODY.replace("nn.Linear, nn.Embedding", "nn.Linear"), depth=2),
            cells("init_weights"),
            ["Embedding (wte)", "Embedding (wpe)"],
        ),
        (
            "init_weights",
            INIT.format(body=RIGHT_BODY, depth="model.n_layer"),
            cells("init_weights"),
            ["0.02 / sqrt(2 * n_layer)"],
        ),
    ],
)
def test_other_mistakes_are_named(grade_id, code, named_cells, phrases):
    assert_named(with_section(grade_id, code), named_cells, phrases)


def test_a_depth_hard_coded_for_the_notebook_passes_only_the_visible_check():
    code = INIT.format(body=RIGHT_BODY, depth="4")  # 2 * n_layer for the notebook's n_layer=2
    run = run_notebook(A, with_section("init_weights", code))
    assert "init_weights_test" in run.passed()
    assert "0.02 / sqrt(2 * n_layer)" in failure(run, "init_weights_hidden")


# ---- the memory measurement is independent of a graph walk ----------------------------------------


def test_the_checkers_measurement_counts_saved_tensors_only_while_a_graph_is_alive():
    model, x = make_mlp((6, 10, 10, 3)), torch.randn(5, 6)
    with watch_saved() as boxes:
        out = model(x)
    kept = kept_alive([out], boxes)
    # The graph saved x (first Linear's input), two ReLU results (shared with the next Linear's
    # input), and the transposed weights of the last two Linear layers.
    expected = sum(t.untyped_storage().nbytes() for t in [out, x]) + 4 * (2 * 5 * 10 + 10 * 10)
    expected += 4 * 10 * 3
    assert kept == expected
    detached = out.detach()
    del out
    assert kept_alive([detached], boxes) == storage_bytes([detached]) == 5 * 3 * 4


def test_the_solution_walk_agrees_with_the_checkers_measurement_on_views_and_graphs():
    run = run_notebook(A, solutions=True, until="activation_memory_run")
    model = make_mlp((6, 10, 10, 3))
    with watch_saved() as boxes:
        stored = [model(torch.randn(4, 6))[:, :2] for _ in range(3)]
    assert run["bytes_kept_alive"](stored) == kept_alive(stored, boxes)
    assert kept_alive(stored, boxes) > storage_bytes(stored)


# ---- hidden checks use fresh models ----------------------------------------------------------------


def test_hidden_checks_use_fresh_models_of_other_sizes():
    run = run_notebook(A, solutions=True)
    seen, gpt_depths = [], []
    original_stats, original_init = run["relu_stats"], run["init_gpt"]

    def recording_stats(model, x):
        seen.append(tuple(x.shape))
        return original_stats(model, x)

    def recording_init(model):
        gpt_depths.append(model.n_layer)
        original_init(model)

    run["relu_stats"], run["init_gpt"] = recording_stats, recording_init
    check("dead_relu_stats", run, hidden=True)
    check("init_weights", run, hidden=True)
    assert len(seen) == 3 and len(set(seen)) > 1
    assert 2 not in gpt_depths and len(set(gpt_depths)) == 2
