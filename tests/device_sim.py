"""A second device on a CPU-only machine: every tensor is labelled with the device it would be on with a GPU.

On a machine with CUDA, chapters meet three kinds of tensor: those made where ``pick_device()`` says (CUDA),
those made without a device (the CPU), and those sent to the CPU on purpose (``.cpu()``, ``device="cpu"``,
``torch.from_numpy``). Only the first kind meeting one of the others crashes, and only there. Under
:class:`SecondDevice` the CPU plays both parts: ``pick_device()`` answers ``cpu:0`` (the environment variable
``MEMCAP_DEVICE`` is set so), and every tensor carries a label, ``"gpu"`` or ``"cpu"``, which each torch call
propagates the way devices propagate on a GPU:

* a factory puts its tensor on ``"gpu"`` when its ``device=`` is ``cpu:0`` (what ``pick_device()`` and
  ``x.device`` of a ``"gpu"`` tensor say), else on ``"cpu"``; ``*_like`` and ``new_*`` follow their tensor;
* ``.to(...)``/``.cpu()`` move the label; ``.device`` of a ``"gpu"`` tensor reads ``cpu:0``;
* an operation that meets a ``"gpu"`` tensor and a ``"cpu"`` tensor of one or more dimensions raises, like
  CUDA (a 0-d CPU tensor may meet GPU tensors there too; indexing a GPU tensor with CPU indices works);
* ``.numpy()`` and NumPy's conversion of a ``"gpu"`` tensor (``np.asarray``, matplotlib) raise, like CUDA;
* a random draw from a CPU generator asked to go to the ``"gpu"`` raises, like CUDA.

Tensors that torch makes behind the scenes (autograd's gradients) carry no label and meet anything. Values are
the CPU's, so a chapter computes exactly what it computes on the CPU; only the device discipline is checked.
It is slow (every torch call passes through Python) and a stand-in: the GPU run of the book
(``python -m tests.gpu_book`` on a machine with CUDA) is the real thing.
"""
from __future__ import annotations

import os
import threading

import torch
from torch.overrides import TorchFunctionMode

GPU, CPU = "gpu", "cpu"
STAND_IN = torch.device("cpu", 0)
"""The device that stands for the GPU: ``cpu:0`` (what ``pick_device()`` returns under the simulation)."""
_ATTR = "_memcap_sim_device"
_NO_MIX_CHECK = {"to", "cpu", "cuda", "copy_", "__getitem__", "__setitem__", "__format__", "__repr__",
                 "__str__", "__array__", "numpy", "__reduce_ex__", "__deepcopy__", "_make_subclass",
                 "detach", "clone", "__get__", "__set__", "size", "dim", "item", "tolist", "__len__",
                 "__iter__", "__bool__", "__float__", "__int__", "__index__", "_has_compatible_shallow_copy_type",
                 "is_same_size", "set_", "swap_tensors", "is_nonzero"}


class DeviceMix(RuntimeError):
    """What CUDA would have raised: tensors of two devices in one operation, or a GPU tensor to NumPy."""


def label(t: torch.Tensor) -> str | None:
    """The simulated device of ``t`` (None: made by torch behind the scenes, meets anything)."""
    return t.__dict__.get(_ATTR) if hasattr(t, "__dict__") else None


def _where(device) -> str:
    if device is None:
        return CPU
    dev = torch.device(device) if not isinstance(device, torch.device) else device
    return GPU if dev.type == "cpu" and dev.index == 0 else CPU


def _tensors(value, out: list) -> list:
    if isinstance(value, torch.Tensor):
        out.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _tensors(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            _tensors(v, out)
    return out


def _mark(value, where: str) -> None:
    for t in _tensors(value, []):
        try:
            t.__dict__[_ATTR] = where
        except (AttributeError, TypeError):  # pragma: no cover - tensors without a __dict__
            pass


def _name(func) -> str:
    name = getattr(func, "__name__", "")
    if name in ("__get__", "__set__"):
        owner = getattr(func, "__self__", None)
        return f"{getattr(owner, '__name__', '')}.{name}"
    return name


class SecondDevice(TorchFunctionMode):
    """Torch-function mode that labels every tensor with its would-be device and refuses device mixes.

    ``torch.nn.Parameter`` is made without passing through the mode, so while it is active a parameter
    takes the label of the tensor it wraps.
    """

    def __enter__(self):
        new = self._parameter_new = torch.nn.Parameter.__new__

        def labelled(cls, data=None, requires_grad=True):
            param = new(cls, data, requires_grad)
            if isinstance(data, torch.Tensor) and label(data) is not None:
                _mark(param, label(data))
            return param

        torch.nn.Parameter.__new__ = labelled
        return super().__enter__()

    def __exit__(self, *exc):
        torch.nn.Parameter.__new__ = self._parameter_new
        return super().__exit__(*exc)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = _name(func)
        if name == "device.__get__":
            t = args[0]
            return STAND_IN if label(t) == GPU else torch.device("cpu")
        inputs = _tensors(args, []) + _tensors(kwargs, [])
        if name in ("numpy", "__array__") and inputs and label(inputs[0]) == GPU:
            raise DeviceMix("can't convert cuda:0 device type tensor to numpy (simulated): call .cpu() first")
        if name == "data.__set__":
            result = func(*args, **kwargs)
            _mark(args[0], label(args[1]) or label(args[0]) or CPU)
            return result
        labels = [(label(t), t.dim()) for t in inputs]
        gpu = any(where == GPU for where, _ in labels)
        base = name.split(".")[-1]
        if gpu and base not in _NO_MIX_CHECK and any(where == CPU and dims > 0 for where, dims in labels):
            raise DeviceMix(f"Expected all tensors to be on the same device, but found at least two devices, "
                            f"cuda:0 and cpu (simulated, in {name or func})")
        if "generator" in kwargs and kwargs.get("generator") is not None and _where(kwargs.get("device")) == GPU:
            raise DeviceMix(f"Expected a 'cuda' device type for generator but found 'cpu' (simulated, in {name})")
        result = func(*args, **kwargs)
        if base in ("to", "cuda", "cpu") and args and isinstance(args[0], torch.Tensor):
            where = self._moved(base, args, kwargs)
            if result is args[0] and where != label(result):   # a real move copies: so must this one
                result = result.clone()
        elif "device" in kwargs and kwargs["device"] is not None:
            where = _where(kwargs["device"])
        elif base == "__set__":
            return result
        elif base == "__get__":                  # a property (.T, .mT, .real, .grad): the tensor's device
            where = label(args[0]) if args and isinstance(args[0], torch.Tensor) else None
        elif inputs:
            where = GPU if gpu else (CPU if any(w == CPU for w, _ in labels) else None)
        else:
            where = CPU
        if where is not None:
            _mark(result, where)
        return result

    @staticmethod
    def _moved(base: str, args, kwargs) -> str | None:
        source = label(args[0]) if args and isinstance(args[0], torch.Tensor) else None
        if base == "cpu":
            return CPU
        if base == "cuda":
            return GPU
        targets = list(args[1:]) + [kwargs.get("device"), kwargs.get("other")]
        for target in targets:
            if isinstance(target, torch.Tensor):
                return label(target) or source
            if isinstance(target, (str, torch.device)):
                return _where(target)
        return source


_local = threading.local()


def install() -> SecondDevice:
    """Enter the simulation for the rest of the process: ``MEMCAP_DEVICE=cpu:0`` and the mode pushed."""
    os.environ["MEMCAP_DEVICE"] = str(STAND_IN)
    mode = SecondDevice()
    mode.__enter__()
    _local.mode = mode
    return mode
