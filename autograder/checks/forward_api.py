"""Checks for the forward notebook's seed 004 / 003 / 000 points: pre-hooks, hook effects, order,
handles, method hooks, the forward() bypass, seed 003's fc2 report and seed 000's bug."""

from __future__ import annotations

import torch

from autograder.checks.evidence import built_from, random_pairs
from autograder.checks.registry import register
from autograder.checks.student import Student, require_arity
from autograder.feedback import CheckFailed, describe
from autograder.models.forward import make_add, make_double, make_mlp, make_probe_add
from autograder.tolerances import close


def _double_first(s: Student, x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
    pre_hook = s.function("double_x1")
    require_arity(pre_hook, "double_x1", "double_x1(module, input)", 2)
    add = make_add()
    a, b = x1.clone(), x2.clone()
    returned = s.call("double_x1(module, (x1, x2))", pre_hook, add, (a, b))
    if returned is not None and not (isinstance(returned, tuple) and len(returned) == 2):
        raise CheckFailed(
            f"double_x1 returned {describe(returned)}. PyTorch wraps a value that is not a tuple "
            "into a 1-tuple, so forward would get one argument instead of two: return a tuple "
            "with one entry per input, `(new_x1, x2)`."
        )
    a, b = x1.clone(), x2.clone()
    with add.register_forward_pre_hook(pre_hook):
        output = s.call("add(x1, x2) with double_x1 registered", add, a, b)
    if not (torch.equal(a, x1) and torch.equal(b, x2)):
        raise CheckFailed(
            "double_x1 changed the caller's tensors in place (x1 itself was modified). "
            "Build new inputs and return them: `return (input[0] * 2, input[1])`."
        )
    return output


@register("pre_hook_replace")
def pre_hook_replace(s: Student) -> str:
    a, b = torch.rand(1), torch.rand(1)
    fresh = _double_first(s, a, b)
    if close(fresh, a + b):
        raise CheckFailed(
            "double_x1 does not change the input. A forward pre-hook replaces the inputs only "
            "by returning them, as a tuple with one entry per forward argument."
        )
    x1, x2, output = s.get("x1"), s.get("x2"), s.get("output")
    s.record(x1=x1, x2=x2, output=output)
    if not close(output, 2 * x1 + x2):
        expected = 2 * x1 + x2
        raise CheckFailed(f"expected 2 * x1 + x2 = {describe(expected)}, got {describe(output)}.")
    return "the pre-hook doubles x1 before forward runs."


REPLACE_SHAPES = [(1,), (3,)]


@register("pre_hook_replace", hidden=True)
def pre_hook_replace_hidden(s: Student) -> str:
    for trial, (x1, x2) in enumerate(random_pairs(s.rng, REPLACE_SHAPES)):
        got = _double_first(s, x1, x2)
        s.record(**{f"output{trial}": got})
        if not close(got, 2 * x1 + x2):
            raise CheckFailed(
                f"on a fresh Add with new inputs, expected 2 * x1 + x2 = {describe(2 * x1 + x2)}, "
                f"got {describe(got)}."
            )
    return "double_x1 works on fresh modules and inputs."


def _effect_hooks():
    def returns_new(module, input, output):
        return output * 2

    def in_place(module, input, output):
        output.mul_(2)

    def rebinds(module, input, output):
        output = output * 2  # the point of the experiment: this has no effect

    return {"returns_new": returns_new, "in_place": in_place, "rebinds": rebinds}


def _quiz_answer(s: Student, name: str, expected: object, explain: str) -> str:
    got = s.get(name, hint=f"Fill in `{name}` in the cell above.")
    s.record(**{name: got})
    if got is ...:
        raise CheckFailed(f"`{name}` is still `...`: replace it with your prediction.")
    if got != expected:
        raise CheckFailed(f"`{name}` is {got!r}, but PyTorch does {expected!r}. {explain}")
    return f"{name} = {expected!r} is what PyTorch does."


def _actual_effects() -> dict[str, bool]:
    actual = {}
    for name, hook in _effect_hooks().items():
        add, x1, x2 = make_add(), torch.rand(1), torch.rand(1)
        with add.register_forward_hook(hook):
            actual[name] = not close(add(x1, x2), x1 + x2)
    return actual


@register("hook_effects")
def hook_effects(s: Student) -> str:
    return _quiz_answer(
        s,
        "changes_output",
        _actual_effects(),
        "Returning a value replaces the output; changing the output tensor in place changes the "
        "very object the caller receives; rebinding the name only changes a local variable.",
    )


def _actual_order() -> list[str]:
    module, order = make_double(), []
    module.register_forward_hook(lambda m, i, o: order.append("A"))
    module.register_forward_hook(lambda m, i, o: order.append("B"))
    module.register_forward_hook(lambda m, i, o: order.append("C"), prepend=True)
    module(torch.rand(2))
    return order


@register("hook_order")
def hook_order(s: Student) -> str:
    return _quiz_answer(
        s,
        "predicted_order",
        _actual_order(),
        "Hooks of one kind run in registration order; prepend=True puts a hook first.",
    )


def _capture(s: Student, x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
    capture_output = s.function("capture_output")
    module = make_probe_add()
    got = s.call("capture_output(module, x1, x2)", capture_output, module, x1, x2)
    if module.hooks_seen == 0:
        raise CheckFailed(
            "no forward hook was registered while the module ran: capture the output with a "
            "forward hook (that is the exercise), not by calling the module directly."
        )
    if len(module._forward_hooks):
        raise CheckFailed(
            f"{len(module._forward_hooks)} hook(s) are still registered after capture_output "
            "returned. Keep the handle from register_forward_hook and call handle.remove(), or "
            "use `with module.register_forward_hook(...):`."
        )
    if not close(got, x1 + x2):
        raise CheckFailed(f"expected the output {describe(x1 + x2)}, got {describe(got)}.")
    return got


CAPTURE_SHAPES = {False: [(1,)], True: [(2,), (3, 1)]}  # visible, hidden


@register("remove_handle")
def remove_handle(s: Student) -> str:
    for trial, (x1, x2) in enumerate(random_pairs(s.rng, CAPTURE_SHAPES[False])):
        s.record(**{f"output{trial}": _capture(s, x1, x2)})
    return "capture_output captures the output with a hook and removes it afterwards."


@register("remove_handle", hidden=True)
def remove_handle_hidden(s: Student) -> str:
    for trial, (x1, x2) in enumerate(random_pairs(s.rng, CAPTURE_SHAPES[True])):
        s.record(**{f"output{trial}": _capture(s, x1, x2)})
    return "capture_output works on fresh modules and inputs, and leaves no hook behind."


def _check_probe(s: Student, probe: torch.nn.Module, x: torch.Tensor, params=None) -> None:
    linear = getattr(probe, "linear", None)
    if params is not None and isinstance(linear, torch.nn.Linear):
        # Weights from the check's generator: the verifier knows the expected output then.
        with torch.no_grad():
            for target, value in zip((linear.weight, linear.bias), params, strict=True):
                if isinstance(target, torch.Tensor) and target.shape == value.shape:
                    target.copy_(value)
    s.call("probe(x)", probe, x)
    linear = getattr(probe, "linear", None)
    if not isinstance(linear, torch.nn.Linear):
        raise CheckFailed("Probe should keep its layer as `self.linear = nn.Linear(4, 2)`.")
    hooks = list(linear._forward_hooks.values())
    if not any(getattr(hook, "__self__", None) is probe for hook in hooks):
        raise CheckFailed(
            "no hook on probe.linear is a method of this Probe: register "
            "`self.linear.register_forward_hook(self.save_output)` in __init__."
        )
    expected = x @ linear.weight.detach().T + linear.bias.detach()
    got = getattr(probe, "last_output", None)
    if not close(got, expected):
        raise CheckFailed(
            f"probe.last_output should be linear(x) = {describe(expected)}, got {describe(got)}."
        )
    if got.requires_grad:
        raise CheckFailed("store `output.detach()`, so the stored tensor keeps no graph alive.")


@register("method_hook")
def method_hook(s: Student) -> str:
    s.call("Probe()", s.get("Probe"))  # surfaces a stub before the notebook's state is read
    probe, x = s.get("probe"), s.get("x")
    linear = getattr(probe, "linear", None)
    s.record(x=x, output=getattr(probe, "last_output", None))
    s.record(weight=getattr(linear, "weight", None), bias=getattr(linear, "bias", None))
    _check_probe(s, probe, x)
    return "save_output is a method registered in __init__ and stores the layer's output."


@register("method_hook", hidden=True)
def method_hook_hidden(s: Student) -> str:
    probe_class = s.get("Probe")
    first, second = s.call("Probe()", probe_class), s.call("Probe()", probe_class)
    cases = zip((first, second), probe_cases(s.rng), strict=True)
    for trial, (probe, (weight, bias, x)) in enumerate(cases):
        _check_probe(s, probe, x, (weight, bias))
        s.record(**{f"output{trial}": probe.last_output})
    if first.last_output.shape == second.last_output.shape:
        raise CheckFailed("two Probe instances share their stored output; store it on self.")
    return "each new Probe records its own layer output."


def probe_cases(rng: torch.Generator) -> list[tuple[torch.Tensor, ...]]:
    """(weight, bias, x) for the hidden check's two Probes: batches of 3 and 5 rows."""
    return [
        (
            torch.randn(2, 4, generator=rng),
            torch.randn(2, generator=rng),
            torch.rand(rows, 4, generator=rng),
        )
        for rows in (3, 5)
    ]


def _fire_count() -> int:
    module, fired = make_double(), []
    module.register_forward_hook(lambda m, i, o: fired.append(1))
    x = torch.rand(2)
    module(x)
    module.forward(x)
    module(x)
    return len(fired)


@register("forward_bypass")
def forward_bypass(s: Student) -> str:
    return _quiz_answer(
        s,
        "fire_count",
        _fire_count(),
        "Hooks run inside module(...) (nn.Module.__call__); module.forward(x) skips them.",
    )


def _report_on(s: Student, net: torch.nn.Module, x: torch.Tensor) -> dict:
    fc2_report = s.function("fc2_report")
    require_arity(fc2_report, "fc2_report", "fc2_report(module, input, output)", 3)
    with s.swapped_global([fc2_report], "report", {}) as report_now:
        with net.fc2.register_forward_hook(fc2_report):
            s.call("net(x) with fc2_report registered", net, x)
        return report_now()


def _expected_report(net: torch.nn.Module, x: torch.Tensor) -> dict:
    with torch.no_grad():
        hidden = torch.relu(x @ net.fc1.weight.T + net.fc1.bias)
        out = hidden @ net.fc2.weight.T + net.fc2.bias
    return {
        "input_type": tuple,
        "input0_type": torch.Tensor,
        "output_type": torch.Tensor,
        "input_size": hidden.size(),
        "output_size": out.size(),
        "output_norm": out.norm(),
    }


def _compare_report(got: object, expected: dict) -> None:
    if not isinstance(got, dict):
        raise CheckFailed(f"`report` should be a dict, got {describe(got)}.")
    missing = [key for key in expected if key not in got]
    if missing:
        raise CheckFailed(f"`report` lacks the key(s) {missing}; it has {sorted(got)}.")
    for key, want in expected.items():
        value = got[key]
        if isinstance(want, torch.Tensor):
            ok = isinstance(value, torch.Tensor | float) and close(torch.as_tensor(value), want)
        else:
            ok = value == want
        if not ok:
            raise CheckFailed(f"report[{key!r}] should be {describe(want)}, got {describe(value)}.")


@register("mlp_report")
def mlp_report(s: Student) -> str:
    _report_on(s, make_mlp(), torch.rand(100))
    net, x, report = s.get("net"), s.get("x"), s.get("report")
    layers = {
        f"{name}.{p}": getattr(getattr(net, name, None), p, None)
        for name in ("fc1", "fc2")
        for p in ("weight", "bias")
    }
    s.record(x=x, report=report, layers=layers)
    _compare_report(report, _expected_report(net, x))
    return "the report gives fc2's input and output types, sizes and the output norm."


REPORT_TRIALS = [((100, 200, 10), (100,)), ((20, 30, 5), (4, 20))]


def _report_trials(rng: torch.Generator):
    """Fresh networks (weights drawn from the check's generator) and inputs for the hidden check."""
    return [
        (built_from(rng, make_mlp, *sizes), torch.rand(shape, generator=rng))
        for sizes, shape in REPORT_TRIALS
    ]


@register("mlp_report", hidden=True)
def mlp_report_hidden(s: Student) -> str:
    for trial, (net, x) in enumerate(_report_trials(s.rng)):
        report = _report_on(s, net, x)
        s.record(**{f"report{trial}": report})
        _compare_report(report, _expected_report(net, x))
    return "fc2_report works on fresh networks of other sizes and batch shapes."


def _buggy(module, output):  # seed 000's hook, kept here as the check's experiment
    output += 5


def _outcome(hook) -> str:
    add = make_add()
    with add.register_forward_hook(hook):
        try:
            add(torch.rand(1), torch.rand(1))
        except Exception as error:
            return type(error).__name__
    return "no error"


def _option_fixes():
    def a(module, output):
        output = output + 5  # option (a) keeps the two-argument signature
        return None

    def b(module, input, output):
        output += 5

    def c(module, output):
        return output + 5

    return {"a": a, "b": b, "c": c}


def _working_fix() -> str:
    return next(key for key, fix in _option_fixes().items() if _outcome(fix) == "no error")


@register("find_the_bug")
def find_the_bug(s: Student) -> str:
    _quiz_answer(
        s,
        "bug_exception",
        _outcome(_buggy),
        "Run the buggy cell and read the exception's name.",
    )
    return _quiz_answer(
        s,
        "bug_fix",
        _working_fix(),
        "Only one of the options makes add(x1, x2) run: try each one in the demo cell.",
    )
