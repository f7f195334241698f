"""Shared by the ``syn_*`` experiments of Part III: one-axis-at-a-time sweeps and their measured capacities.

A sweep varies one spec field at a time around a base point (:func:`sweep_points`); the capacity jobs
train every point on a ladder of training-set sizes (:func:`memcap.train.capacity_search`), and
:func:`measured_curves` turns their results into one :class:`Curve` per axis, averaged over seeds;
:func:`growth_per_doubling` reads a curve's growth per doubling of its value; :func:`summarize_sweep`
puts an experiment's theories beside them (a :class:`Sweep`), :func:`distinct_points` lists each point once
and :func:`ratios` divides the measured capacities by one of those theories. Not an
experiment (not in :data:`memcap.experiments.EXPERIMENTS`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from memcap.experiments.sweep import capacity_job
from memcap.train import TrainConfig, spec_from_dict


def sweep_points(base: Mapping[str, int], axes: Mapping[str, Sequence[int]]) -> list[dict]:
    """The distinct points of a sweep: ``base`` and, for each axis, ``base`` with that field set to each of
    its values (the base point is shared by every axis). Base first, then the axes in order."""
    if not axes:
        raise ValueError("axes must name at least one field to sweep")
    points = [dict(base)]
    for axis, values in axes.items():
        if axis not in base:
            raise ValueError(f"axis {axis!r} must be a field of the base point {sorted(base)}")
        if not values:
            raise ValueError(f"axis {axis!r} needs at least one value")
        for v in values:
            point = {**base, axis: v}
            if point not in points:
                points.append(point)
    return points


def capacity_jobs(make_spec: Callable[[dict, int], Any], grid: Mapping, *, split_seeds: bool) -> list[dict]:
    """Capacity jobs for every point and seed of a sweep ``grid`` (an experiment's PAPER or QUICK: ``base``,
    ``axes``, ``seeds``, ``candidates``, ``train``, ``rounds``, ``points``); ``make_spec(point, seed)``
    builds the spec. One job (all stacked) or, with ``split_seeds``, one job per seed (for several workers)."""
    config = TrainConfig(**grid["train"])
    points = sweep_points(grid["base"], grid["axes"])
    groups = [[s] for s in grid["seeds"]] if split_seeds else [list(grid["seeds"])]
    return [capacity_job([make_spec(p, s) for s in group for p in points], grid["candidates"], config,
                         rounds=grid["rounds"], points=grid["points"]) for group in groups]


@dataclass(frozen=True)
class Curve:
    """Measured capacity along one axis of a sweep (arrays (k,) over ``values``, ascending).

    ``capacity``: largest memorized training-set size found, mean over seeds; ``low``/``high``: its range
    over seeds; ``censored``: True where some seed memorized even the largest size tried (a lower bound
    only); ``points``: the spec fields of each value (without the seed); ``upper``: the largest, over
    seeds, of the smallest size the search saw a model fail (inf where censored), so every seed's
    capacity lies in [``low``, ``upper``): the search's resolution.
    """

    axis: str
    values: np.ndarray
    capacity: np.ndarray
    low: np.ndarray
    high: np.ndarray
    censored: np.ndarray
    points: tuple[dict, ...]
    upper: np.ndarray


def measured_curves(capacities: Sequence[Mapping], base: Mapping[str, int],
                    axes: Mapping[str, Sequence[int]]) -> dict[str, Curve]:
    """One :class:`Curve` per axis from capacity records (``ExperimentResults.capacities``: each a dict with
    ``spec``, ``capacity`` and ``upper``). Every point of the sweep must be present."""
    fields = list(base)
    found: dict[tuple, list[tuple[int, bool]]] = {}
    for i, record in enumerate(capacities):
        if not all(k in record for k in ("spec", "capacity", "upper")):
            raise ValueError(f"capacities[{i}] must have 'spec', 'capacity' and 'upper'")
        spec = spec_from_dict(dict(record["spec"])).to_dict()
        key = tuple(spec[f] for f in fields)
        found.setdefault(key, []).append((int(record["capacity"]), record["upper"]))
    curves = {}
    for axis, values in axes.items():
        rows = []
        for v in sorted(values):
            point = {**base, axis: v}
            key = tuple(point[f] for f in fields)
            if key not in found:
                raise ValueError(f"no capacity was measured at {point}")
            caps = np.array([c for c, _ in found[key]], dtype=float)
            fails = [math.inf if u is None else float(u) for _, u in found[key]]
            rows.append((v, caps.mean(), caps.min(), caps.max(), math.inf in fails, point, max(fails)))
        v, cap, lo, hi, cens, pts, up = zip(*rows)
        curves[axis] = Curve(axis, np.array(v), np.array(cap), np.array(lo), np.array(hi), np.array(cens),
                             tuple(pts), np.array(up))
    return curves


def growth_per_doubling(curve: Curve) -> float:
    """The capacity's relative growth per doubling of the swept value between the curve's first and last
    values: (c_last / c_first) ** (log 2 / log(v_last / v_first)) - 1 (0.5 = +50 % each time the value
    doubles). Unlike the change across the whole range, it compares axes swept over ranges of different
    sizes (H = 1..31 against d_h = 1..10 in the paper profile). Needs at least two values, the first > 0,
    and a first capacity > 0; a censored end makes it a bound, not a measurement."""
    if not isinstance(curve, Curve):
        raise TypeError(f"curve must be a syn_common.Curve, got {type(curve).__name__}")
    if len(curve.values) < 2:
        raise ValueError(f"curve {curve.axis!r} needs at least two values to measure a growth, got "
                         f"{len(curve.values)}")
    (v0, v1), (c0, c1) = curve.values[[0, -1]].astype(float), curve.capacity[[0, -1]].astype(float)
    if not 0 < v0 < v1:
        raise ValueError(f"curve {curve.axis!r} needs ascending positive values, got {v0:g} to {v1:g}")
    if not (c0 > 0 and c1 >= 0):
        raise ValueError(f"curve {curve.axis!r} needs a positive first capacity to measure a growth, "
                         f"got {c0:g} at {curve.axis} = {v0:g}")
    return float((c1 / c0) ** (math.log(2) / math.log(v1 / v0)) - 1)


@dataclass(frozen=True)
class Sweep:
    """Measured curves per axis and the theories at every point (``theory[axis][i]`` for value i of the
    axis: the experiment's own ``Point``), around the base point ``base``."""

    curves: dict[str, Curve]
    theory: dict[str, tuple]
    base: dict


def summarize_sweep(capacities: Sequence[Mapping], grid: Mapping,
                    theory_at: Callable[[dict, float], Any]) -> Sweep:
    """The :class:`Sweep` of capacity records measured on ``grid`` (``base`` and ``axes``), with
    ``theory_at(point, capacity)`` at every point of every axis (``capacity``: the mean over seeds)."""
    curves = measured_curves(capacities, grid["base"], grid["axes"])
    theory = {axis: tuple(theory_at(p, c) for p, c in zip(curve.points, curve.capacity))
              for axis, curve in curves.items()}
    return Sweep(curves, theory, dict(grid["base"]))


def distinct_points(sweep: Sweep) -> list[tuple[dict, float, Any]]:
    """``(point, capacity, theory)`` once per distinct point of ``sweep``, in the order of its axes (the base
    point lies on every axis and is listed once)."""
    if not isinstance(sweep, Sweep):
        raise TypeError(f"sweep must be a syn_common.Sweep, got {type(sweep).__name__}")
    seen, out = [], []
    for axis, curve in sweep.curves.items():
        for point, cap, th in zip(curve.points, curve.capacity, sweep.theory[axis]):
            if point not in seen:
                seen.append(point)
                out.append((point, float(cap), th))
    return out


def lowest_capacities(sweep: Sweep) -> np.ndarray:
    """The smallest capacity over seeds (:attr:`Curve.low`) at every distinct point of ``sweep``, in the order
    of :func:`distinct_points`: what a claim about *every* seed ("exceeds the count at every point") reads,
    where the mean over seeds would hide a seed that falls short."""
    if not isinstance(sweep, Sweep):
        raise TypeError(f"sweep must be a syn_common.Sweep, got {type(sweep).__name__}")
    seen, out = [], []
    for curve in sweep.curves.values():
        for point, low in zip(curve.points, curve.low):
            if point not in seen:
                seen.append(point)
                out.append(float(low))
    return np.array(out)


POINT_SYMBOLS = (("heads", "H"), ("head_dim", "d_h"), ("context_size", "n"), ("dim", "d"), ("seq_len", "S"))


def describe_point(point: Mapping[str, int]) -> str:
    """A sweep point in math for prose and tables: ``{"heads": 2, "dim": 8}`` -> '$H = 2$, $d = 8$' (only
    the fields of :data:`POINT_SYMBOLS`, in that order)."""
    if not isinstance(point, Mapping):
        raise TypeError(f"point must be a mapping of spec fields, got {type(point).__name__}")
    return ", ".join(f"${s} = {point[k]}$" for k, s in POINT_SYMBOLS if k in point)


def ratios(sweep: Sweep, bound: str) -> np.ndarray:
    """Measured capacity / the count of the theory ``bound`` (a :class:`memcap.synthesis.Bound` field of
    the experiment's ``Point``, e.g. 'dana' or 'mahdavi') at every distinct point of the sweep
    (:func:`distinct_points`)."""
    return np.array([cap / getattr(th, bound).value for _, cap, th in distinct_points(sweep)])
