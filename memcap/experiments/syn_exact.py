"""Part III, exact memorization: how many real labels gradient descent fits exactly with a shared context of
n = 2 tokens, beside Mahdavi et al.'s H(n - 1) + 1 and the book's label-aware construction.

Mahdavi et al.'s Proposition 2 caps rank(Z) at H(n - 1) + 1 for every choice of weights, so a proof that
fixes the attention before looking at the labels (theirs, and Dana et al.'s) cannot fit more. Weights
chosen after the labels can: one head fits d labels (:func:`memcap.synthesis.label_aware_head`). The
experiment trains Mahdavi et al.'s model on regression (y ~ U(0,1)) at a ladder of T for several H and
certifies exact fits from the final mean squared error (:func:`memcap.synthesis.certified_fit`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memcap import bounds, synthesis
from memcap.experiments._grids import split_jobs
from memcap.train import MHASpec, TrainConfig

NAME = "syn_exact"
LABEL = "syn-fig-exact"
TITLE = "Exact memorization of real labels beyond the rank count"

PAPER = {
    "model": {"dim": 64, "context_size": 2, "classes": None, "shared": True},
    "heads": [1, 2, 4, 8],
    "examples": [8, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512],
    "seeds": [0, 1, 2],
    "tol": 1e-2,
    "train": {"steps": 50_000, "batch_size": None, "lr": 1e-3, "eval_every": 1000},
}
# Quick: d = 16, so that one head's label-aware capacity d is within reach of a short training.
QUICK = {
    "model": {"dim": 16, "context_size": 2, "classes": None, "shared": True},
    "heads": [1, 2, 4],
    "examples": [8, 12, 16, 24, 32],
    "seeds": [0],
    "tol": 1e-2,
    "train": {"steps": 1500, "batch_size": None, "lr": 1e-2, "eval_every": 500},
}


def jobs(profile: str) -> list[dict]:
    """Every (H, T, seed) trained in one job (quick) or one job per H (paper), full-batch regression."""
    g = PAPER if profile == "paper" else QUICK
    specs = [MHASpec(**g["model"], heads=H, examples=T, seed=s, data_seed=s)
             for H in g["heads"] for T in g["examples"] for s in g["seeds"]]
    return split_jobs(specs, TrainConfig(**g["train"]), "heads" if profile == "paper" else None)


@dataclass(frozen=True)
class ExactSummary:
    """Per H (rows) and T (columns): ``mse`` (mean over seeds), ``fitted`` (every seed certified to fit every
    label within ``tol``: 1, certified not to: 0, undecided: NaN); per H: ``capacity`` (largest T of the
    ladder with every smaller-or-equal T fitted), ``mahdavi`` H(n - 1) + 1 (the rank count, tight for label-
    independent attention by Proposition 2), ``label_aware`` d (the book's construction, one head),
    ``parameters`` (the trained model's weights, an upper bound for generic labels)."""

    heads: np.ndarray
    examples: np.ndarray
    mse: np.ndarray
    fitted: np.ndarray
    capacity: np.ndarray
    mahdavi: np.ndarray
    label_aware: int
    parameters: np.ndarray
    tol: float
    dim: int
    context_size: int


def summarize(results, profile: str | None = None) -> ExactSummary:
    """The figure's numbers from ``load_or_run(NAME)`` results (or a list of records)."""
    profile = profile or getattr(results, "profile", "quick")
    g = PAPER if profile == "paper" else QUICK
    records = list(getattr(results, "records", results))
    if not records:
        raise ValueError("records must hold at least one trained model")
    heads, examples = sorted({int(r["heads"]) for r in records}), sorted({int(r["examples"]) for r in records})
    d, n = int(records[0]["dim"]), int(records[0]["context_size"])
    mse = np.full((len(heads), len(examples)), np.nan)
    fitted = np.full_like(mse, np.nan)
    for i, H in enumerate(heads):
        for j, T in enumerate(examples):
            rows = [r for r in records if r["heads"] == H and r["examples"] == T]
            if not rows:
                raise ValueError(f"no model was trained at H = {H}, T = {T}")
            mse[i, j] = np.mean([r["loss"] for r in rows])
            verdicts = [synthesis.certified_fit(float(r["loss"]), T, g["tol"]) for r in rows]
            fitted[i, j] = 1.0 if all(v is True for v in verdicts) else (
                0.0 if any(v is False for v in verdicts) else np.nan)
    capacity = np.zeros(len(heads))
    for i in range(len(heads)):
        for j, T in enumerate(examples):
            if fitted[i, j] != 1.0:
                break
            capacity[i] = T
    spec = {**g["model"], "dim": d, "context_size": n}
    params = np.array([synthesis.engine_param_count(MHASpec(**spec, heads=H, examples=1)) for H in heads])
    return ExactSummary(np.array(heads), np.array(examples), mse, fitted, capacity,
                        np.array([bounds.mha_shared_rank_bound(H, n) for H in heads]), d, params,
                        float(g["tol"]), d, n)
