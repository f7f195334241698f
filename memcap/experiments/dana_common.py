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
from memcap.fits import PolyFit, linear_fit, non_saturated


@dataclass(frozen=True)
class HeadsSummary:
    """An accuracy-vs-H sweep of one AoT shape (N, S, d, d_h), averaged over seeds, with its fits and bounds.

    Arrays have shape (k,), one entry per H (``heads``, ascending). ``accuracy``/``spread``: mean and
    standard deviation over seeds; ``memorized``: the associations X that the mean accuracy stands for,
    X = T0 (N acc - 1)/(N - 1) (inverse of Corollary 2's map phi); ``cor2``: Corollary 2,
    phi(H d_h + d); ``previous``: phi(H(d_h - 1) + 1), the line Dana et al. plot as the "previous lower
    bound" (see :func:`previous_accuracy`).
    ``fit``: least-squares line of accuracy in H on the non-saturated part (accuracy < 99 %, first
    saturated point kept); ``fit_memorized``: the same line in associations, its slope is the number of
    associations one more head adds; ``fitted_heads`` (j,), j <= k: the values of H both lines were fitted on.
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
    vocab: int
    T0: int
    dim: int
    head_dim: int
    seeds: int

    @property
    def per_head(self) -> float:
        """Associations per extra head, in units of d_h (Corollary 2 grants exactly 1)."""
        return self.fit_memorized.slope / self.head_dim


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
"""A line in H ends before the first mean accuracy above this (Dana et al.'s code stops at 0.95)."""


def summarize_heads(records: Sequence[dict]) -> HeadsSummary:
    """Average an H sweep (one N, S, d, d_h; plain AoTs), fit lines in H (up to accuracy
    :data:`SATURATION_CEILING`), and evaluate both bounds."""
    shape = {f: shared_value(records, f) for f in ("vocab", "seq_len", "dim", "head_dim", "mlp_width")}
    if shape["mlp_width"] != 0:
        raise ValueError("records must be plain AoTs (mlp_width = 0)")
    N, d, d_h = shape["vocab"], shape["dim"], shape["head_dim"]
    T0 = N ** shape["seq_len"] if records[0].get("examples") is None else int(records[0]["examples"])
    heads, acc, spread = mean_accuracy(records, "heads")
    if heads.size < 2:
        raise ValueError(f"records must cover at least 2 values of H for a line, got {heads.size}")
    memorized = np.array([bounds.cor2_capacity_from_accuracy(a, N, T0) for a in acc])
    x, y = non_saturated(heads, acc, ceiling=SATURATION_CEILING)
    if x.size < 2:   # saturated from the second H on: fit the first two points
        x, y = heads[:2], acc[:2]
    keep = np.isin(heads, x)
    return HeadsSummary(
        heads=heads, accuracy=acc, spread=spread, memorized=memorized,
        cor2=np.array([bounds.cor2_accuracy(int(H), d_h, d, N, T0) for H in heads]),
        previous=np.array([previous_accuracy(int(H), d_h, N, T0) for H in heads]),
        fit=linear_fit(x, y), fit_memorized=linear_fit(heads[keep], memorized[keep]), fitted_heads=heads[keep],
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
"""A sweep counts as a line when its least-squares line has at least this R² (Dana et al. give no
threshold; their published Figure 1(a) data reach 0.97)."""


def heads_verdict(s: HeadsSummary, r2_min: float = LINEAR_R2) -> Verdict:
    """Linear in H and above both theory lines at every H (Dana et al., Figures 1(a) and 4)?

    Reproduced when the line in H has R² >= ``r2_min`` and the accuracy lies above Corollary 2 and the
    previous lower bound at every H; partly when one of the two holds; not otherwise.
    """
    linear = s.fit.r2 >= r2_min
    above = bool(np.all(s.accuracy > s.cor2) and np.all(s.accuracy > s.previous))
    text = ((f"grows along a line in $H$ ($R^2 = {s.fit.r2:.3f}$)" if linear
             else f"is not close to a line in $H$ ($R^2 = {s.fit.r2:.3f}$ < {r2_min:g})")
            + (" and lies above both theory lines at every $H$" if above
               else " and does not stay above both theory lines at every $H$"))
    shows = f"$R^2 = {s.fit.r2:.3f}$, {s.per_head:.2f}$\\,d_h$ associations per head"
    return Verdict(grade([linear, above]), text, shows)


def last_tokens_cover_dim(records: Sequence[dict]) -> bool:
    """Whether every model of ``records`` trains on all N^S sequences with N >= d.

    Then the sequences have L = N distinct last tokens, min(d, L) = d, and the count H d_h + min(d, L)
    this book establishes for Dana et al.'s Theorem 1 equals the paper's H d_h + d.
    """
    if not records:
        raise ValueError("records must hold at least one model")
    return all(r.get("examples") is None and int(r["vocab"]) >= int(r["dim"]) for r in records)
