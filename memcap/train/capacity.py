"""Capacity search: the largest training set each model memorizes, by a ladder of sizes then bisection."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Sequence

import numpy as np

from memcap._checks import listed, nonnegative_int, positive_int
from memcap.device import pick_device
from memcap.train.config import TrainConfig
from memcap.train.loop import TrainResult, train_models
from memcap.train.prepare import check_fits
from memcap.train.specs import AoTSpec, Spec


@dataclass(frozen=True)
class CapacityResult:
    """Largest training-set size a model memorized: ``capacity`` = largest tried T with 100 % accuracy
    (0 if none), ``upper`` = smallest tried T above it that was not memorized (None if none), ``tried``
    = ((T, accuracy), ...) in increasing T."""

    spec: Spec
    capacity: int
    upper: int | None
    tried: tuple[tuple[int, float], ...]

    def to_dict(self) -> dict:
        """JSON-able form."""
        return {"spec": self.spec.to_dict(), "capacity": self.capacity, "upper": self.upper,
                "tried": [list(t) for t in self.tried]}


def _bracket(tried: dict[int, bool]) -> tuple[int, int | None]:
    memorized = [T for T, ok in tried.items() if ok]
    lo = max(memorized) if memorized else 0
    above = [T for T, ok in tried.items() if not ok and T > lo]
    return lo, (min(above) if above else None)


def capacity_search(specs: Sequence[Spec], candidates: Sequence[int], config: TrainConfig | None = None, *,
                    rounds: int = 2, points: int = 3,
                    train: Callable[..., TrainResult] | None = None) -> list[CapacityResult]:
    """Largest T each model of ``specs`` memorizes (100 % training accuracy), by a ladder then bisection.

    Every (spec, T) of the ladder ``candidates`` trains in one stacked run (``spec.examples`` is replaced
    by T). Each refinement round then tries ``points`` evenly spaced T strictly between the largest
    memorized and the smallest non-memorized T of every spec, again all stacked, until the bracket closes
    (upper - capacity = 1) or ``rounds`` are spent. ``train`` defaults to :func:`train_models` (tests pass
    a stand-in with a known capacity).
    """
    specs = listed("specs", specs, "specs (MHASpec or AoTSpec)")
    if not specs:
        raise ValueError("specs must hold at least one model, got an empty list")
    candidates = listed("candidates", candidates, "training-set sizes")
    ladder = sorted({positive_int("candidates[i]", T) for T in candidates})
    if not ladder:
        raise ValueError("candidates must hold at least one training-set size T, got an empty list")
    nonnegative_int("rounds", rounds)
    positive_int("points", points)
    train = train_models if train is None else train
    device = pick_device(config.device if isinstance(config, TrainConfig) else None)
    for i, spec in enumerate(specs):
        if spec.task != "classification":
            raise ValueError(f"specs[{i}] is a regression model; capacity needs 100 % accuracy, a classification notion")
        if isinstance(spec, AoTSpec) and ladder[-1] > spec.vocab ** spec.seq_len:
            raise ValueError(f"candidates must not exceed N^S = {spec.vocab ** spec.seq_len} for specs[{i}], "
                             f"got T = {ladder[-1]}")
        check_fits(replace(spec, examples=ladder[-1]), device, f"specs[{i}]", examples="max(candidates)")
    tried: list[dict[int, float]] = [{} for _ in specs]
    todo = [list(ladder) for _ in specs]
    for _ in range(rounds + 1):
        jobs = [(i, T) for i, Ts in enumerate(todo) for T in Ts]
        if not jobs:
            break
        result = train([replace(specs[i], examples=T) for i, T in jobs], config)
        for (i, T), acc, ok in zip(jobs, result.accuracy, result.memorized):
            tried[i][T] = (float(acc), bool(ok))
        todo = []
        for i in range(len(specs)):
            lo, hi = _bracket({T: ok for T, (_, ok) in tried[i].items()})
            if hi is None or hi - lo <= 1:
                todo.append([])
                continue
            grid = np.linspace(lo, hi, points + 2)[1:-1]
            todo.append(sorted({int(round(g)) for g in grid} - set(tried[i]) - {lo, hi}))
    out = []
    for spec, t in zip(specs, tried):
        lo, hi = _bracket({T: ok for T, (_, ok) in t.items()})
        out.append(CapacityResult(spec=spec, capacity=lo, upper=hi,
                                  tried=tuple((T, t[T][0]) for T in sorted(t))))
    return out
