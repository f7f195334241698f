"""One visual style for every figure of the book.

Sizes: a figure is :data:`WIDTH` inches wide at :data:`DPI` dots per inch, i.e. 688 pixels, the width of
the text column of the site at desktop size, so it is displayed at (nearly) its own pixels with 9–10 pt
text. Panels are laid out at most two per row (:func:`figure` refuses more), so four or more panels are
stacked.

Colours carry one meaning throughout the book:

- ``THEORY`` (dark red, dashed): a bound or closed form proved in a paper;
- ``MEASURED`` (dark blue, markers): what we computed or trained;
- ``CONSTRUCTED`` (green): what a proof's construction achieves;
- ``PUBLISHED`` (grey, open markers): numbers the papers' authors published;
- ``RANDOM`` (purple): a random baseline.

When a figure shows one curve per value of a parameter (a dataset size T, a width d), use
:func:`series_colors`, which orders the colours light to dark with the parameter. Fitted lines are drawn by
:func:`fit_line` (dotted, in the legend, only over the range they were fitted on). Where a panel has only
a few lines, :func:`label_line` names each at its end, in its colour, instead of a legend. Labels must typeset
their symbols as math (``"$d_h$"``, ``"$\\le$"``): :func:`finish` refuses ``d_h`` or ``<=`` outside
``$...$``, so a raw symbol cannot reach a page.

Plotted values may be tensors on any device (or lists of them): the drawing functions bring them to the
CPU first (``memcap._checks.host_array``), since NumPy and matplotlib read only CPU memory.
"""
from __future__ import annotations

import re
from typing import Callable, Sequence

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from memcap._checks import host_array

__all__ = ["THEORY", "MEASURED", "CONSTRUCTED", "PUBLISHED", "RANDOM", "PALETTE", "WIDTH", "HEIGHT", "DPI",
           "use_style", "figure", "panels", "series_colors", "theory_line", "measured", "published", "fit_line",
           "log_axis", "finish", "legend_below", "label_line", "check_label"]

THEORY = "#b2182b"
MEASURED = "#1f4e79"
CONSTRUCTED = "#1b7837"
PUBLISHED = "#6f6f6f"
RANDOM = "#7b3294"
PALETTE = ("#1f4e79", "#e08a1e", "#1b7837", "#7b3294", "#6f6f6f", "#17becf", "#bcbd22")
"""Categorical colours, for series that are not ordered (e.g. two architectures)."""

DPI = 110
"""Dots per inch of every figure (matplotlib's figure.dpi and savefig.dpi)."""
WIDTH = 6.25
"""Inches: 6.25 in at 110 dpi is 688 px, the site's text column at desktop width."""
HEIGHT = 3.4
"""Inches: the default height of one row of panels."""

_RC = {
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
    "font.size": 9.5,
    "axes.titlesize": 10,
    "axes.labelsize": 10,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "legend.fontsize": 9,
    "legend.frameon": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "lines.linewidth": 1.8,
    "figure.constrained_layout.use": True,
    "mathtext.fontset": "dejavusans",
}

MAX_COLUMNS = 2


def use_style() -> None:
    """Apply the book's matplotlib settings (idempotent)."""
    plt.rcParams.update(_RC)


def figure(ncols: int = 1, nrows: int = 1, *, width: float | None = None, height: float | None = None,
           sharex: bool = False, sharey: bool = False):
    """A ``(fig, axes)`` pair in the book's style.

    ``axes`` is one Axes for a single panel, a 1-d array for one row or one column, else a 2-d array
    (``nrows x ncols``). At most two panels per row: lay out four panels as ``ncols=2, nrows=2``, six as
    ``ncols=2, nrows=3``. ``height`` defaults to :data:`HEIGHT` per row (a little less for several rows).
    """
    for value in (ncols, nrows):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"ncols and nrows must be >= 1, got ncols={ncols}, nrows={nrows}")
    if ncols > MAX_COLUMNS:
        raise ValueError(f"ncols must be <= {MAX_COLUMNS} (panels wider than half the column are unreadable); "
                         f"stack them: ncols={MAX_COLUMNS}, nrows={-(-ncols * nrows // MAX_COLUMNS)}")
    for name, value in (("width", width), ("height", height)):
        if value is not None and not (isinstance(value, (int, float)) and np.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a positive number of inches, got {value!r}")
    if width is not None and width > WIDTH:
        raise ValueError(f"width must be <= {WIDTH} inches (the text column), got {width}")
    use_style()
    w = width if width is not None else WIDTH
    h = height if height is not None else (HEIGHT if nrows == 1 else 0.82 * HEIGHT * nrows)
    fig, axes = plt.subplots(nrows, ncols, figsize=(w, h), squeeze=True, sharex=sharex, sharey=sharey)
    return fig, axes


def panels(n: int, *, height: float | None = None, sharey: bool = False) -> tuple:
    """``(fig, axes)`` for ``n`` panels two per row, the last one centred when ``n`` is odd: ``axes`` a list of
    ``n`` Axes in reading order, whatever ``n`` (for a figure that gains a panel when a result is there).

    ``height`` as in :func:`figure`, for all rows; ``sharey``: every panel shares the first one's y axis.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive number of panels, got {n!r}")
    rows = -(-int(n) // MAX_COLUMNS)
    if n <= MAX_COLUMNS:
        fig, axes = figure(ncols=int(n), height=height, sharey=sharey)
        return fig, list(np.atleast_1d(axes))
    fig, _ = figure(nrows=1, height=height if height is not None else 0.82 * HEIGHT * rows)
    fig.clear()
    grid = fig.add_gridspec(rows, 2 * MAX_COLUMNS)
    axes = []
    for i in range(int(n)):
        row, col = divmod(i, MAX_COLUMNS)
        start = 1 if i == n - 1 and n % MAX_COLUMNS else 2 * col          # the odd last panel: centred
        axes.append(fig.add_subplot(grid[row, start:start + 2], sharey=axes[0] if sharey and axes else None))
    return fig, axes


def series_colors(n: int, cmap: str = "viridis") -> list[str]:
    """``n`` colours ordered light to dark, for curves indexed by an increasing parameter (e.g. ``T``)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    colormap = matplotlib.colormaps[cmap]
    # avoid the palest end of the map: it vanishes on white
    points = [0.85] if n == 1 else np.linspace(0.85, 0.05, n)
    return [matplotlib.colors.to_hex(colormap(p)) for p in points]


def theory_line(ax, x: Sequence[float], y: Sequence[float], label: str | None, *, color: str = THEORY, **kw):
    """Draw a bound or closed form: dashed, in the theory colour, labelled with the formula."""
    kw.setdefault("linestyle", "--")
    return ax.plot(host_array(x), host_array(y), color=color, label=label, **kw)


def measured(ax, x: Sequence[float], y: Sequence[float], label: str | None, *, color: str = MEASURED,
             yerr: Sequence[float] | None = None, marker: str = "o", **kw):
    """Draw measurements: markers joined by a thin line, with optional error bars. ``kw`` may change the
    defaults (``markersize=4``, ``linewidth=1.2``), e.g. ``linestyle="none"`` for markers only."""
    kw.setdefault("markersize", 4)
    kw.setdefault("linewidth", 1.2)
    if yerr is not None:
        return ax.errorbar(host_array(x), host_array(y), yerr=host_array(yerr), color=color, marker=marker,
                           capsize=2, label=label, **kw)
    return ax.plot(host_array(x), host_array(y), color=color, marker=marker, label=label, **kw)


def published(ax, x: Sequence[float], y: Sequence[float], label: str | None, *, color: str = PUBLISHED,
              marker: str = "s", **kw):
    """Draw numbers a paper's authors published: open markers, thin grey line."""
    return ax.plot(host_array(x), host_array(y), color=color, marker=marker, markersize=4.5, linewidth=1.0,
                   markerfacecolor="none", label=label, **kw)


def fit_line(ax, x: Sequence[float], fn: Callable[[np.ndarray], np.ndarray], label: str | None, *,
             color: str = MEASURED, points: int = 100, **kw):
    """Draw a fitted curve ``fn`` dotted, only over ``[min(x), max(x)]``, the range it was fitted on."""
    x = host_array(x, dtype=float)
    if x.size == 0 or not np.all(np.isfinite(x)):
        raise ValueError("x must be a non-empty array of finite values (the points the fit used)")
    grid = np.linspace(x.min(), x.max(), points) if x.size > 1 else x
    kw.setdefault("linestyle", ":")
    kw.setdefault("linewidth", 1.4)
    return ax.plot(grid, host_array(fn(grid), dtype=float), color=color, label=label, **kw)


def _plain(value: float, _pos=None) -> str:
    """1, 10, 100, 0.01 plainly; powers of ten outside [0.001, 10^5) as 10^k, never 1e-06."""
    if value <= 0:
        return f"{value:g}"
    if 1e-3 <= value < 1e5:
        return f"{value:g}"
    exponent = np.log10(value)
    if np.isclose(exponent, round(exponent)):
        return f"$10^{{{int(round(exponent))}}}$"
    return f"{value:.1e}"


def log_axis(ax, which: str = "x", base: float = 10) -> None:
    """Make ``which`` ('x', 'y' or 'both') logarithmic with plain tick labels (0.01, 1, 100, 10^-6)."""
    if which not in ("x", "y", "both"):
        raise ValueError(f"which must be 'x', 'y' or 'both', got {which!r}")
    axes = ("x", "y") if which == "both" else (which,)
    for a in axes:
        axis = ax.xaxis if a == "x" else ax.yaxis
        (ax.set_xscale if a == "x" else ax.set_yscale)("log", base=base)
        axis.set_major_locator(LogLocator(base=base))
        axis.set_major_formatter(FuncFormatter(_plain))
        axis.set_minor_formatter(NullFormatter())


_RAW = [(re.compile(r"(?<![\\$])\b[A-Za-z]+_[A-Za-z0-9{]"), "a subscript such as d_h"),
        (re.compile(r"<=|>=|!="), "a comparison written as <=, >= or !="),
        (re.compile(r"\^"), "a power written with ^")]


def check_label(text: str) -> str:
    """Return ``text`` if its symbols are typeset as math, else raise ``ValueError`` saying what is raw.

    Outside ``$...$`` a label may not contain ``x_y``, ``<=``, ``>=``, ``!=`` or ``^``: write ``$d_h$``,
    ``$\\le$``, ``$d^2$``.
    """
    if not isinstance(text, str):
        raise TypeError(f"a label must be a str, got {type(text).__name__}")
    outside = re.sub(r"\$[^$]*\$", " ", text)
    if outside.count("$"):
        raise ValueError(f"label {text!r} has an unmatched $")
    for pattern, what in _RAW:
        if pattern.search(outside):
            raise ValueError(f"label {text!r} has {what} outside $...$: typeset it as math")
    return text


def finish(ax, *, xlabel: str, ylabel: str, title: str | None = None, legend: bool | str = True) -> None:
    """Label axes (symbols in ``$...$``, units), optional title, and the legend.

    ``legend``: True (inside, at the emptiest place), ``"below"`` (under the axes, off the data),
    ``"right"`` (right of the axes) or False. Every label of the axes, title and legend is checked with
    :func:`check_label`.
    """
    if legend not in (True, False, "below", "right"):
        raise ValueError(f"legend must be True, False, 'below' or 'right', got {legend!r}")
    ax.set_xlabel(check_label(xlabel))
    ax.set_ylabel(check_label(ylabel))
    if title:
        ax.set_title(check_label(title))
    handles, labels = ax.get_legend_handles_labels()
    for label in labels:
        check_label(label)
    if not legend or not handles:
        return
    if legend == "below":
        for ncols in range(min(3, len(handles)), 0, -1):   # as many columns (up to 3) as the panel's width holds
            box = ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=ncols)
            if ncols == 1 or _panel_holds(ax, box):
                break
    elif legend == "right":
        ax.legend(loc="center left", bbox_to_anchor=(1.02, 0.5))
    else:
        ax.legend(loc="best")


def _panel_holds(ax, box) -> bool:
    """Whether the legend ``box`` is no wider than the figure's width over its panels' columns (the room a
    legend under one panel has once the layout is done)."""
    fig = ax.figure
    spec = ax.get_subplotspec()
    columns = spec.get_gridspec().ncols / len(spec.colspan) if spec is not None else 1
    wide = box.get_window_extent(fig.canvas.get_renderer()).width / fig.dpi
    return wide <= 0.95 * fig.get_figwidth() / columns


def legend_below(fig, axes=None, *, key: Sequence = (), ncols: int | None = None) -> None:
    """One legend for the whole figure, under its panels: the labelled artists of ``axes`` (every panel
    when None), each label once, then the style handles ``key`` (artists explaining a line style, e.g.
    :func:`memcap.experiments.mahdavi_common.style_key`). A figure legend, so that the layout keeps room
    for it and for a colour bar; ``ncols`` defaults to up to 3 columns."""
    axes = fig.axes if axes is None else list(np.ravel(axes))
    seen: dict[str, object] = {}
    pairs = [pair for ax in axes for pair in zip(*ax.get_legend_handles_labels())]
    for handle, label in pairs + [(h, h.get_label()) for h in key]:
        if not label.startswith("_") and label not in seen:
            seen[check_label(label)] = handle
    if not seen:
        raise ValueError("legend_below found no labelled artist in the figure and no key")
    fig.legend(list(seen.values()), list(seen.keys()), loc="outside lower center",
               ncols=ncols or min(3, len(seen)))


def label_line(ax, line, text: str, *, at: str | float = "end", offset: tuple[float, float] | None = None,
               **kw):
    """Name ``line`` (a ``Line2D``: the first element of what :func:`theory_line` returns, an ``axhline`` or
    an ``axvline``) directly on the axes: ``text`` in the line's colour at its last (``at="end"``) or first
    (``at="start"``) finite point, or at a fraction ``at`` in [0, 1] of the way from its first to its last
    point (counted in points of the line: halfway up an ``axvline`` is ``0.5``), shifted by ``offset`` points
    (default: 4 points beyond the end, before the start, above a point in between). For a panel with few
    lines, so the reader need not match colours against a legend. Returns the ``Annotation``."""
    from matplotlib.lines import Line2D

    if not isinstance(line, Line2D):
        raise TypeError(f"line must be a matplotlib Line2D, got {type(line).__name__}")
    if isinstance(at, bool) or not (at in ("start", "end") or (isinstance(at, (int, float)) and 0 <= at <= 1)):
        raise ValueError(f"at must be 'start', 'end' or a fraction in [0, 1], got {at!r}")
    fraction = {"start": 0.0, "end": 1.0}.get(at, at)
    default, ha, va = {"end": ((4.0, 0.0), "left", "center"),
                       "start": ((-4.0, 0.0), "right", "center")}.get(at, ((0.0, 4.0), "center", "bottom"))
    offset = default if offset is None else offset
    if not (isinstance(offset, tuple) and len(offset) == 2 and all(np.isfinite(offset))):
        raise ValueError(f"offset must be a pair of finite numbers of points, got {offset!r}")
    x = np.asarray(line.get_xdata(), dtype=float)
    y = np.asarray(line.get_ydata(), dtype=float)
    finite = np.isfinite(x) & np.isfinite(y)
    if not finite.any():
        raise ValueError("line has no finite point to label")
    x, y = x[finite], y[finite]
    t = fraction * (x.size - 1)                 # position along the line's points
    i = min(int(t), x.size - 2) if x.size > 1 else 0
    w = t - i
    point = (x[i], y[i]) if x.size == 1 else ((1 - w) * x[i] + w * x[i + 1], (1 - w) * y[i] + w * y[i + 1])
    kw.setdefault("ha", ha)
    kw.setdefault("va", va)
    # the line's own coordinates: data for a plotted line, axes fraction along an axhline or axvline
    return ax.annotate(check_label(text), point, xycoords=line.get_transform(), xytext=offset,
                       textcoords="offset points", color=line.get_color(), annotation_clip=False, **kw)
