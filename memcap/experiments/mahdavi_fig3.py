"""Mahdavi et al., Figure 3 (Appendix H): softmax saturation in models that memorize perfectly.

n = 32, d = 64, 100 classes, shared context; H = 4 at T ~ 550 and H = 8 at T ~ 1300 (the largest T each
memorized), 300k steps. A head is saturated on an example when one attention weight exceeds 0.99. The
jobs: a capacity search per H (to check T is at the edge of memorization), then training at that T with
the weights kept, so the chapter can compute attention with :func:`memcap.train.trained_attention`.
"""
from __future__ import annotations

from memcap.experiments._grids import mha_capacity_jobs, split_jobs
from memcap.train import MHASpec, TrainConfig

NAME = "mahdavi_fig3"
LABEL = "mha-fig-3"
TITLE = "Softmax saturation at perfect memorization"

SATURATION_THRESHOLD = 0.99
"""A head is saturated on an example when some attention weight exceeds this (Mahdavi et al., Appendix H)."""

PAPER = {
    "model": {"dim": 64, "context_size": 32, "classes": 100, "shared": True},
    "examples": {4: 550, 8: 1300},
    "capacity_candidates": [300, 450, 550, 700, 1000, 1300, 1600],
    "capacity_rounds": 2,
    "seeds": [0],
    "train": {"steps": 300_000, "batch_size": 256, "lr": 1e-3, "eval_every": 500},
}
QUICK = {
    "model": {"dim": 16, "context_size": 8, "classes": 100, "shared": True},
    "examples": {2: 30, 4: 120},
    "capacity_candidates": [20, 30, 40, 80, 120, 160],
    "capacity_rounds": 0,
    "seeds": [0],
    "train": {"steps": 2000, "batch_size": 64, "lr": 1e-2, "eval_every": 100},
}


def jobs(profile: str) -> list[dict]:
    """A capacity-search job (all H stacked), then one training job at the chosen T per H, weights kept."""
    grid = PAPER if profile == "paper" else QUICK
    heads = sorted(grid["examples"])
    out = mha_capacity_jobs(grid["model"], heads, grid["capacity_candidates"], grid["seeds"], grid["train"],
                            rounds=grid["capacity_rounds"], points=3)
    specs = [MHASpec(**grid["model"], heads=H, examples=grid["examples"][H], seed=s, data_seed=s)
             for H in heads for s in grid["seeds"]]
    return out + split_jobs(specs, TrainConfig(**grid["train"]), None, keep_params=True)
