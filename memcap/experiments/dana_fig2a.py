"""Dana et al., Figure 2(a): accuracy vs embedding dimension d (H = 20, d_h = 10): two regimes, kink at d = d_h."""
from __future__ import annotations

from memcap.experiments._grids import aot_jobs

NAME = "dana_fig2a"
LABEL = "aot-fig-2a"
TITLE = "AoT accuracy vs embedding dimension d"

PAPER = {
    "model": {"vocab": 50, "seq_len": 2, "heads": 20, "head_dim": 10},
    "dim": list(range(5, 16)),
    "seeds": [0, 1, 2, 3, 4],
    "train": {"steps": 10_000, "batch_size": 1024, "lr": 1e-3, "schedule": "constant", "eval_every": 500},
}
QUICK = {
    "model": {"vocab": 20, "seq_len": 2, "heads": 5, "head_dim": 4},
    "dim": [2, 3, 4, 5, 6, 7, 8],
    "seeds": [0, 1],
    "train": {"steps": 1500, "batch_size": 256, "lr": 1e-2, "schedule": "constant", "eval_every": 250},
}


def jobs(profile: str) -> list[dict]:
    """Quick: one stacked job; paper: one job per seed (all d stacked)."""
    g = PAPER if profile == "paper" else QUICK
    return aot_jobs(g["model"], "dim", g["dim"], g["seeds"], g["train"],
                    split_by="seed" if profile == "paper" else None)
