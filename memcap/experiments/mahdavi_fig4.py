"""Mahdavi et al., Figure 4 (Appendix I.1): contexts drawn afresh per example (general position).

Classification and regression, against H (n = 32) and against n (H = 20): linearity in H survives, in n
it weakens. Grids from the authors' published run script.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from memcap.experiments._grids import mha_jobs
from memcap.experiments.mahdavi_common import curves, linear_on_unsaturated, matches, theory_table
from memcap.sweep import check_profile

NAME = "mahdavi_fig4"
LABEL = "mha-fig-4"
TITLE = "Non-shared contexts: classification and regression vs H and vs n"

_PAPER_TRAIN = {"steps": 50_000, "epochs": 500, "batch_size": 256, "lr": 1e-3, "eval_every": 500}
PAPER = {
    "model": {"dim": 64, "shared": False},
    "heads": [1, 5, 10, 20, 30, 40, 50, 60], "context_size_for_heads": 32,
    "context_size": [1, 5, 10, 20, 30, 40, 50, 60], "heads_for_context": 20,
    "classification_examples_heads": [30_000, 50_000, 70_000, 90_000, 110_000, 130_000],
    "classification_examples_context": [20_000, 30_000, 40_000, 50_000, 60_000],
    "regression_examples": [10_000, 30_000, 50_000, 70_000, 90_000],
    "seeds": [0],
    "train": _PAPER_TRAIN,
}
QUICK = {
    "model": {"dim": 16, "shared": False},
    "heads": [1, 2, 4, 8], "context_size_for_heads": 8,
    "context_size": [1, 2, 4, 8], "heads_for_context": 4,
    "classification_examples_heads": [600],
    "classification_examples_context": [300],
    "regression_examples": [300],
    "seeds": [0],
    "train": {"steps": 1000, "batch_size": 128, "lr": 1e-2, "eval_every": 250},
}


def jobs(profile: str) -> list[dict]:
    """Four sweeps (classification/regression x H/n); quick: one job each, paper: one job per T."""
    g = PAPER if profile == "paper" else QUICK
    split = "examples" if profile == "paper" else None
    cls = {**g["model"], "classes": 100}
    reg = {**g["model"], "classes": None, "out_dim": 1}
    out = []
    out += mha_jobs({**cls, "context_size": g["context_size_for_heads"]}, "heads", g["heads"],
                    g["classification_examples_heads"], g["seeds"], g["train"], split_by=split)
    out += mha_jobs({**cls, "heads": g["heads_for_context"]}, "context_size", g["context_size"],
                    g["classification_examples_context"], g["seeds"], g["train"], split_by=split)
    out += mha_jobs({**reg, "context_size": g["context_size_for_heads"]}, "heads", g["heads"],
                    g["regression_examples"], g["seeds"], g["train"], split_by=split)
    out += mha_jobs({**reg, "heads": g["heads_for_context"]}, "context_size", g["context_size"],
                    g["regression_examples"], g["seeds"], g["train"], split_by=split)
    return out


def summarize(records: Sequence[dict], profile: str = "quick") -> dict:
    """Figure 4 as four panels keyed ``(task, axis)``, task 'classification' or 'regression', axis 'heads'
    or 'context_size'. Each panel: ``x`` (k,), ``examples`` (m,), ``value``/``low``/``high``/``theory``
    (m, k) (accuracy and its Theorem 1 guarantee, or MSE and its bound), and ``r2`` (m,): R² of a line
    fitted on the non-saturated part (classification; NaN when fewer than 3 points remain)."""
    g = PAPER if check_profile(profile) == "paper" else QUICK
    panels = {}
    sizes = {("classification", "heads"): g["classification_examples_heads"],
             ("classification", "context_size"): g["classification_examples_context"],
             ("regression", "heads"): g["regression_examples"], ("regression", "context_size"): g["regression_examples"]}
    for task, classes in (("classification", 100), ("regression", None)):
        for axis, fixed in (("heads", {"context_size": g["context_size_for_heads"]}),
                            ("context_size", {"heads": g["heads_for_context"]})):
            where = {"classes": classes, "shared": False, axis: g[axis], "examples": sizes[(task, axis)], **fixed}
            value = "accuracy" if classes else "loss"
            c = curves(records, axis, value=value, where=where)
            base = next(r for r in records if matches(r, where))
            line = [linear_on_unsaturated(c.x, row) for row in c.mean] if classes else [None] * len(c.examples)
            panels[(task, axis)] = {"x": c.x, "examples": c.examples, "value": c.mean, "low": c.low,
                                    "high": c.high, "seeds": c.seeds,
                                    "theory": theory_table(c, base, "accuracy" if classes else "mse"),
                                    "r2": np.array([np.nan if f is None else f.r2 for f in line])}
    return panels
