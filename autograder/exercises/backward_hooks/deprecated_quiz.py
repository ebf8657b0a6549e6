"""deprecated_quiz: which gradients the deprecated `register_backward_hook` reports on Model,
found by running torch."""

from __future__ import annotations

import warnings

import torch

from autograder.exercises.backward_hooks.models import make_model
from autograder.exercises.kit.judge import Suspicious, expect_equal, item
from autograder.exercises.kit.student import Student
from autograder.feedback import CheckFailed, describe
from autograder.i18n import N_, _
from autograder.tolerances import close

HINTS = [
    N_("The deprecated hook sits on the last operation of `forward`: `output * self.W`."),
    N_("Its `grad_input` holds the gradients w.r.t. that operation's two operands, in order."),
    N_(
        "In a product, the gradient w.r.t. one factor is the other factor. Match the demo's "
        "printed values (x1 = 2, x2 = 3, W = 5) against that."
    ),
]
NAMES = ("x1", "x2", "W", "x1 * x2", "output")
DEMO = N_(
    "Run the demo above the quiz: with x1 = 2, x2 = 3 and W = 5 it prints the deprecated hook's "
    "grad_input. Each entry is the gradient of the output w.r.t. one tensor of `forward`; work "
    "out the gradient w.r.t. each candidate (in a product, the gradient w.r.t. one factor is the "
    "other factor) and match them with what the demo prints."
)


def _named_gradients(w, x1, x2) -> dict[str, torch.Tensor]:
    """Autograd's gradient of the output w.r.t. each tensor of forward, the product included."""
    a, b = x1.detach().clone().requires_grad_(), x2.detach().clone().requires_grad_()
    weight = w.detach().clone().requires_grad_()
    product = a * b  # forward's two steps, written out to name the intermediate tensor
    output = product * weight
    grads = torch.autograd.grad(output, [a, b, weight, product, output])
    return dict(zip(NAMES, grads, strict=True))


def deprecated_grad_input() -> list[str]:
    """What the deprecated hook's grad_input holds on a fresh Model, by name."""
    rng = torch.Generator().manual_seed(0)
    while True:  # values such that no two of the named gradients coincide
        w = torch.empty(1).uniform_(2.0, 8.0, generator=rng)
        x1, x2 = torch.rand(1, generator=rng) + 0.1, torch.rand(1, generator=rng) + 0.1
        named = _named_gradients(w, x1, x2)
        values = list(named.values())
        if not any(close(p, q) for i, p in enumerate(values) for q in values[i + 1 :]):
            break
    seen = []
    model = make_model(w)
    # The deprecation warning is what this part of the notebook is about: kept here, so that it
    # does not show as a note under the student's answer.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with model.register_backward_hook(lambda module, gi, go: seen.append(gi)):
            model(x1.requires_grad_(), x2.requires_grad_()).backward()
    names = []
    for grad in seen[0]:
        match = [name for name, t in named.items() if grad is not None and close(grad, t)]
        names.append(match[0] if match else "?")
    return names


def _squash(name: str) -> str:
    return "".join(name.split()).lower()


KNOWN = {_squash(name): name for name in NAMES}


def visible(s: Student) -> str:
    allowed = ", ".join(repr(name) for name in NAMES)
    got = s.get(
        "deprecated_grad_input",
        hint=_("Set `deprecated_grad_input` in the answer cell above, then run it."),
    )
    s.record(deprecated_grad_input=got)
    if not isinstance(got, list | tuple) or not all(isinstance(g, str) for g in got):
        raise CheckFailed(
            _(
                "`deprecated_grad_input` should be a list of names from {allowed}, but it is {got}."
            ).format(allowed=allowed, got=describe(got))
        )
    for entry in got:
        if _squash(entry) not in KNOWN:
            raise CheckFailed(
                _("{entry!r} is not one of the names to choose from: {allowed}.").format(
                    entry=entry, allowed=allowed
                )
            )
    expected = deprecated_grad_input()
    if len(got) != len(expected):
        raise CheckFailed(
            _(
                "you listed {count} name(s), one per entry of the deprecated hook's grad_input, "
                "but it has another number of entries on this Model. {demo}"
            ).format(count=len(got), demo=_(DEMO))
        )
    for index, (entry, want) in enumerate(zip(got, expected, strict=True)):
        if KNOWN[_squash(entry)] != want:
            raise CheckFailed(
                _(
                    "grad_input[{index}] is not the gradient w.r.t. {entry!r}. The old hook sits "
                    "on the last operation of `forward`, so its grad_input holds the gradients "
                    "w.r.t. that operation's inputs. {demo}"
                ).format(index=index, entry=KNOWN[_squash(entry)], demo=_(DEMO))
            )
    return _(
        "the deprecated hook's grad_input holds the gradients w.r.t. {names}, the inputs of the "
        "last operation of forward, not x1 and x2."
    ).format(names=", ".join(expected))


def judge_visible(rng: torch.Generator, evidence: dict) -> None:
    got = item(evidence, "deprecated_grad_input")
    if type(got) is not list or not all(type(g) is str and _squash(g) in KNOWN for g in got):
        raise Suspicious("deprecated_grad_input is not a list of the quiz's names")
    expect_equal([KNOWN[_squash(g)] for g in got], deprecated_grad_input(), "the answer")
