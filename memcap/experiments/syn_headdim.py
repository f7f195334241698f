"""Part III, an open question: does the AoT's capacity grow quadratically in d_h (Dana et al., Figure 1(b))?

Dana et al. read a quadratic in d_h off training *accuracy* at fixed H. This experiment measures the
*capacity* (largest table memorized entirely, :func:`memcap.train.capacity_search`) against d_h for both
architectures the book trains: the AoT of Eq. (2), every head with its own d -> d_h maps, and the variant
whose heads share one d -> d_h compression (``AoTSpec.shared_compression``, how Dana et al.'s final code
is described). :func:`summarize` fits capacity ~ c d_h^alpha on a log-log scale (alpha = 2: quadratic,
1: linear like the theorems' counts) and the least-squares quadratic.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memcap import synthesis
from memcap.experiments.sweep import capacity_job
from memcap.fits import PolyFit, linear_fit, poly_fit
from memcap.train import AoTSpec, TrainConfig

NAME = "syn_headdim"
LABEL = "syn-fig-headdim"
TITLE = "Capacity against the head dimension, for both AoT architectures"

PAPER = {
    "model": {"vocab": 50, "seq_len": 2, "dim": 10, "heads": 20},
    "head_dim": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
    "shared_compression": [False, True],
    "candidates": [64, 128, 256, 512, 1024, 1536, 2048, 2500],
    "rounds": 3, "points": 3,
    "seeds": [0, 1, 2],
    "train": {"steps": 10_000, "batch_size": 1024, "lr": 1e-3, "schedule": "constant", "eval_every": 500},
}
# Quick: d = 8 and H = 4 heads on a vocabulary of 16, one seed.
QUICK = {
    "model": {"vocab": 16, "seq_len": 2, "dim": 8, "heads": 4},
    "head_dim": [1, 2, 4],
    "shared_compression": [False, True],
    "candidates": [16, 32, 64, 128, 256],
    "rounds": 1, "points": 2,
    "seeds": [0],
    "train": {"steps": 800, "batch_size": 32, "lr": 1e-2, "schedule": "warmup_cosine", "eval_every": 100},
}


def jobs(profile: str) -> list[dict]:
    """One capacity search for every (architecture, d_h, seed) (quick); one per seed (paper)."""
    g = PAPER if profile == "paper" else QUICK
    groups = [[s] for s in g["seeds"]] if profile == "paper" else [list(g["seeds"])]
    return [capacity_job([AoTSpec(**g["model"], head_dim=k, shared_compression=c, examples=1, seed=s,
                                  data_seed=s)
                          for c in g["shared_compression"] for k in g["head_dim"] for s in group],
                         g["candidates"], TrainConfig(**g["train"]), rounds=g["rounds"], points=g["points"])
            for group in groups]


@dataclass(frozen=True)
class HeadDimCurve:
    """Capacity against d_h for one architecture (arrays (k,) over ``head_dim``): mean over seeds
    (``capacity``), ``censored`` where the largest size tried was memorized, ``power`` the log-log line
    (its slope is alpha in capacity ~ c d_h^alpha), ``quadratic`` and ``line`` the least-squares fits in
    d_h, ``parameters`` the trained model's weights, ``dana`` H d_h + d (Eq. (2)'s count); ``low`` the
    smallest capacity over seeds and ``upper`` the largest, over seeds, of the smallest size a model failed
    (inf where censored): every seed's capacity lies in [``low``, ``upper``), the search's resolution.
    ``fitted`` marks the points the three fits use: the uncensored ones when at least :data:`MIN_FIT` are
    (a censored capacity is only a lower bound, and a curve cut off at the largest table bends down however
    it grows), else every point (:attr:`fits_censored` then says so, and no exponent is settled)."""

    shared_compression: bool
    head_dim: np.ndarray
    capacity: np.ndarray
    censored: np.ndarray
    power: PolyFit
    quadratic: PolyFit
    line: PolyFit
    parameters: np.ndarray
    dana: np.ndarray
    low: np.ndarray
    upper: np.ndarray
    fitted: np.ndarray

    @property
    def fits_censored(self) -> bool:
        """Whether the fits include a censored capacity (too few uncensored points to fit without them)."""
        return bool((self.fitted & self.censored).any())


MIN_FIT = 3
"""The fewest uncensored points the fits of :func:`summarize` use on their own (a quadratic needs 3)."""


def summarize(results) -> dict[bool, HeadDimCurve]:
    """One :class:`HeadDimCurve` per architecture (key: ``shared_compression``) from the capacity records."""
    caps = getattr(results, "capacities", results)
    out = {}
    for shared in (False, True):
        rows: dict[int, list[tuple[int, bool]]] = {}
        fails: dict[int, list[float]] = {}
        specs = {}
        for c in caps:
            spec = c["spec"]
            if bool(spec.get("shared_compression", False)) != shared:
                continue
            k = int(spec["head_dim"])
            rows.setdefault(k, []).append((int(c["capacity"]), c["upper"] is None))
            fails.setdefault(k, []).append(np.inf if c["upper"] is None else float(c["upper"]))
            specs[k] = spec
        if not rows:
            continue
        if len(rows) < 3:
            raise ValueError(f"capacities must cover at least 3 values of d_h, got {sorted(rows)}")
        k = np.array(sorted(rows))
        cap = np.array([np.mean([v for v, _ in rows[x]]) for x in k])
        if (cap <= 0).any():
            raise ValueError("every capacity must be positive for a log-log fit; widen the ladder downwards")
        first = specs[int(k[0])]
        H, d = int(first["heads"]), int(first["dim"])
        params = np.array([synthesis.engine_param_count(AoTSpec(**_fields(specs[int(x)]))) for x in k])
        censored = np.array([any(c for _, c in rows[x]) for x in k])
        fitted = ~censored if (~censored).sum() >= MIN_FIT else np.ones_like(censored)
        fk, fc = k[fitted], cap[fitted]
        out[shared] = HeadDimCurve(shared, k, cap, censored,
                                   linear_fit(np.log(fk), np.log(fc)), poly_fit(fk, fc, 2), linear_fit(fk, fc),
                                   params, np.array([H * int(x) + d for x in k]),
                                   np.array([min(v for v, _ in rows[x]) for x in k], dtype=float),
                                   np.array([max(fails[x]) for x in k]), fitted)
    if not out:
        raise ValueError("capacities hold no AoT capacity search")
    return out


def _fields(spec: dict) -> dict:
    return {k: v for k, v in spec.items() if k != "model"}
