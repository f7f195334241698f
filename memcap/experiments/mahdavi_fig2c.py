"""Mahdavi et al., Figure 2(c): the head dimension d_h helps only while d_h <= n (H = 30, n = 32, d = 64)."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from memcap._checks import positive_real
from memcap.experiments._grids import mha_sweep_jobs
from memcap.experiments.mahdavi_common import curves, theory_table
from memcap.experiments.verdicts import Verdict, grade, holds

NAME = "mahdavi_fig2c"
LABEL = "mha-fig-2c"
TITLE = "Accuracy vs head dimension d_h (shared context)"

PAPER = {
    "model": {"dim": 64, "heads": 30, "context_size": 32, "classes": 100, "shared": True},
    "head_dim": [10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 64],
    "examples": [10_000, 15_000, 20_000],
    "seeds": [0],
    "train": {"steps": 300_000, "batch_size": 256, "lr": 1e-3, "eval_every": 500},
}
# Quick: three seeds at one T, since single-seed curves over d_h are too noisy to show where the gain stops.
QUICK = {
    "model": {"dim": 16, "heads": 4, "context_size": 6, "classes": 100, "shared": True},
    "head_dim": [1, 2, 4, 6, 10, 16],
    "examples": [300],
    "seeds": [0, 1, 2],
    "train": {"steps": 2000, "batch_size": 128, "lr": 1e-2, "eval_every": 250},
}


def jobs(profile: str) -> list[dict]:
    """Quick: one stacked job; paper: one job per T (all d_h and seeds stacked)."""
    return mha_sweep_jobs(PAPER if profile == "paper" else QUICK, "head_dim", profile)


def summarize(records: Sequence[dict]) -> dict:
    """Figure 2(c) as arrays: ``head_dim`` (k,), ``examples`` (m,), ``accuracy``/``low``/``high``/``theory``
    (m, k), and per T the mean gain of accuracy per unit of d_h below and above d_h = n:
    ``gain_below`` = (acc(a) - acc(min d_h)) / (a - min d_h) with a the largest grid value <= n, and
    ``gain_above`` = (acc(max d_h) - acc(b)) / (max d_h - b) with b the smallest grid value >= n (m,)
    (a = b = n when n is on the grid; the paper's grid, 10, 15, ..., 64 around n = 32, is not), and
    ``steepest_above`` (m,), ``steepest_at`` (m,): the largest (acc(v) - acc(b)) / (v - b) over the grid
    values v > b and the v where it is reached (a rise past n that falls back is hidden by gain_above).
    Theorem 1's bound H(min(n, d_h) - 1) + 1 stops growing at d_h = n."""
    c = curves(records, "head_dim")
    n = int(records[0]["context_size"])
    lo, hi = c.x[c.x <= n], c.x[c.x >= n]
    if lo.size < 2 or hi.size < 2:
        raise ValueError(f"the d_h grid must have at least two values <= n = {n} and two >= n, got {c.x.tolist()}")
    a, b = int(np.nonzero(c.x == lo[-1])[0][0]), int(np.nonzero(c.x == hi[0])[0][0])
    below = (c.mean[:, a] - c.mean[:, 0]) / (c.x[a] - c.x[0])
    above = (c.mean[:, -1] - c.mean[:, b]) / (c.x[-1] - c.x[b])
    rises = (c.mean[:, b + 1:] - c.mean[:, b:b + 1]) / (c.x[b + 1:] - c.x[b])    # (m, values past b)
    steepest = rises.argmax(axis=1)
    return {"head_dim": c.x, "examples": c.examples, "accuracy": c.mean, "low": c.low, "high": c.high,
            "seeds": c.seeds, "context_size": n, "theory": theory_table(c, records[0]),
            "gain_below": below, "gain_above": above, "steepest_above": rises.max(axis=1),
            "steepest_at": c.x[b + 1 + steepest]}


STOP_RATIO = 0.2
"""The gain per unit of d_h "stops" past d_h = n when it falls to at most this share of the gain below."""


def verdict(summary: dict, stop_ratio: float = STOP_RATIO) -> Verdict:
    """Does the gain from d_h stop once d_h >= n, as the paper finds? From :func:`summarize`'s output.

    Reproduced when, for every T, accuracy grows below d_h = n and the gain per unit of d_h above it is at
    most ``stop_ratio`` times the gain below (or none); partly when it is smaller than half the gain
    below; not otherwise. The gain above is the steepest rise from n to any larger d_h of the grid
    (``steepest_above``), so a rise that falls back before the last d_h still counts. ``stop_ratio`` must
    lie in (0, 0.5]: above 0.5 a gain counted as stopped would not even have halved.
    """
    stop_ratio = positive_real("stop_ratio", stop_ratio)
    if stop_ratio > 0.5:
        raise ValueError(f"stop_ratio must be at most 0.5 (the share of the gain below d_h = n that the gain "
                         f"above may keep and still count as stopped; 'partly' starts at 0.5), got {stop_ratio!r}")
    below, above, T = summary["gain_below"], summary["steepest_above"], summary["examples"]
    grows = below > 0
    stops = grows & (above <= stop_ratio * below)
    slows = grows & (above < 0.5 * below)
    status = grade([stops.all()], partial=[slows.all()])
    n = summary["context_size"]
    if (above <= 0).all():
        text = holds(grows, T, f"accuracy grows with $d_h$ up to $d_h = n = {n}$ and not at all beyond it",
                     f"accuracy does not grow with $d_h$ below $d_h = n = {n}$")
    else:
        fold = f"{1 / stop_ratio:g}-fold"   # 0.2 -> '5-fold'
        text = holds(stops, T, f"the gain per unit of $d_h$ falls at least {fold} past $d_h = n = {n}$",
                     f"the gain per unit of $d_h$ falls less than {fold} past $d_h = n = {n}$")
    ratio = above.mean() / below.mean() if below.mean() > 0 else float("nan")
    shows = (f"gain per unit of $d_h$ past $d_h = n$: {ratio:.2f} times the gain below"
             if np.isfinite(ratio) else "no gain below $d_h = n$")
    return Verdict(status, text, shows)


def finding(results) -> Verdict:
    """The figure's verdict on an :class:`~memcap.experiments.ExperimentResults` of any profile (a sweep's, or a
    recorded run's from :func:`memcap.experiments.recorded.results`): ``verdict(summarize(results.records))``."""
    return verdict(summarize(results.records))
