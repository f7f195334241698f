"""Dana et al., Figure 1(a): accuracy of the AoT grows linearly in H (N = 50, S = 2, d = d_h = 10).

Compared with Corollary 2, 1/N + (1 - 1/N)(H d_h + d)/T0, and the previous bound H(d_h - 1) + 1.
Recipe (their Appendix B): all N^2 associations, Adam at 1e-3, batches of 1024, 10 epochs of 1000 batches.
Summarized by :func:`memcap.experiments.dana_common.summarize_heads` (mean over seeds, line in H, both bounds).
"""
from __future__ import annotations

from memcap.experiments._grids import aot_sweep_jobs
from memcap.experiments.dana_common import HeadsSummary, heads_verdict, published_records, summarize_heads
from memcap.experiments.verdicts import Verdict

NAME = "dana_fig1a"
LABEL = "aot-fig-1a"
TITLE = "AoT accuracy vs number of heads H"

PUBLISHED = {
    "model": {"vocab": 50, "seq_len": 2, "dim": 10, "head_dim": 10},
    "axis": "heads",
    "values": (1, 6, 11, 16, 21, 26, 31),
    "accuracy": (0.1298, 0.3243, 0.5063, 0.6852, 0.8608, 0.9634, 0.9974),
    "source": "Scaling laws/Data_exp_1_10.csv at commit 26160e7",
}
"""Dana et al.'s own measurements behind Figure 1(a), as published with their code (see
:data:`memcap.experiments.dana_common.PUBLISHED_REPOSITORY`), rounded to 4 digits. Reference data, not
recomputed here."""

PAPER = {
    "model": {"vocab": 50, "seq_len": 2, "dim": 10, "head_dim": 10},
    "heads": [1, 6, 11, 16, 21, 26, 31],
    "seeds": [0, 1, 2, 3, 4],
    "train": {"steps": 10_000, "batch_size": 1024, "lr": 1e-3, "schedule": "constant", "eval_every": 500},
}
# Quick: the paper's model and grid (N = 50, so T0 = 2500, d = d_h = 10, H = 1, 6, ..., 31) and batch, one
# seed (fewer seeds before smaller models): the engine's closed form for S = 2 made it affordable in the
# build (about 25 s on one thread of the 2-core reference machine). What stays reduced is the training:
# 2000 steps at a larger rate with warm-up and cosine decay, not 10,000 at 1e-3.
QUICK = {
    "model": {"vocab": 50, "seq_len": 2, "dim": 10, "head_dim": 10},
    "heads": [1, 6, 11, 16, 21, 26, 31],
    "seeds": [0],
    "train": {"steps": 2000, "batch_size": 1024, "lr": 1e-2, "schedule": "warmup_cosine", "eval_every": 500},
}


def jobs(profile: str) -> list[dict]:
    """Quick: one stacked job; paper: one job per seed (all H stacked)."""
    return aot_sweep_jobs(PAPER if profile == "paper" else QUICK, "heads", profile)


def summarize(results) -> HeadsSummary:
    """The figure's numbers from ``load_or_run(NAME)`` results (or a list of records)."""
    return summarize_heads(getattr(results, "records", results))


def published() -> HeadsSummary:
    """:func:`summarize` applied to Dana et al.'s published accuracies (:data:`PUBLISHED`; ``spread`` 0)."""
    return summarize(published_records(PUBLISHED))


def verdict(s: HeadsSummary) -> Verdict:
    """Figure 1(a)'s finding, linear in H and above both bounds: :func:`dana_common.heads_verdict`."""
    return heads_verdict(s)


def finding(results) -> Verdict:
    """The figure's verdict on an :class:`~memcap.experiments.ExperimentResults` of any profile (a sweep's, or a
    recorded run's from :func:`memcap.experiments.recorded.results`): ``verdict(summarize(results))``."""
    return verdict(summarize(results))
