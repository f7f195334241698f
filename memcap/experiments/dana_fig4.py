"""Dana et al., Figure 4 (Appendix B): d = 2 scaling against Corollary 2 (N = 10, d_h = 5, H = 1..21).

The paper's text says d_h = 5; their code uses d = d_h = 2. The measured slope is about 1.7 H d_h.
"""
from __future__ import annotations

from memcap.experiments._grids import aot_jobs

NAME = "dana_fig4"
LABEL = "aot-fig-4"
TITLE = "d = 2: accuracy vs H against Corollary 2"

PAPER = {
    "model": {"vocab": 10, "seq_len": 2, "dim": 2, "head_dim": 5},
    "heads": list(range(1, 22)),
    "seeds": list(range(20)),
    "train": {"steps": 10_000, "batch_size": 1024, "lr": 1e-3, "schedule": "constant", "eval_every": 500},
}
QUICK = {
    "model": {"vocab": 10, "seq_len": 2, "dim": 2, "head_dim": 5},
    "heads": [1, 3, 5, 7, 9, 11],
    "seeds": [0, 1, 2, 3],
    "train": {"steps": 1500, "batch_size": 100, "lr": 1e-2, "schedule": "constant", "eval_every": 250},
}


def jobs(profile: str) -> list[dict]:
    """Quick: one stacked job; paper: one job per seed (all H stacked)."""
    g = PAPER if profile == "paper" else QUICK
    return aot_jobs(g["model"], "heads", g["heads"], g["seeds"], g["train"],
                    split_by="seed" if profile == "paper" else None)
