"""Summaries shared by the ``mahdavi_fig*`` modules: records of a sweep -> curves, theory lines, linearity test.

:func:`curves` gathers the trained models of a sweep into one curve per dataset size T (:class:`Curves`),
:func:`matches` selects records by their fields, the theory lines :func:`theory_accuracy` /
:func:`theory_mse` (evaluated on a grid by :func:`theory_table`) put Theorem 1's H(min(n, d_h) - 1) + 1
on the accuracy or MSE scale, and :func:`linear_on_unsaturated` is the paper's linearity test.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Sequence

import numpy as np

from memcap._checks import positive_int, positive_real
from memcap.bounds import mha_capacity
from memcap.fits import PolyFit, linear_fit, non_saturated
from memcap.train import MHASpec

LABEL_VARIANCE = 1.0 / 12.0
"""Variance of a regression label y ~ U(0, 1): the MSE of always predicting the mean 1/2."""

_SPEC_KEYS = ("model",) + tuple(f.name for f in fields(MHASpec))


@dataclass(frozen=True)
class Curves:
    """Measurements of one sweep, one curve per dataset size T.

    ``x`` (k,) the swept values (sorted), ``examples`` (m,) the T values (sorted), ``mean``, ``low``,
    ``high`` (m, k): mean, minimum and maximum over seeds of the measured ``value``; ``seeds`` how many
    seeds each point has.
    """

    axis: str
    value: str
    x: np.ndarray
    examples: np.ndarray
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    seeds: int


def _spec_of(record: dict) -> tuple:
    return tuple(record.get(k) for k in _SPEC_KEYS)


def matches(record: dict, where: dict) -> bool:
    """Whether ``record`` has every field of ``where`` equal to its value (or in it, for a list/tuple/set)."""
    return all(record.get(k) in v if isinstance(v, (list, tuple, set)) else record.get(k) == v
               for k, v in where.items())


def curves(records: Sequence[dict], axis: str, *, value: str = "accuracy", where: dict | None = None) -> Curves:
    """Gather ``value`` of the trained models in ``records`` into curves over ``axis``, one per T.

    ``where`` keeps only records whose fields equal the given values (e.g. ``{"classes": None}``); a list,
    tuple or set as value means "one of these" (e.g. ``{"examples": [300, 600]}``).
    A model listed twice (the same spec in two sweeps) counts once. Every (T, x) pair must have the same
    number of seeds, or the grid is incomplete and a ValueError says which point is missing.
    """
    if not isinstance(records, Sequence) or not all(isinstance(r, dict) for r in records):
        raise TypeError("records must be a sequence of dicts (ExperimentResults.records)")
    if axis not in _SPEC_KEYS:
        raise ValueError(f"axis must be a field of MHASpec, got {axis!r}")
    where = dict(where or {})
    chosen, seen = [], set()
    for r in records:
        if matches(r, where) and _spec_of(r) not in seen:
            seen.add(_spec_of(r))
            chosen.append(r)
    if not chosen:
        raise ValueError(f"no record matches {where} (records: {len(records)})")
    if any(r.get(value) is None for r in chosen):
        raise ValueError(f"value {value!r} is missing (None) in some records; e.g. accuracy is None for regression")
    xs = np.array(sorted({r[axis] for r in chosen}))
    ts = np.array(sorted({r["examples"] for r in chosen}))
    groups: dict = {}
    for r in chosen:
        groups.setdefault((r["examples"], r[axis]), []).append(float(r[value]))
    counts = {len(v) for v in groups.values()}
    missing = [(int(t), int(x)) for t in ts for x in xs if (t, x) not in groups]
    if missing or len(counts) != 1:
        raise ValueError(f"the grid of T x {axis} is incomplete: missing {missing}, seeds per point {sorted(counts)}")
    table = np.array([[groups[(t, x)] for x in xs] for t in ts])              # (m, k, seeds)
    return Curves(axis=axis, value=value, x=xs, examples=ts, mean=table.mean(axis=2), low=table.min(axis=2),
                  high=table.max(axis=2), seeds=counts.pop())


def guaranteed_fraction(heads: int, context_size: int, head_dim: int, examples: int) -> float:
    """min(1, H(r-1)+1 / T): the fraction of T examples Theorem 1 (Mahdavi et al.) memorizes exactly."""
    cap = mha_capacity(heads, context_size, head_dim)
    return min(1.0, cap / positive_int("examples", examples))


def theory_accuracy(heads: int, context_size: int, head_dim: int, examples: int, classes: int) -> float:
    """Expected training accuracy Theorem 1 guarantees with C uniform classes: f + (1 - f)/C.

    f = min(1, (H(r-1)+1)/T). The attention weights of the construction depend on the inputs only and the
    readout on the labels of the f T memorized examples, so the other predictions are independent of
    their own uniform labels and right with probability 1/C each (argument in the chapter).
    """
    f = guaranteed_fraction(heads, context_size, head_dim, examples)
    return f + (1.0 - f) / positive_int("classes", classes)


def theory_mse(heads: int, context_size: int, head_dim: int, examples: int,
               variance: float = LABEL_VARIANCE) -> float:
    """Expected training MSE Theorem 1's features reach with a least-squares readout (with bias): (1-f) var.

    The features span at least f T dimensions chosen without looking at the labels; projecting i.i.d.
    labels of variance ``variance`` on them leaves (T - fT) var of squared error in expectation.
    """
    f = guaranteed_fraction(heads, context_size, head_dim, examples)
    return (1.0 - f) * positive_real("variance", variance)


def theory_table(c: Curves, record: dict, kind: str = "accuracy") -> np.ndarray:
    """Theory values (m, k) on the grid of ``c``; ``record`` gives the fixed fields (H, n, d_h, C)."""
    if kind not in ("accuracy", "mse"):
        raise ValueError(f"kind must be 'accuracy' or 'mse', got {kind!r}")
    out = np.empty(c.mean.shape)
    for i, T in enumerate(c.examples):
        for j, v in enumerate(c.x):
            f = {**record, c.axis: int(v)}
            d_h = f["dim"] if f["head_dim"] is None else f["head_dim"]
            args = (int(f["heads"]), int(f["context_size"]), int(d_h), int(T))
            out[i, j] = theory_accuracy(*args, int(f["classes"])) if kind == "accuracy" else theory_mse(*args)
    return out


def linear_on_unsaturated(x: Sequence[float], y: Sequence[float], *, ceiling: float = 0.99) -> PolyFit | None:
    """Mahdavi et al.'s linearity test: a least-squares line on the part of the curve before it reaches
    ``ceiling`` (first saturated point kept); None when fewer than 3 points remain (R² would be vacuous)."""
    xs, ys = non_saturated(x, y, ceiling=ceiling)
    return linear_fit(xs, ys) if xs.size >= 3 else None
