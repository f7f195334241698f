"""Checkpoints inside a training job: a stopped job goes on where it was, with the numbers of an unbroken run.

A paper-scale job can take longer than a lease on a GPU lasts (mahdavi_fig2c trains 12 models for 300,000
steps). With a :class:`Checkpoint` active (:func:`checkpointing`; the sweep activates one per job, in a folder
beside the job's cache entry), :func:`memcap.train.train_models` keeps there

* every finished stack's result (``<key>.done.pt``), so a job of several stacks (and a capacity search's
  several calls of ``train_models``) does not train a finished stack again, and
* a running stack's whole state (``<key>.step.pt``) at most every ``every`` seconds, taken where a chunk of
  batch indices begins (step a multiple of ``memcap.train.loop.CHUNK``): weights, Adam moments and step
  counts, early-stop flags, the evaluation history so far and each model's batch generator.

Training is deterministic given a stack's specs, its config, dtype, device type and whether its step was
compiled, so a stack restored from its state continues with exactly the numbers it would have had: the
result of a job stopped any number of times (Ctrl-C, SIGTERM, SIGKILL, a lease running out) equals one
uninterrupted run, bit for bit (``tests/test_checkpoint.py``). A key (:meth:`Checkpoint.key`) is a hash of
all of that and of ``ENGINE_VERSION``; state saved under another key is never used. Files are written
atomically (a temporary file, then ``os.replace``), so a kill during a save leaves the previous state; a
file that cannot be read is ignored with a :class:`CheckpointWarning` and the stack starts over.
"""
from __future__ import annotations

import contextlib
import contextvars
import hashlib
import io
import json
import os
import time
import warnings
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import torch

from memcap._checks import as_float
from memcap._files import atomic_write
from memcap._version import ENGINE_VERSION

CHECKPOINT_SECONDS = 60.0
"""Default time between two saves of a running stack's state: at most this much training is lost when a job
is killed (a save of the largest paper stack, a few MB, takes well under a second)."""


class CheckpointWarning(UserWarning):
    """A checkpoint file could not be read (or belongs to another stack shape): it is ignored."""


def _to_torch(value):
    """``value`` with NumPy arrays as tensors, for ``torch.save`` (``torch.load(weights_only=True)`` reads it)."""
    if isinstance(value, np.ndarray):
        return {"__ndarray__": torch.as_tensor(np.ascontiguousarray(value), device="cpu")}
    if isinstance(value, dict):
        return {k: _to_torch(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_torch(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _from_torch(value):
    """The inverse of :func:`_to_torch`."""
    if isinstance(value, dict):
        if set(value) == {"__ndarray__"}:
            return value["__ndarray__"].cpu().numpy()
        return {k: _from_torch(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_torch(v) for v in value]
    return value


class Checkpoint:
    """A folder where training keeps finished stacks and the state of the running one (see the module).

    ``folder``: created on the first save; ``every``: seconds between two saves of a running stack's state
    (0: at every chunk boundary, for tests). ``restored`` counts stacks whose finished result was read,
    ``resumed`` lists the steps at which stacks went on from a saved state, in this process, and
    ``earlier_seconds`` is the training time those stacks had had in the runs before.
    """

    def __init__(self, folder: str | os.PathLike, every: float = CHECKPOINT_SECONDS) -> None:
        if not isinstance(folder, (str, os.PathLike)) or not str(folder):
            raise TypeError(f"folder must be a path (str or os.PathLike), got {folder!r}")
        if isinstance(every, bool) or not isinstance(every, (int, float)) or not every >= 0:
            raise ValueError(f"every must be a number of seconds >= 0, got {every!r}")
        self.folder = Path(folder)
        self.every = as_float("every", every)
        self.restored = 0
        self.resumed: list[int] = []
        self.earlier_seconds = 0.0
        self.saves = 0
        self._last = time.monotonic()

    def __repr__(self) -> str:
        return f"Checkpoint({str(self.folder)!r}, every={self.every:g})"

    @staticmethod
    def key(specs: Sequence, config, dtype: torch.dtype, device: torch.device, compiled: bool,
            keep_params: bool = False) -> str:
        """What determines a stack's result, hashed: its specs, config, dtype, device type, compiled path, and
        whether the result keeps the weights."""
        text = json.dumps({"engine": ENGINE_VERSION, "specs": [s.to_dict() for s in specs], "keep": bool(keep_params),
                           "config": {**config.to_dict(), "device": None}, "dtype": str(dtype),
                           "device": torch.device(device).type, "compiled": bool(compiled)}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:24]

    def _path(self, key: str, what: str) -> Path:
        return self.folder / f"{key}.{what}.pt"

    def _write(self, path: Path, payload: dict) -> None:
        buffer = io.BytesIO()
        torch.save(_to_torch(payload), buffer)
        atomic_write(path, buffer.getvalue())
        self.saves += 1
        self._last = time.monotonic()

    def _read(self, path: Path) -> dict | None:
        if not path.is_file():
            return None
        try:
            return _from_torch(torch.load(path, map_location="cpu", weights_only=True))
        except Exception as err:   # noqa: BLE001 - whatever is wrong with the file, training starts over
            warnings.warn(f"checkpoint {path} could not be read ({type(err).__name__}: {err}); ignoring it",
                          CheckpointWarning, stacklevel=3)
            return None

    # finished stacks --------------------------------------------------------------------------------

    def finished(self, key: str) -> dict | None:
        """The saved result of a finished stack (the dict ``memcap.train.loop`` builds), or None."""
        found = self._read(self._path(key, "done"))
        if found is not None:
            self.restored += 1
            self.earlier_seconds += float(found.get("seconds", 0.0))
        return found

    def save_finished(self, key: str, result: dict) -> None:
        """Keep a finished stack's ``result``; its running state is no longer needed."""
        self._write(self._path(key, "done"), result)
        self._path(key, "step").unlink(missing_ok=True)

    # a running stack ---------------------------------------------------------------------------------

    def due(self) -> bool:
        """Whether ``every`` seconds have passed since the last save (or since this checkpoint was made)."""
        return time.monotonic() - self._last >= self.every

    def state(self, key: str, shape: tuple[int, int]) -> dict | None:
        """The saved state of stack ``key`` whose weights have ``shape`` (m, P), or None."""
        found = self._read(self._path(key, "step"))
        if found is None:
            return None
        if tuple(found["flat"].shape) != tuple(shape):
            warnings.warn(f"checkpoint {self._path(key, 'step')} holds weights of shape {tuple(found['flat'].shape)}, "
                          f"the stack has {tuple(shape)}; ignoring it", CheckpointWarning, stacklevel=2)
            return None
        self.resumed.append(int(found["step"]))
        self.earlier_seconds += float(found.get("seconds", 0.0))
        return found

    def save_state(self, key: str, state: dict) -> None:
        """Keep a running stack's ``state`` (tensors are copied to the CPU)."""
        self._write(self._path(key, "step"), {k: v.detach().cpu() if isinstance(v, torch.Tensor) else v
                                              for k, v in state.items()})

    def clear(self) -> None:
        """Remove the folder's checkpoint files (the job's result is stored elsewhere)."""
        if self.folder.is_dir():
            for path in self.folder.glob("*.pt"):
                path.unlink(missing_ok=True)
            with contextlib.suppress(OSError):   # not empty: someone else's files, leave them
                self.folder.rmdir()


_ACTIVE: contextvars.ContextVar[Checkpoint | None] = contextvars.ContextVar("memcap_checkpoint", default=None)


def active() -> Checkpoint | None:
    """The checkpoint :func:`checkpointing` made active in this context, or None."""
    return _ACTIVE.get()


@contextlib.contextmanager
def checkpointing(folder: str | os.PathLike, every: float = CHECKPOINT_SECONDS) -> Iterator[Checkpoint]:
    """Within the block, :func:`memcap.train.train_models` keeps its progress in ``folder`` (see the module)."""
    checkpoint = Checkpoint(folder, every)
    token = _ACTIVE.set(checkpoint)
    try:
        yield checkpoint
    finally:
        _ACTIVE.reset(token)
