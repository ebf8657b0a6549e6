"""The checker's own copy of the cnn_hooks notebook's model (seed 002): two conv blocks, one pool
used twice, a linear layer. The factory defines the class anew on every call, so nothing a
student did to the notebook's class can change what a check measures.
"""

from __future__ import annotations

from torch import nn


def make_digit_cnn(channels: tuple[int, int] = (8, 16), size: int = 16) -> nn.Module:
    """A fresh `DigitCNN` for `size` x `size` one-channel images (size divisible by 4).

    block1 = conv + ReLU(inplace=True), pool, block2 = conv + ReLU(inplace=True), pool, fc.
    The one `pool` module runs twice per forward; the in-place ReLUs overwrite the conv outputs.
    """

    class DigitCNN(nn.Module):
        def __init__(self, channels, size):
            super().__init__()
            c1, c2 = channels
            self.block1 = nn.Sequential(nn.Conv2d(1, c1, 3, padding=1), nn.ReLU(inplace=True))
            self.block2 = nn.Sequential(nn.Conv2d(c1, c2, 3, padding=1), nn.ReLU(inplace=True))
            self.pool = nn.MaxPool2d(2)
            self.fc = nn.Linear(c2 * (size // 4) ** 2, 10)

        def forward(self, x):
            x = self.pool(self.block1(x))
            x = self.pool(self.block2(x))
            return self.fc(x.flatten(1))

    return DigitCNN(channels, size)
