"""Where the book's code runs: one function picks the device, one policy picks the dtype.

Chapters call :func:`pick_device` and print :func:`report`, so every executed page says what ran it.
Constructions (proofs as programs) run in ``float64`` so that "exact" memorization can be checked to
1e-6; training runs in ``float32``.
"""
from __future__ import annotations

import os
import platform
import sys

import torch

__all__ = ["EXACT_DTYPE", "pick_device", "canonical_device", "same_device", "train_dtype", "exact_dtype",
           "describe", "report"]

EXACT_DTYPE = torch.float64
"""dtype of the constructions: their claims are equalities, checked to ~1e-6."""

_VALID = ("cuda", "mps", "cpu")


def _mps_available() -> bool:
    backend = getattr(torch.backends, "mps", None)
    return bool(backend is not None and backend.is_available())


def pick_device(prefer: str | None = None) -> torch.device:
    """Return the device code cells should use.

    Order: ``prefer`` if given, else the environment variable ``MEMCAP_DEVICE``, else CUDA if present,
    else Apple's MPS, else the CPU. Asking for an unavailable device is an error, not a silent fallback, and
    so is a malformed name ('cpu:x'), a CPU or MPS index other than 0 (torch has one of each) or a CUDA index
    past the machine's last GPU: a ``ValueError`` naming the device, before anything is made on it.
    """
    choice = prefer if prefer is not None else os.environ.get("MEMCAP_DEVICE") or None
    if choice is None:
        if torch.cuda.is_available():
            return torch.device("cuda")
        if _mps_available():
            return torch.device("mps")
        return torch.device("cpu")
    kind = str(choice).split(":")[0]
    if kind not in _VALID:
        raise ValueError(f"device must be one of {_VALID} (optionally 'cuda:K'), got {choice!r}")
    try:
        dev = torch.device(choice)
    except RuntimeError:   # 'cpu:x', 'cuda:-1': torch's own error names no argument
        raise ValueError(f"Invalid device string: {str(choice)!r}: device must be 'cpu', 'mps', 'cuda' or 'cuda:K' "
                         f"with K = 0, 1, ... a CUDA device's index") from None
    if dev.type in ("cpu", "mps") and dev.index not in (None, 0):
        raise ValueError(f"device {choice!r}: torch has one {dev.type.upper()} device, {dev.type!r} (or "
                         f"'{dev.type}:0'), there is no index {dev.index}")
    if kind == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {choice!r} requested but CUDA is not available on this machine")
    if kind == "mps" and not _mps_available():
        raise ValueError(f"device {choice!r} requested but MPS is not available on this machine")
    count = torch.cuda.device_count() if kind == "cuda" else 0
    if kind == "cuda" and dev.index is not None and dev.index >= count:
        names = "cuda:0" if count == 1 else f"cuda:0 to cuda:{count - 1}"
        raise ValueError(f"device {str(dev)!r} requested but this machine has {count} CUDA "
                         f"device{'' if count == 1 else 's'} ({names})")
    return dev


def canonical_device(device: torch.device | str) -> torch.device:
    """``device`` in one canonical form, type and index, so that two names of one device compare equal.

    ``cuda`` means the current CUDA device (``cuda:0`` unless changed; what a tensor made on ``cuda``
    reports), ``mps`` means ``mps:0``, and every CPU index is the one CPU (``cpu``, as CPU tensors report).
    ``torch.device("cuda") != torch.device("cuda:0")`` in torch: compare devices with :func:`same_device`.
    """
    if not isinstance(device, (str, torch.device)):
        raise TypeError(f"device must be a str or a torch.device, got {type(device).__name__}")
    try:
        dev = torch.device(device)
    except RuntimeError as err:
        raise ValueError(f"device must name a device such as 'cuda', 'cuda:1', 'mps' or 'cpu', "
                         f"got {device!r}: {err}") from None
    if dev.type == "cpu":
        return torch.device("cpu")
    if dev.index is not None:
        return dev
    index = torch.cuda.current_device() if dev.type == "cuda" and torch.cuda.is_available() else 0
    return torch.device(dev.type, index)


def same_device(a: torch.device | str, b: torch.device | str) -> bool:
    """Whether ``a`` and ``b`` name the same device (``cuda`` and ``cuda:0`` do; see :func:`canonical_device`).

    The one device comparison of memcap: every check that a tensor is where it was asked to be uses it.
    """
    return canonical_device(a) == canonical_device(b)


def train_dtype(device: torch.device | str | None = None) -> torch.dtype:
    """dtype for training: ``float32`` everywhere (MPS has no float64, and CUDA is fastest in it)."""
    pick_device(None if device is None else str(device))
    return torch.float32


def exact_dtype(device: torch.device | str | None = None) -> torch.dtype:
    """dtype for constructions: ``float64``, except on MPS, which lacks it (then ``float32``)."""
    dev = pick_device(None if device is None else str(device))
    return torch.float32 if dev.type == "mps" else EXACT_DTYPE


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def describe(device: torch.device | str | None = None) -> dict[str, str | int]:
    """Facts about the hardware and software running the code: device, its name, versions, CPU."""
    dev = pick_device(None if device is None else str(device))
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else ("Apple GPU" if dev.type == "mps" else _cpu_name())
    return {
        "device": str(dev),
        "device_name": name,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "cpu": _cpu_name(),
        "cpu_count": os.cpu_count() or 1,
        "torch_threads": torch.get_num_threads(),
        "platform": sys.platform,
    }


def report(device: torch.device | str | None = None) -> str:
    """One line saying what ran this page, for the first output of every chapter."""
    info = describe(device)
    return (f"Ran on {info['device']} ({info['device_name']}; {info['cpu_count']} CPU cores) "
            f"with torch {info['torch']}, Python {info['python']}.")
