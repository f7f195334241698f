"""Mahdavi et al., Figure 2(a): memorization (training accuracy) grows linearly with the number of heads H.

Shared context (Prop. 2 setting), d = 64, n = 32, d_h = d, 100 classes; Section 5.2.

The summaries it builds on (curves per T, Theorem 1's theory lines, the linearity test) are shared by
every ``mahdavi_fig*`` module and live in :mod:`memcap.experiments.mahdavi_common`.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from memcap.experiments._grids import mha_jobs
from memcap.experiments.mahdavi_common import curves, linear_on_unsaturated, theory_table
from memcap.fits import non_saturated

NAME = "mahdavi_fig2a"
LABEL = "mha-fig-2a"
TITLE = "Accuracy vs number of heads H (shared context)"

PAPER = {
    "model": {"dim": 64, "context_size": 32, "classes": 100, "shared": True},
    "heads": [1, 5, 10, 20, 30, 40, 50, 60],
    "examples": [10_000, 20_000, 30_000, 40_000],
    "seeds": [0],
    "train": {"steps": 50_000, "epochs": 500, "batch_size": 256, "lr": 1e-3, "eval_every": 500},
}
# Quick: T a few times the capacity of the largest H (as in the paper); lr 2e-2 and 2500 steps let the
# small-H models get far enough for the line to show (R^2 ~ 0.98 on the non-saturated part).
QUICK = {
    "model": {"dim": 16, "context_size": 8, "classes": 100, "shared": True},
    "heads": [1, 2, 3, 4, 6, 8],
    "examples": [300, 500],
    "seeds": [0],
    "train": {"steps": 2500, "batch_size": 128, "lr": 2e-2, "eval_every": 250},
}


def jobs(profile: str) -> list[dict]:
    """Quick: one stacked job; paper: one job per T (all H and seeds stacked)."""
    grid = PAPER if profile == "paper" else QUICK
    return mha_jobs(grid["model"], "heads", grid["heads"], grid["examples"], grid["seeds"], grid["train"],
                    split_by="examples" if profile == "paper" else None)


def summarize(records: Sequence[dict]) -> dict:
    """Figure 2(a) as arrays: ``heads`` (k,), ``examples`` (m,), ``accuracy``/``low``/``high``/``theory``
    (m, k), and per T the line fitted on the non-saturated part: ``r2``, ``slope`` (m,) (NaN if no fit),
    ``fits`` (the PolyFit or None) and ``fit_heads`` (the H values it was fitted on)."""
    c = curves(records, "heads")
    line = [linear_on_unsaturated(c.x, row) for row in c.mean]
    return {"heads": c.x, "examples": c.examples, "accuracy": c.mean, "low": c.low, "high": c.high,
            "seeds": c.seeds, "theory": theory_table(c, records[0]),
            "r2": np.array([np.nan if f is None else f.r2 for f in line]),
            "slope": np.array([np.nan if f is None else f.slope for f in line]), "fits": line,
            "fit_heads": [non_saturated(c.x, row)[0] if f is not None else c.x[:0] for f, row in zip(line, c.mean)]}
