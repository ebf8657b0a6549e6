"""The checker's own copies of the module_apply notebook's models: the seed course's Model and a
tiny LM.

Each factory defines its classes anew on every call, so nothing a student did to a class in their
notebook (or to an earlier fresh copy) can change what a check measures.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.parameter import Parameter

# Where the four Function modules sit inside Model, in the order forward runs them.
FUNCTION_PATHS = {
    "ab.a": "Function_A",
    "ab.b": "Function_B",
    "cd.c": "Function_C",
    "cd.d": "Function_D",
}


def make_model() -> nn.Module:
    """A fresh seed-course `Model`: cd(ab(x)), with ab = b(a(x)) and cd = d(c(x)).

    Function_A..D each hold W = Parameter(torch.rand(2, 2)) and compute x + W, x - W, x * W, x / W.
    """

    class Function_A(nn.Module):
        def __init__(self, name):
            super().__init__()
            self.name = name
            self.W = Parameter(torch.rand(2, 2))

        def forward(self, x):
            return x + self.W

    class Function_B(nn.Module):
        def __init__(self, name):
            super().__init__()
            self.name = name
            self.W = Parameter(torch.rand(2, 2))

        def forward(self, x):
            return x - self.W

    class Function_C(nn.Module):
        def __init__(self, name):
            super().__init__()
            self.name = name
            self.W = Parameter(torch.rand(2, 2))

        def forward(self, x):
            return x * self.W

    class Function_D(nn.Module):
        def __init__(self, name):
            super().__init__()
            self.name = name
            self.W = Parameter(torch.rand(2, 2))

        def forward(self, x):
            return x / self.W

    class Layer_AB(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = Function_A("plus")
            self.b = Function_B("substract")

        def forward(self, x):
            return self.b(self.a(x))

    class Layer_CD(nn.Module):
        def __init__(self):
            super().__init__()
            self.c = Function_C("multiply")
            self.d = Function_D("divide")

        def forward(self, x):
            return self.d(self.c(x))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.ab = Layer_AB()
            self.cd = Layer_CD()

        def forward(self, x):
            return self.cd(self.ab(x))

    return Model()


def make_tiny_lm(vocab: int = 500, dim: int = 64) -> nn.Module:
    """A fresh `TinyLM`: Embedding, MultiheadAttention, LayerNorm, Linear and a Linear subclass.

    Two of its Linear layers are subclasses of nn.Linear (the bias-free `Head`, and PyTorch's own
    `attn.out_proj`), so an init that selects layers by class name misses them.
    """

    class Head(nn.Linear):
        pass

    class TinyLM(nn.Module):
        def __init__(self, vocab=500, dim=64):
            super().__init__()
            self.embed = nn.Embedding(vocab, dim)
            self.attn = nn.MultiheadAttention(dim, num_heads=4, batch_first=True)
            self.norm = nn.LayerNorm(dim)
            self.mlp = nn.Linear(dim, dim)
            self.head = Head(dim, vocab, bias=False)

        def forward(self, tokens):
            h = self.embed(tokens)
            h = h + self.attn(h, h, h, need_weights=False)[0]
            h = h + self.mlp(self.norm(h))
            return self.head(h)

    return TinyLM(vocab, dim)
