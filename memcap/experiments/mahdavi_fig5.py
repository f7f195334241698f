"""Mahdavi et al., Figure 5: regression (y ~ U(0,1)) with a shared context; the error falls with H and n."""
from __future__ import annotations

from memcap.experiments._grids import mha_jobs

NAME = "mahdavi_fig5"
LABEL = "mha-fig-5"
TITLE = "Regression error vs H and vs n (shared context)"

PAPER = {
    "model": {"dim": 64, "classes": None, "out_dim": 1, "shared": True},
    "heads": [1, 5, 10, 20, 30, 40, 50, 60], "context_size_for_heads": 32,
    "context_size": [1, 5, 10, 20, 30, 40, 50, 60], "heads_for_context": 20,
    "examples_heads": [10_000, 15_000, 20_000, 25_000, 30_000],
    "examples_context": [10_000, 15_000, 20_000, 25_000],
    "seeds": [0],
    "train": {"steps": 50_000, "epochs": 500, "batch_size": 256, "lr": 1e-3, "eval_every": 500},
}
QUICK = {
    "model": {"dim": 16, "classes": None, "out_dim": 1, "shared": True},
    "heads": [1, 2, 4, 8], "context_size_for_heads": 8,
    "context_size": [1, 2, 4, 8], "heads_for_context": 4,
    "examples_heads": [200],
    "examples_context": [200],
    "seeds": [0],
    "train": {"steps": 3000, "batch_size": 128, "lr": 1e-2, "eval_every": 500},
}


def jobs(profile: str) -> list[dict]:
    """Two sweeps (vs H, vs n); quick: one job each, paper: one job per T."""
    g = PAPER if profile == "paper" else QUICK
    split = "examples" if profile == "paper" else None
    return (mha_jobs({**g["model"], "context_size": g["context_size_for_heads"]}, "heads", g["heads"],
                     g["examples_heads"], g["seeds"], g["train"], split_by=split)
            + mha_jobs({**g["model"], "heads": g["heads_for_context"]}, "context_size", g["context_size"],
                       g["examples_context"], g["seeds"], g["train"], split_by=split))
