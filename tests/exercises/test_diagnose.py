"""Errors raised by student code become their causes (kit/diagnose.py), for real errors that
torch and Python raise."""

import pytest
import torch
from torch import nn

from autograder.exercises.kit.diagnose import explain_error


def raised(fn) -> BaseException:
    try:
        fn()
    except Exception as error:
        return error
    raise AssertionError("it did not raise")


def replace_parameter():
    nn.Linear(2, 2).weight = torch.ones(2, 2)


def size_of_the_input_tuple():
    layer = nn.Linear(2, 2)
    layer.register_forward_hook(lambda module, input, output: input.size())
    layer(torch.ones(2))


answer: list = []


def add_to_a_global_by_assignment():
    answer += [1]  # noqa: F823, F841 - the mistake under test


@pytest.mark.parametrize(
    ("fn", "phrases"),
    [
        (replace_parameter, ["`weight` is a registered Parameter"]),
        (size_of_the_input_tuple, ["as a tuple", "`input[0]`", "`.size`"]),
        (add_to_a_global_by_assignment, ["makes `answer` a local name"]),
    ],
)
def test_a_known_pitfall_gets_its_cause_after_the_error(fn, phrases):
    message = explain_error("the cell", raised(fn))
    assert message.startswith("the cell raised `")
    assert all(phrase in message for phrase in phrases), message
