"""Does every hooks-in-practice check accept right answers and name each listed mistake, with the
right cause?"""

import pytest
import torch
from golden import answers as answer_file
from notebook_runner import failure, run_notebook

from autograder import check, notebooks
from autograder.exercises.hooks_in_practice import grad_clip_hook, optimizer_in_backward
from autograder.exercises.hooks_in_practice.activation_memory import (
    kept_alive,
    storage_bytes,
    watch_saved,
)
from autograder.exercises.hooks_in_practice.models import make_block, make_mlp, make_tiny_gpt
from autograder.exercises.kit.run import FAILED, run_check

A = "hooks_in_practice"
EXERCISES = [
    "dead_relu_stats",
    "grad_clip_hook",
    "optimizer_in_backward",
    "kwargs_always_call",
    "activation_memory",
    "gpt2_init",
]
NEXT = dict(zip(EXERCISES, [f"{g}_intro" for g in EXERCISES[1:]] + ["summary"], strict=True))


def case(name: str) -> str:
    return answer_file(A, name)


def cells(*grade_ids: str) -> set[str]:
    return {f"{g}_{kind}" for g in grade_ids for kind in ("test", "hidden")}


def with_section(grade_id: str, code: str) -> str:
    """The all_correct answers with one exercise replaced by `code`."""
    answers = notebooks.parse_answers(case("all_correct"))
    answers[grade_id] = code
    return "\n".join(f"# %% {g}\n{source}\n" for g, source in answers.items())


def assert_named(answers: str, grade_id: str, phrases: list[str]) -> None:
    """Both checks of `grade_id` fail, each message holding every phrase."""
    run = run_notebook(A, answers, until=NEXT[grade_id])
    for cell_id in cells(grade_id):
        message = failure(run, cell_id)
        for phrase in phrases:
            assert phrase in message, (cell_id, phrase, message)


# ---- the whole notebook --------------------------------------------------------------------------


def test_notebook_classes_behave_like_the_checkers_copies():
    run = run_notebook(A, solutions=True)
    mlp, reference = run["MLP"](), make_mlp()
    reference.load_state_dict(mlp.state_dict())
    x = torch.randn(3, 16)
    assert torch.equal(mlp(x), reference(x))
    block, reference = run["Block"](8), make_block(8)
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

NAMED = [
    ("dead_counts_zero_entries", "dead_relu_stats", ["output *entries*", "*every* example"]),
    ("dead_hooks_without_finally", "dead_relu_stats", ["forward raises", "`finally:`"]),
    ("dead_keys_relative", "dead_relu_stats", ["['1', '3'", "names inside `model.layers`"]),
    ("clip_in_place_no_return", "grad_clip_hook", ["in place", "must not modify"]),
    ("clip_returns_none", "grad_clip_hook", ["returns None", "rebinds the hook's own local"]),
    ("clip_weights_only", "grad_clip_hook", ["layers.0.bias", "have no hook", "biases too"]),
    ("optimizer_no_zero_grad", "optimizer_in_backward", ["still hold a `.grad`", "zero_grad()"]),
    (
        "optimizer_zero_grad_first",
        "optimizer_in_backward",
        ["did not change", "found no gradient, because `zero_grad()` had already run"],
    ),
    ("optimizer_made_in_hook", "optimizer_in_backward", ["called during backward", "momentum"]),
    ("optimizer_closure_in_loop", "optimizer_in_backward", ["the same optimizer", "loop variable"]),
    (
        "optimizer_one_for_all",
        "optimizer_in_backward",
        ["as far as this many steps", "made over several parameters"],
    ),
    ("kwargs_without_always_call", "kwargs_always_call", ["`always_call=True`", "output=None"]),
    (
        "kwargs_wrong_signature",
        "kwargs_always_call",
        ["`leave` takes 3 arguments", "hook(module, args, kwargs, output)"],
    ),
    ("kwargs_plain_pre_hook", "kwargs_always_call", ["no keyword arguments", "with_kwargs=True"]),
    ("memory_not_detached", "activation_memory", ["still has a `grad_fn`", "graph alive"]),
    ("memory_counts_elements", "activation_memory", ["own elements", "whole storage"]),
    ("init_no_residual_scaling", "gpt2_init", ["0.02 / sqrt(2 * n_layer)", "c_proj"]),
    ("init_by_type_name", "gpt2_init", ["CastedLinear is a subclass", "isinstance"]),
    ("init_depth_hard_coded", "gpt2_init", ["right for the notebook's gpt", "model.n_layer"]),
    ("init_without_apply", "gpt2_init", ["never calls `model.apply`"]),
    ("init_selects_by_hasattr", "gpt2_init", ["weight 1 and bias 0", "hasattr"]),
]


@pytest.mark.parametrize(("name", "grade_id", "phrases"), NAMED, ids=[n[0] for n in NAMED])
def test_each_named_mistake_gets_its_cause(name, grade_id, phrases):
    assert_named(case(name), grade_id, phrases)


def test_lists_for_tuples_and_a_tuple_of_handles_are_accepted():
    run = run_notebook(A, case("kwargs_lists_not_tuples"), until=NEXT["kwargs_always_call"])
    assert cells("kwargs_always_call") <= run.passed()


@pytest.mark.parametrize(
    ("name", "grade_id", "fix"),
    [
        ("clip_in_place_no_return", "grad_clip_hook", grad_clip_hook.FIX),
        ("clip_returns_none", "grad_clip_hook", grad_clip_hook.FIX),
    ],
)
def test_the_fix_comes_apart_from_the_first_message(name, grade_id, fix):
    run = run_notebook(A, case(name), until=f"{grade_id}_test")
    outcome = run_check(grade_id, run)
    assert outcome.status == FAILED and outcome.fix == fix
    assert fix not in outcome.message


# ---- more mistakes, one exercise at a time ---------------------------------------------------------

RELU = """def relu_stats(model, x):
    stats, handles = {}, []
    for name, module in model.named_modules():
        if isinstance(module, nn.ReLU):
            def hook(module, args, output, name=name):
                stats[name] = MEASURE.float().mean().item()
            handles.append(module.register_forward_hook(hook))
    try:
        model(x)
    finally:
        for handle in handles:
            handle.remove()
    return stats"""
RELU_LEFT = RELU.replace(
    "    try:\n        model(x)\n    finally:\n        for handle in handles:\n"
    "            handle.remove()\n",
    "    model(x)\n",
)

CLIP_ON_OUTPUT = """def add_grad_clipping(model, clip_value):
    def on_output(module, args, output):
        output.register_hook(lambda grad: grad.clamp(-clip_value, clip_value))
    return [model.register_forward_hook(on_output)]"""
CLIP_NO_HANDLES = """def add_grad_clipping(model, clip_value):
    for p in model.parameters():
        p.register_hook(lambda grad: grad.clamp(-clip_value, clip_value))"""
CLIP_HANDLES_KEPT = """def add_grad_clipping(model, clip_value):
    handles = [p.register_hook(lambda grad: grad.clamp(-clip_value, clip_value))
               for p in model.parameters()]
    return handles[:1]"""

OPTIMIZER_NEVER_MADE = """def attach_optimizer_in_backward(model, make_optimizer):
    return [p.register_post_accumulate_grad_hook(lambda p: None) for p in model.parameters()]"""
OPTIMIZER_NO_STEP = """def attach_optimizer_in_backward(model, make_optimizer):
    optimizers = {p: make_optimizer([p]) for p in model.parameters()}
    return [p.register_post_accumulate_grad_hook(lambda p: optimizers[p].zero_grad())
            for p in model.parameters()]"""
OPTIMIZER_WEIGHTS_ONLY = """def attach_optimizer_in_backward(model, make_optimizer):
    optimizers = {p: make_optimizer([p]) for p in model.parameters()}
    def step(p):
        optimizers[p].step()
        optimizers[p].zero_grad()
    return [p.register_post_accumulate_grad_hook(step)
            for name, p in model.named_parameters() if name.endswith("weight")]"""
OPTIMIZER_TWICE = """def attach_optimizer_in_backward(model, make_optimizer):
    optimizers = {p: make_optimizer([p]) for p in model.parameters()}
    def step(p):
        optimizers[p].step()
    handles = []
    for module in model.modules():
        for p in module.parameters():
            handles.append(p.register_post_accumulate_grad_hook(step))
    return handles"""

KWARGS = """def trace_calls(module, log):
    def enter(module, args, kwargs):
        log.append(("enter", sorted(kwargs)))
    def leave(module, args, kwargs, output):
        log.append(("exit", "raised" if output is None else "returned"))
    return [module.register_forward_pre_hook(enter, with_kwargs=True),
            module.register_forward_hook(leave, with_kwargs=True, always_call=True)]"""
KWARGS_HOOK_RAISES = KWARGS.replace(
    '"raised" if output is None else "returned"', 'output.shape and "returned"'
)
KWARGS_PRE_RETURNS_KWARGS = KWARGS.replace(
    'log.append(("enter", sorted(kwargs)))',
    'log.append(("enter", sorted(kwargs)))\n        return kwargs',
)
KWARGS_LOGS_THE_DICT = KWARGS.replace('("enter", sorted(kwargs))', '("enter", kwargs)')
KWARGS_OTHER_LIST = KWARGS.replace("log.append", "other.append").replace(
    "def trace_calls(module, log):", "other = []\ndef trace_calls(module, log):"
)
KWARGS_NOT_ON_MODULE = KWARGS.replace("module.register", "block.register")

RECORD = """
def record_layer(model, layer_name, batches):
    outputs = []
    with model.get_submodule(layer_name).register_forward_hook(
        lambda m, a, out: outputs.append(out.detach())
    ):
        for batch in batches:
            model(batch)
    return outputs"""
BYTES_OWN_ONLY = """def bytes_kept_alive(tensors):
    storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in tensors}
    return sum(storages.values())"""
BYTES_NO_DEDUPE = """def bytes_kept_alive(tensors):
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
NO_LAYER_NORM = RIGHT_BODY.split("        if isinstance(m, nn.LayerNorm)")[0].rstrip()


@pytest.mark.parametrize(
    ("grade_id", "code", "phrases"),
    [
        ("dead_relu_stats", RELU_LEFT.replace("MEASURE", "(output == 0).all(dim=0)"),
         ["hooks are still registered after `relu_stats` returned"]),
        ("dead_relu_stats", RELU.replace("MEASURE", "(output > 0).any(dim=0)"), ["alive"]),
        ("dead_relu_stats", RELU.replace("MEASURE", "(output == 0).all(dim=1)"),
         ["fractions of *examples*", "dim=0"]),
        ("grad_clip_hook", CLIP_ON_OUTPUT, ["neither autograd's", "another tensor"]),
        ("grad_clip_hook", CLIP_NO_HANDLES, ["should return the list of handles", "None"]),
        ("grad_clip_hook", CLIP_HANDLES_KEPT, ["after removing the handles", "still have hooks"]),
        ("optimizer_in_backward", OPTIMIZER_NEVER_MADE, ["never called `make_optimizer`"]),
        ("optimizer_in_backward", OPTIMIZER_NO_STEP, ["no optimizer's `step()` was called"]),
        ("optimizer_in_backward", OPTIMIZER_WEIGHTS_ONLY,
         ["layers.0.bias", "no post-accumulate-grad hook"]),
        ("optimizer_in_backward", OPTIMIZER_TWICE, ["as far as this many steps", "3 post-accumulate"]),
        ("kwargs_always_call", KWARGS_HOOK_RAISES, ["the hook itself raised", "`output=None`"]),
        ("kwargs_always_call", KWARGS_PRE_RETURNS_KWARGS, ["`(args, kwargs)`", "returns None"]),
        ("kwargs_always_call", KWARGS_LOGS_THE_DICT,
         ["not what the calls should produce", "'mask': tensor("]),
        ("kwargs_always_call", KWARGS_OTHER_LIST, ["nothing was appended to the `log`"]),
        ("kwargs_always_call", KWARGS_NOT_ON_MODULE, ["registered no hook on the module"]),
        ("activation_memory", BYTES_OWN_ONLY + RECORD, ["only the stored tensors", "_saved_"]),
        ("activation_memory", BYTES_NO_DEDUPE + RECORD, ["counted once"]),
        ("gpt2_init", INIT.format(body=RIGHT_BODY.replace("nn.Linear, nn.Embedding", "nn.Linear"),
                                     depth="2 * model.n_layer"),
         ["Embedding (wte)", "Embedding (wpe)"]),
        ("gpt2_init", INIT.format(body=NO_LAYER_NORM, depth="2 * model.n_layer"),
         ["weight 1 and bias 0", "set them explicitly"]),
        ("gpt2_init", INIT.format(body=RIGHT_BODY, depth="model.n_layer"),
         ["0.02 / sqrt(2 * n_layer)", "the factor 2 is missing"]),
    ],
)  # fmt: skip
def test_other_mistakes_get_their_cause(grade_id, code, phrases):
    assert_named(with_section(grade_id, code), grade_id, phrases)


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


# ---- the probes and the fresh cases ----------------------------------------------------------------


def test_the_recording_optimizer_steps_like_plain_sgd():
    log = optimizer_in_backward.Recorded()
    model, reference = make_mlp((4, 6, 2)), make_mlp((4, 6, 2))
    reference.load_state_dict(model.state_dict())
    x, y = torch.randn(3, 4), torch.randn(3, 2)
    recorded = optimizer_in_backward.recording_sgd(log, 0.1)(model.parameters())
    plain = torch.optim.SGD(reference.parameters(), lr=0.1)
    for net, optimizer in ((model, recorded), (reference, plain)):
        torch.nn.functional.mse_loss(net(x), y).backward()
        optimizer.step()
        optimizer.zero_grad()
    assert all(
        torch.equal(a, b) for a, b in zip(model.parameters(), reference.parameters(), strict=True)
    )
    assert log.made == [(4, False)] and log.events == [(0, "step", True), (0, "zero_grad", True)]


def test_both_checks_initialise_fresh_models_of_other_depths():
    run = run_notebook(A, solutions=True)
    seen, depths = [], []
    original_stats, original_init = run["relu_stats"], run["init_gpt"]

    def recording_stats(model, x):
        seen.append(tuple(x.shape))
        return original_stats(model, x)

    def recording_init(model):
        depths.append(model.n_layer)
        original_init(model)

    run["relu_stats"], run["init_gpt"] = recording_stats, recording_init
    check("dead_relu_stats", run, hidden=True)
    check("gpt2_init", run)
    check("gpt2_init", run, hidden=True)
    assert len(seen) >= 3 and len(set(seen)) > 1
    assert len(depths) == 3 and 2 not in depths and len(set(depths[1:])) == 2
