"""Argument checks shared by every public memcap function.

Each check raises an error whose message names the argument and the condition that failed, so a reader
who passes a wrong shape learns which symbol of the paper was wrong, not just that something broke.

The input rules, the same in every module (see the README's "Use the library"):

* **Array-likes.** Where a tensor is expected, a NumPy array or a nested list of numbers is accepted too
  and converted once, at the boundary (:func:`real_tensor`, :func:`id_tensor`). Array-likes have no
  device: they are placed on the device of the call's other tensors (the CPU when there are none).
* **Finite values.** NaN and +-inf are refused in every tensor input (:func:`check_finite`) and in every
  real-valued argument such as a tolerance, a scale or a constant (:func:`finite_real`,
  :func:`positive_real`), with a ``ValueError`` naming the argument.
* **Precision.** memcap computes in float32 or float64. Half precision (float16, bfloat16) is refused
  with a ``TypeError`` naming the argument (:data:`HALF_DTYPES`): torch has no half-precision linear
  algebra on the CPU, and the constructions' equalities need float64. Convert with ``.float()``.
* **Devices.** A tensor input must be on the device of the call's other tensors (or of its ``device``
  argument), else it is refused with a ``ValueError`` naming it (:func:`on_device`,
  :func:`same_device_dtype`, :func:`module_input`), before any value is read: never torch's own
  "Expected all tensors to be on the same device". A tensor on PyTorch's ``meta`` device holds no values
  and is refused the same way (:func:`holds_values`).
* **Empty inputs.** A tensor with a zero-length axis where the paper has a positive size (T, n, d, ...)
  is refused by :func:`check_shape` unless the caller allows it explicitly.
* **Sizes.** Sizes whose tensors the device cannot hold are refused naming them, before anything is
  allocated (:func:`check_allocation`); integers beyond a float's range where a real number belongs
  (:func:`as_float`) and seeds beyond 64 bits (:func:`seed_int`) are refused naming the argument.
"""
from __future__ import annotations

import math
import numbers
import os
import sys
from collections.abc import Iterable, Mapping
from typing import Sequence

import numpy as np
import torch

from memcap.device import canonical_device, same_device

HALF_DTYPES: tuple[torch.dtype, ...] = (torch.float16, torch.bfloat16)
"""Floating dtypes memcap refuses (see the module docstring)."""


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


MAX_SEED = 2**63 - 1
"""Largest seed memcap accepts (:func:`seed_int`): seeds are kept as signed 64-bit integers (torch's
``manual_seed`` takes at most 2**64 - 1, JSON readers and int64 tensors at most 2**63 - 1)."""


def seed_int(name: str, value: object) -> int:
    """Return ``value`` as an ``int`` if it is a seed, an integer in [0, :data:`MAX_SEED`], else raise naming
    ``name`` (never torch's "Overflow when unpacking long long" when the seed is used)."""
    seed = nonnegative_int(name, value)
    if seed > MAX_SEED:
        raise ValueError(f"{name} must be a seed in [0, 2**63 - 1] (a 64-bit integer), got {seed}")
    return seed


def as_float(name: str, value: numbers.Real) -> float:
    """``float(value)`` for a real number, but an integer too large for a float (``10**400``, which
    ``float`` refuses with a bare ``OverflowError``) raises ``ValueError`` naming ``name``."""
    try:
        return float(value)
    except OverflowError:
        size = math.floor(math.log10(abs(int(value))))
        raise ValueError(f"{name} must be a finite real number, got an integer of about 10^{size}, too large "
                         f"for a float (at most {sys.float_info.max:.4g})") from None


def finite_real(name: str, value: object) -> float:
    """Return ``value`` as a ``float`` if it is a finite real number, else raise naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        raise TypeError(f"{name} must be a real number, got {value!r} of type {type(value).__name__}")
    value = as_float(name, value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite real number (no NaN or inf), got {value}")
    return value


def positive_real(name: str, value: object) -> float:
    """Return ``value`` as a ``float`` if it is a finite real > 0, else raise naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        raise TypeError(f"{name} must be a positive real number, got {value!r}")
    value = as_float(name, value)
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite positive real number, got {value}")
    return value


def nonnegative_real(name: str, value: object) -> float:
    """Return ``value`` as a ``float`` if it is a finite real >= 0, else raise naming ``name``."""
    value = finite_real(name, value)
    if value < 0:
        raise ValueError(f"{name} must be a finite real number >= 0, got {value}")
    return value


def _available_ram() -> int | None:
    """Bytes of memory the machine can give now: Linux's MemAvailable plus free swap (``/proc/meminfo``),
    elsewhere the physical memory; None when unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            info = {line.split(":")[0]: line.split()[1:] for line in fh}
        return 1024 * (int(info["MemAvailable"][0]) + int(info.get("SwapFree", ["0"])[0]))
    except (OSError, KeyError, IndexError, ValueError):
        pass
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def device_memory(device: torch.device | str) -> int | None:
    """Memory of ``device`` in bytes that tensors can take: a CUDA GPU's total memory; for the CPU and
    Apple's MPS (which shares it) the memory the machine can give now (:func:`_available_ram`: on Linux,
    going beyond it gets the process killed, not an error). None when unknown: then nothing is refused."""
    dev = torch.device(device)
    if dev.type == "cuda" and torch.cuda.is_available():
        return int(torch.cuda.get_device_properties(canonical_device(dev)).total_memory)
    if dev.type in ("cpu", "mps"):
        return _available_ram()
    return None


def _amount(count: int) -> str:
    """An integer of any size for a message: as it is below a million, else ``'8e15'``, ``'1.23e400'``."""
    if count < 10**6:
        return str(count)
    exponent = math.floor(math.log10(count))
    return f"{count / 10**exponent:.3g}e{exponent}"


def _in_bytes(count: int) -> str:
    """A byte count for a message: ``8 * 10**15 -> '8e15 bytes (7.45e6 GiB)'``."""
    return f"{_amount(count)} bytes" + (f" ({_amount(count >> 30)} GiB)" if count >= 2**30 else "")


def check_allocation(what: str, numbers: int, device: torch.device | str, **sizes: int) -> None:
    """Refuse, with a ``ValueError`` naming the arguments ``sizes`` and their values, sizes whose tensors
    cannot be held: ``numbers`` numbers of ``what`` at 8 bytes each (float64 and int64, in which memcap
    draws and counts) more than the memory of ``device`` (:func:`device_memory`: a GPU's total memory, the
    memory the machine can give now for the CPU).

    Called at a public function's boundary, with the sizes already checked as positive integers and
    before anything is allocated, so that an impossible size is named instead of reaching torch's allocator
    ("DefaultCPUAllocator: can't allocate memory", or the kernel ending the process). No size that the
    device can hold is refused (the papers' largest models take a few GiB); sizes just below the limit may
    still fail, since intermediate results come on top.
    """
    need = 8 * numbers
    if need <= 2**28:   # 256 MiB: not worth asking the device
        return
    limit = device_memory(device)
    if limit is not None and need > limit:
        given = ", ".join(f"{name} = {value}" for name, value in sizes.items())
        raise ValueError(f"{given}: {what} would take {_amount(numbers)} numbers, {_in_bytes(need)}, more than the "
                         f"{_in_bytes(limit)} that {canonical_device(device)} can hold; make them smaller")


def check_bool(name: str, value: object) -> bool:
    """Return ``value`` if it is a ``bool`` (not merely truthy), else raise ``TypeError`` naming ``name``."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return value


def check_tensor(name: str, value: object) -> torch.Tensor:
    """Raise ``TypeError`` unless ``value`` is a ``torch.Tensor``."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    return value


def check_shape(name: str, tensor: torch.Tensor, spec: Sequence[int | None], symbols: str | None = None, *,
                allow_empty: bool = False) -> torch.Tensor:
    """Check that ``tensor`` has ``len(spec)`` dimensions matching ``spec`` (``None`` is a wildcard).

    ``symbols`` is the shape written with the paper's symbols, e.g. ``"(T, n, d)"``; it goes into the
    message so that the reader sees which quantity disagreed. A wildcard axis of length 0 is refused
    (the papers' sizes are positive) unless ``allow_empty``.
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
    if not allow_empty and 0 in shape:
        raise ValueError(f"{name} must not be empty: shape {symbols + ' = ' if symbols else ''}{shape} "
                         f"has an axis of length 0")
    return tensor


def holds_values(name: str, tensor: torch.Tensor) -> torch.Tensor:
    """Raise ``ValueError`` naming ``name`` when ``tensor`` is on PyTorch's ``meta`` device (shapes without
    values: nothing memcap computes can be read from it), before any of its values is read."""
    if tensor.device.type == "meta":
        raise ValueError(f"{name} is on the meta device, which holds no values: memcap computes on cpu, cuda "
                         f"or mps; make it there (or move it with .to(device))")
    return tensor


def on_device(name: str, tensor: torch.Tensor, device: torch.device | str | None) -> torch.Tensor:
    """Raise ``ValueError`` naming ``name`` unless ``tensor`` is on ``device`` (None: anywhere) and holds
    values (:func:`holds_values`): the device check of every tensor input, made before its values are read."""
    if device is not None and not same_device(tensor.device, device):
        raise ValueError(f"{name} is on {tensor.device} but the other inputs are on {torch.device(device)}; "
                         f"move it with .to({str(torch.device(device))!r})")
    return holds_values(name, tensor)


def check_finite(name: str, tensor: torch.Tensor) -> torch.Tensor:
    """Raise ``ValueError`` naming ``name`` and the first offending entry unless every entry is finite."""
    holds_values(name, tensor)
    if tensor.is_floating_point() or tensor.is_complex():
        bad = ~torch.isfinite(tensor)
        if bool(bad.any()):
            index = tuple(int(i) for i in torch.nonzero(bad)[0])
            value = tensor[index].item() if index else tensor.item()
            where = f" at index {index}" if index else ""
            raise ValueError(f"{name} must be finite (no NaN or inf): it holds {value}{where}")
    return tensor


def check_precision(name: str, dtype: torch.dtype) -> torch.dtype:
    """Raise ``TypeError`` naming ``name`` for a half-precision dtype (see :data:`HALF_DTYPES`)."""
    if dtype in HALF_DTYPES:
        raise TypeError(f"{name} has dtype {dtype}: memcap computes in float32 or float64 (torch has no "
                        f"half-precision linear algebra on the CPU, and the constructions need float64); "
                        f"convert it with .float() or .double()")
    return dtype


def _from_array_like(name: str, value: object, device: torch.device | str | None) -> torch.Tensor:
    """A tensor from a NumPy array or a nested list/tuple of numbers, on ``device`` (CPU when None)."""
    if not isinstance(value, (np.ndarray, list, tuple)):
        raise TypeError(f"{name} must be a tensor (a torch.Tensor, a NumPy array or a nested list of numbers), "
                        f"got {type(value).__name__}")
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as err:   # ragged nesting
        raise TypeError(f"{name} must be a tensor, array or (rectangular) nested list of numbers: {err}") from None
    if array.dtype.kind not in "biufc":
        raise TypeError(f"{name} must hold numbers, got an array of dtype {array.dtype}")
    if array.dtype == np.float16:
        check_precision(name, torch.float16)
    return torch.as_tensor(np.ascontiguousarray(array), device=device)


def real_tensor(name: str, value: object, *, dtype: torch.dtype | None = None,
                device: torch.device | str | None = None) -> torch.Tensor:
    """``value`` as a finite real tensor, the one conversion at a public function's boundary.

    Tensors, NumPy arrays and nested lists are accepted; integer entries become float64 (exact);
    bool, complex and half-precision input is refused with ``TypeError``, NaN and inf with
    ``ValueError``. ``dtype``: cast the result (None: keep). ``device``: where array-likes go and where
    a tensor must already be (a tensor elsewhere is refused: no silent copies between devices; ``cuda``
    and ``cuda:0`` are one device, :func:`memcap.device.same_device`).
    """
    t = value if isinstance(value, torch.Tensor) else _from_array_like(name, value, device)
    if t.dtype == torch.bool or t.is_complex():
        raise TypeError(f"{name} must hold real numbers, got dtype {t.dtype}")
    check_precision(name, t.dtype)
    if not t.is_floating_point():
        t = t.to(torch.float64)
    on_device(name, t, device)
    check_finite(name, t)
    return t if dtype is None else t.to(dtype)


def float_tensor(name: str, value: object, *, device: torch.device | str | None = None) -> torch.Tensor:
    """Like :func:`real_tensor`, but integer entries are refused too: a model input needs a float dtype.

    Array-likes of integers are converted to float64 (an array has no committed dtype).
    """
    if isinstance(value, torch.Tensor) and not (value.is_floating_point() or value.is_complex()
                                                or value.dtype == torch.bool):
        raise TypeError(f"{name} must have a floating-point dtype, got {value.dtype}")
    return real_tensor(name, value, device=device)


def float_input(name: str, value: object, like: torch.Tensor | None = None) -> torch.Tensor:
    """A float input of a function that computes in its inputs' dtype (a model, a fit).

    A tensor must already be finite float32/float64 and on the device of ``like`` when given (it is not
    cast: dtype mismatches are reported by :func:`same_device_dtype`); an array-like takes the device and
    dtype of ``like`` (the call's weights or first input), or becomes a CPU tensor of its own dtype
    (float64 for integers) when None.
    """
    if isinstance(value, torch.Tensor):
        if not value.is_floating_point():
            raise TypeError(f"{name} must have a floating-point dtype, got {value.dtype}")
        check_precision(name, value.dtype)
        return check_finite(name, on_device(name, value, None if like is None else like.device))
    converted = float_tensor(name, value, device=None if like is None else like.device)
    return converted if like is None else converted.to(like.dtype)


def module_input(name: str, value: object, like: torch.Tensor) -> torch.Tensor:
    """A float input of a ``torch.nn.Module`` whose parameters are like ``like`` (its first weight).

    An array-like takes their device and dtype; a tensor must already be finite float32/float64 on their
    device and in their dtype (a module does not cast its input, and torch's own mismatch errors do not
    name the argument).
    """
    if isinstance(value, torch.Tensor) and not same_device(value.device, like.device):
        raise ValueError(f"{name} is on {value.device} but the model's parameters are on {like.device}; "
                         f"move it with .to({str(like.device)!r})")
    t = float_input(name, value, like)
    if t.dtype != like.dtype:
        raise ValueError(f"{name} has dtype {t.dtype} but the model's parameters have dtype {like.dtype}; "
                         f"convert it with .to({like.dtype})")
    return t


def id_tensor(name: str, value: object, *, device: torch.device | str | None = None) -> torch.Tensor:
    """``value`` as an int64 tensor of ids (token ids, class labels, example indices).

    Tensors, NumPy arrays and nested lists of integers are accepted; float, complex and bool input is
    refused with ``TypeError``. Other integer dtypes are converted to int64: torch indexes with a uint8
    tensor as with a boolean mask, and its embeddings and cross-entropy refuse some integer dtypes.
    ``device`` as in :func:`real_tensor`.
    """
    t = value if isinstance(value, torch.Tensor) else _from_array_like(name, value, device)
    if t.dtype == torch.bool or t.is_floating_point() or t.is_complex():
        raise TypeError(f"{name} must have an integer dtype (ids), got {t.dtype}")
    return on_device(name, t, device).long()


def ids_in_range(name: str, ids: torch.Tensor, upper: int | None = None) -> torch.Tensor:
    """Raise ``ValueError`` naming ``name`` unless every id is >= 0 (and < ``upper`` when given)."""
    holds_values(name, ids)
    if ids.numel() and (int(ids.min()) < 0 or (upper is not None and int(ids.max()) >= upper)):
        where = f"in [0, {upper})" if upper is not None else ">= 0"
        raise ValueError(f"{name} must be ids {where}, got ids from {int(ids.min())} to {int(ids.max())}")
    return ids


def same_device_dtype(**tensors: torch.Tensor) -> None:
    """Raise ``ValueError`` unless all given tensors share one device and one floating dtype."""
    items = list(tensors.items())
    first_name, first = items[0]
    for name, t in items[1:]:
        if not same_device(t.device, first.device):
            raise ValueError(f"{name} is on {t.device} but {first_name} is on {first.device}")
        if t.dtype != first.dtype:
            raise ValueError(f"{name} has dtype {t.dtype} but {first_name} has dtype {first.dtype}")


def host_array(value: object, dtype: object = None) -> np.ndarray:
    """``value`` as a NumPy array in CPU memory, for NumPy and matplotlib (which read only CPU memory): a
    tensor on any device, or a list or tuple holding tensors (such as 0-d results on a GPU), is detached
    and copied to the CPU first; anything else goes through ``np.asarray`` (a GPU tensor given to
    ``np.asarray`` raises "can't convert cuda:0 device type tensor to numpy")."""
    if isinstance(value, torch.Tensor):
        value = holds_values("a plotted or tabulated value", value).detach().cpu().numpy()
    elif isinstance(value, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in value):
        value = [v.detach().cpu().numpy() if isinstance(v, torch.Tensor) else v for v in value]
    return np.asarray(value, dtype=dtype)


def listed(name: str, value: object, what: str) -> tuple:
    """``value`` (a list, tuple or other iterable) as a tuple. One item where a list is expected (a spec,
    a dict, a string, which would be iterated letter by letter) is refused with a ``TypeError`` naming
    ``name`` and saying ``what`` the list holds."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        one = repr(value) if isinstance(value, str) else f"one {type(value).__name__}"
        raise TypeError(f"{name} must be a list of {what}, got {one}: put it in a list, [...]")
    return tuple(value)


def mode_from(value: str | None, modes: tuple[str, ...], argument: str, env: str, default: str) -> str:
    """A mode in force: ``value`` (the argument named ``argument``) if given, else the environment variable
    ``env``, else ``default``; either must be one of ``modes`` (a ValueError naming which one is wrong)."""
    import os

    if value is None:
        value = os.environ.get(env, default)
        if value not in modes:
            raise ValueError(f"the environment variable {env} must be one of {modes}, got {value!r}")
        return value
    if value not in modes:
        raise ValueError(f"{argument} must be one of {modes} or None, got {value!r}")
    return value
