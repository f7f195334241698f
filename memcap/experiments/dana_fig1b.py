"""Dana et al., Figure 1(b): accuracy grows roughly quadratically in d_h (d = 10, H = 20, N = 50)."""
from __future__ import annotations

from memcap.experiments._grids import aot_jobs

NAME = "dana_fig1b"
LABEL = "aot-fig-1b"
TITLE = "AoT accuracy vs head dimension d_h"

PAPER = {
    "model": {"vocab": 50, "seq_len": 2, "dim": 10, "heads": 20},
    "head_dim": list(range(1, 11)),
    "seeds": [0, 1, 2, 3, 4],
    "train": {"steps": 10_000, "batch_size": 1024, "lr": 1e-3, "schedule": "constant", "eval_every": 500},
}
QUICK = {
    "model": {"vocab": 20, "seq_len": 2, "dim": 5, "heads": 5},
    "head_dim": [1, 2, 3, 4, 5],
    "seeds": [0, 1],
    "train": {"steps": 1500, "batch_size": 256, "lr": 1e-2, "schedule": "constant", "eval_every": 250},
}


def jobs(profile: str) -> list[dict]:
    """Quick: one stacked job; paper: one job per seed (all d_h stacked)."""
    g = PAPER if profile == "paper" else QUICK
    return aot_jobs(g["model"], "head_dim", g["head_dim"], g["seeds"], g["train"],
                    split_by="seed" if profile == "paper" else None)
