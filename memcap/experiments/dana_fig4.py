"""Dana et al., Figure 4 (Appendix B): d = 2 scaling against Corollary 2 (N = 10, H = 1..21).

The paper's text says d_h = 5, but the measurements published with their code (:data:`PUBLISHED`), from
which the figure and its slope of about 1.7 H d_h come, have d = d_h = 2; both grids here use d_h = 2.
"""
from __future__ import annotations

import numpy as np

from memcap.experiments._grids import aot_sweep_jobs
from memcap.experiments.dana_common import HeadsSummary, published_records, summarize_heads
from memcap.experiments.verdicts import Verdict, grade

NAME = "dana_fig4"
LABEL = "aot-fig-4"
TITLE = "d = 2: accuracy vs H against Corollary 2"

PAPER_PER_HEAD = 1.7
"""Dana et al., Appendix B: at d = 2 the measured count grows like 1.7 H d_h (associations per head / d_h)."""

PUBLISHED = {
    "model": {"vocab": 10, "seq_len": 2, "dim": 2, "head_dim": 2},
    "axis": "heads",
    "values": (1, 5, 9, 13, 17, 21),
    "accuracy": (0.3305, 0.4969, 0.6334, 0.7340, 0.8567, 0.8578),
    "source": "Scaling laws/Data_exp_6.csv at commit 26160e7",
}
"""Dana et al.'s own measurements behind Figure 4, as published with their code (see
:data:`memcap.experiments.dana_common.PUBLISHED_REPOSITORY`), rounded to 4 digits: d = d_h = 2.
Reference data, not recomputed here."""

PAPER = {
    "model": {"vocab": 10, "seq_len": 2, "dim": 2, "head_dim": 2},
    "heads": list(range(1, 22)),
    "seeds": list(range(20)),
    "train": {"steps": 10_000, "batch_size": 1024, "lr": 1e-3, "schedule": "constant", "eval_every": 500},
}
# Quick: the published grid (N = 10, d = d_h = 2, H = 1, 5, ..., 21), 2 seeds, shorter training.
QUICK = {
    "model": {"vocab": 10, "seq_len": 2, "dim": 2, "head_dim": 2},
    "heads": [1, 5, 9, 13, 17, 21],
    "seeds": [0, 1],
    "train": {"steps": 4000, "batch_size": None, "lr": 5e-3, "schedule": "warmup_cosine", "eval_every": 250},
}


def jobs(profile: str) -> list[dict]:
    """Quick: one stacked job; paper: one job per seed (all H stacked)."""
    return aot_sweep_jobs(PAPER if profile == "paper" else QUICK, "heads", profile)


def summarize(results) -> HeadsSummary:
    """The figure's numbers from ``load_or_run(NAME)`` results (or a list of records); compare
    ``.per_head`` with :data:`PAPER_PER_HEAD`."""
    return summarize_heads(getattr(results, "records", results))


def published() -> HeadsSummary:
    """:func:`summarize` applied to Dana et al.'s published accuracies (:data:`PUBLISHED`; ``spread`` 0)."""
    return summarize(published_records(PUBLISHED))


PER_HEAD_TOLERANCE = 0.25
"""The count per head "matches" the paper's 1.7 H d_h when within this relative difference."""


def verdict(s: HeadsSummary, tolerance: float = PER_HEAD_TOLERANCE) -> Verdict:
    """About 1.7 H d_h associations and above Corollary 2 at every H (Dana et al., Appendix B)?

    Reproduced when the accuracy lies above Corollary 2 at every H and the associations per extra head,
    in units of d_h, are within ``tolerance`` (relative) of :data:`PAPER_PER_HEAD`; partly when one
    holds; not otherwise.
    """
    above = bool(np.all(s.accuracy > s.cor2))
    diff = abs(s.per_head - PAPER_PER_HEAD) / PAPER_PER_HEAD
    close = diff <= tolerance
    text = ((f"adds {s.per_head:.2f}$\\,d_h$ associations per head, within {100 * tolerance:.0f} % of the paper's "
             f"{PAPER_PER_HEAD:g}$\\,d_h$" if close else
             f"adds {s.per_head:.2f}$\\,d_h$ associations per head, more than {100 * tolerance:.0f} % away from the "
             f"paper's {PAPER_PER_HEAD:g}$\\,d_h$")
            + (", and lies above Corollary 2 at every $H$" if above else ", and falls below Corollary 2 for some $H$"))
    return Verdict(grade([above, close]), text,
                   f"{s.per_head:.2f}$\\,Hd_h$ (paper: {PAPER_PER_HEAD:g}$\\,Hd_h$)")


def finding(results) -> Verdict:
    """The figure's verdict on an :class:`~memcap.experiments.ExperimentResults` of any profile (a sweep's, or a
    recorded run's from :func:`memcap.experiments.recorded.results`): ``verdict(summarize(results))``."""
    return verdict(summarize(results))
