"""Does every forward-notebook check accept right answers and name each listed mistake?"""

import pytest
import torch
from golden import answers
from notebook_runner import failure, run_notebook

from autograder import CheckFailed, check

A = "forward_hooks"


SEED001 = answers(A, "seed001_answers")


def test_seed001_answers_pasted_whole_pass():
    run = run_notebook(A, SEED001, until="find_the_bug_intro")
    assert run.passed() >= {
        "forward_collect_test",
        "forward_collect_hidden",
        "forward_add5_test",
        "forward_add5_hidden",
    }


def test_seed000_wrong_signature_names_the_mistake():
    answers = "# %% forward_add5\ndef hook(module, output):\n    output += 5\n\nadd.register_forward_hook(hook)"
    run = run_notebook(A, answers, until="find_the_bug_intro")
    for cell in ("forward_add5_test", "forward_add5_hidden"):
        message = failure(run, cell)
        assert "takes 2 argument(s)" in message and "hook(module, input, output)" in message


def collect(pre_body: str, hook_body: str = "answer.append(output)") -> str:
    return f"""# %% forward_collect
def pre_hook(module, input):
    {pre_body}

def hook(module, input, output):
    {hook_body}

add.register_forward_pre_hook(pre_hook)
add.register_forward_hook(hook)
"""


@pytest.mark.parametrize(
    ("answers", "phrase"),
    [
        (collect("answer.append(input)"), "appended the whole tuple"),
        (collect("answer.extend(reversed(input))"), "wrong order: expected [x1, x2, output]"),
        (collect("answer.append(input[0])"), "Missing: x2"),
        (collect("answer.extend(input)", "answer.extend(output)"), "0-d tensor"),
        (collect("pass", "pass"), "is empty"),
    ],
)
def test_forward_collect_mistakes(answers, phrase):
    run = run_notebook(A, answers, until="forward_add5_intro")
    assert phrase in failure(run, "forward_collect_test")
    assert phrase in failure(run, "forward_collect_hidden")


def test_cell_run_twice_is_named():
    run = run_notebook(
        A, collect("answer.extend(input)"), until="forward_add5_intro", rerun=("forward_collect",)
    )
    message = failure(run, "forward_collect_test")
    assert "registered 2 times" in message and "Restart" in message
    assert "forward_collect_hidden" in run.passed()  # the functions themselves are right

    twice = run_notebook(A, SEED001, until="find_the_bug_intro", rerun=("forward_add5",))
    assert "registered 2 times" in failure(twice, "forward_add5_test")


def test_rebinding_output_without_return():
    answers = "# %% forward_add5\ndef hook(module, input, output):\n    output = output + 5\n\nadd.register_forward_hook(hook)"
    run = run_notebook(A, answers, until="find_the_bug_intro")
    assert "return output + 5" in failure(run, "forward_add5_test")
    assert "x1 + x2 + 5" in failure(run, "forward_add5_hidden")


def test_patching_the_class_passes_visible_but_not_hidden():
    run = run_notebook(A, answers(A, "patched_class"), until="find_the_bug_intro")
    assert {"forward_collect_test", "forward_add5_test"} <= run.passed()
    assert "is empty" in failure(run, "forward_collect_hidden")
    assert "has to come from the hook" in failure(run, "forward_add5_hidden")


def test_hidden_check_leaves_the_notebook_as_it_was():
    run = run_notebook(A, SEED001, until="forward_collect_hidden")
    before = list(run["answer"])
    hooks_before = len(run["add"]._forward_hooks)
    check("forward_collect", run, hidden=True)
    assert run["answer"] == before
    assert len(run["add"]._forward_hooks) == hooks_before


def test_hidden_checks_draw_fresh_inputs():
    # Hooks that record the notebook's own x1 and x2 instead of what they receive are right only
    # for the notebook's inputs: the hidden check calls them with new ones.
    run = run_notebook(A, answers(A, "notebook_values_hard_coded"), until="forward_add5_intro")
    assert "forward_collect_test" in run.passed()
    assert "On a fresh Add module" in failure(run, "forward_collect_hidden")


@pytest.mark.parametrize(
    ("answers", "phrase"),
    [
        (
            "# %% pre_hook_replace\ndef double_x1(module, input):\n    return None\n\nadd.register_forward_pre_hook(double_x1)",
            "does not change the input",
        ),
        (
            "# %% pre_hook_replace\ndef double_x1(module, input):\n    return input[0] * 2\n\nadd.register_forward_pre_hook(double_x1)",
            "return a tuple",
        ),
        (
            "# %% pre_hook_replace\ndef double_x1(module, input):\n    input[0].mul_(2)\n\nadd.register_forward_pre_hook(double_x1)",
            "in place",
        ),
    ],
)
def test_pre_hook_replace_mistakes(answers, phrase):
    run = run_notebook(A, answers, until="hook_order_intro")
    assert phrase in failure(run, "pre_hook_replace_test")


@pytest.mark.parametrize(
    ("answers", "cell", "phrase"),
    [
        (
            '# %% find_the_bug\nbug_exception = "ValueError"\nbug_fix = "b"',
            "find_the_bug_test",
            "TypeError",
        ),
        (
            '# %% find_the_bug\nbug_exception = "TypeError"\nbug_fix = "c"',
            "find_the_bug_test",
            "'b'",
        ),
        (
            '# %% hook_effects\nchanges_output = {"returns_new": True, "in_place": False, "rebinds": False}',
            "hook_effects_test",
            "PyTorch does",
        ),
        (
            '# %% hook_order\npredicted_order = ["A", "B", "C"]',
            "hook_order_test",
            "['C', 'A', 'B']",
        ),
        ("# %% forward_bypass\nfire_count = 3", "forward_bypass_test", "fire_count"),
    ],
)
def test_quiz_answers_are_checked_against_torch(answers, cell, phrase):
    run = run_notebook(A, answers)
    assert phrase in failure(run, cell)


def test_remove_handle_mistakes():
    kept = "# %% remove_handle\ndef capture_output(module, *inputs):\n    seen = []\n    module.register_forward_hook(lambda m, i, o: seen.append(o))\n    module(*inputs)\n    return seen[0]"
    assert "still registered" in failure(run_notebook(A, kept), "remove_handle_hidden")
    direct = "# %% remove_handle\ndef capture_output(module, *inputs):\n    return module(*inputs)"
    assert "no forward hook" in failure(run_notebook(A, direct), "remove_handle_test")


def test_method_hook_mistakes():
    undetached = """# %% method_hook
class Probe(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 2)
        self.linear.register_forward_hook(self.save_output)

    def save_output(self, module, input, output):
        self.last_output = output

    def forward(self, x):
        return self.linear(x)
"""
    assert "detach" in failure(run_notebook(A, undetached), "method_hook_test")
    plain = undetached.replace(
        "self.linear.register_forward_hook(self.save_output)",
        "self.linear.register_forward_hook(lambda m, i, o: setattr(self, 'last_output', o.detach()))",
    )
    assert "method of this Probe" in failure(run_notebook(A, plain), "method_hook_hidden")


def test_mlp_report_missing_key_and_seed003_style():
    partial = "# %% mlp_report\ndef fc2_report(module, input, output):\n    report['input_type'] = type(input)\n\nhandle = net.fc2.register_forward_hook(fc2_report)"
    assert "lacks the key" in failure(run_notebook(A, partial), "mlp_report_test")
    seed003 = """# %% mlp_report
def fc2_report(self, input, output):
    report.update(input_type=type(input), input0_type=type(input[0]), output_type=type(output),
                  input_size=input[0].size(), output_size=output.data.size(),
                  output_norm=output.data.norm())

handle = net.fc2.register_forward_hook(fc2_report)
"""
    run = run_notebook(A, seed003)
    assert {"mlp_report_test", "mlp_report_hidden"} <= run.passed()


def test_expected_norm_is_computed_independently():
    run = run_notebook(A, solutions=True)
    net, x = run["net"], run["x"]
    manual = torch.relu(x @ net.fc1.weight.T + net.fc1.bias) @ net.fc2.weight.T + net.fc2.bias
    assert torch.allclose(run["report"]["output_norm"], manual.detach().norm())


def test_a_torch_warning_does_not_reach_stderr(capfd):
    warns = """# %% forward_add5
def hook(module, input, output):
    torch.nn.functional.softmax(output)  # no dim given: torch warns on every call
    return output + 5

add.register_forward_hook(hook)
"""
    run = run_notebook(A, warns, until="forward_add5_test")
    check("forward_add5", run)
    check("forward_add5", run, hidden=True)
    captured = capfd.readouterr()
    assert "UserWarning" in captured.out and "do not cost points" in captured.out
    assert captured.err == ""


def test_failure_renders_as_message_not_traceback():
    with pytest.raises(CheckFailed) as info:
        check("forward_collect", {"pre_hook": lambda m, i: None})
    lines = info.value._render_traceback_()
    assert lines[0].startswith("… forward_collect is not done yet")
    assert not any("Traceback" in line for line in lines)
