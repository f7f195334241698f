"""Mahdavi et al., Figure 2(c): the head dimension d_h helps only while d_h <= n (H = 30, n = 32, d = 64)."""
from __future__ import annotations

from memcap.experiments._grids import mha_jobs

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
QUICK = {
    "model": {"dim": 16, "heads": 4, "context_size": 6, "classes": 100, "shared": True},
    "head_dim": [1, 2, 4, 6, 8, 12, 16],
    "examples": [200, 300],
    "seeds": [0],
    "train": {"steps": 2000, "batch_size": 128, "lr": 1e-2, "eval_every": 250},
}


def jobs(profile: str) -> list[dict]:
    """Quick: one stacked job; paper: one job per T (all d_h and seeds stacked)."""
    grid = PAPER if profile == "paper" else QUICK
    return mha_jobs(grid["model"], "head_dim", grid["head_dim"], grid["examples"], grid["seeds"], grid["train"],
                    split_by="examples" if profile == "paper" else None)
