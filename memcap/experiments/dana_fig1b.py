"""Dana et al., Figure 1(b): accuracy grows roughly quadratically in d_h (d = 10, H = 20, N = 50).

Both grids train two architectures side by side: the AoT of Eq. (2) (every head its own d -> d_h maps)
and the variant in which all heads share one d -> d_h compression (``AoTSpec.shared_compression``, as
Dana et al.'s final code is described), to test whether the curvature of the paper's figure comes from
the architecture. :func:`summarize` takes one of them at a time.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memcap import bounds
from memcap.experiments import recorded
from memcap.experiments._grids import split_jobs
from memcap.experiments.dana_common import mean_accuracy, previous_accuracy, published_records, shared_value
from memcap.experiments.verdicts import Verdict, grade
from memcap.fits import PolyFit, clearly_apart, linear_fit, margin, poly_fit
from memcap.train import AoTSpec, TrainConfig

NAME = "dana_fig1b"
LABEL = "aot-fig-1b"
TITLE = "AoT accuracy vs head dimension d_h"

PAPER_DEGREE = 2
"""Dana et al., Figure 1(b): the least-squares polynomial in d_h that matches the accuracy is quadratic."""

def bend_margin(s: "HeadDimSummary") -> float:
    """How many standard errors (:attr:`HeadDimSummary.curvature_se`) the d_h² coefficient must lie from 0
    for a bend to count: Student's t margin for the fit's residual degrees of freedom
    (:func:`memcap.fits.margin`; NaN with none, where no bend is read)."""
    return margin(s.curvature_dof) if s.curvature_dof > 0 else float("nan")

PUBLISHED = {
    "model": {"vocab": 50, "seq_len": 2, "dim": 10, "heads": 20},
    "axis": "head_dim",
    "values": (1, 2, 3, 4, 5, 6, 7, 8, 9, 10),
    "accuracy": (0.0815, 0.1096, 0.1554, 0.2094, 0.2879, 0.3567, 0.4534, 0.5457, 0.6391, 0.8044),
    "source": "Scaling laws/Data_exp_2.csv at commit 26160e7",
}
"""Dana et al.'s own measurements behind Figure 1(b), as published with their code (see
:data:`memcap.experiments.dana_common.PUBLISHED_REPOSITORY`), rounded to 4 digits. Reference data, not
recomputed here."""

PAPER = {
    "model": {"vocab": 50, "seq_len": 2, "dim": 10, "heads": 20},
    "head_dim": list(range(1, 11)),
    "shared_compression": [False, True],
    "seeds": [0, 1, 2, 3, 4],
    "train": {"steps": 10_000, "batch_size": 1024, "lr": 1e-3, "schedule": "constant", "eval_every": 500},
}
# Quick: the paper's model (N = 50, so T0 = N^2 = 2500, d = 10, H = 20) and batch, 8 of its 10 values of
# d_h and one seed (fewer seeds before smaller models): the engine's closed form for S = 2 made this
# size affordable in the build (about 40 s on one thread of the 2-core reference machine). What stays
# reduced is the training: 2000 steps at a larger rate with warm-up and cosine decay, not 10,000 at 1e-3.
QUICK = {
    "model": {"vocab": 50, "seq_len": 2, "dim": 10, "heads": 20},
    "head_dim": [1, 2, 3, 4, 5, 6, 8, 10],
    "shared_compression": [False, True],
    "seeds": [0],
    "train": {"steps": 2000, "batch_size": 1024, "lr": 1e-2, "schedule": "warmup_cosine", "eval_every": 500},
}


RECORDED = recorded.path(NAME)
"""One run of this experiment's paper profile on the 2-core reference CPU (all 100 models: 10 values of d_h,
both architectures, 5 seeds, 10,000 steps at 1e-3), kept with its command, engine version, commit and
timings: too long for the build (13 minutes on both cores), so the chapter reads it like
:data:`PUBLISHED`. Written from the results cache of ``python -m memcap sweep dana_fig1b --profile paper``."""


def recorded_paper_run() -> tuple[dict, list[dict]]:
    """(provenance, records) of :data:`RECORDED`: the provenance fields (command, engine_version,
    git_commit, dates, sweep_wall_seconds, config, ...) and one record per model, ready for :func:`summarize`."""
    return recorded.load(NAME)


def jobs(profile: str) -> list[dict]:
    """Quick: one job (each architecture one stack); paper: one job per seed (all d_h and both architectures)."""
    g = PAPER if profile == "paper" else QUICK
    specs = [AoTSpec(**g["model"], head_dim=k, shared_compression=c, seed=s, data_seed=s)
             for c in g["shared_compression"] for k in g["head_dim"] for s in g["seeds"]]
    return split_jobs(specs, TrainConfig(**g["train"]), "seed" if profile == "paper" else None)


@dataclass(frozen=True)
class HeadDimSummary:
    """Accuracy vs d_h at fixed H, d, N (mean and std over seeds, arrays (k,) over ``head_dim``).

    ``quadratic``/``line``: least-squares fits of degree 2 and 1 in d_h to the mean accuracy (Dana et al.
    fit the quadratic); ``curvature_se``: the standard error of the d_h² coefficient of the quadratic
    fitted to every model's accuracy (each seed a point, so both the seeds' scatter and the curve's
    departure from a quadratic count; with one seed, only the latter; NaN with 3 points, which a
    quadratic fits exactly); ``curvature_dof``: that fit's residual degrees of freedom (points - 3), for
    Student's t margin (:func:`memcap.fits.margin`); ``cor2`` = phi(H d_h + d) and ``previous`` =
    phi(H(d_h - 1) + 1) per d_h.
    """

    head_dim: np.ndarray
    accuracy: np.ndarray
    spread: np.ndarray
    cor2: np.ndarray
    previous: np.ndarray
    quadratic: PolyFit
    line: PolyFit
    curvature_se: float
    curvature_dof: int
    heads: int
    dim: int
    vocab: int
    T0: int


def summarize(results, *, shared_compression: bool = False) -> HeadDimSummary:
    """The figure's numbers from ``load_or_run(NAME)`` results (or a list of records), for the AoT of
    Eq. (2) or, with ``shared_compression=True``, for the shared-compression variant (records without
    the field count as Eq. (2))."""
    records = [r for r in getattr(results, "records", results)
               if bool(r.get("shared_compression", False)) == shared_compression]
    if not records:
        raise ValueError(f"records hold no model with shared_compression={shared_compression}")
    H, d, N, S = (shared_value(records, f) for f in ("heads", "dim", "vocab", "seq_len"))
    T0 = N ** S
    d_h, acc, spread = mean_accuracy(records, "head_dim")
    if d_h.size < 3:
        raise ValueError(f"records must cover at least 3 values of d_h for a quadratic, got {d_h.size}")
    every = poly_fit([r["head_dim"] for r in records], [r["accuracy"] for r in records], 2)
    return HeadDimSummary(
        head_dim=d_h, accuracy=acc, spread=spread,
        cor2=np.array([bounds.cor2_accuracy(H, int(k), d, N, T0) for k in d_h]),
        previous=np.array([previous_accuracy(H, int(k), N, T0) for k in d_h]),
        quadratic=poly_fit(d_h, acc, 2), line=linear_fit(d_h, acc),
        curvature_se=every.stderr[2], curvature_dof=every.dof,
        heads=H, dim=d, vocab=N, T0=T0)


def published() -> HeadDimSummary:
    """:func:`summarize` applied to Dana et al.'s published accuracies (:data:`PUBLISHED`; ``spread`` 0)."""
    return summarize(published_records(PUBLISHED))


def bend(s: HeadDimSummary) -> str:
    """The curve's shape, from :func:`summarize`: 'flat' when the accuracy does not grow from the first
    d_h to the last; else 'upwards' or 'downwards' when the d_h² coefficient is more than
    :func:`bend_margin` standard errors above or below 0, and 'unclear' when it is not (or when its standard
    error is unknown: 3 points, which any quadratic fits exactly)."""
    c2, se = s.quadratic.coef[2], s.curvature_se
    if not s.accuracy[-1] > s.accuracy[0]:
        return "flat"
    if clearly_apart(c2, se, dof=s.curvature_dof):
        return "upwards" if c2 > 0 else "downwards"
    return "unclear"


SHAPES = {"upwards": "bends upwards", "downwards": "bends downwards", "unclear": "has no clear bend",
          "flat": "does not grow over the range"}
"""What a curve does, for each :func:`bend` (the chapter's sentences and the verdict's)."""

BEND_TEXT = {shape: words + (", as the paper's does" if shape == "upwards" else
                             ", unlike the paper's upward one" if shape == "unclear" else ", unlike the paper's")
             for shape, words in SHAPES.items()}
"""The verdict's words for each :func:`bend`."""


def verdict(s: HeadDimSummary) -> Verdict:
    """Quadratic (convex) growth in d_h, as Dana et al. find? From :func:`summarize`.

    Reproduced when the accuracy grows over the range and the least-squares quadratic bends upwards by
    more than :func:`bend_margin` standard errors of its d_h² coefficient (:func:`bend`); not reproduced
    otherwise. Growth alone earns no partial credit: every count in the book grows with d_h (Corollary 2
    linearly), and the finding is the upward bend, from which the paper concludes that d = d_h is best
    per parameter; a curve that bends downwards says the opposite, and one whose coefficient is within
    noise of 0 does not show it.
    """
    shape = bend(s)
    se = f"\u00a0±\u00a0{s.curvature_se:.4f}" if np.isfinite(s.curvature_se) else ""   # unbroken
    shows = f"$d_h^2$ coefficient {s.quadratic.coef[2]:+.4f}{se}"
    return Verdict(grade([shape == "upwards"]), BEND_TEXT[shape], shows)


def early_share(s: HeadDimSummary) -> tuple[int, float]:
    """(d_h nearest the middle of the range, share of the total accuracy gain reached there)."""
    gain = s.accuracy[-1] - s.accuracy[0]
    mid = int(np.argmin(np.abs(s.head_dim - (s.head_dim[0] + s.head_dim[-1]) / 2)))
    share = float((s.accuracy[mid] - s.accuracy[0]) / gain) if gain > 0 else float("nan")
    return int(s.head_dim[mid]), share


def finding(results) -> Verdict:
    """The figure's verdict on an :class:`~memcap.experiments.ExperimentResults` of any profile (a sweep's, or a
    recorded run's from :func:`memcap.experiments.recorded.results`): ``verdict(summarize(results))``."""
    return verdict(summarize(results))
