"""Dana et al., Figure 2(a): accuracy vs embedding dimension d (H = 20, d_h = 10): two regimes, kink at d = d_h."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memcap import bounds
from memcap._checks import host_array
from memcap.experiments._grids import aot_sweep_jobs
from memcap.experiments.dana_common import mean_accuracy, previous_accuracy, published_records, shared_value
from memcap.experiments.verdicts import Verdict, grade
from memcap.fits import PolyFit, linear_fit

NAME = "dana_fig2a"
LABEL = "aot-fig-2a"
TITLE = "AoT accuracy vs embedding dimension d"

PUBLISHED = {
    "model": {"vocab": 50, "seq_len": 2, "heads": 20, "head_dim": 10},
    "axis": "dim",
    "values": (5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
    "accuracy": (0.2639, 0.3621, 0.4600, 0.5782, 0.6972, 0.8087, 0.7769, 0.7890, 0.7855, 0.8118, 0.8136),
    "source": "Scaling laws/Data_exp_3.csv at commit 26160e7",
}
"""Dana et al.'s own measurements behind Figure 2(a), as published with their code (see
:data:`memcap.experiments.dana_common.PUBLISHED_REPOSITORY`), rounded to 4 digits. Reference data, not
recomputed here."""

PAPER = {
    "model": {"vocab": 50, "seq_len": 2, "heads": 20, "head_dim": 10},
    "dim": list(range(5, 16)),
    "seeds": [0, 1, 2, 3, 4],
    "train": {"steps": 10_000, "batch_size": 1024, "lr": 1e-3, "schedule": "constant", "eval_every": 500},
}
# Quick: d_h = 8 and d from 4 to 14, so both regimes (d < d_h and d > d_h) have several points and the
# break search (MIN_SIDE values per side) can place the break below, at or above d_h: 6, 7, 8, 9 or 10.
QUICK = {
    "model": {"vocab": 16, "seq_len": 2, "heads": 2, "head_dim": 8},
    "dim": [4, 5, 6, 7, 8, 9, 10, 12, 14],
    "seeds": [0, 1],
    "train": {"steps": 1500, "batch_size": None, "lr": 1e-2, "schedule": "warmup_cosine", "eval_every": 250},
}


def jobs(profile: str) -> list[dict]:
    """Quick: one stacked job; paper: one job per seed (all d stacked)."""
    return aot_sweep_jobs(PAPER if profile == "paper" else QUICK, "dim", profile)


@dataclass(frozen=True)
class DimSummary:
    """Accuracy vs d at fixed H, d_h, N (mean and std over seeds, arrays (k,) over ``dim``).

    ``below``/``above``: least-squares lines in d on d <= d_h and on d >= d_h (both keep d = d_h); the
    kink of Dana et al.'s Figure 2(a) is ``below.slope > above.slope``. ``best_break``: the value b of d
    at which two such lines (on d <= b and on d >= b, each over at least :data:`MIN_SIDE` values) leave
    the smallest summed squared residual, i.e. where the data place the kink (:func:`best_break`).
    ``cor2`` = phi(H d_h + d) (NaN at d = 1, where Corollary 2 does not hold); ``previous`` =
    phi(H(d_h - 1) + 1) (constant in d).
    """

    dim: np.ndarray
    accuracy: np.ndarray
    spread: np.ndarray
    cor2: np.ndarray
    previous: np.ndarray
    below: PolyFit
    above: PolyFit
    best_break: int
    heads: int
    head_dim: int
    vocab: int
    T0: int

    @property
    def kink(self) -> float:
        """Slope below d_h over slope above: > 1 when growth slows down past d = d_h."""
        return self.below.slope / self.above.slope


MIN_SIDE = 3
"""Values of d each of the two lines is fitted over: a line through two points has no residual, so a break
with two points on one side would always look as good as any."""


def break_candidates(dim) -> np.ndarray:
    """The values of ``dim`` (1-d, increasing) with at least :data:`MIN_SIDE` values on each side (itself
    counted on both): where :func:`best_break` may put the break."""
    d = host_array(dim, dtype=float)
    if d.ndim != 1:
        raise ValueError(f"dim must be 1-d, got shape {d.shape}")
    if np.any(np.diff(d) <= 0):
        raise ValueError(f"dim must be strictly increasing, got {d.tolist()}")
    if d.size < 2 * MIN_SIDE - 1:
        raise ValueError(f"dim must have at least {2 * MIN_SIDE - 1} values to place a break, got {d.size}")
    return d[MIN_SIDE - 1: d.size - MIN_SIDE + 1]


def best_break(dim, accuracy) -> int:
    """The value b of ``dim`` (1-d, increasing) at which a least-squares line on d <= b and one on d >= b
    (each over at least :data:`MIN_SIDE` values) leave the smallest summed squared residual of ``accuracy``
    (same shape): where a two-regime reading of the curve puts its kink. Ties go to the smaller b."""
    d, acc = host_array(dim, dtype=float), host_array(accuracy, dtype=float)
    if d.ndim != 1 or d.shape != acc.shape:
        raise ValueError(f"dim and accuracy must be 1-d of one length, got shapes {d.shape} and {acc.shape}")
    candidates = break_candidates(d)

    def residual(mask):
        coef = np.polyfit(d[mask], acc[mask], 1)
        return float(np.sum((np.polyval(coef, d[mask]) - acc[mask]) ** 2))

    costs = [residual(d <= b) + residual(d >= b) for b in candidates]
    return int(candidates[int(np.argmin(costs))])


def summarize(results) -> DimSummary:
    """The figure's numbers from ``load_or_run(NAME)`` results (or a list of records)."""
    records = getattr(results, "records", results)
    H, d_h, N, S = (shared_value(records, f) for f in ("heads", "head_dim", "vocab", "seq_len"))
    T0 = N ** S
    d, acc, spread = mean_accuracy(records, "dim")
    lo, hi = d <= d_h, d >= d_h
    if lo.sum() < MIN_SIDE or hi.sum() < MIN_SIDE:
        raise ValueError(f"records must have at least {MIN_SIDE} values of d on each side of d_h = {d_h} "
                         f"(d_h itself counts on both), got {d.tolist()}")
    return DimSummary(
        dim=d, accuracy=acc, spread=spread,
        cor2=np.array([bounds.cor2_accuracy(H, d_h, int(k), N, T0) if k >= 2 else np.nan for k in d]),
        previous=np.full(d.shape, previous_accuracy(H, d_h, N, T0)),
        below=linear_fit(d[lo], acc[lo]), above=linear_fit(d[hi], acc[hi]), best_break=best_break(d, acc),
        heads=H, head_dim=d_h, vocab=N, T0=T0)


def published() -> DimSummary:
    """:func:`summarize` applied to Dana et al.'s published accuracies (:data:`PUBLISHED`; ``spread`` 0)."""
    return summarize(published_records(PUBLISHED))


KINK = 2.0
"""Two regimes: the slope in d below d = d_h is at least this many times the slope above (it at least halves).
Any curve that bends towards an accuracy ceiling slows down somewhere; a kink is a slope that drops by a
factor, at d_h. (Dana et al.'s published data: 30.6.)"""


def verdict(s: DimSummary, kink: float = KINK) -> Verdict:
    """Two linear regimes with a kink at d = d_h (Dana et al., Figure 2(a))? From :func:`summarize`.

    Reproduced when the slope below d_h is at least ``kink`` times the slope above (or the accuracy no
    longer grows above d_h while it grows below) and two lines fit best with their break at d_h
    (``best_break``), on a grid where the break search could also have placed the break on either side
    of d_h (else its answer is no evidence); partly when the growth slows past d_h but not that sharply,
    or sharply with the best break elsewhere or not testable; not otherwise.
    """
    if not kink > 1:
        raise ValueError(f"kink must be > 1 (the slope must drop past d_h), got {kink}")
    below, above = s.below.slope, s.above.slope
    drops = below > 0 and (above <= 0 or below >= kink * above)
    candidates = break_candidates(s.dim)
    testable = candidates.min() < s.head_dim < candidates.max()   # the search could put the break elsewhere
    placed = s.best_break == s.head_dim and testable
    slows = below > 0 and above < below
    ratio = below / above if above > 0 else float("inf")
    text = ("two regimes with the kink at $d = d_h$, as in the paper" if drops and placed
            else f"growth that slows sharply, but two lines fit best with the break at $d = {s.best_break}$, "
                 "not at $d = d_h$" if drops and testable
            else "growth that slows sharply, but this grid lets the break search place the break only at "
                 f"$d =$ {', '.join(str(int(b)) for b in candidates)}, so where the break falls is no evidence"
                 if drops
            else "growth that slows past $d = d_h$ without a clear kink" if slows
            else "no kink at $d = d_h$, unlike the paper")
    shows = (f"slope ratio below/above $d_h$: {ratio:.1f}" if np.isfinite(ratio)
             else "no growth above $d_h$") + f"; best break $d = {s.best_break}$"
    return Verdict(grade([drops and placed], partial=[slows]), text, shows)


def finding(results) -> Verdict:
    """The figure's verdict on an :class:`~memcap.experiments.ExperimentResults` of any profile (a sweep's, or a
    recorded run's from :func:`memcap.experiments.recorded.results`): ``verdict(summarize(results))``."""
    return verdict(summarize(results))
