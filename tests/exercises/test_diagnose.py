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


def pre_hook_returning_a_list():
    layer = nn.Bilinear(2, 2, 1)
    layer.register_forward_pre_hook(lambda module, args: [args[0], args[1]])
    layer(torch.ones(1, 2), torch.ones(1, 2))


def forward_hook_registered_as_a_pre_hook():
    def fwd(module, args, output):
        return output

    layer = nn.Linear(2, 2)
    layer.register_forward_pre_hook(fwd)
    layer(torch.ones(2))


def backward_hook_returning_the_tensor_alone():
    layer = nn.Linear(3, 2)
    layer.register_full_backward_hook(lambda module, grad_input, grad_output: grad_input[0] * 2)
    layer(torch.ones(1, 3, requires_grad=True)).sum().backward()


def backward_hook_returning_too_many():
    layer = nn.Linear(3, 2)
    layer.register_full_backward_hook(lambda module, gi, go: (gi[0], gi[0]))
    layer(torch.ones(1, 3, requires_grad=True)).sum().backward()


def tensor_hook_returning_a_tuple():
    x = torch.ones(3, requires_grad=True)
    x.register_hook(lambda grad: (grad, grad))
    (x * 2).sum().backward()


def saved_tensor_changed_in_place():
    w = torch.ones(2, 2, requires_grad=True)
    x = torch.ones(2, 2, requires_grad=True)
    y = x @ w.detach().requires_grad_()
    z = y * y
    with torch.no_grad():
        y.add_(1)
    z.sum().backward()


answer: list = []


def add_to_a_global_by_assignment():
    answer += [1]  # noqa: F823, F841 - the mistake under test


@pytest.mark.parametrize(
    ("fn", "phrases"),
    [
        (replace_parameter, ["`weight` is a registered Parameter"]),
        (size_of_the_input_tuple, ["as a tuple", "`input[0]`", "`.size`"]),
        (add_to_a_global_by_assignment, ["makes `answer` a local name"]),
        (pre_hook_returning_a_list, ["replaces the module's positional arguments", "tuple"]),
        (forward_hook_registered_as_a_pre_hook, ["`fwd` was called with fewer arguments"]),
        (backward_hook_returning_the_tensor_alone, ["`(grad_input[0] * 2,)`, not the tensor"]),
        (backward_hook_returning_too_many, ["(1 here, not 2;"]),
        (tensor_hook_returning_a_tuple, ["returns one tensor", "it returned a `tuple`"]),
        (saved_tensor_changed_in_place, ["changed in place", "before the backward pass"]),
    ],
)
def test_a_known_pitfall_gets_its_cause_after_the_error(fn, phrases):
    message = explain_error("the cell", raised(fn))
    assert message.startswith("the cell raised `")
    assert all(phrase in message for phrase in phrases), message
