"""Dana et al., Figure 4 (Appendix B): d = 2 scaling against Corollary 2 (N = 10, d_h = 5, H = 1..21).

The paper's text says d_h = 5; their code uses d = d_h = 2. The measured slope is about 1.7 H d_h.
"""
from __future__ import annotations

from memcap.experiments._grids import aot_jobs
from memcap.experiments.dana_common import HeadsSummary, summarize_heads

NAME = "dana_fig4"
LABEL = "aot-fig-4"
TITLE = "d = 2: accuracy vs H against Corollary 2"

PAPER_PER_HEAD = 1.7
"""Dana et al., Appendix B: at d = 2 the measured count grows like 1.7 H d_h (associations per head / d_h)."""

PAPER = {
    "model": {"vocab": 10, "seq_len": 2, "dim": 2, "head_dim": 5},
    "heads": list(range(1, 22)),
    "seeds": list(range(20)),
    "train": {"steps": 10_000, "batch_size": 1024, "lr": 1e-3, "schedule": "constant", "eval_every": 500},
}
# Quick: the paper's N, d, d_h; H up to 11 (below saturation); d = 2 needs the longest training.
QUICK = {
    "model": {"vocab": 10, "seq_len": 2, "dim": 2, "head_dim": 5},
    "heads": [1, 3, 5, 7, 9, 11],
    "seeds": [0, 1],
    "train": {"steps": 4000, "batch_size": None, "lr": 5e-3, "schedule": "warmup_cosine", "eval_every": 250},
}


def jobs(profile: str) -> list[dict]:
    """Quick: one stacked job; paper: one job per seed (all H stacked)."""
    g = PAPER if profile == "paper" else QUICK
    return aot_jobs(g["model"], "heads", g["heads"], g["seeds"], g["train"],
                    split_by="seed" if profile == "paper" else None)


def summarize(results) -> HeadsSummary:
    """The figure's numbers from ``load_or_run(NAME)`` results (or a list of records); compare
    ``.per_head`` with :data:`PAPER_PER_HEAD`."""
    return summarize_heads(getattr(results, "records", results))
