"""The arguments every memcap function resolves the same way: ``generator``, ``dtype``, ``device``.

One rule each, used by every module (the README's "Use the library" states them for users):

* ``generator``: an explicit ``torch.Generator``, or ``None`` meaning a fresh CPU generator seeded with
  :data:`DEFAULT_SEED` (deterministic, no global RNG state). Random numbers are drawn in float64 on the
  generator's device and then moved and cast (:func:`randn`, :func:`rand`), so a seed gives the same
  values on every device and in every dtype (up to the final rounding); integers likewise are drawn on
  the generator's device and then moved (:func:`randint`, :func:`randperm`).
* ``device``: outputs live on the device of the tensor inputs; a function without tensor inputs takes
  ``device``, and ``None`` means :func:`memcap.device.pick_device` (:func:`device`).
* ``dtype``: must be float32 or float64 (:func:`float_dtype`); ``None`` is the function's documented
  default (float64, :data:`memcap.device.EXACT_DTYPE`, for constructions and their data; torch's
  default float dtype for models and training data).

Constructions also run their CPU work on one thread (:func:`one_cpu_thread`): the result of an
ill-conditioned solve then depends neither on the caller's thread setting nor on the run, so two
identical calls give bit-identical weights.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

import torch

from memcap._checks import HALF_DTYPES
from memcap.device import pick_device

DEFAULT_SEED = 0
"""Seed of the fresh generator that ``generator=None`` stands for, in every module."""


def generator(value: object) -> torch.Generator:
    """The explicit generator, or a fresh CPU one seeded with :data:`DEFAULT_SEED` when ``value`` is None."""
    if value is None:
        return torch.Generator().manual_seed(DEFAULT_SEED)
    if not isinstance(value, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {type(value).__name__}")
    if value.device.type == "meta":
        raise ValueError("generator is on the meta device, which draws no numbers: make it on the cpu (or a GPU), "
                         "torch.Generator().manual_seed(seed)")
    return value


def seeded(seed: int) -> torch.Generator:
    """A fresh CPU generator seeded with ``seed`` modulo 2**64 (torch takes seeds in [0, 2**64)): a seed
    derived from a user's, such as ``10_007 * seed + 1``, wraps around instead of overflowing, and is
    unchanged wherever it was already below 2**64."""
    return torch.Generator().manual_seed(seed % 2**64)


def float_dtype(value: object, default: torch.dtype) -> torch.dtype:
    """``value`` if it is float32 or float64, ``default`` when None; anything else raises naming ``dtype``."""
    if value is None:
        return default
    if not isinstance(value, torch.dtype) or not value.is_floating_point:
        raise TypeError(f"dtype must be a floating-point torch.dtype, got {value!r}")
    if value in HALF_DTYPES:
        raise TypeError(f"dtype must be torch.float32 or torch.float64, got {value}: memcap refuses half precision "
                        f"(no half-precision linear algebra on the CPU; the constructions need float64)")
    return value


def device(value: torch.device | str | None, like: object = None) -> torch.device:
    """``value`` as a ``torch.device`` (validated by :func:`memcap.device.pick_device`); None: the device of
    ``like`` when it is a tensor (a function's optional tensor input: results live where their inputs
    are; the caller then checks that input with :func:`memcap._checks.on_device`), else pick_device()."""
    if value is not None and not isinstance(value, (str, torch.device)):
        raise TypeError(f"device must be a str, a torch.device or None, got {type(value).__name__}")
    if value is None and isinstance(like, torch.Tensor):
        return like.device
    return pick_device(None if value is None else str(value))


def randn(shape: tuple[int, ...], gen: torch.Generator, dtype: torch.dtype,
          device: torch.device) -> torch.Tensor:
    """Standard Gaussian draws made in float64 on the generator's device, then moved and cast."""
    draw = torch.randn(shape, generator=gen, dtype=torch.float64, device=gen.device)
    return draw.to(device=device, dtype=dtype)


def rand(shape: tuple[int, ...], gen: torch.Generator, dtype: torch.dtype,
         device: torch.device) -> torch.Tensor:
    """U(0, 1) draws made in float64 on the generator's device, then moved and cast."""
    draw = torch.rand(shape, generator=gen, dtype=torch.float64, device=gen.device)
    return draw.to(device=device, dtype=dtype)


def randint(high: int, shape: tuple[int, ...], gen: torch.Generator, device: torch.device) -> torch.Tensor:
    """Uniform int64 draws from [0, ``high``) made on the generator's device, then moved."""
    return torch.randint(high, shape, generator=gen, device=gen.device).to(device)


def randperm(n: int, gen: torch.Generator, device: torch.device) -> torch.Tensor:
    """A uniformly random permutation of ``range(n)``, (n,) int64, drawn on the generator's device, then moved."""
    return torch.randperm(n, generator=gen, device=gen.device).to(device)


@contextlib.contextmanager
def one_cpu_thread(where: torch.device) -> Iterator[None]:
    """Run CPU work with one intra-op thread, then restore torch's setting (GPU work is unaffected).

    Two reasons. Speed: a construction is thousands of small tensor operations, and with several
    threads each pays for waking the pool (measured on 2 cores: 18 s with 2 threads, 2.7 s with one for
    the d = 64, n = 32, H = 40 construction of Mahdavi et al.'s Theorem 1). Reproducibility: the
    blocked reductions of a multi-threaded SVD or solve depend on the thread count, and an
    ill-conditioned construction amplifies that rounding (Dana et al.'s Corollary 1 with H = 150 heads
    gave weights differing by 12 between 1 and 2 threads).
    """
    if where.type != "cpu":
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
