"""Part III, real vectors: Mahdavi et al.'s model's measured capacity beside both theories, against H, d_h
and n (the width d is swept on token sequences, :mod:`memcap.experiments.syn_tokens`: here it only has to
exceed n).

The model is Mahdavi et al.'s experimental layer (``MHASpec``: linear embedding, sinusoidal positions,
d_v = 1, 100 classes) on their data: one shared context of n tokens and queries, all U(0,1)^d.
Capacity (the book's common measure): the largest T whose examples the model classifies entirely right
by argmax (:func:`memcap.train.capacity_search`). Beside it: Mahdavi et al.'s H(min(n, d_h) - 1) + 1, their
construction run at that count inside the same model (:func:`memcap.synthesis.mahdavi_classifier`), and
Dana et al.'s H d_h + d, which does not apply to these inputs (no token embedding to choose; a shared
context caps the rank their proof needs at H(n - 1) + 1, Mahdavi et al.'s Proposition 2).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from memcap import bounds, synthesis
from memcap.data import mahdavi_task, sinusoidal_positions
from memcap.experiments.syn_common import Sweep, capacity_jobs, summarize_sweep
from memcap.synthesis import Bound
from memcap.train import MHASpec, mha_forward_stacked

NAME = "syn_vectors"
LABEL = "syn-fig-vectors"
TITLE = "Both bounds and the trained attention layer's capacity on real vectors"

PAPER = {
    "base": {"dim": 64, "context_size": 32, "head_dim": 64, "heads": 4, "classes": 100, "shared": True},
    "axes": {"heads": [1, 2, 4, 8, 16], "head_dim": [8, 16, 32, 48, 64], "context_size": [4, 8, 16, 32, 48]},
    "candidates": [32, 64, 128, 256, 512, 1024, 2048, 4096, 8192],
    "rounds": 3, "points": 3,
    "seeds": [0, 1],
    "train": {"steps": 50_000, "batch_size": 256, "lr": 1e-3, "eval_every": 500},
}
# Quick: d = 16 and n = 8 (a quarter of the paper's), one seed, short training.
QUICK = {
    "base": {"dim": 16, "context_size": 8, "head_dim": 8, "heads": 2, "classes": 100, "shared": True},
    "axes": {"heads": [1, 2, 4], "head_dim": [2, 8, 16], "context_size": [2, 4, 8]},
    "candidates": [8, 16, 32, 64, 128],
    "rounds": 1, "points": 2,
    "seeds": [0],
    "train": {"steps": 1500, "batch_size": 32, "lr": 2e-2, "eval_every": 100},
}


def _spec(point: dict, seed: int) -> MHASpec:
    return MHASpec(**point, examples=1, seed=seed, data_seed=seed)


def jobs(profile: str) -> list[dict]:
    """One capacity search over every point of the sweep (quick); one per seed (paper)."""
    return capacity_jobs(_spec, PAPER if profile == "paper" else QUICK, split_seeds=profile == "paper")


@dataclass(frozen=True)
class Point:
    """Both theories at one point: ``mahdavi`` (their Theorem 1 on a training set of this kind),
    ``constructed`` (the T at which their construction, placed in the trained model, was run) and
    ``constructed_ok`` (it classified all T, checked with :func:`memcap.train.mha_forward_stacked`),
    ``dana`` (Dana et al.'s count, not applicable here)."""

    mahdavi: Bound
    constructed: int
    constructed_ok: bool
    dana: Bound


def theory_at(point: dict, seed: int = 0) -> Point:
    """Both bounds and Mahdavi et al.'s construction at one sweep ``point`` (spec fields)."""
    d, n, d_h, H, C = (point[k] for k in ("dim", "context_size", "head_dim", "heads", "classes"))
    gen = torch.Generator().manual_seed(seed)
    T = bounds.mha_capacity(H, n, d_h)
    # the hypotheses concern the data class: test them on at least 2n + 1 examples of it
    task = mahdavi_task(max(T, 2 * n + 1), n, d, shared=True, task="classification", classes=C, generator=gen,
                        dtype=torch.float64, device="cpu")
    pos = sinusoidal_positions(n + 1, d, dtype=torch.float64, device=task.contexts.device)
    mahdavi = synthesis.mahdavi_bound(H, d_h, task.contexts + pos[1:], task.queries + pos[0])
    queries, labels = task.queries[:T], task.labels[:T]
    weights = synthesis.mahdavi_classifier(task.contexts, queries, labels, classes=C, heads=H, head_dim=d_h,
                                           generator=gen)
    logits = mha_forward_stacked({k: v[None] for k, v in weights.items()}, task.contexts[None], queries[None],
                                 pos)[0]
    ok = bool(torch.equal(logits.argmax(1), labels))
    dana = synthesis.dana_bound(H, d_h, d, token_sequences=False, context_size=n)
    return Point(mahdavi, T, ok, dana)


def summarize(results, profile: str | None = None) -> Sweep:
    """The figure's numbers from ``load_or_run(NAME)`` results: measured curves, both bounds and Mahdavi
    et al.'s construction at every point (a :class:`Point` each); measured / Mahdavi et al.'s count is
    ``syn_common.ratios(sweep, "mahdavi")``."""
    profile = profile or getattr(results, "profile", "quick")
    return summarize_sweep(results.capacities, PAPER if profile == "paper" else QUICK,
                           lambda point, capacity: theory_at(point))
