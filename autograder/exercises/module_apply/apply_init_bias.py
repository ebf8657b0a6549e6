"""apply_init_bias: `model.apply(weight_initialization)` fills W and b of the four Function
modules with ones, in place; it continues Exercise 3's model (the seed course's third apply
task)."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import torch

from autograder.exercises.kit.student import Student
from autograder.exercises.module_apply.common import (
    TRIALS,
    apply_to,
    chain_note,
    continued,
    expect_ones,
    explained,
    lacking_bias,
    objects_of,
    on_fresh,
    parameters_of,
    require_in_place,
    require_ones,
    require_registered,
    require_returned,
    shape_note,
    with_bias,
)
from autograder.exercises.module_apply.models import make_model
from autograder.feedback import CheckFailed, NotDoneYet
from autograder.i18n import N_, _

HINTS = [
    N_("Select the modules as in Exercise 2; now both `W` and `b` must become ones."),
    N_(
        "Fill in place under `torch.no_grad()`: a plain tensor cannot replace a registered "
        "`Parameter`, and a new `Parameter` would leave the old one behind."
    ),
]
FN = "weight_initialization"
NAMES = ("W", "b")


def prepare(namespace: MutableMapping[str, Any]) -> None:
    """Exercise 3's model, as a correct add_bias leaves it (the grader runs this answer cell
    on its own)."""
    continued(namespace, ones=False)


def _initialised(s: Student):
    """A fresh Model with b added, initialised by the student's function and judged."""
    model = with_bias(make_model())
    before = objects_of(model, NAMES)
    _result, selection = apply_to(s, model, FN)
    try:
        require_registered(model, NAMES)
        require_ones(model, NAMES, FN)
        require_in_place(model, before, NAMES, FN)
    except CheckFailed as failure:
        raise explained(failure, selection, FN) from None
    return model, selection


def visible(s: Student) -> str:
    # The notebook's model has been through every earlier run of this cell (filling is
    # idempotent), so its ones alone do not show that this answer makes them: a fresh one first.
    fresh, selection = _initialised(s)
    notebook = require_returned(s, FN)
    lacking = lacking_bias(notebook)
    if lacking:  # Exercise 3 went wrong: this exercise is judged on its own
        s.record(**parameters_of(fresh, NAMES))
        return _("every W and b is 1, filled in place.") + chain_note(lacking, FN)
    try:
        require_registered(notebook, NAMES)
        require_ones(notebook, NAMES, FN)
    except CheckFailed as failure:
        raise explained(failure, selection, FN) from None
    s.record(**parameters_of(notebook, NAMES))
    return _("every W and b is 1, filled in place.") + shape_note(notebook)


def hidden(s: Student) -> str:
    require_returned(s, FN)
    for trial in range(TRIALS):
        try:
            model, _selection = _initialised(s)
        except NotDoneYet:
            raise
        except CheckFailed as failure:
            raise on_fresh(failure) from None
        s.record(**parameters_of(model, NAMES, trial))
    return _("your function fills every W and b with ones, in place, on fresh models.")


def judge_visible(rng: torch.Generator, evidence: dict) -> None:
    expect_ones(evidence, NAMES, "")


def judge_hidden(rng: torch.Generator, evidence: dict) -> None:
    for trial in range(TRIALS):
        expect_ones(evidence, NAMES, trial)
