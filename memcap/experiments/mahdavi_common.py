"""Summaries shared by the ``mahdavi_fig*`` modules: records of a sweep -> curves, theory lines, linearity test.

:func:`curves` gathers the trained models of a sweep into one curve per dataset size T (:class:`Curves`),
:func:`matches` selects records by their fields, the theory lines :func:`theory_accuracy` /
:func:`theory_mse` (evaluated on a grid by :func:`theory_table`) put Theorem 1's H(min(n, d_h) - 1) + 1
on the accuracy or MSE scale, and :func:`linear_on_unsaturated` is the paper's linearity test.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Sequence

import numpy as np

from memcap._checks import host_array, positive_int, positive_real
from memcap.bounds import mha_capacity
from memcap.fits import PolyFit, linear_fit, non_saturated
from memcap.train import MHASpec

LABEL_VARIANCE = 1.0 / 12.0
"""Variance of a regression label y ~ U(0, 1): the MSE of always predicting the mean 1/2."""

_SPEC_KEYS = ("model",) + tuple(f.name for f in fields(MHASpec))


@dataclass(frozen=True)
class Curves:
    """Measurements of one sweep, one curve per dataset size T.

    ``x`` (k,) the swept values (sorted), ``examples`` (m,) the T values (sorted), ``mean``, ``low``,
    ``high`` (m, k): mean, minimum and maximum over seeds of the measured ``value``; ``seeds`` how many
    seeds each point has.
    """

    axis: str
    value: str
    x: np.ndarray
    examples: np.ndarray
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    seeds: int


def _spec_of(record: dict) -> tuple:
    return tuple(record.get(k) for k in _SPEC_KEYS)


def matches(record: dict, where: dict) -> bool:
    """Whether ``record`` has every field of ``where`` equal to its value (or in it, for a list/tuple/set)."""
    return all(record.get(k) in v if isinstance(v, (list, tuple, set)) else record.get(k) == v
               for k, v in where.items())


def curves(records: Sequence[dict], axis: str, *, value: str = "accuracy", where: dict | None = None) -> Curves:
    """Gather ``value`` of the trained models in ``records`` into curves over ``axis``, one per T.

    ``where`` keeps only records whose fields equal the given values (e.g. ``{"classes": None}``); a list,
    tuple or set as value means "one of these" (e.g. ``{"examples": [300, 600]}``).
    A model listed twice (the same spec in two sweeps) counts once. Every (T, x) pair must have the same
    number of seeds, or the grid is incomplete and a ValueError says which point is missing.
    """
    if not isinstance(records, Sequence) or not all(isinstance(r, dict) for r in records):
        raise TypeError("records must be a sequence of dicts (ExperimentResults.records)")
    if axis not in _SPEC_KEYS:
        raise ValueError(f"axis must be a field of MHASpec, got {axis!r}")
    where = dict(where or {})
    chosen, seen = [], set()
    for r in records:
        if matches(r, where) and _spec_of(r) not in seen:
            seen.add(_spec_of(r))
            chosen.append(r)
    if not chosen:
        raise ValueError(f"no record matches {where} (records: {len(records)})")
    if any(r.get(value) is None for r in chosen):
        raise ValueError(f"value {value!r} is missing (None) in some records; e.g. accuracy is None for regression")
    xs = np.array(sorted({r[axis] for r in chosen}))
    ts = np.array(sorted({r["examples"] for r in chosen}))
    groups: dict = {}
    for r in chosen:
        groups.setdefault((r["examples"], r[axis]), []).append(float(r[value]))
    counts = {len(v) for v in groups.values()}
    missing = [(int(t), int(x)) for t in ts for x in xs if (t, x) not in groups]
    if missing or len(counts) != 1:
        raise ValueError(f"the grid of T x {axis} is incomplete: missing {missing}, seeds per point {sorted(counts)}")
    table = np.array([[groups[(t, x)] for x in xs] for t in ts])              # (m, k, seeds)
    return Curves(axis=axis, value=value, x=xs, examples=ts, mean=table.mean(axis=2), low=table.min(axis=2),
                  high=table.max(axis=2), seeds=counts.pop())


def guaranteed_fraction(heads: int, context_size: int, head_dim: int, examples: int) -> float:
    """min(1, H(r-1)+1 / T): the fraction of T examples Theorem 1 (Mahdavi et al.) memorizes exactly."""
    cap = mha_capacity(heads, context_size, head_dim)
    return min(1.0, cap / positive_int("examples", examples))


def theory_accuracy(heads: int, context_size: int, head_dim: int, examples: int, classes: int) -> float:
    """Expected training accuracy Theorem 1 guarantees with C uniform classes: f + (1 - f)/C.

    f = min(1, (H(r-1)+1)/T). The attention weights of the construction depend on the inputs only and the
    readout on the labels of the f T memorized examples, so the other predictions are independent of
    their own uniform labels and right with probability 1/C each (argument in the chapter).
    """
    f = guaranteed_fraction(heads, context_size, head_dim, examples)
    return f + (1.0 - f) / positive_int("classes", classes)


def theory_mse(heads: int, context_size: int, head_dim: int, examples: int,
               variance: float = LABEL_VARIANCE) -> float:
    """Expected training MSE Theorem 1's features reach with a least-squares readout (with bias): (1-f) var.

    The features span at least f T dimensions chosen without looking at the labels; projecting i.i.d.
    labels of variance ``variance`` on them leaves (T - fT) var of squared error in expectation.
    """
    f = guaranteed_fraction(heads, context_size, head_dim, examples)
    return (1.0 - f) * positive_real("variance", variance)


def theory_table(c: Curves, record: dict, kind: str = "accuracy") -> np.ndarray:
    """Theory values (m, k) on the grid of ``c``; ``record`` gives the fixed fields (H, n, d_h, C)."""
    if kind not in ("accuracy", "mse"):
        raise ValueError(f"kind must be 'accuracy' or 'mse', got {kind!r}")
    out = np.empty(c.mean.shape)
    for i, T in enumerate(c.examples):
        for j, v in enumerate(c.x):
            f = {**record, c.axis: int(v)}
            d_h = f["dim"] if f["head_dim"] is None else f["head_dim"]
            args = (int(f["heads"]), int(f["context_size"]), int(d_h), int(T))
            out[i, j] = theory_accuracy(*args, int(f["classes"])) if kind == "accuracy" else theory_mse(*args)
    return out


CEILING = 0.99
"""The accuracy from which a curve of Mahdavi et al.'s figures counts as saturated: its line ends at the first
point at or above it."""


NOISE = 0.02
"""How far one training run's curve may step the wrong way between neighbouring grid values before a
verdict counts it: a fall of accuracy, or a rise of the MSE as a share of the labels' variance
(:data:`LABEL_VARIANCE`, so that 0 means every label fitted and 1 none, like 1 - accuracy). The figures
that use it train one seed per point, so no spread of seeds measures the noise; 0.02 is the binomial
standard deviation 0.5/sqrt(T) of an accuracy over T examples (at worst, p = 1/2) at T = 600, the largest
T of the quick profile (0.035 at its smallest, T = 200; at most 0.0065 at the paper's T >= 6000, where
0.02 is three of them). Steps between two saturated points (accuracy >= :data:`CEILING`) are smaller
than this by construction."""


def linear_on_unsaturated(x: Sequence[float], y: Sequence[float], *, ceiling: float = CEILING) -> PolyFit | None:
    """Mahdavi et al.'s linearity test: a least-squares line on the part of the curve before it reaches
    ``ceiling`` (first saturated point kept); None when fewer than 3 points remain (R² would be vacuous)."""
    xs, ys = non_saturated(x, y, ceiling=ceiling)
    return linear_fit(xs, ys) if xs.size >= 3 else None


# ---------------------------------------------------------------------------------------------------
# the training sets, for statements about what no model can beat
# ---------------------------------------------------------------------------------------------------

def training_labels(record: dict) -> np.ndarray:
    """The labels y (T,) (classes) or (T, d_out) (regression) of the training set of ``record``'s model.

    Drawn as the engine draws them (:func:`memcap.data.mahdavi_task` from a generator seeded with the
    record's ``data_seed``), so that a chapter can compare a trained model with what the labels allow:
    with a single shared context token (n = 1) every example receives the same output, so the accuracy
    is at most the share of the most frequent label and the MSE at least the labels' variance.
    """
    import torch

    from memcap.data import mahdavi_task
    from memcap.train import spec_from_dict

    spec = spec_from_dict({k: record[k] for k in _SPEC_KEYS if k in record})
    if not isinstance(spec, MHASpec):
        raise ValueError(f"record must describe a Mahdavi et al. model (model 'mha'), got {record.get('model')!r}")
    gen = torch.Generator().manual_seed(spec.data_seed)
    task = mahdavi_task(spec.examples, spec.context_size, spec.dim, shared=spec.shared, task=spec.task,
                        classes=spec.classes or 1, out_dim=spec.out_dim, generator=gen, dtype=torch.float64,
                        device=torch.device("cpu"))
    return task.labels.cpu().numpy()


def largest_label_share(labels: np.ndarray) -> float:
    """Share of the most frequent class among ``labels`` (T,): the best accuracy of a constant prediction."""
    labels = host_array(labels)
    if labels.ndim != 1 or labels.size == 0:
        raise ValueError(f"labels must be a non-empty array of classes (T,), got shape {labels.shape}")
    return float(np.bincount(labels.astype(int)).max() / labels.size)


def label_variance(labels: np.ndarray) -> float:
    """Mean squared deviation of regression labels (T, d_out) from their mean: the best MSE of a constant."""
    labels = host_array(labels, dtype=float)
    if labels.ndim != 2 or labels.shape[0] == 0:
        raise ValueError(f"labels must be regression targets of shape (T, d_out), got {labels.shape}")
    return float(((labels - labels.mean(axis=0)) ** 2).mean())


# ---------------------------------------------------------------------------------------------------
# drawing: one curve per T, its Theorem 1 line in the same colour
# ---------------------------------------------------------------------------------------------------

def curve_colors(count: int) -> list[str]:
    """Colours of ``count`` curves ordered by T: the measured colour for one curve, else light to dark."""
    from memcap import plotting

    return [plotting.MEASURED] if count == 1 else plotting.series_colors(count)


def plot_curves(ax, x: Sequence[float], values: np.ndarray, theory: np.ndarray, examples: Sequence[int], *,
                yerr: np.ndarray | None = None, fits: Sequence[PolyFit | None] | None = None,
                fit_x: Sequence[np.ndarray] | None = None) -> None:
    """Draw measured curves (m, k) over ``x``, one per T in ``examples``, each with its Theorem 1 line
    (dashed, same colour) and, if given, its fitted line (dotted, only over ``fit_x[i]``).

    Each measured curve is labelled ``$T = ...$`` for the legend (with several T the colours run light
    to dark with T), so that a legend, not a colour bar, names them; :func:`style_key` explains the line
    styles. ``yerr`` (m, 2, k): error bars.
    """
    from memcap import plotting

    values, theory = np.atleast_2d(host_array(values)), np.atleast_2d(host_array(theory))
    if values.shape != theory.shape or values.shape[0] != len(examples) or values.shape[1] != len(x):
        raise ValueError(f"values and theory must have shape (len(examples), len(x)) = ({len(examples)}, "
                         f"{len(x)}), got {values.shape} and {theory.shape}")
    colors = curve_colors(len(examples))
    for i, T in enumerate(examples):
        err = None if yerr is None else yerr[i]
        plotting.measured(ax, x, values[i], f"$T = {_thousands(T)}$", color=colors[i], yerr=err)
        plotting.theory_line(ax, x, theory[i], None, color=colors[i], linewidth=1.3)
        if fits is not None and fits[i] is not None:
            plotting.fit_line(ax, fit_x[i], fits[i], None, color=colors[i])


def _thousands(T: int) -> str:
    return f"{int(T):,}".replace(",", r"\,")


def style_key(*, fit: bool = False, regression: bool = False, theory: str | None = None) -> list:
    """Legend handles for the line styles of :func:`plot_curves` (grey, so they mean a style, not a T).

    ``theory`` overrides the label of the dashed line (e.g. for a figure with accuracy and MSE panels).
    """
    from matplotlib.lines import Line2D

    grey = "0.35"
    if theory is None:
        theory = ("expected MSE of Mahdavi et al.'s Theorem 1 features" if regression
                  else "accuracy guaranteed by Mahdavi et al.'s Theorem 1")
    handles = [Line2D([], [], color=grey, marker="o", markersize=4, linewidth=1.2, label="trained"),
               Line2D([], [], color=grey, linestyle="--", linewidth=1.3, label=theory)]
    if fit:
        handles.append(Line2D([], [], color=grey, linestyle=":", linewidth=1.4, label="least-squares line"))
    return handles


def log_ticks(ax) -> None:
    """A logarithmic y axis with plain tick labels, at 1, 2 and 5 per decade when the data span less than
    two decades (else one tick per decade), so that every panel shows at least two labelled ticks."""
    from matplotlib.ticker import LogLocator

    from memcap import plotting

    plotting.log_axis(ax, "y")
    ys = np.concatenate([np.asarray(line.get_ydata(), dtype=float) for line in ax.get_lines()] or [np.ones(1)])
    ys = ys[np.isfinite(ys) & (ys > 0)]
    if ys.size and np.log10(ys.max() / ys.min()) < 2:
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
