"""Mahdavi et al., Figure 4 (Appendix I.1): contexts drawn afresh per example (general position).

Classification and regression, against H (n = 32) and against n (H = 20): linearity in H survives, in n
it weakens. Grids from the authors' published run script.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from memcap._checks import host_array
from memcap.experiments._grids import mha_jobs
from memcap.experiments.mahdavi_common import CEILING, curves, linear_on_unsaturated, matches, theory_table
from memcap.experiments.verdicts import Verdict, grade, holds
from memcap.fits import non_saturated
from memcap.notation import sci
from memcap.profiles import check_profile

NAME = "mahdavi_fig4"
LABEL = "mha-fig-4"
TITLE = "Non-shared contexts: classification and regression vs H and vs n"

_PAPER_TRAIN = {"steps": 50_000, "epochs": 500, "batch_size": 256, "lr": 1e-3, "eval_every": 500}
PAPER = {
    "model": {"dim": 64, "shared": False},
    "heads": [1, 5, 10, 20, 30, 40, 50, 60], "context_size_for_heads": 32,
    "context_size": [1, 5, 10, 20, 30, 40, 50, 60], "heads_for_context": 20,
    "classification_examples_heads": [30_000, 50_000, 70_000, 90_000, 110_000, 130_000],
    "classification_examples_context": [20_000, 30_000, 40_000, 50_000, 60_000],
    "regression_examples": [10_000, 30_000, 50_000, 70_000, 90_000],
    "seeds": [0],
    "train": _PAPER_TRAIN,
}
QUICK = {
    "model": {"dim": 16, "shared": False},
    "heads": [1, 2, 4, 8], "context_size_for_heads": 8,
    "context_size": [1, 2, 4, 8], "heads_for_context": 4,
    "classification_examples_heads": [600],
    "classification_examples_context": [300],
    "regression_examples": [300],
    "seeds": [0],
    "train": {"steps": 1000, "batch_size": 128, "lr": 1e-2, "eval_every": 250},
}


def jobs(profile: str) -> list[dict]:
    """Four sweeps (classification/regression x H/n); quick: one job each, paper: one job per T."""
    g = PAPER if profile == "paper" else QUICK
    split = "examples" if profile == "paper" else None
    cls = {**g["model"], "classes": 100}
    reg = {**g["model"], "classes": None, "out_dim": 1}
    out = []
    out += mha_jobs({**cls, "context_size": g["context_size_for_heads"]}, "heads", g["heads"],
                    g["classification_examples_heads"], g["seeds"], g["train"], split_by=split)
    out += mha_jobs({**cls, "heads": g["heads_for_context"]}, "context_size", g["context_size"],
                    g["classification_examples_context"], g["seeds"], g["train"], split_by=split)
    out += mha_jobs({**reg, "context_size": g["context_size_for_heads"]}, "heads", g["heads"],
                    g["regression_examples"], g["seeds"], g["train"], split_by=split)
    out += mha_jobs({**reg, "heads": g["heads_for_context"]}, "context_size", g["context_size"],
                    g["regression_examples"], g["seeds"], g["train"], split_by=split)
    return out


def summarize(records: Sequence[dict], profile: str = "quick") -> dict:
    """Figure 4 as four panels keyed ``(task, axis)``, task 'classification' or 'regression', axis 'heads'
    or 'context_size'. Each panel: ``x`` (k,), ``examples`` (m,), ``value``/``low``/``high``/``theory``
    (m, k) (accuracy and its Theorem 1 guarantee, or MSE and its bound), and ``r2`` (m,): R² of a line
    fitted on the non-saturated part (classification; NaN when fewer than 3 points remain)."""
    g = PAPER if check_profile(profile) == "paper" else QUICK
    panels = {}
    sizes = {("classification", "heads"): g["classification_examples_heads"],
             ("classification", "context_size"): g["classification_examples_context"],
             ("regression", "heads"): g["regression_examples"],
             ("regression", "context_size"): g["regression_examples"]}
    for task, classes in (("classification", 100), ("regression", None)):
        for axis, fixed in (("heads", {"context_size": g["context_size_for_heads"]}),
                            ("context_size", {"heads": g["heads_for_context"]})):
            where = {"classes": classes, "shared": False, axis: g[axis], "examples": sizes[(task, axis)], **fixed}
            value = "accuracy" if classes else "loss"
            c = curves(records, axis, value=value, where=where)
            base = next(r for r in records if matches(r, where))
            line = [linear_on_unsaturated(c.x, row) for row in c.mean] if classes else [None] * len(c.examples)
            panels[(task, axis)] = {"x": c.x, "examples": c.examples, "value": c.mean, "low": c.low,
                                    "high": c.high, "seeds": c.seeds,
                                    "theory": theory_table(c, base, "accuracy" if classes else "mse"),
                                    "r2": np.array([np.nan if f is None else f.r2 for f in line])}
    return panels


CONTROL = "mahdavi_fig2b"
"""The experiment whose shared-context curves are :func:`verdict`'s control (:func:`control_flattening`):
:func:`memcap.experiments.recorded.finding` judges this figure's recorded run against that experiment's
run at the same size."""


def flattening(x: Sequence[float], y: Sequence[float], *, ceiling: float = CEILING) -> float:
    """Mean slope of ``y`` over the upper half of the range of ``x`` divided by that over the lower half,
    on the points before ``y`` first reaches ``ceiling`` (an accuracy capped at 1 is not a curve that
    flattens); NaN when fewer than 3 such points remain or the lower half does not rise.

    The halves meet at the grid point nearest the middle of that range; < 1 when the curve flattens.
    """
    x, y = host_array(x, dtype=float), host_array(y, dtype=float)
    if x.size < 3:
        raise ValueError(f"need at least 3 points to compare two halves, got {x.size}")
    x, y = non_saturated(x, y, ceiling=ceiling)
    x, y = x[y < ceiling], y[y < ceiling]
    if x.size < 3:
        return float("nan")
    mid = int(np.argmin(np.abs(x - (x[0] + x[-1]) / 2)))
    mid = min(max(mid, 1), x.size - 2)
    lower = (y[mid] - y[0]) / (x[mid] - x[0])
    upper = (y[-1] - y[mid]) / (x[-1] - x[mid])
    return float(upper / lower) if lower > 0 else float("nan")


def control_flattening(shared: dict, panels: dict) -> list[float]:
    """:func:`flattening` of each shared-context curve of Fig. 2(b) (``mahdavi_fig2b.summarize``'s output:
    ``context_size`` (k,), ``accuracy`` (m, k)), on its points within the n range of this figure's curves
    (``panels``, :func:`summarize`'s output), so that both halves cover the same n: the control for
    :func:`verdict`, curves the paper finds linear in n."""
    x = host_array(shared["context_size"], dtype=float)
    grid = host_array(panels[("classification", "context_size")]["x"], dtype=float)
    inside = (x >= grid.min()) & (x <= grid.max())
    if inside.sum() < 3:
        raise ValueError(f"shared must have at least 3 context sizes within this figure's n = {grid.min():g}.."
                         f"{grid.max():g}, got {x.tolist()}")
    return [flattening(x[inside], row[inside]) for row in np.atleast_2d(host_array(shared["accuracy"], dtype=float))]


def verdict(panels: dict, r2_min: float = 0.98, control: Sequence[float] | None = None) -> Verdict:
    """Linear in H survives, linear in n weakens (Mahdavi et al., Appendix I.1)? From :func:`summarize`.

    Linear in H: every classification curve against H has R² >= ``r2_min``. Weaker in n: every curve
    against n has a smaller R² than the smallest against H, and flattens (below saturation, its slope over
    the upper half of the n range is less than half that over the lower half: :func:`flattening`).
    Reproduced when both hold, partly when one does. ``control``: the flattening ratios of curves that
    should *not* weaken (the shared-context curves of Fig. 2(b), :func:`control_flattening`); when one of
    them flattens by the same test, the flattening does not single out fresh contexts and does not count.
    """
    heads, ctx = panels[("classification", "heads")], panels[("classification", "context_size")]
    r2_h, r2_n = np.asarray(heads["r2"], dtype=float), np.asarray(ctx["r2"], dtype=float)
    linear_h = bool(np.all(np.nan_to_num(r2_h, nan=-np.inf) >= r2_min))
    flat = np.array([flattening(ctx["x"], row) < 0.5 for row in ctx["value"]])
    ratios = [] if control is None else [float(c) for c in control]
    if control is not None and (not ratios or isinstance(control, str)):
        raise ValueError(f"control must hold at least one flattening ratio, got {control!r}")
    control_flat = [c for c in ratios if c < 0.5]     # NaN (no rise at all) is not a flattening
    weaker_n = (bool(np.all(np.nan_to_num(r2_n, nan=np.inf) < np.nanmin(r2_h))) and bool(flat.all())
                and not control_flat)
    status = grade([linear_h, weaker_n])
    text = ((f"a line in $H$ fits every curve with $R^2 \\ge {r2_min:g}$" if linear_h
             else f"some curve in $H$ has $R^2 < {r2_min:g}$")
            + "; " + holds(flat, ctx["examples"], "accuracy rises quickly with the first context tokens and then "
                           "flattens", "accuracy does not flatten in $n$"))
    if control_flat and flat.any():
        text += ("; but the shared-context curves of Fig. 2(b) flatten by the same test (slope ratio "
                 + ", ".join(f"{c:.2f}" for c in control_flat)
                 + "), so the flattening does not single out fresh contexts")
    shows = f"$R^2$ in $H$: {np.nanmin(r2_h):.3f}; in $n$: {np.nanmin(r2_n):.3f}"
    return Verdict(status, text, shows)


def regression_text(panels: dict) -> str:
    """Whether the regression error falls at every step in H and in n, as a clause for the prose (its
    subject, "the regression error", is the sentence's)."""
    parts = []
    for axis, name in (("heads", "$H$"), ("context_size", "$n$")):
        p = panels[("regression", axis)]
        rise = float(np.diff(p["value"], axis=1).max())
        parts.append(f"falls at every step in {name}" if rise < 0 else f"never rises in {name}" if rise == 0
                     else f"rises by up to ${sci(rise)}$ between neighbouring values of {name}")
    return " and ".join(parts)


def finding(results, shared=None) -> Verdict:
    """The figure's verdict on an :class:`~memcap.experiments.ExperimentResults` of any profile (a sweep's, or a
    recorded run's from :func:`memcap.experiments.recorded.results`), with ``shared``, the results of
    Fig. 2(b) (:data:`CONTROL`) at the same size, as the control: ``verdict(panels, control=
    control_flattening(mahdavi_fig2b.summarize(shared.records), panels))``, as the chapter decides it.

    Without ``shared`` nothing tells a flattening in n from the shared context's, so it does not count: a
    'yes' becomes 'partly', and the text says that the control is missing.
    """
    from memcap.experiments import mahdavi_fig2b

    panels = summarize(results.records, results.profile)
    if shared is not None:
        if getattr(shared, "name", None) != CONTROL or shared.profile != results.profile:
            raise ValueError(f"shared must be the results of {CONTROL} at profile {results.profile!r}, got "
                             f"{getattr(shared, 'name', shared)!r}")
        return verdict(panels, control=control_flattening(mahdavi_fig2b.summarize(shared.records), panels))
    found = verdict(panels)
    return Verdict("partly" if found.status == "yes" else found.status,
                   found.text + "; no run of Fig. 2(b) at this size is at hand to check the flattening "
                   "against shared contexts", found.shows)
