"""The learning-rate schedules: Mahdavi et al.'s linear warm-up then cosine decay, Dana et al.'s constant."""
from __future__ import annotations

import math
import numbers

import numpy as np
import torch

from memcap._checks import finite_real, real_tensor

SCHEDULES = ("warmup_cosine", "constant")
"""Learning-rate schedules: Mahdavi et al.'s linear warm-up + cosine decay to 0, or Dana et al.'s constant."""


def _is_number(value: object) -> bool:
    return isinstance(value, (numbers.Real, np.number)) and not isinstance(value, (bool, np.bool_))


def _as_steps(name: str, value: object, device: torch.device | None) -> torch.Tensor:
    """A step count (a number, or a non-empty tensor/array of them) as a finite float64 tensor on ``device``
    (a tensor elsewhere is refused; None: where the tensor is, the CPU for a number or an array)."""
    if _is_number(value):
        return torch.tensor(finite_real(name, value), dtype=torch.float64, device="cpu" if device is None else device)
    t = real_tensor(name, value, device=device)
    if t.numel() == 0:
        raise ValueError(f"{name} must not be empty, got shape {tuple(t.shape)}")
    return t.to(torch.float64)


def lr_factor(step: torch.Tensor | int, total_steps: torch.Tensor | int, *, schedule: str = "warmup_cosine",
              warmup_fraction: float = 0.05, start_factor: float = 0.01) -> torch.Tensor:
    """Multiplier of the peak learning rate used by update number ``step`` (0-based) of ``total_steps``.

    'warmup_cosine' (Mahdavi et al.'s code): W = floor(warmup_fraction * total) warm-up steps rising
    linearly from ``start_factor`` to 1, then 0.5 (1 + cos(pi (step - W) / (total - W))) down to 0 at
    step = total, and 0 beyond. 'constant': 1 (Dana et al. use Adam's default rate throughout). Works
    elementwise on tensors with torch's broadcasting, so a stack of models with different ``total_steps``
    gets one factor per model, and steps (k, 1) against totals (m,) give a (k, m) table (the engine's
    learning rates for its next k steps). Step counts must be whole numbers. The small
    real-data models use :func:`memcap.real.transformer.warmup_cosine` instead, which ramps from 1/W and
    decays over all steps; the two are compared in tests/test_real_models.py. The factor lives on the
    device of the tensor arguments (which must share one), on the CPU when both are numbers or arrays.
    """
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    tensors = [v.device for v in (step, total_steps) if isinstance(v, torch.Tensor)]
    step_t = _as_steps("step", step, tensors[0] if tensors else None)
    total_t = _as_steps("total_steps", total_steps, step_t.device)
    warmup_fraction = finite_real("warmup_fraction", warmup_fraction)
    if not 0.0 <= warmup_fraction < 1.0:
        raise ValueError(f"warmup_fraction must lie in [0, 1), got {warmup_fraction}")
    start_factor = finite_real("start_factor", start_factor)
    if not 0.0 < start_factor <= 1.0:
        raise ValueError(f"start_factor must lie in (0, 1], got {start_factor}")
    if bool((total_t <= 0).any()):
        raise ValueError(f"total_steps must be positive, got {total_steps}")
    if bool((step_t < 0).any()):
        raise ValueError(f"step must be non-negative, got {step}")
    for name, t in (("step", step_t), ("total_steps", total_t)):
        if not bool((t == torch.floor(t)).all()):
            raise ValueError(f"{name} must be whole numbers of updates, got {t[t != torch.floor(t)][0].item()}")
    try:
        shape = torch.broadcast_shapes(step_t.shape, total_t.shape)
    except RuntimeError:
        raise ValueError(f"step of shape {tuple(step_t.shape)} and total_steps of shape {tuple(total_t.shape)} "
                         f"do not broadcast together") from None
    if schedule == "constant":
        return torch.ones(shape, dtype=torch.float64, device=step_t.device)
    warm = torch.floor(total_t * warmup_fraction)
    ramp = start_factor + (1.0 - start_factor) * step_t / warm.clamp(min=1.0)
    phase = ((step_t - warm) / (total_t - warm)).clamp(0.0, 1.0)
    cosine = 0.5 * (1.0 + torch.cos(math.pi * phase))
    return torch.where(step_t < warm, ramp, cosine)
