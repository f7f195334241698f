"""Summaries shared by the ``dana_fig*`` modules: accuracy averaged over seeds, H sweeps with fits and bounds.

:func:`mean_accuracy` groups records by one spec field and averages over seeds, :func:`shared_value`
checks that records share a field, :func:`previous_accuracy` is the line Dana et al. plot as the
"previous lower bound" (their reading of Mahdavi et al.'s Theorem 1, not a guarantee of that theorem for
these data: see its docstring), and :func:`summarize_heads` turns an accuracy-vs-H sweep into a :class:`HeadsSummary`
(mean over seeds, line in H, both bounds); it serves Figures 1(a), 2(b) and 4.
:func:`published_records` turns the measurements Dana et al. published with their code (the
``PUBLISHED`` tables of the figure modules) into records, so the same summaries apply to them.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from memcap import bounds
from memcap.experiments.verdicts import Verdict, grade
from memcap.fits import SIGNIFICANT_SE, PolyFit, clearly_apart, linear_fit, poly_fit


@dataclass(frozen=True)
class HeadsSummary:
    """An accuracy-vs-H sweep of one AoT shape (N, S, d, d_h), averaged over seeds, with its fits and bounds.

    Arrays have shape (k,), one entry per H (``heads``, ascending). ``accuracy``/``spread``: mean and
    standard deviation over seeds; ``memorized``: the associations X that the mean accuracy stands for,
    X = T0 (N acc - 1)/(N - 1) (inverse of Corollary 2's map phi); ``cor2``: Corollary 2,
    phi(H d_h + d); ``previous``: phi(H(d_h - 1) + 1), the line Dana et al. plot as the "previous lower
    bound" (see :func:`previous_accuracy`).
    ``fit``: least-squares line of accuracy in H on the points below :data:`SATURATION_CEILING` (the
    first two points when fewer than two lie below it); ``fit_memorized``: the same line in associations,
    its slope is the number of associations one more head adds; ``fitted_heads`` (j,), j <= k: the values
    of H both lines were fitted on; ``unsaturated``: how many values of H have a mean accuracy below the
    ceiling. ``quadratic``: the least-squares quadratic in H fitted to every model's accuracy at
    ``fitted_heads`` (each seed a point), for the bend of the sweep; None with fewer than
    :data:`LINE_POINTS` values of H, where it would leave no residual to measure the bend against.
    ``seeds``: the fewest records (seeds) averaged at one H (1: no spread to show).
    """

    heads: np.ndarray
    accuracy: np.ndarray
    spread: np.ndarray
    memorized: np.ndarray
    cor2: np.ndarray
    previous: np.ndarray
    fit: PolyFit
    fit_memorized: PolyFit
    fitted_heads: np.ndarray
    unsaturated: int
    quadratic: PolyFit | None
    vocab: int
    T0: int
    dim: int
    head_dim: int
    seeds: int

    @property
    def per_head(self) -> float:
        """Associations per extra head, in units of d_h (Corollary 2 grants exactly 1)."""
        return self.fit_memorized.slope / self.head_dim

    @property
    def gain_ends(self) -> tuple[float, float]:
        """The gain in accuracy per extra head of the ``quadratic`` (its slope) at the first and at the last
        of ``fitted_heads`` (NaN without a quadratic)."""
        if self.quadratic is None:
            return float("nan"), float("nan")
        _, b, c = self.quadratic.coef
        return b + 2 * c * float(self.fitted_heads[0]), b + 2 * c * float(self.fitted_heads[-1])


def mean_accuracy(records: Sequence[dict], axis: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values, mean accuracy, std over seeds) of ``records`` grouped by the spec field ``axis``, ascending.

    ``records``: dicts with ``axis`` and ``accuracy`` (as in ``ExperimentResults.records``).
    """
    if not records:
        raise ValueError("records must hold at least one trained model, got none")
    groups: dict[int, list[float]] = {}
    for i, r in enumerate(records):
        if axis not in r or r.get("accuracy") is None:
            raise ValueError(f"records[{i}] must have '{axis}' and a numeric 'accuracy'")
        groups.setdefault(int(r[axis]), []).append(float(r["accuracy"]))
    values = np.array(sorted(groups))
    acc = [np.asarray(groups[v]) for v in values]
    return values, np.array([a.mean() for a in acc]), np.array([a.std() for a in acc])


def shared_value(records: Sequence[dict], field: str) -> int:
    """The one value of the spec field ``field`` that all ``records`` share (ValueError otherwise)."""
    values = {int(r[field]) for r in records}
    if len(values) != 1:
        raise ValueError(f"records must share one {field}, got {sorted(values)}")
    return values.pop()


def previous_accuracy(heads: int, head_dim: int, vocab: int, associations: int) -> float:
    """phi(min(T0, H(d_h - 1) + 1)): the "previous lower bound" of Dana et al.'s figures, as an accuracy.

    The count H(d_h - 1) + 1 is Dana et al.'s framing of prior work (their Section 6): Mahdavi et al.'s
    H(min(Q, d_h) - 1) + 1 with the queries' rank Q taken to be at least d_h. It is not what Mahdavi et
    al.'s Theorem 1 guarantees for these data: with a sequence as the context, n = S, and their
    Assumption 1 (queries of Kruskal rank >= n) fails as soon as two sequences share their last token.
    """
    count = bounds.mha_capacity(heads, head_dim, head_dim)   # context_size = d_h: min(n, d_h) = d_h
    return bounds.accuracy_from_memorized(min(count, associations), vocab, associations)


SATURATION_CEILING = 0.99
"""Lines in H are fitted only on mean accuracies below this (Dana et al.'s code stops at 0.95). A point at
the ceiling is censored: the accuracy cannot pass 1, so where the line would rise above it the point lies
below the line and pulls its slope down, the more the wider the model (at Dana et al.'s widths 12 and 13
it made the two slopes equal)."""

LINE_POINTS = 4
"""Fewest values of H below the ceiling on which a sweep is judged a line: its bend is the H² coefficient
of a quadratic, which three points fit exactly (no residual, no standard error); two fit any line."""


def summarize_heads(records: Sequence[dict]) -> HeadsSummary:
    """Average an H sweep (one N, S, d, d_h; plain AoTs), fit lines in H (on the accuracies below
    :data:`SATURATION_CEILING`) and a quadratic for their bend, and evaluate both bounds."""
    shape = {f: shared_value(records, f) for f in ("vocab", "seq_len", "dim", "head_dim", "mlp_width")}
    if shape["mlp_width"] != 0:
        raise ValueError("records must be plain AoTs (mlp_width = 0)")
    N, d, d_h = shape["vocab"], shape["dim"], shape["head_dim"]
    T0 = N ** shape["seq_len"] if records[0].get("examples") is None else int(records[0]["examples"])
    heads, acc, spread = mean_accuracy(records, "heads")
    if heads.size < 2:
        raise ValueError(f"records must cover at least 2 values of H for a line, got {heads.size}")
    memorized = np.array([bounds.cor2_capacity_from_accuracy(a, N, T0) for a in acc])
    keep = acc < SATURATION_CEILING
    unsaturated = int(keep.sum())
    if unsaturated < 2:   # saturated from the first or second H on: fit the first two points
        keep = np.arange(heads.size) < 2
    quadratic = None
    if keep.sum() >= LINE_POINTS:   # the quadratic on every model's accuracy: seeds count as points
        points = [(int(r["heads"]), float(r["accuracy"])) for r in records if int(r["heads"]) in heads[keep]]
        quadratic = poly_fit([h for h, _ in points], [a for _, a in points], 2)
    return HeadsSummary(
        heads=heads, accuracy=acc, spread=spread, memorized=memorized,
        cor2=np.array([bounds.cor2_accuracy(int(H), d_h, d, N, T0) for H in heads]),
        previous=np.array([previous_accuracy(int(H), d_h, N, T0) for H in heads]),
        fit=linear_fit(heads[keep], acc[keep]), fit_memorized=linear_fit(heads[keep], memorized[keep]),
        fitted_heads=heads[keep], unsaturated=unsaturated, quadratic=quadratic,
        vocab=N, T0=T0, dim=d, head_dim=d_h, seeds=min(Counter(int(r["heads"]) for r in records).values()))


PUBLISHED_REPOSITORY = "leodana2000/Transformer_Attentional_Memory"
"""Where Dana et al. published the measurements behind their figures (folder ``Scaling laws``)."""


def published_records(published: dict) -> list[dict]:
    """Records (one per point, as ``ExperimentResults.records``) from a figure module's ``PUBLISHED`` table.

    ``published`` holds ``model`` (the fixed AoT fields: vocab, seq_len, dim, heads or head_dim),
    ``axis`` (the swept field), ``values`` (k,) and ``accuracy`` (k,) (Dana et al.'s mean accuracies)
    and ``source`` (file and commit in :data:`PUBLISHED_REPOSITORY`).
    """
    for key in ("model", "axis", "values", "accuracy", "source"):
        if key not in published:
            raise ValueError(f"published must have the key {key!r}")
    values, acc = list(published["values"]), list(published["accuracy"])
    if len(values) != len(acc) or not values:
        raise ValueError(f"published['values'] and published['accuracy'] must have the same non-zero "
                         f"length, got {len(values)} and {len(acc)}")
    if not all(0.0 <= a <= 1.0 for a in acc):
        raise ValueError("published['accuracy'] must hold accuracies in [0, 1]")
    base = {"seq_len": 2, "mlp_width": 0, **published["model"]}
    return [{**base, published["axis"]: int(v), "accuracy": float(a)} for v, a in zip(values, acc)]


LINEAR_R2 = 0.95
"""A sweep counts as a line only when its least-squares line (below the ceiling) has at least this R² (Dana
et al. give no threshold). R² alone is loose (a curve whose gain per head falls 2.7-fold can reach 0.97), so
:func:`heads_verdict` also asks that the sweep not bend (:data:`BEND_RATIO`)."""

BEND_RATIO = 2.0
"""A sweep bends, and is no line, when the gain per head of its quadratic at one end of the fitted range is
more than this many times that at the other (or of the other sign), and its H² coefficient is clearly
apart from 0 (:func:`memcap.fits.clearly_apart`, with the quadratic's residual degrees of freedom). Below
this factor one count per head, the number the chapter
reads off the line, stays within a factor sqrt(2) of the gain at both ends; the size test keeps a slight
bend that precise data resolve (Dana et al.'s published d = 10 sweep, means of 5 seeds: 1.7-fold from
H = 1 to 26) from voiding a line."""


def heads_verdict(s: HeadsSummary, r2_min: float = LINEAR_R2) -> Verdict:
    """Linear in H and above both theory lines at every H (Dana et al., Figures 1(a) and 4)?

    Linear when at least :data:`LINE_POINTS` values of H lie below the ceiling, the line fitted on them has
    R² >= ``r2_min``, and the sweep does not bend (:data:`BEND_RATIO`). Reproduced when the sweep is
    linear and the accuracy lies above Corollary 2 and the previous lower bound at every H; partly when
    one of the two holds; not otherwise.
    """
    if isinstance(r2_min, bool) or not isinstance(r2_min, (int, float)) or not 0 < r2_min <= 1:
        raise ValueError(f"r2_min must be a number in (0, 1], got {r2_min!r}")
    r2 = f"$R^2 = {s.fit.r2:.3f}$"
    first, last = s.gain_ends
    q = s.quadratic
    bends = (q is not None and clearly_apart(q.coef[2], q.stderr[2], dof=q.dof)
             and (min(first, last) <= 0 or max(first, last) > BEND_RATIO * min(first, last)))
    if s.unsaturated < LINE_POINTS:
        linear = False
        shape = (f"has only {s.unsaturated} value{'s' * (s.unsaturated != 1)} of $H$ below the ceiling of "
                 f"{SATURATION_CEILING:g}, too few to tell a line from a curve,")
    elif s.fit.r2 < r2_min:
        linear = False
        shape = f"is not close to a line in $H$ ({r2} < {r2_min:g})"
    elif bends:
        linear = False
        shape = (f"bends {'upwards' if q.coef[2] > 0 else 'downwards'} in $H$ ({r2}, but the gain per head "
                 f"goes from {first:.3f} to {last:.3f} over the fitted range)")
    else:
        linear = True
        shape = f"grows along a line in $H$ ({r2})"
    above = bool(np.all(s.accuracy > s.cor2) and np.all(s.accuracy > s.previous))
    text = shape + (" and lies above both theory lines at every $H$" if above
                    else " and does not stay above both theory lines at every $H$")
    bent = f", bends {'upwards' if q.coef[2] > 0 else 'downwards'}" if bends else ""
    shows = f"{r2}{bent}, {s.per_head:.2f}$\\,d_h$ associations per head"
    return Verdict(grade([linear, above]), text, shows)


SEED_SD = 0.03
"""The noise of one trained model's accuracy from its seed, used where a point has one seed and so no
measured spread: the standard deviation over seeds in this chapter's quick multi-seed runs is about this at
the median (Figures 2(a) and 4); the paper-grid runs, trained 10,000 steps, scatter less (their measured
spread is used there)."""


def moves(values: Sequence[float], spread: Sequence[float], seeds: int) -> np.ndarray:
    """The direction of each step of a mean-accuracy curve beyond noise: (k - 1,) of +1 (rises), -1 (falls)
    and 0 (within noise) for the k points ``values`` with standard deviations ``spread`` over ``seeds`` seeds.

    A step is noise when it is within :data:`memcap.fits.SIGNIFICANT_SE` standard errors of the difference
    of the two means, sqrt((s_i² + s_j²)/seeds), s the measured spread with several seeds and
    :data:`SEED_SD` with one; and when both points are at or above :data:`SATURATION_CEILING`, where the
    accuracy cannot move.
    """
    v = np.asarray(values, dtype=float)
    s = np.asarray(spread, dtype=float)
    if v.ndim != 1 or v.shape != s.shape or v.size < 2:
        raise ValueError(f"values and spread must be 1-D of one length >= 2, got shapes {v.shape} and {s.shape}")
    if not (np.isfinite(v).all() and np.isfinite(s).all() and (s >= 0).all()):
        raise ValueError("values must be finite and spread finite and >= 0")
    if isinstance(seeds, bool) or not isinstance(seeds, (int, np.integer)) or seeds < 1:
        raise ValueError(f"seeds must be an integer >= 1, got {seeds!r}")
    sd = s if seeds > 1 else np.full_like(v, SEED_SD)
    step = np.diff(v)
    noise = SIGNIFICANT_SE * np.sqrt((sd[:-1] ** 2 + sd[1:] ** 2) / seeds)
    saturated = (v[:-1] >= SATURATION_CEILING) & (v[1:] >= SATURATION_CEILING)
    return np.where((np.abs(step) > noise) & ~saturated, np.sign(step), 0.0).astype(int)


def last_tokens_cover_dim(records: Sequence[dict]) -> bool:
    """Whether every model of ``records`` trains on all N^S sequences with N >= d.

    Then the sequences have L = N distinct last tokens, min(d, L) = d, and the count H d_h + min(d, L)
    this book establishes for Dana et al.'s Theorem 1 equals the paper's H d_h + d.
    """
    if not records:
        raise ValueError("records must hold at least one model")
    return all(r.get("examples") is None and int(r["vocab"]) >= int(r["dim"]) for r in records)
