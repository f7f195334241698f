"""Mahdavi et al., Figure 2(b): memorization grows monotonically with the context size n (H = 20, d_h = d)."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from memcap._checks import nonnegative_real
from memcap.experiments._grids import mha_sweep_jobs
from memcap.experiments.mahdavi_common import NOISE, curves, theory_table
from memcap.experiments.verdicts import Verdict, grade, holds

NAME = "mahdavi_fig2b"
LABEL = "mha-fig-2b"
TITLE = "Accuracy vs context size n (shared context)"

PAPER = {
    "model": {"dim": 64, "heads": 20, "classes": 100, "shared": True},
    "context_size": [1, 5, 10, 20, 30, 40, 50, 60],
    "examples": [6_000, 10_000, 14_000, 18_000],
    "seeds": [0],
    "train": {"steps": 50_000, "epochs": 500, "batch_size": 256, "lr": 1e-3, "eval_every": 500},
}
QUICK = {
    "model": {"dim": 16, "heads": 4, "classes": 100, "shared": True},
    "context_size": [1, 2, 4, 8, 12],
    "examples": [200, 400],
    "seeds": [0],
    "train": {"steps": 1500, "batch_size": 128, "lr": 1e-2, "eval_every": 250},
}


def jobs(profile: str) -> list[dict]:
    """Quick: one stacked job; paper: one job per T (all n and seeds stacked)."""
    return mha_sweep_jobs(PAPER if profile == "paper" else QUICK, "context_size", profile)


def summarize(records: Sequence[dict]) -> dict:
    """Figure 2(b) as arrays: ``context_size`` (k,), ``examples`` (m,), ``accuracy``/``low``/``high``/
    ``theory`` (m, k), and ``worst_drop`` (m,): the largest fall of accuracy from one n to any larger n
    (0 when the curve is monotone non-decreasing), so that a run of small falls counts as their sum."""
    c = curves(records, "context_size")
    best_so_far = np.maximum.accumulate(c.mean, axis=1)                       # (m, k)
    return {"context_size": c.x, "examples": c.examples, "accuracy": c.mean, "low": c.low, "high": c.high,
            "seeds": c.seeds, "theory": theory_table(c, records[0]),
            "worst_drop": (best_so_far - c.mean).max(axis=1)}


GROWTH = 3 * NOISE
"""The least rise from the smallest to the largest n that counts as growth: two runs' accuracies each carry
noise of about :data:`~memcap.experiments.mahdavi_common.NOISE`, so their difference about sqrt(2) times
that, and 3 NOISE is two such deviations of the difference."""


def verdict(summary: dict, noise: float = NOISE) -> Verdict:
    """Does accuracy grow monotonically with n, as the paper finds? From :func:`summarize`'s output.

    Reproduced when every curve ends more than :data:`GROWTH` above where it starts and never falls by more
    than ``noise`` below an earlier value (``worst_drop``); partly when every curve grows but some fall is
    larger; not otherwise (a curve that does not grow).
    """
    noise = nonnegative_real("noise", noise)
    acc, T, drop = summary["accuracy"], summary["examples"], np.asarray(summary["worst_drop"], dtype=float)
    up = acc[:, -1] - acc[:, 0] > GROWTH
    steady = drop <= noise
    status = grade([up.all() and steady.all()], partial=[up.all()])
    text = holds(up, T, "accuracy grows with $n$",
                 f"accuracy gains no more than {GROWTH:g} from the smallest to the largest $n$, too little "
                 "to read as growth")
    if (drop == 0).all():
        text += " and never falls as $n$ grows"
    else:
        text += (f"; its largest fall from one $n$ to a larger one is {drop.max():.3f}, "
                 + ("within" if steady.all() else "beyond") + f" the {noise:g} we count as training noise")
    shows = f"largest fall from one $n$ to a larger one: {drop.max():.3f}"
    return Verdict(status, text, shows)


def finding(results) -> Verdict:
    """The figure's verdict on an :class:`~memcap.experiments.ExperimentResults` of any profile (a sweep's, or a
    recorded run's from :func:`memcap.experiments.recorded.results`): ``verdict(summarize(results.records))``."""
    return verdict(summarize(results.records))
