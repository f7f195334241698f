"""How a stack is trained: :class:`TrainConfig` (optimizer, schedule, batches, early stop, dtype, device)."""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch

from memcap._checks import check_bool, finite_real, positive_int, positive_real
from memcap._schema import Key, keyed, list_of, one_of, optional, text
from memcap.device import pick_device
from memcap.train.schedule import SCHEDULES


def _device_name(name: str, value: object) -> object:
    """A device's name (a string such as 'cpu' or 'cuda:0') or a ``torch.device``."""
    return value if isinstance(value, torch.device) else text(name, value)


MAX_COUNT = 10**9
"""Largest ``steps``, ``epochs``, ``batch_size`` and ``eval_every`` of a :class:`TrainConfig`, and largest
number of steps of one model (:meth:`TrainConfig.steps_for`): a billion, far beyond both papers (50,000 steps,
500 epochs, batches of 256) and any run that ends, so that a mistyped count is refused when the config is
made, naming it, instead of overflowing torch's 64-bit integers in the middle of training."""


def _count(name: str, value: object) -> int:
    """A positive integer at most :data:`MAX_COUNT`, else raise naming ``name``."""
    count = positive_int(name, value)
    if count > MAX_COUNT:
        raise ValueError(f"{name} must be at most MAX_COUNT = 10**9 (a billion), got {count}")
    return count


_CONFIG_KEYS = {
    "steps": Key(_count, "optimizer steps per model, a positive int", needed=False),
    "epochs": Key(optional(_count), "epochs, a positive int or None", needed=False),
    "batch_size": Key(optional(_count), "the batch size B, a positive int or None (full batch)", needed=False),
    "lr": Key(positive_real, "the peak learning rate, a positive real", needed=False),
    "schedule": Key(one_of(SCHEDULES), f"the schedule, one of {SCHEDULES}", needed=False),
    "warmup_fraction": Key(finite_real, "the warm-up fraction, a real in [0, 1)", needed=False),
    "warmup_start_factor": Key(finite_real, "the warm-up start factor, a real in (0, 1]", needed=False),
    "betas": Key(list_of(finite_real, "reals in [0, 1)", length=2), "Adam's betas, a pair of reals in [0, 1)",
                 needed=False),
    "eps": Key(positive_real, "Adam's eps, a positive real", needed=False),
    "early_stop": Key(check_bool, "whether to freeze memorized models, a bool", needed=False),
    "eval_every": Key(_count, "steps between full-set evaluations, a positive int", needed=False),
    "dtype": Key(one_of(("float32", "float64")), "'float32' or 'float64'", needed=False),
    "device": Key(optional(_device_name), "a device name such as 'cpu' or 'cuda', or None", needed=False),
}


def _config_record(name: str, record: object) -> object:
    """``record`` checked as a whole to be a :meth:`TrainConfig.to_dict` (every key optional): an unknown or
    mistyped key is refused naming ``name[key]``. Returns ``record``."""
    keyed(name, record, _CONFIG_KEYS, "a TrainConfig record")
    return record


@dataclass(frozen=True)
class TrainConfig:
    """How every model of a stack is trained.

    ``steps``: optimizer steps per model; with ``epochs`` set, a model with T examples trains for
    max(steps, epochs*T // batch_size) steps (Mahdavi et al.: max(500 epochs, 50k steps)).
    ``batch_size`` B (None: the full training set every step). ``lr`` peak learning rate;
    ``schedule`` one of :data:`SCHEDULES`; ``warmup_fraction`` and ``warmup_start_factor`` shape the
    warm-up (5 % of the steps, from 1 % of ``lr``, in Mahdavi et al.'s code). ``betas``, ``eps``: Adam's.
    ``early_stop``: freeze a classification model once it reaches 100 % training accuracy, checked on the
    full training set every ``eval_every`` steps. ``dtype``: 'float32' or 'float64'; ``device``: None
    means :func:`memcap.device.pick_device`. Counts are at most ``memcap.train.MAX_COUNT`` (a billion); NumPy
    numbers are kept as Python numbers (the config goes into JSON job keys).
    """

    steps: int = 1000
    epochs: int | None = None
    batch_size: int | None = 256
    lr: float = 1e-3
    schedule: str = "warmup_cosine"
    warmup_fraction: float = 0.05
    warmup_start_factor: float = 0.01
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    early_stop: bool = True
    eval_every: int = 500
    dtype: str = "float32"
    device: str | None = None

    def __post_init__(self) -> None:
        _count("steps", self.steps)
        if self.epochs is not None:
            _count("epochs", self.epochs)
        if self.batch_size is not None:
            _count("batch_size", self.batch_size)
        positive_real("lr", self.lr)
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {self.schedule!r}")
        if not 0.0 <= finite_real("warmup_fraction", self.warmup_fraction) < 1.0:
            raise ValueError(f"warmup_fraction must lie in [0, 1), got {self.warmup_fraction}")
        if not 0.0 < finite_real("warmup_start_factor", self.warmup_start_factor) <= 1.0:
            raise ValueError(f"warmup_start_factor must lie in (0, 1], got {self.warmup_start_factor}")
        if not isinstance(self.betas, (tuple, list)) or len(self.betas) != 2:
            raise TypeError(f"betas must be a pair (beta1, beta2) such as (0.9, 0.999), got {self.betas!r}")
        betas = tuple(finite_real("betas", b) for b in self.betas)
        if not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError(f"betas must be two numbers in [0, 1), got {self.betas}")
        object.__setattr__(self, "betas", betas)
        positive_real("eps", self.eps)
        check_bool("early_stop", self.early_stop)
        _count("eval_every", self.eval_every)
        if self.dtype not in ("float32", "float64"):
            raise ValueError(f"dtype must be 'float32' or 'float64', got {self.dtype!r}")
        if self.device is not None:
            pick_device(self.device)
            if isinstance(self.device, torch.device):   # kept as its name: the job key is JSON
                object.__setattr__(self, "device", str(self.device))
        for name in ("steps", "epochs", "batch_size", "lr", "warmup_fraction", "warmup_start_factor", "eps",
                     "eval_every"):   # NumPy scalars as Python numbers, like the specs': the job key is JSON
            value = getattr(self, name)
            if isinstance(value, (np.integer, np.floating)):
                object.__setattr__(self, name, value.item())

    def steps_for(self, examples: int) -> int:
        """Optimizer steps of a model with T = ``examples`` training examples."""
        T = positive_int("examples", examples)
        if self.epochs is None:
            return self.steps
        batch = T if self.batch_size is None else self.batch_size
        steps = max(self.steps, self.epochs * T // batch)
        if steps > MAX_COUNT:
            raise ValueError(f"epochs = {self.epochs} of examples = {T} in batches of {batch} make {steps} steps, "
                             f"more than MAX_COUNT = 10**9 (a billion)")
        return steps

    def to_dict(self) -> dict:
        """JSON-able form (``betas`` as a list)."""
        record = asdict(self)
        record["betas"] = list(self.betas)
        return record

    @classmethod
    def from_dict(cls, record: dict) -> "TrainConfig":
        """Inverse of :meth:`to_dict`: a dict of the fields above, each optional (left out: its default);
        an unknown or mistyped key is refused naming it (``record['lr']``)."""
        _config_record("record", record)
        record = dict(record)
        if "betas" in record:
            record["betas"] = tuple(record["betas"])
        return cls(**record)
