"""Shared by the ``syn_*`` experiments of Part III: one-axis-at-a-time sweeps and their measured capacities.

A sweep varies one spec field at a time around a base point (:func:`sweep_points`); the capacity jobs
train every point on a ladder of training-set sizes (:func:`memcap.train.capacity_search`), and
:func:`measured_curves` turns their results into one :class:`Curve` per axis, averaged over seeds.
Not an experiment (not in :data:`memcap.experiments.EXPERIMENTS`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

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


def capacity_jobs(make_spec, base: Mapping[str, int], axes: Mapping[str, Sequence[int]], seeds: Sequence[int],
                  candidates: Sequence[int], train: Mapping, *, rounds: int, points: int,
                  split_seeds: bool) -> list[dict]:
    """Capacity jobs for every sweep point and seed; ``make_spec(point, seed)`` builds the spec. One job
    (all stacked) or, with ``split_seeds``, one job per seed (for several workers)."""
    config = TrainConfig(**train)
    groups = [[s] for s in seeds] if split_seeds else [list(seeds)]
    return [capacity_job([make_spec(p, s) for s in group for p in sweep_points(base, axes)], candidates,
                         config, rounds=rounds, points=points) for group in groups]


@dataclass(frozen=True)
class Curve:
    """Measured capacity along one axis of a sweep (arrays (k,) over ``values``, ascending).

    ``capacity``: largest memorized training-set size found, mean over seeds; ``low``/``high``: its range
    over seeds; ``censored``: True where some seed memorized even the largest size tried (a lower bound
    only); ``points``: the spec fields of each value (without the seed).
    """

    axis: str
    values: np.ndarray
    capacity: np.ndarray
    low: np.ndarray
    high: np.ndarray
    censored: np.ndarray
    points: tuple[dict, ...]


def _point_of(spec: dict, fields: Sequence[str]) -> dict:
    return {f: spec[f] for f in fields}


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
        found.setdefault(key, []).append((int(record["capacity"]), record["upper"] is None))
    curves = {}
    for axis, values in axes.items():
        rows = []
        for v in sorted(values):
            point = {**base, axis: v}
            key = tuple(point[f] for f in fields)
            if key not in found:
                raise ValueError(f"no capacity was measured at {point}")
            caps = np.array([c for c, _ in found[key]], dtype=float)
            rows.append((v, caps.mean(), caps.min(), caps.max(), any(cens for _, cens in found[key]), point))
        v, cap, lo, hi, cens, pts = zip(*rows)
        curves[axis] = Curve(axis, np.array(v), np.array(cap), np.array(lo), np.array(hi), np.array(cens),
                             tuple(pts))
    return curves
