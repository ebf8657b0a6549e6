"""What an exercise's judges use: strict comparisons of evidence with values recomputed by torch.

A judge (`judge_visible` / `judge_hidden` in an exercise module) runs in the grader's verifier,
in a process no student code ran in. It rebuilds the check's inputs from the seed, recomputes
the expected values with torch and compares them with what the evidence says the student's code
produced, with strict types: a list subclass, a tensor subclass or any other object where a
tensor or list belongs is rejected. A judge only confirms a pass; the check explained mistakes.
Its reasons go to the instructor's flags, so they are plain English (not translated).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from autograder.exercises.kit.evidence import sample
from autograder.tolerances import ATOL, RTOL, STD_RTOL


class Suspicious(Exception):
    """The evidence does not show what the check's verdict claims."""


def item(evidence: dict[str, Any], name: str) -> Any:
    if type(evidence) is not dict or name not in evidence:
        raise Suspicious(f"the evidence has no {name!r}")
    return evidence[name]


def expect_close(got: Any, want: torch.Tensor, what: str) -> None:
    """`got` is a plain tensor of `want`'s shape and dtype kind, with its values (tolerances.py)."""
    if type(got) is not torch.Tensor:
        raise Suspicious(f"{what} is {type(got).__name__}, not a tensor")
    if got.shape != want.shape:
        raise Suspicious(f"{what} has shape {tuple(got.shape)}, expected {tuple(want.shape)}")
    if got.is_complex() or not torch.isfinite(got).all():
        raise Suspicious(f"{what} holds non-finite or complex values")
    if not torch.allclose(got.double(), want.detach().double(), rtol=RTOL, atol=ATOL):
        raise Suspicious(f"{what} does not hold the expected values")


def expect_list(got: Any, want: Sequence[torch.Tensor], what: str) -> None:
    """`got` is a plain list of exactly the tensors `want`, in order."""
    if type(got) is not list:
        raise Suspicious(f"{what} is {type(got).__name__}, not a list")
    if len(got) != len(want):
        raise Suspicious(f"{what} has {len(got)} entries, expected {len(want)}")
    for index, (entry, expected) in enumerate(zip(got, want, strict=True)):
        expect_close(entry, expected, f"{what}[{index}]")


def expect_equal(got: Any, want: Any, what: str) -> None:
    """`got` is exactly `want` (plain data: numbers, strings, lists and dicts of them)."""
    if type(got) is not type(want):
        raise Suspicious(f"{what} is {type(got).__name__}, expected {type(want).__name__}")
    if isinstance(want, dict):
        expect_equal(sorted(got), sorted(want), f"the keys of {what}")
        for key in want:
            expect_equal(got[key], want[key], f"{what}[{key!r}]")
    elif isinstance(want, list):
        if len(got) != len(want):
            raise Suspicious(f"{what} has {len(got)} entries, expected {len(want)}")
        for index, (a, b) in enumerate(zip(got, want, strict=True)):
            expect_equal(a, b, f"{what}[{index}]")
    elif got != want:
        raise Suspicious(f"{what} is {got!r}, expected {want!r}")


# A sample of evidence.SAMPLE values estimates a std within ~2%; twice the kernel's tolerance keeps
# an honest init from failing here by chance, and still tells every wrong std of the tasks apart.
SAMPLE_RTOL = 2 * STD_RTOL


def expect_sampled_init(
    got: Any, like: torch.Tensor, what: str, *, std: float | None = None, fill: float = 0.0
) -> None:
    """`got` is a sample (evidence.sample) of a parameter shaped like `like` that looks drawn
    from normal(0, std) when `std` is given, else holds exactly `fill` everywhere."""
    expect_close(got, got, what)  # a plain, finite tensor
    if got.shape != sample(like).shape:
        raise Suspicious(f"{what} has the wrong number of values")
    if std is None:
        if not torch.equal(got, torch.full_like(got, fill)):
            raise Suspicious(f"{what} is not exactly {fill}")
        return
    w = got.double()
    if max(abs(w.std().item() - std), abs(w.mean().item())) > SAMPLE_RTOL * std:
        raise Suspicious(f"{what} is not normal(0, {std:.4g})")
