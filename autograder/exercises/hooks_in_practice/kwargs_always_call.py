"""kwargs_always_call: `trace_calls(module, log)` registers a pre-hook that sees keyword arguments
(`with_kwargs=True`) and a forward hook that also runs when forward raises (`always_call=True`);
for every call they log ("enter", sorted keyword names) and ("exit", "returned" or "raised")."""

from __future__ import annotations

import torch
from torch import nn

from autograder.exercises.hooks_in_practice.common import handles_of, loaded
from autograder.exercises.hooks_in_practice.models import make_block
from autograder.exercises.kit.cases import in_case
from autograder.exercises.kit.evidence import built_from, randint
from autograder.exercises.kit.hooks import hooks_left
from autograder.exercises.kit.judge import Suspicious, expect_close, expect_equal, item
from autograder.exercises.kit.student import Student, positional_arity, require_arity
from autograder.feedback import CheckFailed
from autograder.i18n import N_, _

HINTS = [
    N_(
        "A hook sees keyword arguments only when it is registered with `with_kwargs=True`; "
        "both of yours need it."
    ),
    N_(
        "With it, the pre-hook is called as `(module, args, kwargs)` and the forward hook as "
        "`(module, args, kwargs, output)`. `sorted(kwargs)` gives the keyword names in order."
    ),
    N_(
        "The forward hook also needs `always_call=True`. On a call whose `forward` raised it "
        "gets `output=None`: test `output is None` before anything else."
    ),
    N_(
        "Append to the `log` you were given, return `None` from both hooks, and return the two "
        "handles in a list."
    ),
]
TRIALS = 3  # the hidden check's fresh blocks
SIGNATURE = "trace_calls(module, log)"


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


def hook_free_copy(block: nn.Module) -> nn.Module:
    reference = make_block(block.proj.in_features)
    reference.load_state_dict(block.state_dict())
    return reference


def normalised(log: object) -> object:
    """`log` with each 2-entry list or tuple as a tuple, and a keyword list given as a tuple as
    a list: the entries the text asks for, however they were built. Anything else is kept."""
    if not isinstance(log, list):
        return log
    entries = []
    for entry in log:
        if isinstance(entry, list | tuple) and len(entry) == 2:
            kind, value = entry
            entry = (kind, list(value) if isinstance(value, tuple) else value)
        entries.append(entry)
    return entries


def same_log(log: object, expected: list[tuple]) -> bool:
    """normalised(log) == expected, where a student's log may hold anything (tensors compare
    oddly)."""
    try:
        return bool(normalised(log) == expected)
    except Exception:
        return False


def _equals(a: object, b: object) -> bool:
    try:
        return bool(a == b)
    except Exception:  # a tensor compared with a string, say
        return False


def _error_cause(message: str) -> str:
    if "positional argument" in message:  # "missing 1 required ...", "takes 3 ... 4 were given"
        return _(
            "With `with_kwargs=True`, PyTorch calls a pre-hook as `hook(module, args, kwargs)` "
            "and a forward hook as `hook(module, args, kwargs, output)`; without it, as "
            "`hook(module, args)` and `hook(module, args, output)`."
        )
    if "must return None or a tuple of (new_args, new_kwargs)" in message:
        return _(
            "A `with_kwargs` pre-hook that returns something must return a tuple "
            "`(args, kwargs)`, which replaces the call's arguments; a hook that only records "
            "returns None."
        )
    return ""


# (kind, where Module keeps such hooks, where it marks those registered with_kwargs, the call
# without with_kwargs, the call with it): torch has no public way to list a module's hooks.
KINDS = (
    (N_("pre-hook"), "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs",
     "hook(module, args)", "hook(module, args, kwargs)"),
    (N_("forward hook"), "_forward_hooks", "_forward_hooks_with_kwargs",
     "hook(module, args, output)", "hook(module, args, kwargs, output)"),
)  # fmt: skip


def _require_signatures(block: nn.Module) -> None:
    """Every hook on `block` can take the arguments PyTorch will call it with."""
    for kind, store, marks, plain, with_kwargs in KINDS:
        for hook_id, hook in getattr(block, store).items():
            marked = hook_id in getattr(block, marks)
            call = with_kwargs if marked else plain
            arity, count = positional_arity(hook), call.count(",") + 1
            if arity is None or arity == count:
                continue
            how = (
                _("registered with `with_kwargs=True`")
                if marked
                else _("registered without `with_kwargs=True`")
            )
            raise CheckFailed(
                _(
                    "your {kind} `{name}` takes {arity} arguments, but it is {how}, so PyTorch "
                    "calls it as `{call}` ({count} arguments) and the call raises TypeError."
                ).format(
                    kind=_(kind),
                    name=getattr(hook, "__name__", kind),
                    arity=arity,
                    how=how,
                    call=call,
                    count=count,
                )
            )


def _trace(s: Student, block: nn.Module, calls: list[dict], x: torch.Tensor):
    """Run trace_calls on `block`, make the calls; return (log, handles, outputs)."""
    fn = s.function("trace_calls")
    require_arity(fn, "trace_calls", SIGNATURE, 2)
    log: list = []
    handles = handles_of(s.call(f"`{SIGNATURE}`", fn, block, log), "trace_calls")
    _require_signatures(block)
    reference, outputs = hook_free_copy(block), []
    for kwargs in calls:
        what = "`block(x" + "".join(f", {k}=..." for k in kwargs) + ")`"
        raises = raises_value_error(reference, x, kwargs)
        try:
            outputs.append(block(x, **kwargs))
        except ValueError as error:
            if not raises:
                raise CheckFailed(
                    _("{what} raised ValueError: {error}").format(what=what, error=error)
                ) from None
            outputs.append(None)
        except Exception as error:
            raise CheckFailed(
                _("{what}, with your hooks, raised `{kind}: {error}`. {cause}").format(
                    what=what,
                    kind=type(error).__name__,
                    error=error,
                    cause=_error_cause(str(error)),
                )
            ) from None
        else:
            if raises:
                raise CheckFailed(
                    _(
                        "{what} should raise ValueError (the mask has the wrong shape), but it "
                        "returned: a hook must not hide the error."
                    ).format(what=what)
                )
    return log, handles, outputs


def _judge_trace(s: Student, block: nn.Module, calls: list[dict], x: torch.Tensor, key: str):
    log, handles, outputs = _trace(s, block, calls, x)
    s.record(**{f"log{key}": normalised(log), f"outputs{key}": outputs})
    if _equals(log, []):
        raise CheckFailed(
            _(
                "`trace_calls` registered no hook on the module it was given, so nothing was "
                "logged: the hooks go on `module`, its first argument."
            )
            if not hooks_left(block)
            else _(
                "the block was called {count} times with your hooks on it, but nothing was "
                "appended to the `log` that `trace_calls` was given: the hooks must append to "
                "that very list (its second argument), not to another one."
            ).format(count=len(calls))
        )
    reference = hook_free_copy(block)
    for kwargs, out in zip(calls, outputs, strict=True):
        if out is not None and not torch.equal(out, reference(x, **kwargs)):
            raise CheckFailed(
                _(
                    "with your hooks, the block's output changed: hooks that only record must "
                    "return None."
                )
            )
    expected = expected_entries(reference, x, calls)
    if not same_log(log, expected):
        raise CheckFailed(_trace_message(log, expected, block))
    for handle in handles:
        handle.remove()
    left = hooks_left(block)
    if left:
        raise CheckFailed(
            _(
                "after removing the handles `trace_calls` returned, hooks are still registered: "
                "{left}. Return the handles of both hooks you registered."
            ).format(left="; ".join(left))
        )


def _trace_message(log: object, expected: list, block: nn.Module) -> str:
    shown = "\n" + _("expected log: {expected}\ngot: {got}").format(
        expected=expected, got=repr(log)[:400]
    )
    log = normalised(log)
    if not isinstance(log, list) or not all(
        isinstance(entry, tuple) and (_equals(entry[0], "enter") or _equals(entry[0], "exit"))
        for entry in log
    ):
        return (
            _(
                "`log` should hold only pairs ('enter', sorted keyword names) and ('exit', "
                "'returned' or 'raised')."
            )
            + shown
        )
    enters = [entry for entry in log if entry[0] == "enter"]
    if enters and all(_equals(entry[1], []) for entry in enters):
        return (
            _(
                "every enter entry shows no keyword arguments, but the calls passed `mask=` and "
                "`scale=`: only a pre-hook registered with `with_kwargs=True` receives them, as "
                "`hook(module, args, kwargs)`."
            )
            + shown
        )
    exits = [entry for entry in log if entry[0] == "exit"]
    wanted = [entry for entry in expected if entry[0] == "exit"]
    if len(exits) == len(wanted) - 1 and ("exit", "raised") not in log:
        # Module._forward_hooks_always_called: which forward hooks were registered with
        # always_call=True (torch has no public way to ask).
        if block._forward_hooks_always_called:
            return (
                _(
                    "no exit entry for the call whose forward raised, although your forward "
                    "hook has `always_call=True`: the hook itself raised (PyTorch turns that "
                    "into a warning). When forward raises, the hook gets `output=None`, which "
                    "it must handle before using `output`."
                )
                + shown
            )
        return (
            _(
                "no exit entry for the call whose forward raised: a forward hook runs after a "
                "failing forward only when it is registered with `always_call=True` (it then "
                "gets `output=None`)."
            )
            + shown
        )
    return _("the log is not what the calls should produce.") + shown


def _fresh_where() -> str:
    return _("On a fresh Block")


def visible(s: Student) -> str:
    in_case(_fresh_where(), _judge_trace, s, *block_case(s.rng), "_fresh")
    block, log, x, calls = s.get("block"), s.get("log"), s.get("x_block"), s.get("calls")
    s.record(
        block={"dim": block.proj.in_features, "state": dict(block.state_dict())},
        x_block=x,
        calls=calls,
        log=normalised(log),
    )
    expected = expected_entries(hook_free_copy(block), x, calls)
    if not same_log(log, expected):
        raise CheckFailed(
            _("In the notebook, `log`: {message}").format(
                message=_trace_message(log, expected, block)
            )
        )
    return _("`log` has an enter and an exit entry for every call, with the keywords, errors too.")


def hidden(s: Student) -> str:
    for trial in range(TRIALS):
        in_case(_fresh_where(), _judge_trace, s, *block_case(s.rng), str(trial))
    return _("`trace_calls` traces keyword calls and failing calls on fresh blocks.")


def _expect_trace(log: object, outputs: object, block: nn.Module, calls, x, what: str) -> None:
    want = [[kind, value] for kind, value in expected_entries(block, x, calls)]
    expect_equal(log, want, f"the log of {what}")
    if type(outputs) is not list or len(outputs) != len(calls):
        raise Suspicious(f"the outputs of {what} are not one per call")
    for index, (kwargs, got) in enumerate(zip(calls, outputs, strict=True)):
        if raises_value_error(block, x, kwargs):
            expect_equal(got, None, f"the output of call {index} of {what}")
        else:
            expect_close(got, block(x, **kwargs), f"the output of call {index} of {what}")


def _expect_fresh(rng: torch.Generator, evidence: dict, key: str) -> None:
    block, calls, x = block_case(rng)
    log, outputs = item(evidence, f"log{key}"), item(evidence, f"outputs{key}")
    _expect_trace(log, outputs, hook_free_copy(block), calls, x, f"trial {key}")


def _calls(value: object) -> list[dict]:
    """The notebook's calls: a list of dicts of plain keyword values (a mask, a scale)."""
    if type(value) is not list or any(type(kwargs) is not dict for kwargs in value):
        raise Suspicious("calls is not a list of dicts")
    for kwargs in value:
        for name, argument in kwargs.items():
            if type(argument) not in (torch.Tensor, int, float):
                raise Suspicious(f"the keyword {name} of a call is {type(argument).__name__}")
    return value


def judge_visible(rng: torch.Generator, evidence: dict) -> None:
    _expect_fresh(rng, evidence, "_fresh")
    spec = item(evidence, "block")
    dim = item(spec, "dim")
    if type(dim) is not int:
        raise Suspicious("the block's size is not an integer")
    block = loaded(make_block, (dim,), item(spec, "state"))
    x, calls = item(evidence, "x_block"), _calls(item(evidence, "calls"))
    expect_close(x, x, "x_block")
    want = [[kind, value] for kind, value in expected_entries(block, x, calls)]
    expect_equal(item(evidence, "log"), want, "the notebook's log")


def judge_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial in range(TRIALS):
        _expect_fresh(rng, evidence, str(trial))
