"""The checker's own copies of the hooks_in_practice notebook's models: an MLP, a block called
with keywords and a tiny GPT.

Each factory defines its classes anew on every call, so nothing a student did to a class in their
notebook (or to an earlier fresh copy) can change what a check measures.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def make_mlp(sizes: tuple[int, ...] = (16, 32, 32, 32, 4)) -> nn.Module:
    """A fresh `MLP`: Linear layers with a ReLU between each two, in one nn.Sequential `layers`."""

    class MLP(nn.Module):
        def __init__(self, sizes=(16, 32, 32, 32, 4)):
            super().__init__()
            layers = []
            for i in range(len(sizes) - 2):
                layers += [nn.Linear(sizes[i], sizes[i + 1]), nn.ReLU()]
            layers.append(nn.Linear(sizes[-2], sizes[-1]))
            self.layers = nn.Sequential(*layers)

        def forward(self, x):
            return self.layers(x)

    return MLP(sizes)


def make_block(dim: int = 8) -> nn.Module:
    """A fresh `Block`, called like Hugging Face layers: `block(x, mask=..., scale=...)`.

    It raises ValueError when the mask's shape differs from x's.
    """

    class Block(nn.Module):
        def __init__(self, dim=8):
            super().__init__()
            self.proj = nn.Linear(dim, dim)

        def forward(self, x, *, mask=None, scale=1.0):
            if mask is not None and mask.shape != x.shape:
                raise ValueError(f"mask has shape {tuple(mask.shape)}, x has {tuple(x.shape)}")
            h = self.proj(x) * scale
            return h if mask is None else h * mask

    return Block(dim)


def make_tiny_gpt(
    n_layer: int = 2, dim: int = 64, vocab: int = 128, block_size: int = 64
) -> nn.Module:
    """A fresh `TinyGPT` laid out like nanoGPT's GPT-2 (wte, wpe, blocks, ln_f, lm_head).

    Every block has two residual projections named `c_proj`; the attention's is a `CastedLinear`,
    a subclass of nn.Linear (as in modded-nanogpt), which a name or `type(m) is` test misses.
    """

    class CastedLinear(nn.Linear):
        pass

    class CausalSelfAttention(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.c_attn = nn.Linear(dim, 3 * dim)
            self.c_proj = CastedLinear(dim, dim)

        def forward(self, x):
            q, k, v = self.c_attn(x).split(x.shape[-1], dim=-1)
            return self.c_proj(F.scaled_dot_product_attention(q, k, v, is_causal=True))

    class MLPBlock(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.c_fc = nn.Linear(dim, 4 * dim)
            self.c_proj = nn.Linear(4 * dim, dim)

        def forward(self, x):
            return self.c_proj(F.gelu(self.c_fc(x)))

    class GPTBlock(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.ln_1 = nn.LayerNorm(dim)
            self.attn = CausalSelfAttention(dim)
            self.ln_2 = nn.LayerNorm(dim)
            self.mlp = MLPBlock(dim)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class TinyGPT(nn.Module):
        def __init__(self, n_layer=2, dim=64, vocab=128, block_size=64):
            super().__init__()
            self.n_layer = n_layer
            self.wte = nn.Embedding(vocab, dim)
            self.wpe = nn.Embedding(block_size, dim)
            self.blocks = nn.ModuleList(GPTBlock(dim) for _ in range(n_layer))
            self.ln_f = nn.LayerNorm(dim)
            self.lm_head = nn.Linear(dim, vocab, bias=False)

        def forward(self, tokens):
            positions = torch.arange(tokens.shape[-1], device=tokens.device)
            x = self.wte(tokens) + self.wpe(positions)
            for block in self.blocks:
                x = block(x)
            return self.lm_head(self.ln_f(x))

    return TinyGPT(n_layer, dim, vocab, block_size)
