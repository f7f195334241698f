"""One visual style for every figure of the book.

Theory (a bound or closed form) is drawn in the ``THEORY`` colour with dashed lines, measurements in
``MEASURED`` with markers, constructions in ``CONSTRUCTED``. Use :func:`figure` to get a
figure with the book's size and fonts, and :func:`theory_line` / :func:`measured` to draw.
"""
from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np

THEORY = "#c0392b"
MEASURED = "#1f4e79"
CONSTRUCTED = "#27854a"
RANDOM = "#8e7cc3"
PALETTE = ("#1f4e79", "#e08a1e", "#27854a", "#8e7cc3", "#7f7f7f", "#17becf", "#bcbd22")
"""Colours for several measured series (e.g. one per dataset size T)."""

WIDTH, HEIGHT = 6.4, 3.8

_RC = {
    "figure.dpi": 110,
    "savefig.dpi": 110,
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 8.5,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "lines.linewidth": 1.8,
    "figure.constrained_layout.use": True,
}


def use_style() -> None:
    """Apply the book's matplotlib settings (idempotent)."""
    plt.rcParams.update(_RC)


def figure(ncols: int = 1, nrows: int = 1, *, width: float | None = None, height: float | None = None):
    """A ``(fig, axes)`` pair in the book's style; ``axes`` is a single Axes when ``ncols == nrows == 1``."""
    if ncols < 1 or nrows < 1:
        raise ValueError(f"ncols and nrows must be >= 1, got ncols={ncols}, nrows={nrows}")
    use_style()
    w = width if width is not None else WIDTH * (1 if ncols == 1 else min(1.6, 0.62 * ncols + 0.4))
    h = height if height is not None else HEIGHT * nrows * (1 if nrows == 1 else 0.8)
    fig, axes = plt.subplots(nrows, ncols, figsize=(w, h), squeeze=True)
    return fig, axes


def theory_line(ax, x: Sequence[float], y: Sequence[float], label: str, *, color: str = THEORY, **kw):
    """Draw a bound or closed form: dashed, in the theory colour, labelled with the formula."""
    return ax.plot(np.asarray(x), np.asarray(y), linestyle="--", color=color, label=label, **kw)


def measured(ax, x: Sequence[float], y: Sequence[float], label: str, *, color: str = MEASURED,
             yerr: Sequence[float] | None = None, marker: str = "o", **kw):
    """Draw measurements: markers joined by a thin line, with optional error bars."""
    if yerr is not None:
        return ax.errorbar(np.asarray(x), np.asarray(y), yerr=np.asarray(yerr), color=color, marker=marker,
                           markersize=4, linewidth=1.2, capsize=2, label=label, **kw)
    return ax.plot(np.asarray(x), np.asarray(y), color=color, marker=marker, markersize=4, linewidth=1.2,
                   label=label, **kw)


def finish(ax, *, xlabel: str, ylabel: str, title: str | None = None, legend: bool = True) -> None:
    """Label axes (with symbols and units), optional title, legend outside the data when crowded."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    if legend and ax.get_legend_handles_labels()[0]:
        ax.legend(frameon=False)


def glue_figure(name: str, fig) -> None:
    """Hand ``fig`` to myst-nb's ``glue`` under ``name`` and close it, so it is drawn once, where the
    chapter's ``{glue:figure}`` directive places it (with its number and caption)."""
    from myst_nb import glue

    glue(name, fig, display=False)
    plt.close(fig)
