"""Dana et al., Figure 2(b): slope of accuracy in H for d = d_h, as a function of d (roughly cubic).

Each d = d_h gets the H sweep of Figure 1(a); the chapter fits a line in H per d and fits models to the
slopes.
"""
from __future__ import annotations

from memcap.experiments._grids import split_jobs
from memcap.train import AoTSpec, TrainConfig

NAME = "dana_fig2b"
LABEL = "aot-fig-2b"
TITLE = "Slope of the H scaling law vs d = d_h"

PAPER = {
    "model": {"vocab": 50, "seq_len": 2},
    "dims": list(range(3, 14)),
    "heads": [1, 6, 11, 16, 21, 26, 31],
    "seeds": [0, 1, 2, 3, 4],
    "train": {"steps": 10_000, "batch_size": 1024, "lr": 1e-3, "schedule": "constant", "eval_every": 500},
}
QUICK = {
    "model": {"vocab": 20, "seq_len": 2},
    "dims": [2, 3, 4, 5],
    "heads": [1, 3, 5],
    "seeds": [0],
    "train": {"steps": 1500, "batch_size": 256, "lr": 1e-2, "schedule": "constant", "eval_every": 250},
}


def jobs(profile: str) -> list[dict]:
    """Quick: one stacked job; paper: one job per d = d_h (all H and seeds stacked)."""
    g = PAPER if profile == "paper" else QUICK
    specs = [AoTSpec(**g["model"], dim=d, head_dim=d, heads=H, seed=s, data_seed=s)
             for d in g["dims"] for H in g["heads"] for s in g["seeds"]]
    return split_jobs(specs, TrainConfig(**g["train"]), "dim" if profile == "paper" else None)
