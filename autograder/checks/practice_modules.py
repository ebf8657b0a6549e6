"""Checks for the hooks-in-practice notebook's module-hook exercises: dead-ReLU statistics, and a
call tracer that sees keyword arguments and still runs when forward raises."""

from __future__ import annotations

import torch
from torch import nn

from autograder.checks.evidence import built_from, randint, uniform
from autograder.checks.practice_common import (
    handles_of,
    hook_free_outputs,
    in_check,
    mlp_evidence,
    module_hooks_left,
    random_sizes,
    require_no_module_hooks,
)
from autograder.checks.registry import register
from autograder.checks.student import Student, require_arity
from autograder.feedback import CheckFailed, describe
from autograder.models.practice import make_block, make_mlp
from autograder.tolerances import ATOL

FRESH_MLP = "On a fresh MLP with random sizes, weights and inputs"

# ---- dead_relu_stats -----------------------------------------------------------------------------


def dead_fractions(model: nn.Module, x: torch.Tensor) -> dict[str, float]:
    """Hook-free: for each ReLU, the fraction of its units that are 0 for every example."""
    return {
        name: (out == 0).all(dim=0).float().mean().item()
        for name, out in hook_free_outputs(model, x).items()
        if isinstance(model.get_submodule(name), nn.ReLU)
    }


def _zero_entry_fractions(model: nn.Module, x: torch.Tensor) -> dict[str, float]:
    return {
        name: (out == 0).float().mean().item()
        for name, out in hook_free_outputs(model, x).items()
        if isinstance(model.get_submodule(name), nn.ReLU)
    }


def _as_number(value: object) -> float | None:
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return value.item()
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _judge_stats(got: object, model: nn.Module, x: torch.Tensor) -> None:
    expected = dead_fractions(model, x)
    if not isinstance(got, dict):
        raise CheckFailed(
            f"relu_stats should return a dict {{ReLU name: dead fraction}}, got {describe(got)}."
        )
    if set(got) != set(expected):
        raise CheckFailed(
            f"the keys should be the names of the model's nn.ReLU modules, as "
            f"model.named_modules() gives them: {sorted(expected)}; got {sorted(map(str, got))}. "
            "Select the ReLUs with isinstance(module, nn.ReLU) and key the result by their name."
        )
    numbers = {name: _as_number(value) for name, value in got.items()}
    for name, value in numbers.items():
        if value is None:
            raise CheckFailed(
                f"the value for {name!r} should be a number (a fraction between 0 and 1), got "
                f"{describe(got[name])}."
            )
    wrong = [name for name in expected if abs(numbers[name] - expected[name]) > ATOL]
    if not wrong:
        return
    zero_entries = _zero_entry_fractions(model, x)
    if all(abs(numbers[n] - zero_entries[n]) <= ATOL for n in wrong):
        raise CheckFailed(
            "these are the fractions of output *entries* that are 0, over all examples and units. "
            "A unit is dead when it is 0 for *every* example of the batch: "
            "`(output == 0).all(dim=0).float().mean()`."
        )
    if all(abs(numbers[n] - (1 - expected[n])) <= ATOL for n in wrong):
        raise CheckFailed(
            "these are the fractions of units that are alive (1 - dead). Count the units that "
            "are 0 for every example."
        )
    lines = "\n  ".join(f"{n}: expected {expected[n]:.4f}, got {numbers[n]:.4f}" for n in wrong)
    raise CheckFailed(f"wrong dead fractions:\n  {lines}")


def _run_stats(s: Student, model: nn.Module, x: torch.Tensor) -> object:
    fn = s.function("relu_stats")
    require_arity(fn, "relu_stats", "relu_stats(model, x)", 2)
    return s.call("relu_stats(model, x)", fn, model, x)


def _dead_mlp(sizes: tuple[int, ...], shift: float) -> nn.Module:
    model = make_mlp(sizes)
    with torch.no_grad():
        for layer in model.layers:
            if isinstance(layer, nn.Linear):
                layer.bias.sub_(shift)
    return model


def fresh_dead_mlp(rng: torch.Generator) -> tuple[nn.Module, torch.Tensor]:
    """A fresh MLP whose hidden biases are pushed down, so some of its units die on the batch."""
    sizes = random_sizes(rng)
    model = built_from(rng, _dead_mlp, sizes, uniform(rng, 0.2, 1.0))
    return model, torch.randn(randint(rng, 6, 12), sizes[0], generator=rng)


@register("dead_relu_stats")
def dead_relu_stats(s: Student) -> str:
    fresh, x = fresh_dead_mlp(s.rng)
    _run_stats(s, fresh, x)
    require_no_module_hooks(fresh, FRESH_MLP, "relu_stats")
    model, x, stats = s.get("model"), s.get("x"), s.get("stats")
    s.record(model=mlp_evidence(model), x=x, stats=stats)
    _judge_stats(stats, model, x)
    return "`stats` holds the dead fraction of every ReLU, and no hook is left behind."


@register("dead_relu_stats", hidden=True)
def dead_relu_stats_hidden(s: Student) -> str:
    for trial in range(3):
        model, x = fresh_dead_mlp(s.rng)
        got = in_check(FRESH_MLP, _run_stats, s, model, x)
        s.record(**{f"stats{trial}": got})
        require_no_module_hooks(model, FRESH_MLP, "relu_stats")
        in_check(FRESH_MLP, _judge_stats, got, model, x)
    return "relu_stats measures dead units on fresh models and batches."


# ---- kwargs_always_call --------------------------------------------------------------------------

FRESH_BLOCK = "On a fresh Block"
SIGNATURES = (
    "\n  With with_kwargs=True, PyTorch calls a pre-hook as hook(module, args, kwargs) and a "
    "forward hook as hook(module, args, kwargs, output); without it, as hook(module, args) and "
    "hook(module, args, output)."
)


def raises_value_error(reference: nn.Module, x: torch.Tensor, kwargs: dict) -> bool:
    """Does the hook-free `reference(x, **kwargs)` raise ValueError?"""
    try:
        reference(x, **kwargs)
    except ValueError:
        return True
    return False


def expected_entries(reference: nn.Module, x: torch.Tensor, calls: list[dict]) -> list[tuple]:
    """The log the tracer should write: for each call, its keywords and whether forward raised."""
    log = []
    for kwargs in calls:
        raised = raises_value_error(reference, x, kwargs)
        log += [("enter", sorted(kwargs)), ("exit", "raised" if raised else "returned")]
    return log


def _script(rng: torch.Generator, dim: int, rows: int) -> list[dict]:
    """Keyword arguments of the calls to make; the mask of one has the wrong shape."""
    mask, bad = torch.rand(rows, dim, generator=rng), torch.rand(rows, dim + 1, generator=rng)
    calls = [{}, {"mask": mask}, {"mask": mask, "scale": 0.5}]
    calls = [calls[i] for i in torch.randperm(len(calls), generator=rng).tolist()]
    calls.insert(randint(rng, 1, len(calls)), {"mask": bad})
    calls.append({"scale": 2.0})
    return calls


def block_case(rng: torch.Generator) -> tuple[nn.Module, list[dict], torch.Tensor]:
    """A fresh Block, the calls to make on it and its input, all drawn from `rng`."""
    dim, rows = randint(rng, 3, 10), randint(rng, 1, 5)
    block = built_from(rng, make_block, dim)
    return block, _script(rng, dim, rows), torch.randn(rows, dim, generator=rng)


def block_evidence(block: nn.Module) -> dict[str, object]:
    return {"dim": block.proj.in_features, "state": dict(block.state_dict())}


def hook_free_copy(block: nn.Module) -> nn.Module:
    reference = make_block(block.proj.in_features)
    reference.load_state_dict(block.state_dict())
    return reference


def _hint(message: str) -> str:
    if "positional argument" in message:  # "missing 1 required ...", "takes 3 ... 4 were given"
        return SIGNATURES
    if "must return None or a tuple of (new_args, new_kwargs)" in message:
        return (
            "\n  A with_kwargs pre-hook that returns something must return (args, kwargs); "
            "one that only records should return None."
        )
    return ""


def _trace(s: Student, block: nn.Module, calls: list[dict], x: torch.Tensor):
    """Run trace_calls on `block`, make the calls; return (log, handles, outputs)."""
    fn = s.function("trace_calls")
    require_arity(fn, "trace_calls", "trace_calls(module, log)", 2)
    log: list = []
    handles = handles_of(s.call("trace_calls(module, log)", fn, block, log), "trace_calls")
    reference, outputs = hook_free_copy(block), []
    for kwargs in calls:
        what = "block(x" + "".join(f", {k}=..." for k in kwargs) + ")"
        raises = raises_value_error(reference, x, kwargs)
        try:
            outputs.append(block(x, **kwargs))
        except ValueError as error:
            if not raises:
                raise CheckFailed(f"{what} raised ValueError: {error}") from None
            outputs.append(None)
        except Exception as error:
            message = f"{what}, with your hooks, raised {type(error).__name__}: {error}"
            raise CheckFailed(message + _hint(str(error))) from None
        else:
            if raises:
                raise CheckFailed(
                    f"{what} should raise ValueError (the mask has the wrong shape), but it "
                    "returned: a hook must not hide the error."
                )
    return log, handles, outputs


def _judge_trace(s: Student, block: nn.Module, calls: list[dict], x: torch.Tensor, key: str):
    log, handles, outputs = _trace(s, block, calls, x)
    s.record(**{f"log{key}": log, f"outputs{key}": outputs})
    reference = hook_free_copy(block)
    for kwargs, out in zip(calls, outputs, strict=True):
        if out is not None and not torch.equal(out, reference(x, **kwargs)):
            raise CheckFailed(
                "with your hooks, the block's output changed: hooks that only record must "
                "return None."
            )
    expected = expected_entries(reference, x, calls)
    if not same_log(log, expected):
        raise CheckFailed(_trace_message(log, expected, block))
    for handle in handles:
        handle.remove()
    left = module_hooks_left(block)
    if left:
        raise CheckFailed(
            "after removing the handles trace_calls returned, hooks are still registered: "
            f"{'; '.join(left)}. Return the handles of both hooks you registered."
        )


def same_log(log: object, expected: list[tuple]) -> bool:
    """log == expected, where a student's log may hold anything (tensors compare oddly)."""
    try:
        return bool(log == expected)
    except Exception:
        return False


def _trace_message(log: list, expected: list, block: nn.Module) -> str:
    shown = f"\n  expected log: {expected}\n  got:          {repr(log)[:400]}"
    kinds = (("enter",), ("exit",))
    if not isinstance(log, list) or not all(
        isinstance(entry, tuple) and any(same_log(entry[:1], kind) for kind in kinds)
        for entry in log
    ):
        return (
            "`log` should hold only tuples ('enter', sorted keyword names) and ('exit', "
            "'returned' or 'raised')." + shown
        )
    enters = [entry for entry in log if entry[0] == "enter"]
    if enters and all(same_log(list(entry[1:]), [[]]) for entry in enters):
        return (
            "every enter entry shows no keyword arguments, but the calls passed mask= and "
            "scale=: only a pre-hook registered with with_kwargs=True receives them, as "
            "hook(module, args, kwargs)." + shown
        )
    exits = [entry for entry in log if entry[:1] == ("exit",)]
    wanted = [entry for entry in expected if entry[0] == "exit"]
    if len(exits) == len(wanted) - 1 and ("exit", "raised") not in log:
        if block._forward_hooks_always_called:
            return (
                "no exit entry for the call whose forward raised, although your forward hook "
                "has always_call=True: the hook itself raised (PyTorch turns that into a "
                "warning). When forward raises, the hook gets output=None: test "
                "`output is None` before using it." + shown
            )
        return (
            "no exit entry for the call whose forward raised: a forward hook runs after a "
            "failing forward only when registered with always_call=True (it then gets "
            "output=None)." + shown
        )
    return "the log is not what the calls should produce." + shown


@register("kwargs_always_call")
def kwargs_always_call(s: Student) -> str:
    _judge_trace(s, *block_case(s.rng), "_fresh")
    block, log, x, calls = s.get("block"), s.get("log"), s.get("x_block"), s.get("calls")
    s.record(block=block_evidence(block), x_block=x, calls=calls, log=log)
    expected = expected_entries(hook_free_copy(block), x, calls)
    if not same_log(log, expected):
        raise CheckFailed("in the notebook, " + _trace_message(log, expected, block))
    return "`log` has an enter and an exit entry for every call, with the keywords, errors too."


@register("kwargs_always_call", hidden=True)
def kwargs_always_call_hidden(s: Student) -> str:
    for trial in range(3):
        in_check(FRESH_BLOCK, _judge_trace, s, *block_case(s.rng), str(trial))
    return "trace_calls traces keyword calls and failing calls on fresh blocks."
