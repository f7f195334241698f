"""Argument checks shared by every public memcap function.

Each check raises an error whose message names the argument and the condition that failed, so a reader
who passes a wrong shape learns which symbol of the paper was wrong, not just that something broke.
"""
from __future__ import annotations

import numbers
from typing import Sequence

import numpy as np
import torch


def positive_int(name: str, value: object) -> int:
    """Return ``value`` as an ``int`` if it is a positive integer, else raise naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be a positive integer, got {value!r} of type {type(value).__name__}")
    if value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value}")
    return int(value)


def nonnegative_int(name: str, value: object) -> int:
    """Return ``value`` as an ``int`` if it is an integer >= 0, else raise naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be a non-negative integer, got {value!r} of type {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value}")
    return int(value)


def positive_real(name: str, value: object) -> float:
    """Return ``value`` as a ``float`` if it is a finite real > 0, else raise naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        raise TypeError(f"{name} must be a positive real number, got {value!r}")
    value = float(value)
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite positive real number, got {value}")
    return value


def check_tensor(name: str, value: object) -> torch.Tensor:
    """Raise ``TypeError`` unless ``value`` is a ``torch.Tensor``."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    return value


def check_shape(name: str, tensor: torch.Tensor, spec: Sequence[int | None], symbols: str | None = None) -> torch.Tensor:
    """Check that ``tensor`` has ``len(spec)`` dimensions matching ``spec`` (``None`` is a wildcard).

    ``symbols`` is the shape written with the paper's symbols, e.g. ``"(T, n, d)"``; it goes into the
    message so that the reader sees which quantity disagreed.
    """
    check_tensor(name, tensor)
    shape = tuple(tensor.shape)
    ok = len(shape) == len(spec) and all(s is None or s == t for s, t in zip(spec, shape))
    if not ok:
        parts = ["*" if s is None else str(s) for s in spec]
        want = "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
        if symbols:
            want = f"{symbols} = {want}"
        raise ValueError(f"{name} must have shape {want}, got {shape}")
    return tensor


def as_tensor(name: str, value: object, dtype: torch.dtype | None = None,
              device: torch.device | str | None = None) -> torch.Tensor:
    """Convert a tensor, NumPy array or nested list to a tensor; raise ``TypeError`` naming ``name`` otherwise."""
    if isinstance(value, torch.Tensor):
        return value.to(dtype=dtype or value.dtype, device=device or value.device)
    if isinstance(value, (np.ndarray, list, tuple, numbers.Number)):
        return torch.as_tensor(np.asarray(value), dtype=dtype, device=device)
    raise TypeError(f"{name} must be a tensor, array or list of numbers, got {type(value).__name__}")


def same_device_dtype(**tensors: torch.Tensor) -> None:
    """Raise ``ValueError`` unless all given tensors share one device and one floating dtype."""
    items = list(tensors.items())
    first_name, first = items[0]
    for name, t in items[1:]:
        if t.device != first.device:
            raise ValueError(f"{name} is on {t.device} but {first_name} is on {first.device}")
        if t.dtype != first.dtype:
            raise ValueError(f"{name} has dtype {t.dtype} but {first_name} has dtype {first.dtype}")
