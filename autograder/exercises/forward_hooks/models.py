"""The checker's own copies of the forward_hooks notebook's models.

Each factory defines its class anew on every call, so nothing a student did to a class in their
notebook (or to an earlier fresh copy) can change what a check measures.
"""

from __future__ import annotations

import torch
from torch import nn

from autograder.exercises.kit.student import registered_hooks


def make_add() -> nn.Module:
    """A fresh `Add` module: forward(x1, x2) returns torch.add(x1, x2)."""

    class Add(nn.Module):
        def forward(self, x1, x2):
            return torch.add(x1, x2)

    return Add()


def make_mlp(input_size: int = 100, hidden_size: int = 200, num_classes: int = 10) -> nn.Module:
    """Seed 003's two-layer MLP: fc1, ReLU, fc2."""

    class Net(nn.Module):
        def __init__(self, input_size, hidden_size, num_classes):
            super().__init__()
            self.fc1 = nn.Linear(input_size, hidden_size)
            self.relu = nn.ReLU()
            self.fc2 = nn.Linear(hidden_size, num_classes)

        def forward(self, x):
            return self.fc2(self.relu(self.fc1(x)))

    return Net(input_size, hidden_size, num_classes)


def make_probe_add() -> nn.Module:
    """An Add that keeps count of how `capture_output` used it: calls through `module(...)`,
    forward run outside such a call, forward hooks registered, and the most forward hooks present
    while forward ran."""

    class ProbeAdd(nn.Module):
        def __init__(self):
            super().__init__()
            self.calls = self.direct_forwards = self.registered = self.hooks_seen = 0
            self._calling = False

        def __call__(self, *args, **kwargs):
            self.calls += 1
            self._calling = True
            try:
                return super().__call__(*args, **kwargs)
            finally:
                self._calling = False

        def register_forward_hook(self, *args, **kwargs):
            self.registered += 1
            return super().register_forward_hook(*args, **kwargs)

        def forward(self, x1, x2):
            if not self._calling:
                self.direct_forwards += 1
            self.hooks_seen = max(self.hooks_seen, len(registered_hooks(self, "forward")))
            return torch.add(x1, x2)

    return ProbeAdd()


def make_double() -> nn.Module:
    """A one-input module (forward returns x * 2), for hook-order and bypass experiments."""

    class Double(nn.Module):
        def forward(self, x):
            return x * 2

    return Double()
