"""The tables of the experiment chapters that compare the paper's grid (``PAPER``) with the quick one (``QUICK``).

Each function takes the figure modules (each with ``LABEL``, ``PAPER`` and ``QUICK``, see
:mod:`memcap.experiments`) and returns a :class:`GridTable`, whose rows hold Markdown cells (math allowed)
for :func:`memcap.textbook.page.table`; the chapter shows it with
``table(t.rows, t.header, align=t.align)``.
"""
from __future__ import annotations

from types import ModuleType
from typing import NamedTuple, Sequence

NBSP = "\u00a0"                     # no line break after "Fig."
THOUSANDS = "\u202f"                # narrow no-break space: "10 000" never breaks between its groups
JOINER = "\u2060"                   # word joiner: "300–600" never breaks at its dash


def number(n: int) -> str:
    """``n`` with its thousands separated by narrow no-break spaces ('10 000'), for table cells on a phone."""
    return f"{n:,}".replace(",", THOUSANDS)


def span(low: int, high: int) -> str:
    """'low–high' (or 'low' when equal), numbers by :func:`number`, never broken at the dash."""
    return number(low) if low == high else f"{number(low)}{JOINER}–{JOINER}{number(high)}"

DANA_SYMBOLS = {"vocab": "N", "dim": "d", "head_dim": "d_h", "heads": "H", "dims": "d = d_h", "seq_len": "S"}


class GridTable(NamedTuple):
    """Rows of Markdown cells, the column names, and one alignment letter per column."""

    rows: list[list]
    header: list[str]
    align: str


def _checked(figures: Sequence[ModuleType]) -> list[ModuleType]:
    figures = list(figures) if isinstance(figures, (list, tuple)) else figures
    if not isinstance(figures, list) or not figures:
        raise TypeError(f"figures must be a non-empty list or tuple of figure modules, got {figures!r}")
    for m in figures:
        missing = [a for a in ("LABEL", "PAPER", "QUICK") if not hasattr(m, a)]
        if missing:
            raise TypeError(f"figures must be figure modules with LABEL, PAPER and QUICK; {m!r} lacks "
                            f"{', '.join(missing)}")
    return figures


def quick_differs(figures: Sequence[ModuleType], fields: Sequence[str]) -> list[str]:
    """Names (:func:`figure_name`) of the ``figures`` whose quick grid differs from the paper's in one of
    ``fields``, each looked up in the grid's ``"model"`` dict, else at its top level (a swept list)."""
    fields = list(fields)
    if not fields or not all(isinstance(f, str) for f in fields):
        raise ValueError(f"fields must be a non-empty list of field names, got {fields!r}")

    def field(grid: dict, key: str) -> object:
        return grid.get("model", {}).get(key, grid.get(key))

    return [figure_name(m.LABEL) for m in _checked(figures)
            if any(field(m.QUICK, f) != field(m.PAPER, f) for f in fields)]


def figure_list(names: Sequence[str]) -> str:
    """'Fig. 2(a)', 'Figs. 2(a) and 3', 'Figs. 2(a), 2(b) and 3' from :func:`figure_name` names."""
    names = list(names)
    if not names or not all(isinstance(n, str) and n.startswith("Fig.") for n in names):
        raise ValueError(f"names must be a non-empty list of figure names ('Fig. 2(a)'), got {names!r}")
    if len(names) == 1:
        return names[0]
    bare = [n.removeprefix("Fig.").lstrip(NBSP + " ") for n in names]
    return f"Figs.{NBSP}" + ", ".join(bare[:-1]) + " and " + bare[-1]


def figure_name(label: str) -> str:
    """A figure label's paper name: 'mha-fig-2a' -> 'Fig. 2(a)', 'aot-fig-3' -> 'Fig. 3' (no-break space)."""
    if not isinstance(label, str) or "-fig-" not in label or not label.rsplit("-", 1)[1]:
        raise ValueError(f"label must look like 'mha-fig-2a', got {label!r}")
    key = label.rsplit("-", 1)[1]
    name = f"{key[0]}({key[1]})" if len(key) == 2 else key
    return f"Fig.{NBSP}{name}"


def _arrow(paper, quick, fmt: str = "{:,}") -> str:
    """'$64 \\to 16$', thousands separated by thin spaces."""
    return f"${fmt.format(paper)} \\to {fmt.format(quick)}$".replace(",", r"\,")


def _sizes(grid: dict) -> str:
    """The range of the dataset sizes T of a Mahdavi grid (every field named '...examples...')."""
    ts = [t for k, v in grid.items() if "examples" in k for t in (v.values() if isinstance(v, dict) else v)]
    return span(min(ts), max(ts))


def _to(paper: str, quick: str) -> str:
    """'paper → quick' for a narrow table cell (H, n): it breaks after the arrow, never before it."""
    return f"{paper}{NBSP}→ {quick}"


def _extent(grid: dict, key: str) -> str:
    """The heads H (``key`` 'heads') or context sizes n ('context_size') of a Mahdavi grid: the range of a
    swept list, the values of a dict of T per H (Fig. 3's), or the model's fixed value ('–' if none)."""
    if key in grid:
        values = grid[key]
    elif key in grid["model"]:
        values = grid["model"][key]
    elif key == "heads" and isinstance(grid.get("examples"), dict):
        return f",{NBSP}".join(number(h) for h in grid["examples"])
    else:
        return "–"
    values = list(values) if isinstance(values, (list, tuple)) else [values]
    return span(min(values), max(values))


def mahdavi_profiles(figures: Sequence[ModuleType]) -> GridTable:
    """One row per Mahdavi et al. figure: H, n, the range of T, Adam steps, learning rate and seeds, each as
    'paper -> quick' (the embedding width d, the same in every figure, is left to the prose: with it the
    table is wider than the desktop column)."""
    rows = []
    for m in _checked(figures):
        p, q = m.PAPER, m.QUICK
        rows.append([figure_name(m.LABEL),
                     *(_to(_extent(p, key), _extent(q, key)) for key in ("heads", "context_size")),
                     f"{_sizes(p)} → {_sizes(q)}",   # wide enough to break after the arrow
                     _arrow(p["train"]["steps"], q["train"]["steps"]),
                     _arrow(p["train"]["lr"], q["train"]["lr"], "{:g}"), _arrow(len(p["seeds"]), len(q["seeds"]))])
    return GridTable(rows, ["figure", "$H$", "$n$", "$T$", "Adam steps", "learning rate", "seeds"], "lrrrrrr")


def _values(v: list) -> str:
    """All values of a short list or of one without a constant step; the first two, dots and the last of a
    long evenly spaced one (the dots stand for exactly the values the step gives)."""
    even = len({b - a for a, b in zip(v, v[1:])}) == 1
    shown = v if len(v) <= 6 or not even else [v[0], v[1], "\\dots", v[-1]]
    return ", ".join(str(x) for x in shown)


def _fixed(config: dict) -> str:
    """The model fields a Dana et al. grid keeps fixed (the sequence length is the same everywhere)."""
    return ", ".join(f"${DANA_SYMBOLS[k]} = {v}$" for k, v in config["model"].items() if k != "seq_len")


def _swept(config: dict) -> str:
    """The swept values of a Dana et al. grid."""
    return ", ".join(f"${DANA_SYMBOLS[k]} \\in \\{{{_values(v)}\\}}$" for k, v in config.items()
                     if k in DANA_SYMBOLS and isinstance(v, list) and len(v) > 1)


def _recipe(config: dict) -> list:
    """Steps, batch (or 'full'), learning rate and number of seeds of a grid."""
    t = config["train"]
    batch = "full" if t["batch_size"] is None else t["batch_size"]
    return [f"${t['steps']:,}$".replace(",", "\\,"), batch, f"{t['lr']:g}", len(config["seeds"])]


def dana_profiles(figures: Sequence[ModuleType]) -> GridTable:
    """Two rows per Dana et al. figure (its paper grid, then the quick one): the fixed model fields, the
    swept values, steps, batch, learning rate and seeds. Figure and profile share one column, so that the
    table fits the text column."""
    rows = []
    for m in _checked(figures):
        rows.append([f"{figure_name(m.LABEL)} paper", _fixed(m.PAPER), _swept(m.PAPER), *_recipe(m.PAPER)])
        rows.append(["quick", _fixed(m.QUICK), _swept(m.QUICK), *_recipe(m.QUICK)])
    return GridTable(rows, ["figure, profile", "fixed", "swept", "steps", "batch", "lr", "seeds"], "lllrrrr")
