"""Dana et al., Figure 3 (Section 4.2.1): AoT vs one attention head + GELU MLP at equal parameter count.

The AoT has H heads with d_h = d; the MLP model has one head with d_h = d and an MLP of width
w = 2d(H - 1), so both have d(S + 2N + 4d) + 4d^2(H - 1) weights.
"""
from __future__ import annotations

from memcap.experiments._grids import split_jobs
from memcap.train import AoTSpec, TrainConfig

NAME = "dana_fig3"
LABEL = "aot-fig-3"
TITLE = "AoT vs one head + GELU MLP at equal parameter count"

PAPER = {
    "model": {"vocab": 70, "seq_len": 2},
    "dims": [7, 10, 13],
    "heads": list(range(1, 32, 3)),
    "seeds": [0, 1, 2, 3, 4],
    "train": {"steps": 10_000, "batch_size": 1024, "lr": 1e-3, "schedule": "constant", "eval_every": 500},
}
QUICK = {
    "model": {"vocab": 20, "seq_len": 2},
    "dims": [3, 5],
    "heads": [1, 3, 5, 7],
    "seeds": [0],
    "train": {"steps": 1500, "batch_size": 256, "lr": 1e-2, "schedule": "constant", "eval_every": 250},
}


def mlp_width(dim: int, heads: int) -> int:
    """w = 2d(H - 1): the MLP width that gives the one-head model the AoT's parameter count."""
    return 2 * dim * (heads - 1)


def jobs(profile: str) -> list[dict]:
    """Quick: one stacked job; paper: one job per d (AoTs and MLP models, all H and seeds, stacked)."""
    g = PAPER if profile == "paper" else QUICK
    specs = []
    for d in g["dims"]:
        for H in g["heads"]:
            for s in g["seeds"]:
                specs.append(AoTSpec(**g["model"], dim=d, head_dim=d, heads=H, seed=s, data_seed=s))
                specs.append(AoTSpec(**g["model"], dim=d, head_dim=d, heads=1, mlp_width=mlp_width(d, H),
                                     seed=s, data_seed=s))
    return split_jobs(specs, TrainConfig(**g["train"]), "dim" if profile == "paper" else None)
