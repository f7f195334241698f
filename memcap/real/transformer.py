"""The transformer pieces shared by the small real-data models (:mod:`memcap.real.vit`, :mod:`memcap.real.textmodels`):
their blocks, their initialisation, the checks of their configs and one training loop (AdamW with
:func:`warmup_cosine`).

A pre-LayerNorm block as in ViT and GPT-2: ``x + Attention(LN(x))`` then ``x + MLP(LN(x))``, and the
single attention layer with a skip connection that Mahdavi et al. call "Random Attention" in their
Table 1 (no MLP, one head, :math:`d_v = d`). Parameters are initialised from an explicit
``torch.Generator`` (:func:`init_normal_`), so a model built twice with the same seed is the same model.

Shapes: a batch of sequences is ``(N, n, d)``: N sequences of n tokens of dimension d. Modules are
built on the CPU in float32 and moved with ``.to(...)`` (torch's convention); their ``forward`` takes a
tensor, NumPy array or nested list, refuses non-finite, half-precision and empty input naming ``x``, and
refuses a tensor on another device or in another dtype than the module's parameters.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import nn

from memcap import _resolve
from memcap._checks import (
    check_allocation,
    check_bool,
    check_shape,
    module_input,
    nonnegative_int,
    nonnegative_real,
    positive_int,
    positive_real,
)

__all__ = ["SelfAttention", "Block", "AttentionWithSkip", "init_normal_", "init_xavier_", "warmup_cosine"]


def _sizes(dim: object, heads: object) -> tuple[int, int]:
    """``(dim, heads)`` as positive integers with ``heads`` dividing ``dim``."""
    dim, heads = positive_int("dim", dim), positive_int("heads", heads)
    if dim % heads:
        raise ValueError(f"heads must divide dim (d_h = dim / heads), got dim = {dim}, heads = {heads}")
    return dim, heads


def _check_config(config: Any, sizes: tuple[str, ...], embedded: int = 0) -> None:
    """A model config's fields ``sizes`` are positive integers (``dim`` and ``heads`` among them, with
    ``heads`` dividing ``dim``) and its ``init_std`` is a positive real; anything else raises naming the field.
    The model's weights (its ``depth`` blocks and ``embedded`` more rows of ``dim`` numbers: embeddings,
    positions, head) must fit in the CPU's memory, where models are built; else a ``ValueError`` names
    ``sizes``."""
    for name in sizes:
        positive_int(name, getattr(config, name))
    positive_real("init_std", config.init_std)
    _sizes(config.dim, config.heads)
    numbers = config.depth * _block_numbers(config.dim, config.mlp_ratio) + embedded * config.dim
    check_allocation("the model's weights", numbers, "cpu", **{name: getattr(config, name) for name in sizes})


def _block_numbers(dim: int, mlp_ratio: int) -> int:
    """The weights of one :class:`Block` (attention ``4 d^2 + 4 d``, MLP ``2 r d^2 + r d + d``, two
    LayerNorms ``4 d``): ``(4 + 2 r) d^2 + (9 + r) d`` for ``d = dim``, ``r = mlp_ratio``."""
    return (4 + 2 * mlp_ratio) * dim * dim + (9 + mlp_ratio) * dim


def _layer_count(value: object, built: int, what: str) -> int:
    """How many layers to run: None means all ``built``, else an integer in 0..built (``what`` names built)."""
    layers = built if value is None else nonnegative_int("layers", value)
    if layers > built:
        raise ValueError(f"layers must be in 0..{what} = {built}, got {layers}")
    return layers


def _tokens_input(module: nn.Module, x: object, dim: int) -> torch.Tensor:
    """``x`` as a finite ``(N, n, d)`` batch on the module's device and in its dtype."""
    x = module_input("x", x, next(module.parameters()))
    return check_shape("x", x, (None, None, dim), "(N, n, d)")


class SelfAttention(nn.Module):
    """Multi-head self-attention on ``(N, n, d)``: every token queries every token (or, when ``causal``,
    every earlier token and itself). ``heads`` must divide ``dim``; each head has ``d_h = dim / heads``."""

    def __init__(self, dim: int, heads: int, *, causal: bool = False) -> None:
        super().__init__()
        dim, heads = _sizes(dim, heads)
        check_allocation("the attention's weights", 4 * dim * dim, "cpu", dim=dim)
        self.dim, self.heads, self.causal = dim, heads, check_bool("causal", causal)
        self.qkv = nn.Linear(dim, 3 * dim)  # W_Q, W_K, W_V of all heads side by side
        self.proj = nn.Linear(dim, dim)     # W_O

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x: (N, n, d) -> (N, n, d)``."""
        x = _tokens_input(self, x, self.dim)
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
        dim, heads = _sizes(dim, heads)
        mlp_ratio = positive_int("mlp_ratio", mlp_ratio)
        check_allocation("the block's weights", _block_numbers(dim, mlp_ratio), "cpu", dim=dim, mlp_ratio=mlp_ratio)
        self.dim = dim
        self.ln1 = nn.LayerNorm(dim)
        self.attn = SelfAttention(dim, heads, causal=causal)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp_ratio * dim), nn.GELU(), nn.Linear(mlp_ratio * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x: (N, n, d) -> (N, n, d)``."""
        x = _tokens_input(self, x, self.dim)
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class AttentionWithSkip(nn.Module):
    """One attention layer with a skip connection and nothing else: ``x + Attention(LN(x))``.

    The LayerNorm has no learnable scale or shift. With ``heads = 1`` and :math:`d_v = d` this is the
    "Random Attention" model of Mahdavi et al.'s Table 1 (a ViT layer without its MLP).
    """

    def __init__(self, dim: int, heads: int = 1, *, causal: bool = False) -> None:
        super().__init__()
        dim, heads = _sizes(dim, heads)
        self.dim = dim
        self.ln = nn.LayerNorm(dim, elementwise_affine=False)
        self.attn = SelfAttention(dim, heads, causal=causal)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x: (N, n, d) -> (N, n, d)``."""
        x = _tokens_input(self, x, self.dim)
        return x + self.attn(self.ln(x))


def _module(module: object) -> nn.Module:
    if not isinstance(module, nn.Module):
        raise TypeError(f"module must be a torch.nn.Module, got {type(module).__name__}")
    return module


def init_normal_(module: nn.Module, generator: torch.Generator | None = None, std: float = 0.02) -> nn.Module:
    """Re-initialise ``module`` in place, reproducibly from ``generator`` (None: a fresh one seeded with
    0): every weight matrix and free parameter ~ N(0, std^2) (the BERT/ViT/GPT-2 convention, std = 0.02),
    biases 0, LayerNorm scale 1. Draws are made on the generator's device (the CPU for the default), so a
    seed gives the same weights wherever the module lives.

    Returns ``module``.
    """
    module, generator = _module(module), _resolve.generator(generator)
    std = positive_real("std", std)
    norms = {id(p) for m in module.modules() if isinstance(m, nn.LayerNorm) for p in m.parameters()}
    with torch.no_grad():
        for name, p in module.named_parameters():
            if id(p) in norms:
                p.fill_(1.0 if name.endswith("weight") else 0.0)
            elif name.endswith("bias"):
                p.zero_()
            else:
                p.copy_(torch.randn(p.shape, generator=generator, dtype=p.dtype, device=generator.device) * std)
    return module


def init_xavier_(module: nn.Module, generator: torch.Generator | None = None) -> nn.Module:
    """Re-initialise every ``nn.Linear`` of ``module`` with N(0, 2 / (fan_in + fan_out)) weights (the
    Glorot scale that ``nn.MultiheadAttention`` uses) and zero biases, from ``generator`` (None: a fresh
    one seeded with 0; draws on its device). Returns ``module``."""
    module, generator = _module(module), _resolve.generator(generator)
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.Linear):
                fan_out, fan_in = m.weight.shape
                std = math.sqrt(2.0 / (fan_in + fan_out))
                m.weight.copy_(torch.randn(m.weight.shape, generator=generator, dtype=m.weight.dtype,
                                           device=generator.device) * std)
                if m.bias is not None:
                    m.bias.zero_()
    return module


def warmup_cosine(optimizer: torch.optim.Optimizer, steps: int) -> torch.optim.lr_scheduler.LambdaLR:
    """Learning-rate schedule of the small models: linear warm-up over the first 5 % of ``steps``, then a
    cosine decay to 0 at ``steps`` (call ``.step()`` once per optimizer step).

    With W = max(1, steps // 20), step k has factor min(1, (k + 1) / W) * (1 + cos(pi k / steps)) / 2.
    The training engine's 'warmup_cosine' (:func:`memcap.train.lr_factor`, Mahdavi et al.'s
    code) has the same warm-up length but ramps from 0.01 and starts its cosine after the warm-up; the
    two differ by at most (pi / 2) W / steps after the warm-up (tests/test_real_models.py). They stay
    two: this one trains the real-models chapter's ViT and GPT, the engine's is pinned by ENGINE_VERSION
    to the authors' code, and making either the other would change results that neither needs changed.
    """
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}")
    steps = positive_int("steps", steps)
    warm = max(1, steps // 20)

    def factor(step: int) -> float:
        return min(1.0, (step + 1) / warm) * 0.5 * (1.0 + math.cos(math.pi * min(step, steps) / steps))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def _train(model: nn.Module, batch_loss: Callable[[torch.Generator], torch.Tensor], *, steps: object,
           lr: object, weight_decay: object, generator: torch.Generator | None) -> list[float]:
    """The training loop of the small models: ``steps`` AdamW steps on ``batch_loss(generator)`` (the loss
    of one random mini-batch, drawn from ``generator``; None: a fresh one seeded with 0) with the rate of
    :func:`warmup_cosine`. Leaves ``model`` in eval mode; returns the loss of every step."""
    steps, lr = positive_int("steps", steps), positive_real("lr", lr)
    weight_decay = nonnegative_real("weight_decay", weight_decay)
    generator = _resolve.generator(generator)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    sched = warmup_cosine(opt, steps)
    model.train()
    losses = []
    for _ in range(steps):
        loss = batch_loss(generator)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
    model.eval()
    return losses
