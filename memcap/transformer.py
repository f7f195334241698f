"""The transformer pieces shared by the small real-data models (:mod:`memcap.vit`, :mod:`memcap.textmodels`).

A pre-LayerNorm block as in ViT and GPT-2: ``x + Attention(LN(x))`` then ``x + MLP(LN(x))``, and the
single attention layer with a skip connection that Mahdavi et al. call "Random Attention" in their
Table 1 (no MLP, one head, :math:`d_v = d`). Parameters are initialised from an explicit
``torch.Generator`` (:func:`init_normal_`), so a model built twice with the same seed is the same model.

Shapes: a batch of sequences is ``(N, n, d)``: N sequences of n tokens of dimension d.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from memcap._checks import check_shape, positive_int, positive_real


class SelfAttention(nn.Module):
    """Multi-head self-attention on ``(N, n, d)``: every token queries every token (or, when ``causal``,
    every earlier token and itself). ``heads`` must divide ``dim``; each head has ``d_h = dim / heads``."""

    def __init__(self, dim: int, heads: int, *, causal: bool = False) -> None:
        super().__init__()
        dim, heads = positive_int("dim", dim), positive_int("heads", heads)
        if dim % heads:
            raise ValueError(f"heads must divide dim (d_h = dim / heads), got dim = {dim}, heads = {heads}")
        self.dim, self.heads, self.causal = dim, heads, bool(causal)
        self.qkv = nn.Linear(dim, 3 * dim)  # W_Q, W_K, W_V of all heads side by side
        self.proj = nn.Linear(dim, dim)     # W_O

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x: (N, n, d) -> (N, n, d)``."""
        check_shape("x", x, (None, None, self.dim), "(N, n, d)")
        batch, n, _ = x.shape
        q, k, v = self.qkv(x).split(self.dim, dim=-1)
        # (N, heads, n, d_h)
        q, k, v = (t.reshape(batch, n, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        return self.proj(out.transpose(1, 2).reshape(batch, n, self.dim))


class Block(nn.Module):
    """Pre-LayerNorm transformer block (ViT, GPT-2): attention and a GELU MLP, each with a skip."""

    def __init__(self, dim: int, heads: int, *, mlp_ratio: int = 4, causal: bool = False) -> None:
        super().__init__()
        mlp_ratio = positive_int("mlp_ratio", mlp_ratio)
        self.ln1 = nn.LayerNorm(dim)
        self.attn = SelfAttention(dim, heads, causal=causal)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp_ratio * dim), nn.GELU(), nn.Linear(mlp_ratio * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x: (N, n, d) -> (N, n, d)``."""
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class AttentionWithSkip(nn.Module):
    """One attention layer with a skip connection and nothing else: ``x + Attention(LN(x))``.

    The LayerNorm has no learnable scale or shift. With ``heads = 1`` and :math:`d_v = d` this is the
    "Random Attention" model of Mahdavi et al.'s Table 1 (a ViT layer without its MLP).
    """

    def __init__(self, dim: int, heads: int = 1, *, causal: bool = False) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(dim, elementwise_affine=False)
        self.attn = SelfAttention(dim, heads, causal=causal)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x: (N, n, d) -> (N, n, d)``."""
        return x + self.attn(self.ln(x))


def init_normal_(module: nn.Module, generator: torch.Generator, std: float = 0.02) -> nn.Module:
    """Re-initialise ``module`` in place, reproducibly from ``generator``: every weight matrix and free
    parameter ~ N(0, std^2) (the BERT/ViT/GPT-2 convention, std = 0.02), biases 0, LayerNorm scale 1.

    Returns ``module``. Raises ``TypeError`` unless ``generator`` is a ``torch.Generator``.
    """
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    std = positive_real("std", std)
    norms = {id(p) for m in module.modules() if isinstance(m, nn.LayerNorm) for p in m.parameters()}
    with torch.no_grad():
        for name, p in module.named_parameters():
            if id(p) in norms:
                p.fill_(1.0 if name.endswith("weight") else 0.0)
            elif name.endswith("bias"):
                p.zero_()
            else:
                p.copy_(torch.randn(p.shape, generator=generator, dtype=p.dtype) * std)
    return module


def init_xavier_(module: nn.Module, generator: torch.Generator) -> nn.Module:
    """Re-initialise every ``nn.Linear`` of ``module`` with N(0, 2 / (fan_in + fan_out)) weights (the
    Glorot scale that ``nn.MultiheadAttention`` uses) and zero biases, from ``generator``."""
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.Linear):
                fan_out, fan_in = m.weight.shape
                std = math.sqrt(2.0 / (fan_in + fan_out))
                m.weight.copy_(torch.randn(m.weight.shape, generator=generator, dtype=m.weight.dtype) * std)
                if m.bias is not None:
                    m.bias.zero_()
    return module


def warmup_cosine(optimizer: torch.optim.Optimizer, steps: int) -> torch.optim.lr_scheduler.LambdaLR:
    """Learning-rate schedule of the small models: linear warm-up over the first 5 % of ``steps``, then a
    cosine decay to 0 at ``steps`` (call ``.step()`` once per optimizer step)."""
    steps = positive_int("steps", steps)
    warm = max(1, steps // 20)

    def factor(step: int) -> float:
        return min(1.0, (step + 1) / warm) * 0.5 * (1.0 + math.cos(math.pi * min(step, steps) / steps))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
