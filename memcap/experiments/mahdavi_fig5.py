"""Mahdavi et al., Figure 5: regression (y ~ U(0,1)) with a shared context; the error falls with H and n."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from memcap._checks import nonnegative_real, positive_real
from memcap.experiments._grids import mha_jobs
from memcap.experiments.mahdavi_common import LABEL_VARIANCE, NOISE, curves, matches, theory_table
from memcap.experiments.verdicts import Verdict, grade
from memcap.notation import sci
from memcap.profiles import check_profile

NAME = "mahdavi_fig5"
LABEL = "mha-fig-5"
TITLE = "Regression error vs H and vs n (shared context)"

PAPER = {
    "model": {"dim": 64, "classes": None, "out_dim": 1, "shared": True},
    "heads": [1, 5, 10, 20, 30, 40, 50, 60], "context_size_for_heads": 32,
    "context_size": [1, 5, 10, 20, 30, 40, 50, 60], "heads_for_context": 20,
    "examples_heads": [10_000, 15_000, 20_000, 25_000, 30_000],
    "examples_context": [10_000, 15_000, 20_000, 25_000],
    "seeds": [0],
    "train": {"steps": 50_000, "epochs": 500, "batch_size": 256, "lr": 1e-3, "eval_every": 500},
}
QUICK = {
    "model": {"dim": 16, "classes": None, "out_dim": 1, "shared": True},
    "heads": [1, 2, 4, 8], "context_size_for_heads": 8,
    "context_size": [1, 2, 4, 8], "heads_for_context": 4,
    "examples_heads": [200],
    "examples_context": [200],
    "seeds": [0],
    "train": {"steps": 2000, "batch_size": 128, "lr": 1e-2, "eval_every": 500},
}


def jobs(profile: str) -> list[dict]:
    """Two sweeps (vs H, vs n); quick: one job each, paper: one job per T."""
    g = PAPER if profile == "paper" else QUICK
    split = "examples" if profile == "paper" else None
    return (mha_jobs({**g["model"], "context_size": g["context_size_for_heads"]}, "heads", g["heads"],
                     g["examples_heads"], g["seeds"], g["train"], split_by=split)
            + mha_jobs({**g["model"], "heads": g["heads_for_context"]}, "context_size", g["context_size"],
                       g["examples_context"], g["seeds"], g["train"], split_by=split))


def summarize(records: Sequence[dict], profile: str = "quick") -> dict:
    """Figure 5 as two panels keyed by axis ('heads', 'context_size'): ``x`` (k,), ``examples`` (m,),
    ``mse``/``low``/``high``/``theory`` (m, k) (training MSE and the bound from Theorem 1's features), and
    ``worst_rise`` (m,): the largest increase of MSE from one grid value to the next (0 when it only falls)."""
    g = PAPER if check_profile(profile) == "paper" else QUICK
    panels = {}
    for axis, fixed, sizes in (("heads", {"context_size": g["context_size_for_heads"]}, g["examples_heads"]),
                               ("context_size", {"heads": g["heads_for_context"]}, g["examples_context"])):
        where = {"classes": None, "shared": True, axis: g[axis], "examples": sizes, **fixed}
        c = curves(records, axis, value="loss", where=where)
        base = next(r for r in records if matches(r, where))
        steps = np.diff(c.mean, axis=1)                                       # (m, k-1)
        rise = np.maximum(0.0, steps.max(axis=1)) if steps.shape[1] else np.zeros(len(c.examples))
        panels[axis] = {"x": c.x, "examples": c.examples, "mse": c.mean, "low": c.low, "high": c.high,
                        "seeds": c.seeds, "theory": theory_table(c, base, "mse"), "worst_rise": rise}
    return panels


TOLERANCE = NOISE * LABEL_VARIANCE
"""A rise of the MSE from one grid value to the next up to this size counts as noise of one training run:
:data:`~memcap.experiments.mahdavi_common.NOISE` as a share of the labels' variance 1/12 (the MSE of fitting
none of them), the tolerance the accuracy figures use as a share of the examples."""


def factor(ratio: float) -> str:
    """How the error changes by ``ratio`` (its value at the start of a grid over that at the end), as a
    clause with two significant digits: 'falls by a factor of 37', 'rises by a factor of 1.6',
    'does not change'."""
    ratio = positive_real("ratio", ratio)
    if ratio == 1:
        return "does not change"
    size = float(f"{max(ratio, 1 / ratio):.2g}")                        # >= 1, two significant digits
    return ("falls" if ratio > 1 else "rises") + " by a factor of " + (f"{size:,.0f}" if size >= 10
                                                                       else f"{size:.1f}")


def _clause(name: str, rise: float, overall: bool, every: bool, tolerance: float) -> str:
    """What the error does along the axis ``name``, for :func:`verdict`'s text: ``rise`` its largest rise
    between neighbouring values, ``overall`` whether it ends more than ``tolerance`` lower, ``every`` whether
    it also never rises by more."""
    if not overall:
        return (f"falls by no more than the ${sci(tolerance)}$ of training noise across the grid in {name}"
                if rise <= 0 else f"does not fall with {name}")
    if rise < 0:
        return f"falls at every step in {name}"
    if rise == 0:
        return f"never rises in {name}"
    if every:
        return (f"falls in {name} (up to rises of at most ${sci(rise)}$ between neighbouring values, within the "
                f"${sci(tolerance)}$ we count as training noise)")
    return f"falls overall in {name} but rises by up to ${sci(rise)}$ between neighbouring values"


def verdict(panels: dict, tolerance: float = TOLERANCE) -> Verdict:
    """Does the regression error fall with H and with n, as the paper finds? From :func:`summarize`.

    Reproduced when every curve ends more than ``tolerance`` lower than it starts and no curve rises by
    more than ``tolerance`` from one grid value to the next; partly when that holds along one axis, or every
    curve ends that much lower; not otherwise.
    """
    tolerance = nonnegative_real("tolerance", tolerance)
    every, overall, parts = [], [], []
    for axis, name in (("heads", "$H$"), ("context_size", "$n$")):
        p = panels[axis]
        rise = float(np.diff(p["mse"], axis=1).max())
        overall.append(bool((p["mse"][:, 0] - p["mse"][:, -1] > tolerance).all()))
        every.append(rise <= tolerance and overall[-1])
        parts.append(_clause(name, rise, overall[-1], every[-1], tolerance))
    status = grade(every, partial=overall)
    ratios = {name: [panels[axis]["mse"][i, 0] / panels[axis]["mse"][i, -1]
                     for i in range(len(panels[axis]["examples"]))]
              for axis, name in (("heads", "$H$"), ("context_size", "$n$"))}
    least = min(min(r) for r in ratios.values())
    if least > 1:
        shows = f"error {factor(least)} or more across each grid"
    else:
        name = next(k for k, r in ratios.items() if least in r)
        shows = f"error {factor(least)} across the grid in {name}"
    return Verdict(status, "the training error " + " and ".join(parts), shows)


def below_theory(panels: dict) -> tuple[int, int]:
    """(points where the trained MSE lies below Theorem 1's expected MSE, all points), over both panels."""
    below = sum(int((p["mse"] < p["theory"]).sum()) for p in panels.values())
    return below, sum(p["mse"].size for p in panels.values())


def finding(results) -> Verdict:
    """The figure's verdict on an :class:`~memcap.experiments.ExperimentResults` of any profile (a sweep's, or a
    recorded run's from :func:`memcap.experiments.recorded.results`):
    ``verdict(summarize(results.records, results.profile))``."""
    return verdict(summarize(results.records, results.profile))
