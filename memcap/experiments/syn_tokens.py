"""Part III, token sequences: the AoT's measured capacity beside both theories, against H, d_h, d and S.

The model is Dana et al.'s AoT, which is Mahdavi et al.'s layer with skip on token sequences (n = S,
query x_S; :mod:`memcap.synthesis`). The data: T distinct random sequences of [N]^S with uniform targets.
Capacity (the book's common measure): the largest T whose table the model classifies entirely right by
argmax, found by :func:`memcap.train.capacity_search`. Beside it: Dana et al.'s H d_h + min(d, L), their
construction run at that count, and Mahdavi et al.'s H(min(S, d_h) - 1) + 1, whose Assumption 1 fails
on these tables (two sequences share a last token, so two queries coincide).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from memcap import synthesis
from memcap.data import association_task
from memcap.experiments.syn_common import Sweep, capacity_jobs, summarize_sweep
from memcap.models import aot_forward, init_aot
from memcap.synthesis import Bound
from memcap.train import AoTSpec

NAME = "syn_tokens"
LABEL = "syn-fig-tokens"
TITLE = "Both bounds and the trained AoT's capacity on token sequences"

PAPER = {
    "base": {"vocab": 50, "seq_len": 2, "dim": 10, "head_dim": 10, "heads": 8},
    "axes": {"heads": [1, 2, 4, 8, 16, 24, 31], "head_dim": [1, 2, 4, 6, 8, 10], "dim": [10, 12, 15, 20],
             "seq_len": [2, 3, 4]},
    "candidates": [64, 128, 256, 512, 1024, 1536, 2048, 2500],
    "rounds": 3, "points": 3,
    "seeds": [0, 1, 2],
    "train": {"steps": 10_000, "batch_size": 1024, "lr": 1e-3, "schedule": "constant", "eval_every": 500},
}
# Quick: a vocabulary of 16, widths below 16, one seed, short training (minutes on one CPU core).
QUICK = {
    "base": {"vocab": 16, "seq_len": 2, "dim": 8, "head_dim": 2, "heads": 2},
    "axes": {"heads": [1, 2, 4], "head_dim": [1, 2, 4], "dim": [4, 8, 16], "seq_len": [2, 3]},
    "candidates": [8, 16, 32, 64, 128],
    "rounds": 1, "points": 2,
    "seeds": [0],
    "train": {"steps": 800, "batch_size": 32, "lr": 1e-2, "schedule": "warmup_cosine", "eval_every": 100},
}


def _spec(point: dict, seed: int) -> AoTSpec:
    return AoTSpec(**point, examples=1, seed=seed, data_seed=seed)


def jobs(profile: str) -> list[dict]:
    """One capacity search over every point of the sweep (quick); one per seed (paper)."""
    return capacity_jobs(_spec, PAPER if profile == "paper" else QUICK, split_seeds=profile == "paper")


@dataclass(frozen=True)
class Point:
    """Both theories at one point of the sweep.

    ``dana``: Dana et al.'s count on random tables of this model's size, H d_h + min(d, L), where L is
    the number of distinct last tokens of the construction's table (the largest T with T <= H d_h +
    min(d, L_T)); ``constructed``: that T, and whether the construction classified all of it
    (``constructed_ok``, checked with :func:`memcap.models.aot_forward`) with its smallest logit margin;
    ``mahdavi``: Mahdavi et al.'s count on the table at the measured capacity (generic embeddings).
    """

    dana: Bound
    constructed: int
    constructed_ok: bool
    margin: float
    mahdavi: Bound


def theory_at(point: dict, measured: int, seed: int = 0) -> Point:
    """Both bounds and Dana et al.'s construction at one sweep ``point`` (spec fields), with the measured
    capacity ``measured`` (the size of the table on which Mahdavi et al.'s hypotheses are tested)."""
    N, S, d, d_h, H = (point[k] for k in ("vocab", "seq_len", "dim", "head_dim", "heads"))
    gen = torch.Generator().manual_seed(seed)
    tokens, targets = synthesis.dana_table(N, S, dim=d, heads=H, head_dim=d_h, generator=gen)
    T = tokens.shape[0]
    dana = synthesis.dana_bound(H, d_h, d, tokens)
    built = synthesis.dana_association_aot(tokens, targets, N, dim=d, heads=H, head_dim=d_h, generator=gen)
    logits = aot_forward(built.params, tokens)
    top = logits.gather(1, targets[:, None]).squeeze(1)
    others = logits.scatter(1, targets[:, None], -torch.inf).max(1).values
    ok = bool(torch.equal(logits.argmax(1), targets))
    table = association_task(N, S, count=max(1, min(measured, N ** S)), generator=gen, device="cpu")[0]
    embed = init_aot(N, S, d, 1, 1, generator=gen, dtype=torch.float64, device="cpu")
    contexts, queries = synthesis.token_inputs(embed.token_embedding, embed.positional_embedding, table)
    mahdavi = synthesis.mahdavi_bound(H, d_h, contexts, queries)
    return Point(dana, T, ok, float((top - others).min()), mahdavi)


def summarize(results, profile: str | None = None) -> Sweep:
    """The figure's numbers from ``load_or_run(NAME)`` results: measured curves, both bounds and Dana et
    al.'s construction at every point (a :class:`Point` each); measured / Dana et al.'s count is
    ``syn_common.ratios(sweep, "dana")``."""
    profile = profile or getattr(results, "profile", "quick")
    return summarize_sweep(results.capacities, PAPER if profile == "paper" else QUICK,
                           lambda point, capacity: theory_at(point, int(round(capacity))))
