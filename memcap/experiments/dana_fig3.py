"""Dana et al., Figure 3 (Section 4.2.1): AoT vs one attention head + GELU MLP at equal parameter count.

The AoT has H heads with d_h = d; the MLP model has one head with d_h = d and an MLP of width
w = 2d(H - 1), so both have d(S + 2N + 4d) + 4d^2(H - 1) weights.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from memcap import bounds
from memcap.experiments._grids import split_jobs
from memcap.experiments.dana_common import mean_accuracy, moves, previous_accuracy
from memcap.experiments.verdicts import Verdict, grade
from memcap.train import AoTSpec, TrainConfig

NAME = "dana_fig3"
LABEL = "aot-fig-3"
TITLE = "AoT vs one head + GELU MLP at equal parameter count"

PAPER = {
    "model": {"vocab": 70, "seq_len": 2},
    "dims": [7, 10, 13],
    "heads": list(range(1, 32, 3)),
    "seeds": [0, 1, 2, 3, 4],
    "train": {"steps": 10_000, "batch_size": 1024, "lr": 1e-3, "schedule": "constant", "eval_every": 500},
}
# Quick: two widths, H up to 5 (MLP width up to 2d(H - 1) = 40), one stack.
QUICK = {
    "model": {"vocab": 16, "seq_len": 2},
    "dims": [3, 5],
    "heads": [1, 3, 5],
    "seeds": [0],
    "train": {"steps": 1500, "batch_size": None, "lr": 1e-2, "schedule": "warmup_cosine", "eval_every": 250},
}


def mlp_width(dim: int, heads: int) -> int:
    """w = 2d(H - 1): the MLP width that gives the one-head model the AoT's parameter count."""
    return 2 * dim * (heads - 1)


def jobs(profile: str) -> list[dict]:
    """Quick: one stacked job; paper: one job per d (AoTs and MLP models, all H and seeds, stacked)."""
    g = PAPER if profile == "paper" else QUICK
    specs = []
    for d in g["dims"]:
        for H in g["heads"]:
            for s in g["seeds"]:
                specs.append(AoTSpec(**g["model"], dim=d, head_dim=d, heads=H, seed=s, data_seed=s))
                specs.append(AoTSpec(**g["model"], dim=d, head_dim=d, heads=1, mlp_width=mlp_width(d, H),
                                     seed=s, data_seed=s))
    return split_jobs(specs, TrainConfig(**g["train"]), "dim" if profile == "paper" else None)


@dataclass(frozen=True)
class Curves:
    """One d of Figure 3: arrays (k,) over ``heads`` H (AoT heads; the MLP model has width 2d(H - 1)).

    ``params``: d(S + 2N + 4dH), the weights of both models; ``aot``/``mlp``: mean accuracy over seeds of
    the AoT and of the one-head + MLP model, ``aot_spread``/``mlp_spread`` their standard deviations over
    seeds; ``seeds``: the fewest seeds averaged at one point; ``cor2``: Corollary 2 for the AoT,
    phi(H d + d); ``previous``: phi(H(d - 1) + 1).
    """

    dim: int
    heads: np.ndarray
    params: np.ndarray
    aot: np.ndarray
    mlp: np.ndarray
    cor2: np.ndarray
    previous: np.ndarray
    aot_spread: np.ndarray
    mlp_spread: np.ndarray
    seeds: int

    @property
    def gap(self) -> float:
        """Mean |accuracy(AoT) - accuracy(MLP model)| over H >= 2: 0 when the two scaling curves coincide.

        H = 1 is left out: there the MLP has width 0 and both curves are the same one-head model, so its
        gap is 0 by construction and would only dilute the mean (0 when H = 1 is all there is)."""
        differ = self.heads >= 2
        return float(np.abs(self.aot - self.mlp)[differ].mean()) if differ.any() else 0.0


def summarize(results) -> tuple[Curves, ...]:
    """Figure 3's curves, one per d (ascending), from ``load_or_run(NAME)`` results (or a list of records)."""
    records = getattr(results, "records", results)
    if not records:
        raise ValueError("records must hold at least one trained model, got none")
    by_dim: dict[int, tuple[list[dict], list[dict]]] = {}
    for r in records:
        aot, mlp = by_dim.setdefault(int(r["dim"]), ([], []))
        if r["mlp_width"] == 0:
            aot.append(r)
        if r["mlp_width"] % (2 * r["dim"]) or (r["mlp_width"] and r["heads"] != 1):
            raise ValueError(f"records must be AoTs or one-head models of MLP width 2d(H - 1), got H = "
                             f"{r['heads']}, d = {r['dim']}, w = {r['mlp_width']}")
        if r["heads"] == 1:   # one head + MLP of width w = 2d(H - 1): H = w/(2d) + 1 (w = 0: the 1-head AoT)
            mlp.append({**r, "heads": r["mlp_width"] // (2 * r["dim"]) + 1})
    out = []
    for d in sorted(by_dim):
        aot, mlp = by_dim[d]
        H, acc_aot, sd_aot = mean_accuracy(aot, "heads")
        H_mlp, acc_mlp, sd_mlp = mean_accuracy(mlp, "heads")
        if not np.array_equal(H, H_mlp):
            raise ValueError(f"d = {d}: the AoTs (H = {H.tolist()}) and MLP models (H = {H_mlp.tolist()}) "
                             "must pair up")
        N, S = int(aot[0]["vocab"]), int(aot[0]["seq_len"])
        T0 = N ** S
        out.append(Curves(
            dim=d, heads=H, params=np.array([bounds.aot_param_count(N, S, d, int(h), d) for h in H]),
            aot=acc_aot, mlp=acc_mlp, cor2=np.array([bounds.cor2_accuracy(int(h), d, d, N, T0) for h in H]),
            previous=np.array([previous_accuracy(int(h), d, N, T0) for h in H]),
            aot_spread=sd_aot, mlp_spread=sd_mlp,
            seeds=min(min(Counter(int(r["heads"]) for r in group).values()) for group in (aot, mlp))))
    return tuple(out)


COINCIDE = 0.2
"""The AoT and MLP curves "coincide" when, at each d, their mean gap is at most this share of the span of that
d's AoT accuracies over H (and they never clearly move in opposite directions from one H to the next)."""


def verdict(curves: tuple[Curves, ...], coincide: float = COINCIDE) -> Verdict:
    """Do the AoT and the one-head + MLP model scale alike at equal parameter count (Figure 3)?

    Reproduced when, for every d, the mean accuracy gap is at most ``coincide`` times the span of that
    d's AoT accuracies over H, and the two curves never move in opposite directions from one H to the
    next, each beyond noise (:func:`memcap.experiments.dana_common.moves`: a dip within the seeds' noise is
    no move); partly when every gap is at most twice that; not otherwise.
    """
    if not curves:
        raise ValueError("curves must hold at least one d")
    ratios, opposite = [], []
    for c in curves:
        span = float(np.ptp(c.aot))
        ratios.append(c.gap / span if span > 0 else (0.0 if c.gap == 0 else float("inf")))
        # one clearly rises where the other clearly falls
        steps = moves(c.aot, c.aot_spread, c.seeds) * moves(c.mlp, c.mlp_spread, c.seeds) < 0
        opposite += [f"$d = {c.dim}$, $H = {int(c.heads[i])}$ to {int(c.heads[i + 1])}"
                     for i in np.flatnonzero(steps)]
    close = max(ratios) <= coincide and not opposite
    near = max(ratios) <= 2 * coincide
    text = ("nearly coincide" if close else "lie near each other" if near else "do not coincide")
    if opposite and near:
        text += (", but they move in opposite directions from one number of heads to the next ("
                 + "; ".join(opposite) + "), so they do not scale alike")
    worst = int(np.argmax(ratios))
    shows = (f"largest mean gap {max(c.gap for c in curves):.3f}; at $d = {curves[worst].dim}$ the gap is "
             f"{ratios[worst]:.2f} of that width's AoT span")
    return Verdict(grade([close], partial=[near]), text, shows)


def finding(results) -> Verdict:
    """The figure's verdict on an :class:`~memcap.experiments.ExperimentResults` of any profile (a sweep's, or a
    recorded run's from :func:`memcap.experiments.recorded.results`): ``verdict(summarize(results))``."""
    return verdict(summarize(results))
