"""Dana et al., Figure 2(b): slope of accuracy in H for d = d_h, as a function of d (roughly cubic).

Each d = d_h gets the H sweep of Figure 1(a); the chapter fits a line in H per d and fits models to the
slopes.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memcap import bounds
from memcap.experiments import recorded
from memcap.experiments._grids import split_jobs
from memcap.experiments.dana_common import SATURATION_CEILING, HeadsSummary, published_records, summarize_heads
from memcap.experiments.verdicts import Verdict, grade
from memcap.fits import PolyFit, linear_fit
from memcap.train import AoTSpec, TrainConfig

NAME = "dana_fig2b"
LABEL = "aot-fig-2b"
TITLE = "Slope of the H scaling law vs d = d_h"

PAPER_DEGREE = 3
"""Dana et al., Figure 2(b): the slope of accuracy in H grows like d^3 at d = d_h."""

MODEL_DEGREES = (1, 2, 3)
"""Growth models of the slope fitted by least squares, a + b d^k for k in MODEL_DEGREES (Dana et al.: cubic)."""

SLOPE_POINTS = 3
"""A width's slope in H is read from at least this many mean accuracies below
:data:`~memcap.experiments.dana_common.SATURATION_CEILING` (the points at the ceiling are censored and left
out of the line); a width with fewer is left out of the growth models, so that no slope rests on one step."""

POWER_POINTS = 3
"""The power law c d^p is fitted (on logarithms) to the positive slopes only, and only when at least this many
are positive: two points fit any power law exactly."""

PUBLISHED = {
    "model": {"vocab": 50, "seq_len": 2},
    "heads": (1, 6, 11, 16, 21, 26, 31),
    "accuracy": {   # d = d_h: accuracy at each H
        3: (0.0586, 0.0652, 0.0758, 0.0856, 0.0879, 0.0950, 0.0973),
        4: (0.0678, 0.0904, 0.1143, 0.1257, 0.1463, 0.1596, 0.1737),
        5: (0.0738, 0.1193, 0.1582, 0.1922, 0.2248, 0.2572, 0.2936),
        6: (0.0856, 0.1536, 0.2103, 0.2659, 0.3138, 0.3753, 0.4232),
        7: (0.1005, 0.1887, 0.2634, 0.3443, 0.4313, 0.5125, 0.5913),
        8: (0.1121, 0.2311, 0.3348, 0.4450, 0.5596, 0.6628, 0.7833),
        9: (0.1217, 0.2758, 0.4133, 0.5523, 0.6960, 0.8337, 0.9384),
        10: (0.1298, 0.3243, 0.5063, 0.6852, 0.8608, 0.9634, 0.9974),
        11: (0.1401, 0.3710, 0.5866, 0.8020, 0.9618, 0.9986, 0.9998),
        12: (0.1471, 0.4359, 0.6792, 0.9174, 0.9966, 0.9999, 0.9999),
        13: (0.1626, 0.4820, 0.7745, 0.9882, 0.9998, 1.0000, 0.9999),
    },
    "source": "Scaling laws/Data_exp_1_<d>.csv, d = 3..13, at commit 26160e7",
}
"""Dana et al.'s own H sweeps behind Figure 2(b), one per d = d_h, as published with their code (see
:data:`memcap.experiments.dana_common.PUBLISHED_REPOSITORY`), rounded to 4 digits. Reference data, not
recomputed here."""

PAPER = {
    "model": {"vocab": 50, "seq_len": 2},
    "dims": list(range(3, 14)),
    "heads": [1, 6, 11, 16, 21, 26, 31],
    "seeds": [0, 1, 2, 3, 4],
    "train": {"steps": 10_000, "batch_size": 1024, "lr": 1e-3, "schedule": "constant", "eval_every": 500},
}
# Quick: five widths d = d_h and four H each, one stack; one seed keeps it within the chapter's budget.
QUICK = {
    "model": {"vocab": 16, "seq_len": 2},
    "dims": [2, 3, 4, 5, 6],
    "heads": [1, 2, 3, 4],
    "seeds": [0],
    "train": {"steps": 1500, "batch_size": None, "lr": 1e-2, "schedule": "warmup_cosine", "eval_every": 250},
}


RECORDED = recorded.path(NAME)
"""One run of this experiment's whole paper profile on the 2-core reference CPU (385 models: d = d_h from 3
to 13, seven H, five seeds, 10,000 steps at 1e-3), kept with its command, engine version, commit and timings
(:mod:`memcap.experiments.recorded`; ``recorded.load(NAME)``): too long for the build, so the chapter reads
it like :data:`PUBLISHED`."""


def jobs(profile: str) -> list[dict]:
    """Quick: one stacked job; paper: one job per d = d_h (all H and seeds stacked)."""
    g = PAPER if profile == "paper" else QUICK
    specs = [AoTSpec(**g["model"], dim=d, head_dim=d, heads=H, seed=s, data_seed=s)
             for d in g["dims"] for H in g["heads"] for s in g["seeds"]]
    return split_jobs(specs, TrainConfig(**g["train"]), "dim" if profile == "paper" else None)


@dataclass(frozen=True)
class SlopeSummary:
    """Slopes of accuracy in H (per extra head) for each d = d_h, and growth models fitted to them.

    ``dims``, ``slope`` (accuracy per head), ``per_head`` (associations per head over d_h, Corollary 2
    grants 1): arrays (k,). ``cor2_slope``/``previous_slope``: the slopes of Corollary 2, (1 - 1/N) d_h/T0,
    and of H(d_h - 1) + 1, (1 - 1/N)(d_h - 1)/T0. ``models[k]``: line in d^k fitted to ``slope``.
    ``sweeps``: the per-d :class:`HeadsSummary`. ``left_out``: the widths whose sweep has fewer than
    :data:`SLOPE_POINTS` accuracies below the ceiling, not in ``dims`` (empty when every width counts).
    """

    dims: np.ndarray
    slope: np.ndarray
    per_head: np.ndarray
    cor2_slope: np.ndarray
    previous_slope: np.ndarray
    models: dict[int, PolyFit]
    sweeps: tuple[HeadsSummary, ...]
    left_out: tuple[int, ...] = ()

    @property
    def best_degree(self) -> int:
        """The degree k whose model a + b d^k has the highest R²."""
        return max(self.models, key=lambda k: self.models[k].r2)

    @property
    def non_positive(self) -> np.ndarray:
        """The widths whose slope is not positive: no power law passes through them, so the exponent leaves
        them out."""
        return self.dims[self.slope <= 0]

    @property
    def exponent(self) -> float:
        """The exponent p of the power law slope ~ c d^p, least squares on log slope vs log d over the positive
        slopes (nan when fewer than :data:`POWER_POINTS` are positive)."""
        up = self.slope > 0
        if up.sum() < POWER_POINTS:
            return float("nan")
        return float(linear_fit(np.log(self.dims[up].astype(float)), np.log(self.slope[up])).slope)


def summarize(results) -> SlopeSummary:
    """The figure's numbers from ``load_or_run(NAME)`` results (or a list of records)."""
    records = getattr(results, "records", results)
    if not records:
        raise ValueError("records must hold at least one trained model, got none")
    by_dim: dict[int, list[dict]] = {}
    for r in records:
        if r["dim"] != r["head_dim"]:
            raise ValueError(f"records must have d = d_h, got d = {r['dim']}, d_h = {r['head_dim']}")
        by_dim.setdefault(int(r["dim"]), []).append(r)
    if len(by_dim) < 3:
        raise ValueError(f"records must cover at least 3 values of d = d_h, got {sorted(by_dim)}")
    every = [summarize_heads(by_dim[d]) for d in sorted(by_dim)]
    sweeps = tuple(s for s in every if s.unsaturated >= SLOPE_POINTS)
    left_out = tuple(s.dim for s in every if s.unsaturated < SLOPE_POINTS)
    if len(sweeps) < 3:
        raise ValueError(f"records must have at least 3 widths d = d_h with {SLOPE_POINTS} or more mean accuracies "
                         f"below the ceiling of {SATURATION_CEILING:g}, got {len(sweeps)} (left out: d = "
                         f"{', '.join(map(str, left_out))})")
    dims = np.array([s.dim for s in sweeps])
    slope = np.array([s.fit.slope for s in sweeps])
    # phi is affine in the count X, so a count growing by c per head moves the accuracy by (1 - 1/N) c / T0
    unit = np.array([bounds.accuracy_from_memorized(1, s.vocab, s.T0)
                     - bounds.accuracy_from_memorized(0, s.vocab, s.T0) for s in sweeps])
    return SlopeSummary(
        dims=dims, slope=slope, per_head=np.array([s.per_head for s in sweeps]),
        cor2_slope=unit * dims, previous_slope=unit * (dims - 1),
        models={k: linear_fit(dims.astype(float) ** k, slope) for k in MODEL_DEGREES}, sweeps=sweeps,
        left_out=left_out)


def published() -> SlopeSummary:
    """:func:`summarize` applied to Dana et al.'s published H sweeps (:data:`PUBLISHED`)."""
    p = PUBLISHED
    records = []
    for d, acc in p["accuracy"].items():
        table = {"model": {**p["model"], "dim": d, "head_dim": d}, "axis": "heads", "values": p["heads"],
                 "accuracy": acc, "source": p["source"]}
        records += published_records(table)
    return summarize(records)


def verdict(s: SlopeSummary) -> Verdict:
    """Cubic growth of the slope in d = d_h (Dana et al., Figure 2(b))? From :func:`summarize`.

    Reproduced when the cubic model a + b d³ fits the slopes best and the power law c d^p agrees, with
    p >= 2.5 (nearer the paper's 3 than 2: on a few widths a quadratic and a cubic can fit about equally
    well); partly when the slope grows faster than linearly (p above 1.5) otherwise; not otherwise (also
    when too few slopes are positive for a power law: the text says so).
    """
    cubic = s.best_degree == PAPER_DEGREE
    p = s.exponent
    near = bool(np.isfinite(p) and p >= PAPER_DEGREE - 0.5)
    faster = bool(np.isfinite(p) and p > 1.5)
    skipped = ", ".join(str(int(d)) for d in s.non_positive)
    if np.isfinite(p):
        power = f"the power law $c\\,d^p$ has $p = {p:.2f}$" + (
            f" (on the positive slopes: at $d = {skipped}$ the slope is not positive)" if skipped else "")
        tail = f", and {power}" if near or not cubic else f", but {power}, nearer 2 than 3"
    else:
        tail = ((", but no power law $c\\,d^p$ can confirm it" if cubic else ", and no power law $c\\,d^p$ fits")
                + f": the slope is not positive at $d = {skipped}$, leaving fewer than {POWER_POINTS} widths")
    text = (f"the best of the three models has degree {s.best_degree}"
            + (", as in the paper" if cubic else f", not the paper's {PAPER_DEGREE}") + tail)
    if s.left_out:
        text += (f" (widths $d = {', '.join(map(str, s.left_out))}$ left out: fewer than {SLOPE_POINTS} "
                 "accuracies below the ceiling)")
    shows = f"best degree {s.best_degree}, " + (f"exponent $p = {p:.2f}$" if np.isfinite(p) else "no exponent")
    return Verdict(grade([cubic and near], partial=[faster]), text, shows)


def grows_faster_than_bounds(s: SlopeSummary) -> bool:
    """Whether the slope in H outgrows the bounds' slopes, which are linear in d: the count per extra
    head in units of d_h (Corollary 2's slope is 1 in these units) is larger at the widest d than at the
    narrowest."""
    return bool(s.per_head[-1] > s.per_head[0])


def finding(results) -> Verdict:
    """The figure's verdict on an :class:`~memcap.experiments.ExperimentResults` of any profile (a sweep's, or a
    recorded run's from :func:`memcap.experiments.recorded.results`): ``verdict(summarize(results))``."""
    return verdict(summarize(results))
