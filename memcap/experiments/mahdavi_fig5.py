"""Mahdavi et al., Figure 5: regression (y ~ U(0,1)) with a shared context; the error falls with H and n."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from memcap.experiments._grids import mha_jobs
from memcap.experiments.mahdavi_common import curves, matches, theory_table
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


def verdict(panels: dict) -> Verdict:
    """Does the regression error fall with H and with n, as the paper finds? From :func:`summarize`.

    Reproduced when no curve rises from one grid value to the next; partly when every curve ends lower
    than it starts; not otherwise.
    """
    every, overall, parts = [], [], []
    for axis, name in (("heads", "$H$"), ("context_size", "$n$")):
        p = panels[axis]
        rise = float(np.diff(p["mse"], axis=1).max())
        every.append(rise <= 0)
        overall.append(bool((p["mse"][:, -1] < p["mse"][:, 0]).all()))
        parts.append(f"falls at every step in {name}" if rise < 0 else f"never rises in {name}" if rise == 0
                     else f"falls overall in {name} but rises by up to ${sci(rise)}$ between neighbouring values"
                     if overall[-1] else f"does not fall with {name}")
    status = grade(every, partial=overall)
    ratios = [p["mse"][i, 0] / p["mse"][i, -1] for p in panels.values() for i in range(len(p["examples"]))]
    return Verdict(status, "the training error " + " and ".join(parts),
                   f"error falls by a factor of {min(ratios):.0f} or more across each grid")


def below_theory(panels: dict) -> tuple[int, int]:
    """(points where the trained MSE lies below Theorem 1's expected MSE, all points), over both panels."""
    below = sum(int((p["mse"] < p["theory"]).sum()) for p in panels.values())
    return below, sum(p["mse"].size for p in panels.values())


def finding(results) -> Verdict:
    """The figure's verdict on an :class:`~memcap.experiments.ExperimentResults` of any profile (a sweep's, or a
    recorded run's from :func:`memcap.experiments.recorded.results`):
    ``verdict(summarize(results.records, results.profile))``."""
    return verdict(summarize(results.records, results.profile))
