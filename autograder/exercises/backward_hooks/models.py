"""The checker's own copy of the backward_hooks notebook's model.

The factory defines the class anew on every call, so nothing a student did to the notebook's
class (or to an earlier fresh copy) can change what a check measures.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn
from torch.nn.parameter import Parameter


def make_model(
    w: float | torch.Tensor = 5.0, log: Callable[[str], None] | None = None
) -> nn.Module:
    """A fresh `Model`: forward(x1, x2) returns x1 * x2 * W, with W (shape (1,)) set to `w`.

    `log`, when given, is called with "forward" each time forward runs (for the event-order quiz).
    """

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.W = Parameter(torch.Tensor([5]))

        def forward(self, x1, x2):
            if log is not None:
                log("forward")
            output = x1 * x2
            output = output * self.W
            return output

    model = Model()
    with torch.no_grad():
        model.W.copy_(torch.as_tensor(w, dtype=model.W.dtype).detach().reshape(1))
    return model
