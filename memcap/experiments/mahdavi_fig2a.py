"""Mahdavi et al., Figure 2(a): memorization (training accuracy) grows linearly with the number of heads H.

Shared context (Prop. 2 setting), d = 64, n = 32, d_h = d, 100 classes; Section 5.2.
"""
from __future__ import annotations

from memcap.experiments._grids import mha_jobs

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
QUICK = {
    "model": {"dim": 16, "context_size": 8, "classes": 100, "shared": True},
    "heads": [1, 2, 4, 6, 8],
    "examples": [400, 800],
    "seeds": [0],
    "train": {"steps": 1500, "batch_size": 128, "lr": 1e-2, "eval_every": 250},
}


def jobs(profile: str) -> list[dict]:
    """Quick: one stacked job; paper: one job per T (all H and seeds stacked)."""
    grid = PAPER if profile == "paper" else QUICK
    return mha_jobs(grid["model"], "heads", grid["heads"], grid["examples"], grid["seeds"], grid["train"],
                    split_by="examples" if profile == "paper" else None)
