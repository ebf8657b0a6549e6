"""Does every forward_hooks check accept right answers and name each listed mistake, with its cause,
without handing over the solution on a first failure?"""

import re

import pytest
import torch
from golden import answers
from notebook_runner import failure, run_notebook
from student_loop import StudentSession

from autograder import CheckFailed, NotDoneYet, check
from autograder.exercises.forward_hooks.models import make_add, make_double
from autograder.exercises.kit import notebook as kit_notebook

A = "forward_hooks"
SEED001 = answers(A, "seed001_answers")


def results(run, *cells):
    """The error each graded cell raised (None when it passed)."""
    return [run.results[cell] for cell in cells]


def both(run, grade_id):
    """The messages of the visible and the hidden check of `grade_id` (both must fail)."""
    return failure(run, f"{grade_id}_test"), failure(run, f"{grade_id}_hidden")


def collect(pre_body, hook_body="answer.append(output)", register="add"):
    return f"""# %% forward_collect
def pre_hook(module, input):
    {pre_body}

def hook(module, input, output):
    {hook_body}

{register}.register_forward_pre_hook(pre_hook)
{register}.register_forward_hook(hook)
"""


def add5(body, register="add.register_forward_hook(hook)"):
    return f"# %% forward_add5\ndef hook(module, input, output):\n    {body}\n\n{register}\n"


def replace(body, register="add.register_forward_pre_hook(double_x1)"):
    return f"# %% pre_hook_replace\ndef double_x1(module, input):\n    {body}\n\n{register}\n"


def capture(body):
    return f"# %% remove_handle\ndef capture_output(module, *inputs):\n    {body}\n"


def report(body, register="net.fc2.register_forward_hook(fc2_report)"):
    return f"# %% mlp_report\ndef fc2_report(module, input, output):\n    {body}\n\n{register}\n"


def probe(init_line, save_body="self.last_output = output.detach()", forward_extra=""):
    return f"""# %% method_hook
class Probe(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 2)
        self.last_output = None
        {init_line}

    def save_output(self, module, input, output):
        {save_body}

    def forward(self, x):
        {forward_extra}
        return self.linear(x)
"""


UNTIL = {
    "forward_collect": "forward_add5_intro",
    "forward_add5": "find_the_bug_intro",
    "pre_hook_replace": "hook_order_intro",
}


def run_until_next(grade_id, source, **kwargs):
    return run_notebook(A, source, until=UNTIL.get(grade_id), **kwargs)


# ---- forward_collect


def test_seed001_answers_pasted_whole_pass():
    run = run_notebook(A, SEED001, until="find_the_bug_intro")
    assert run.passed() >= {
        "forward_collect_test",
        "forward_collect_hidden",
        "forward_add5_test",
        "forward_add5_hidden",
    }


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        (collect("answer.append(input)"), "the whole tuple went in as one entry"),
        (collect("answer.extend(reversed(input))"), "wrong order: expected [x1, x2, output]"),
        (collect("answer.append(input[0])"), "Missing: x2"),
        (collect("answer.extend(input)", "answer.extend(output)"), "0-d tensor"),
        (collect("answer.extend(input)", register="Add()"), "no hook is registered on `add`"),
        (collect("answer += input"), "makes `answer` a local name"),
        (
            collect("answer.extend(input); answer.extend(input)", "answer.extend([output] * 2)"),
            "puts every value into `answer` 2 times",
        ),
    ],
)
def test_forward_collect_mistakes(answer, phrase):
    visible, hidden = both(run_until_next("forward_collect", answer), "forward_collect")
    assert phrase in visible and phrase in hidden


def test_forward_collect_hooks_that_do_nothing_are_not_done_yet():
    run = run_until_next("forward_collect", collect("pass", "pass"))
    assert all(isinstance(error, NotDoneYet) for error in run.results.values())


def test_a_hook_registered_twice_by_one_run_is_named():
    run = run_until_next("forward_collect", answers(A, "registered_twice"))
    for message in both(run, "forward_collect"):
        assert "`pre_hook` is registered 2 times on `add`" in message
        assert "Register it once" in message


def test_hooks_left_by_an_earlier_run_say_to_put_the_fresh_add_back():
    # seed001's answer has no `add = Add()` line: run twice, its first hooks stay on `add`.
    run = run_until_next("forward_collect", SEED001, rerun=("forward_collect",))
    message = failure(run, "forward_collect_test")
    assert "still carries hooks that an earlier run registered" in message
    assert "`pre_hook`" in message and "`hook`" in message and "`add = Add()`" in message
    assert "forward_collect_hidden" in run.passed()  # the current functions are right

    run = run_until_next("forward_add5", SEED001, rerun=("forward_add5",))
    assert "still carries hooks that an earlier run registered" in failure(run, "forward_add5_test")


def test_the_run_cell_run_again_is_named():
    run = run_until_next("forward_collect", SEED001, rerun=("forward_collect_run",))
    message = failure(run, "forward_collect_test")
    assert "holds the values of 2 calls of `add`" in message and "Run the answer cell" in message


def test_a_changed_add_class_is_named_with_the_cell_that_restores_it():
    run = run_notebook(A, answers(A, "patched_class"), until="find_the_bug_intro")
    for grade_id in ("forward_collect", "forward_add5"):
        for message in both(run, grade_id):
            assert "the `Add` class itself has been changed" in message
            assert "Run the cell that defines `class Add`" in message
    assert "already puts" in failure(run, "forward_collect_test")
    assert "returns tensor([8])" in failure(run, "forward_add5_test")  # 1 + 2 + 5


def test_a_forward_replaced_on_the_module_is_named():
    answer = "# %% forward_add5\nadd.forward = lambda x1, x2: x1 + x2 + 5"
    message = failure(run_until_next("forward_add5", answer), "forward_add5_test")
    assert "`add.forward` has been replaced on the module itself" in message


def test_hidden_checks_draw_fresh_inputs():
    # Hooks that record the notebook's own x1 and x2 instead of what they receive are right only
    # for the notebook's inputs: the hidden check calls them with new ones.
    run = run_until_next("forward_collect", answers(A, "notebook_values_hard_coded"))
    assert "forward_collect_test" in run.passed()
    assert "On a fresh Add with new inputs" in failure(run, "forward_collect_hidden")


def test_hidden_check_leaves_the_notebook_as_it_was():
    run = run_notebook(A, SEED001, until="forward_collect_hidden")
    before = list(run["answer"])
    hooks_before = len(run["add"]._forward_hooks)
    check("forward_collect", run, hidden=True)
    assert run["answer"] == before
    assert len(run["add"]._forward_hooks) == hooks_before


# ---- forward_add5


def test_seed000_wrong_signature_names_the_mistake():
    run = run_until_next("forward_add5", answers(A, "seed000_add5_wrong_signature"))
    for message in both(run, "forward_add5"):
        assert "takes 2 argument(s)" in message and "hook(module, input, output)" in message


def test_rebinding_output_without_return_and_the_fix_after_repeated_failures(monkeypatch):
    run = run_until_next("forward_add5", add5("output = output + 5"))
    for message in both(run, "forward_add5"):
        assert "it returns None" in message and "Assigning to `output`" in message
        assert "return output + 5" not in message
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    kit_notebook._failures.clear()  # as if the student ran the check cell for the first time
    messages = []
    for _attempt in range(3):
        with pytest.raises(CheckFailed) as info:
            check("forward_add5", run)
        messages.append(info.value.message)
    assert "return output + 5" not in messages[1] and "return output + 5" in messages[2]


def test_a_mistake_without_a_fix_gets_one_more_hint_at_each_repeated_failure(monkeypatch):
    from autograder.exercises.forward_hooks.forward_bypass import HINTS

    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    kit_notebook._failures.clear()
    messages = []
    for _attempt in range(6):
        with pytest.raises(CheckFailed) as info:
            check("forward_bypass", {"fire_count": 3})  # wrong: no code-level fix for a count
        messages.append(info.value.message)
    assert all("fire 3 time" in m for m in messages)
    shown = [[hint for hint in HINTS if hint in m] for m in messages]
    assert shown == [[], [], HINTS[:1], HINTS[:2], HINTS, HINTS]
    assert "hints (1 of 3)" in messages[2] and "failed 3 times in a row" in messages[2]
    check("forward_bypass", {"fire_count": 2})  # right: the count starts again
    with pytest.raises(CheckFailed) as info:
        check("forward_bypass", {"fire_count": 3})
    assert not any(hint in info.value.message for hint in HINTS)


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        (add5("return output + 10"), "your hooks add 10 to x1 + x2, not 5"),
        (add5("return output"), "so the output stays x1 + x2"),
        (add5("return output + 5", "Add().register_forward_hook(hook)"), "no forward hook"),
        (answers(A, "registered_twice"), "`hook` is registered 2 times on `add`"),
        (
            add5("return output + 5", "add.register_forward_pre_hook(hook)"),
            "`hook` is registered on `add` as a pre-hook",
        ),
    ],
)
def test_forward_add5_mistakes(answer, phrase):
    visible, hidden = both(run_until_next("forward_add5", answer), "forward_add5")
    assert phrase in visible and phrase in hidden


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


# ---- find_the_bug


def torch_outcome(hook) -> str:
    """The exception `add(x1, x2)` raises with `hook` registered, as torch runs it."""
    add = make_add()
    add.register_forward_hook(hook)
    try:
        add(torch.rand(1), torch.rand(1))
    except Exception as error:
        return type(error).__name__
    return "no error"


def torch_exception() -> str:
    return torch_outcome(lambda module, output: None)  # seed 000's signature


def torch_working_fix() -> str:
    options = {
        "a": lambda module, output: None,  # the body changed only
        "b": lambda module, input, output: None,  # the signature changed
        "c": lambda module, output: output + 5,  # the body changed only
    }
    return next(key for key, hook in options.items() if torch_outcome(hook) == "no error")


def quiz(grade_id, **values):
    lines = "\n".join(f"{name} = {value!r}" for name, value in values.items())
    return run_notebook(A, f"# %% {grade_id}\n{lines}")


def test_find_the_bug_wrong_exception_points_to_the_demo_not_the_answer():
    run = quiz("find_the_bug", bug_exception="ValueError", bug_fix=torch_working_fix())
    message = failure(run, "find_the_bug_test")
    assert "'ValueError'" in message and "Run the demo cell" in message
    assert torch_exception() not in message


@pytest.mark.parametrize(
    ("exception", "phrase"),
    [
        ("TypeError: hook() takes 2 positional arguments", "only the exception's class name"),
        ("typeerror", "case-sensitive"),
        (3, "should be a string"),
    ],
)
def test_find_the_bug_exception_forms(exception, phrase):
    run = quiz("find_the_bug", bug_exception=exception, bug_fix=torch_working_fix())
    assert phrase in failure(run, "find_the_bug_test")


def test_find_the_bug_the_class_itself_is_asked_for_as_a_string():
    run = run_notebook(A, '# %% find_the_bug\nbug_exception = TypeError\nbug_fix = "b"')
    assert "write its name as a string" in failure(run, "find_the_bug_test")


@pytest.mark.parametrize("fix", ["a", "b", "c"])
def test_find_the_bug_a_fix_that_does_not_work_says_why_and_not_which_does(fix):
    run = quiz("find_the_bug", bug_exception=torch_exception(), bug_fix=fix)
    if fix == torch_working_fix():
        assert "find_the_bug_test" in run.passed()
        return
    message = failure(run, "find_the_bug_test")
    assert f"with option {fix!r} the call still raises {torch_exception()}" in message
    assert "before its body runs" in message and repr(torch_working_fix()) not in message


def test_find_the_bug_an_option_that_does_not_exist():
    run = quiz("find_the_bug", bug_exception=torch_exception(), bug_fix="d")
    assert 'one of "a", "b" or "c"' in failure(run, "find_the_bug_test")


# ---- hook_effects


def torch_effects() -> dict:
    """Whether each of the three hooks changes add(x1, x2), as torch runs them."""

    def returns_new(module, input, output):
        return output * 2

    def in_place(module, input, output):
        output.mul_(2)

    def rebinds(module, input, output):
        output = output * 2  # the experiment: this changes nothing

    effects = {}
    for hook in (returns_new, in_place, rebinds):
        add = make_add()
        add.register_forward_hook(hook)
        x1, x2 = torch.rand(1), torch.rand(1)
        effects[hook.__name__] = not torch.allclose(add(x1, x2), x1 + x2)
    return effects


def test_hook_effects_wrong_predictions_name_the_keys_and_point_to_the_demo():
    actual = torch_effects()
    wrong = {key: not value for key, value in actual.items()}
    wrong["returns_new"] = actual["returns_new"]  # one right, two wrong
    message = failure(quiz("hook_effects", changes_output=wrong), "hook_effects_test")
    assert "`in_place`, `rebinds`" in message and "Run the demo cell" in message
    assert "True" not in message and "False" not in message
    assert "hook_effects_test" in quiz("hook_effects", changes_output=actual).passed()


@pytest.mark.parametrize(
    ("value", "phrase"),
    [
        ({"returns_new": True, "in_place": True}, "missing: ['rebinds']"),
        ({"returns_new": 1, "in_place": True, "rebinds": False}, "should be True or False"),
        ([True, True, False], "should be a dict with the keys"),
    ],
)
def test_hook_effects_answer_forms(value, phrase):
    assert phrase in failure(quiz("hook_effects", changes_output=value), "hook_effects_test")


def test_hook_effects_todo_names_the_variable_and_its_keys():
    from autograder import course, notebooks

    nb = notebooks.read(course.notebook_path("notebooks", A))
    cell = next(c for c in nb.cells if c.id == "hook_effects")
    assert "changes_output = {" in cell.source
    assert all(key in cell.source for key in ('"returns_new"', '"in_place"', '"rebinds"'))


# ---- pre_hook_replace


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        (replace("return None"), "does not change the inputs"),
        (replace("return input[0] * 2"), "wraps a value that is not a tuple"),
        (answers(A, "pre_hook_returns_list"), "returned a list"),
        (replace("return (input[0] * 2,)"), "returned a tuple of 1"),
        (replace("return (input[0], input[1] * 2)"), "doubles x2"),
        (replace("return (input[0] * 2, input[1] * 2)"), "doubles both inputs"),
        (replace("input[0].mul_(2)"), "changed the caller's `x1` in place"),
        (replace("return input[0] * 2, input[1]", "Add().register_forward_pre_hook(double_x1)"),
         "no pre-hook is registered on `add`"),
        (replace("return input[0] * 2, input[1]", "add.register_forward_hook(double_x1)"),
         "registered on `add` as a forward hook"),
    ],
)  # fmt: skip
def test_pre_hook_replace_mistakes(answer, phrase):
    visible, hidden = both(run_until_next("pre_hook_replace", answer), "pre_hook_replace")
    assert phrase in visible and phrase in hidden
    assert "return (input[0] * 2, input[1])" not in visible


def test_pre_hook_replace_the_fix_comes_only_after_repeated_failures(monkeypatch):
    run = run_until_next("pre_hook_replace", replace("input[0].mul_(2)"))
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    kit_notebook._failures.clear()
    for attempt in range(3):
        with pytest.raises(CheckFailed) as info:
            check("pre_hook_replace", run)
        assert ("return (input[0] * 2, input[1])" in info.value.message) == (attempt == 2)


def test_pre_hook_replace_registered_twice_and_left_by_an_earlier_run():
    twice = replace(
        "return input[0] * 2, input[1]", "add.register_forward_pre_hook(double_x1)\n" * 2
    )
    assert "registered 2 times on `add`" in failure(
        run_until_next("pre_hook_replace", twice), "pre_hook_replace_test"
    )
    once = replace("return input[0] * 2, input[1]")
    run = run_until_next("pre_hook_replace", once, rerun=("pre_hook_replace",))
    assert "an earlier run registered (`double_x1`" in failure(run, "pre_hook_replace_test")


def test_pre_hook_replace_answer_cell_starts_from_a_fresh_add():
    from autograder import course, notebooks

    nb = notebooks.read(course.notebook_path("notebooks", A))
    cell = next(c for c in nb.cells if c.id == "pre_hook_replace")
    assert cell.source.startswith("add = Add()")


# ---- hook_order


def torch_order() -> list[str]:
    module, order = make_double(), []
    module.register_forward_hook(lambda m, i, o: order.append("A"))
    module.register_forward_hook(lambda m, i, o: order.append("B"))
    module.register_forward_hook(lambda m, i, o: order.append("C"), prepend=True)
    module(torch.rand(2))
    return order


def test_hook_order_a_wrong_order_points_to_the_demo_not_the_answer():
    message = failure(quiz("hook_order", predicted_order=["A", "B", "C"]), "hook_order_test")
    assert "['A', 'B', 'C'] is not the order" in message and "prepend=True" in message
    assert str(torch_order()) not in message


def test_hook_order_accepts_a_tuple_and_names_a_malformed_answer():
    assert "hook_order_test" in quiz("hook_order", predicted_order=tuple(torch_order())).passed()
    assert "each once" in failure(
        quiz("hook_order", predicted_order=["A", "A", "B"]), "hook_order_test"
    )


# ---- remove_handle


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        (answers(A, "hook_left_registered"), "still registered on the module"),
        (capture("return module(*inputs)"), "never registers a forward hook"),
        (answers(A, "forward_called_directly"), "calls `module.forward(...)`"),
        (
            capture(
                "seen = []\n    with module.register_forward_hook(lambda m, i, o: seen.append(o)):"
                "\n        module(*inputs)\n    return seen"
            ),
            "returned the list your hook filled",
        ),
    ],
)
def test_remove_handle_mistakes(answer, phrase):
    visible, hidden = both(run_notebook(A, answer), "remove_handle")
    assert phrase in visible and phrase in hidden


def test_remove_handle_forward_bypass_gives_the_cause_after_the_symptom():
    message = failure(run_notebook(A, answers(A, "forward_called_directly")), "remove_handle_test")
    assert message.index("IndexError: list index out of range") < message.index("The cause")
    assert "hooks run only when the module is called as `module(...)`" in message


def test_remove_handle_a_call_after_the_removal_is_named():
    message = failure(run_notebook(A, answers(A, "hook_on_the_wrong_module")), "remove_handle_test")
    assert "ran while no forward hook was registered on it" in message


# ---- method_hook


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        (probe("self.linear.register_forward_hook(self.save_output)", "self.last_output = output"),
         "still attached to the autograd graph"),
        (probe("self.linear.register_forward_hook(lambda m, i, o: setattr(self, 'last_output', "
               "o.detach()))"), "not a method of this Probe"),
        (probe("self.register_forward_hook(self.save_output)"), "registered on the Probe itself"),
        (probe("self.linear.register_forward_pre_hook(self.save_output)"), "as a pre-hook"),
        (probe("pass", forward_extra="self.linear.register_forward_hook(self.save_output)"),
         "registers `save_output` once more"),
        (probe("self.linear.register_forward_hook(self.save_output)", "last_output = output"),
         "is still None after `probe(x)`"),
    ],
)  # fmt: skip
def test_method_hook_mistakes(answer, phrase):
    visible, hidden = both(run_notebook(A, answer), "method_hook")
    assert phrase in visible and phrase in hidden
    assert "self.linear.register_forward_hook(self.save_output)" not in visible


def test_method_hook_stub_is_not_done_yet():
    run = run_notebook(A, probe("self.linear.register_forward_hook(self.save_output)", "..."))
    assert isinstance(run.results["method_hook_test"], NotDoneYet)


# ---- forward_bypass


def torch_fire_count() -> int:
    module, fired = make_double(), []
    module.register_forward_hook(lambda m, i, o: fired.append(1))
    x = torch.rand(2)
    module(x), module.forward(x), module(x)
    return len(fired)


def test_forward_bypass_a_wrong_count_points_to_the_demo():
    wrong = torch_fire_count() + 1
    message = failure(quiz("forward_bypass", fire_count=wrong), "forward_bypass_test")
    times = "time" if wrong == 1 else "times"
    assert f"does not fire {wrong} {times} in" in message and "demo cell" in message
    assert "forward_bypass_test" in quiz("forward_bypass", fire_count=torch_fire_count()).passed()


def test_forward_bypass_wants_an_integer():
    run = quiz("forward_bypass", fire_count=str(torch_fire_count()))
    assert "should be an integer" in failure(run, "forward_bypass_test")


def test_forward_bypass_has_a_demo_of_its_snippet():
    from autograder import course, notebooks

    nb = notebooks.read(course.notebook_path("notebooks", A))
    ids = [cell.id for cell in nb.cells]
    assert (
        ids.index("forward_bypass_intro")
        < ids.index("forward_bypass_demo")
        < ids.index("forward_bypass")
    )


# ---- mlp_report

FULL = (
    'report["input_type"] = type(input); report["input0_type"] = type(input[0]); '
    'report["output_type"] = type(output); report["input_size"] = input[0].size(); '
    'report["output_size"] = output.size(); report["output_norm"] = output.detach().norm()'
)


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        (report("report['input_type'] = type(input)"), "lacks the keys"),
        (answers(A, "input_size_on_tuple"), "'tuple' object has no attribute 'size'"),
        (report(FULL.replace("type(input);", "type(input).__name__;")), "not the string 'tuple'"),
        (report(FULL.replace('= input[0].size()', '= input[0].size')), "is a method"),
        (report(FULL.replace("= type(input);", "= type(input[0]);")),
         "the tuple of the positional arguments"),
        (report(FULL.replace("output.detach().norm()", "output.norm()")),
         "still attached to the autograd graph"),
        (report(FULL, "net.fc1.register_forward_hook(fc2_report)"), "registered on `net.fc1`"),
        (report("report = {'input_type': type(input)}"), "assigns a new dict to `report`"),
    ],
)  # fmt: skip
def test_mlp_report_mistakes(answer, phrase):
    visible, hidden = both(run_notebook(A, answer), "mlp_report")
    assert phrase in visible and phrase in hidden


def test_mlp_report_input_size_on_the_tuple_says_input_is_a_tuple():
    message = failure(run_notebook(A, answers(A, "input_size_on_tuple")), "mlp_report_test")
    assert "as a tuple" in message and "`input[0]`" in message


def test_mlp_report_seed003_style_passes():
    seed003 = """# %% mlp_report
def module_hook(self, input, output):
    report.update(input_type=type(input), input0_type=type(input[0]), output_type=type(output),
                  input_size=input[0].size(), output_size=output.data.size(),
                  output_norm=output.data.norm())

net.fc2.register_forward_hook(module_hook)
"""
    assert {"mlp_report_test", "mlp_report_hidden"} <= run_notebook(A, seed003).passed()


def test_expected_norm_is_computed_independently():
    run = run_notebook(A, solutions=True)
    net, x = run["net"], run["x"]
    manual = torch.relu(x @ net.fc1.weight.T + net.fc1.bias) @ net.fc2.weight.T + net.fc2.bias
    assert torch.allclose(run["report"]["output_norm"], manual.detach().norm())


def test_failure_renders_as_message_not_traceback(monkeypatch):
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    with pytest.raises(CheckFailed) as info:
        check("forward_collect", {"pre_hook": lambda m, i: None})
    lines = info.value._render_traceback_()
    assert lines[0].startswith("… forward_collect is not done yet")
    assert not any("Traceback" in line for line in lines)


# ---- the loop in a real kernel: what the messages tell the student to do works


@pytest.mark.nbgrader
def test_in_a_kernel_the_hooks_of_an_earlier_run_go_once_the_fresh_add_is_back():
    with StudentSession(A) as session:
        session.run_all()
        body = (
            "answer = []\n\ndef pre_hook(module, input):\n    answer.{pre}(input)\n\n"
            "def hook(module, input, output):\n    answer.append(output)\n\n"
            "add.register_forward_pre_hook(pre_hook)\nadd.register_forward_hook(hook)\n"
        )
        session.answer("forward_collect", "add = Add()\n" + body.format(pre="append"))
        assert "the whole tuple" in session.run_to_check("forward_collect")[-1].text
        session.answer("forward_collect", body.format(pre="extend"))  # the fresh add deleted
        verdict = session.run_to_check("forward_collect")[-1]
        assert "an earlier run registered" in verdict.text and "add = Add()" in verdict.text
        session.answer("forward_collect", "add = Add()\n" + body.format(pre="extend"))
        assert "✓ forward_collect" in session.run_to_check("forward_collect")[-1].text


@pytest.mark.nbgrader
def test_in_a_kernel_running_the_add_class_cell_undoes_a_changed_class():
    with StudentSession(A) as session:
        session.run_all()
        patch = "Add.forward = lambda self, x1, x2: torch.add(x1, x2) + 5\n"
        right = "add = Add()\n\ndef hook(module, input, output):\n    return output + 5\n\n"
        right += "add.register_forward_hook(hook)\n"
        session.answer("forward_add5", patch + right)
        assert "class itself has been changed" in session.run_to_check("forward_add5")[-1].text
        session.answer("forward_add5", right)
        assert "class itself has been changed" in session.run_to_check("forward_add5")[-1].text
        assert session.run(session.cells[session.index("add_class")]).status == "ok"
        assert "✓ forward_add5" in session.run_to_check("forward_add5")[-1].text


@pytest.mark.parametrize(
    ("case", "grade_id", "code", "korean_note"),
    [
        ("hook_left_registered", "remove_handle", "module(*inputs)   # hook은", "블록이 끝나면"),
        ("hook_on_the_wrong_module", "method_hook", "(self.save_output)   #", "__init__ 안에서"),
    ],
)
def test_a_fixs_comment_is_in_the_notebooks_language(case, grade_id, code, korean_note):
    from autograder.exercises.kit.run import run_check
    from autograder.i18n import speaking

    run = run_notebook(A, answers(A, case), until=f"{grade_id}_hidden")
    with speaking("ko"):
        outcome = run_check(grade_id, run.namespace)
    assert outcome.status == "failed" and code in outcome.fix and korean_note in outcome.fix
    assert not re.search(r"#[ a-z_]*[a-z]{3,} [a-z]{3,}", outcome.fix), outcome.fix
