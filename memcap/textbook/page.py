"""What the chapters use to show a result: refusals that must happen, tables, and numbers, sentences
and figures glued into the prose.

Chapters are executed when the book is built, and a cell that *demonstrates* something must fail the
build when the thing stops being true. :func:`expect_refusal` is the one way to show that ``memcap``
refuses an input: it prints the refusal, and raises if the call went through or failed for another
reason. :func:`table` turns rows into a Markdown table that the page typesets (math included), instead
of a fixed-width print that a narrow column cuts off. :func:`glue_sci` writes a small or large number the way running
text does
(:math:`7.8\\times 10^{-3}`, not ``7.8e-03``; :func:`memcap.notation.sci`), :func:`glue_md` glues a generated
sentence and :func:`glue_figure` a figure, for myst-nb's ``{glue:...}`` roles and directives (these three need
the book extra: myst-nb).

A glued figure carries a second drawing for phones: :func:`stack_for_phone` lays the same figure out
:data:`PHONE_WIDTH` inches wide with its panels in one column, and ``memcap.textbook.phone_figures``
serves it to narrow screens.
"""
from __future__ import annotations

import re
import textwrap
import warnings
from typing import Any, Callable, Sequence

from memcap.notation import sci

__all__ = ["expect_refusal", "table", "glue_sci", "glue_md", "glue_figure", "figure_svg", "prose_list",
           "stack_for_phone", "PHONE_WIDTH"]


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def expect_refusal(call: Callable[[], Any], match: str, *,
                   error: type[BaseException] | tuple[type[BaseException], ...] = ValueError,
                   quiet: bool = False) -> str:
    """Call ``call()`` and require that it raises ``error`` with a message matching ``match``.

    Prints ``Refused: <message>`` (unless ``quiet``), wrapped at 79 characters so that it fits the
    text column, and returns the message. Raises
    ``AssertionError`` if the call returns normally or its message does not match (``re.search``);
    any other exception propagates unchanged. Use it for every "the library refuses this" cell, so that
    the build fails if a check disappears::

        expect_refusal(
            lambda: memorize(contexts, queries, labels, heads=4, head_dim=3),
            match="Assumption 1")
    """
    if not callable(call):
        raise TypeError("call must be a callable taking no arguments (e.g. a lambda), "
                        f"got {type(call).__name__}")
    if not isinstance(match, str) or not match:
        raise TypeError(f"match must be a non-empty regular expression string, got {match!r}")
    errors = error if isinstance(error, tuple) else (error,)
    if not errors or not all(isinstance(e, type) and issubclass(e, BaseException) for e in errors):
        raise TypeError(f"error must be an exception class or a tuple of them, got {error!r}")
    try:
        pattern = re.compile(match)
    except re.error as exc:
        raise ValueError(f"match is not a valid regular expression: {exc}") from None
    names = " or ".join(e.__name__ for e in errors)
    try:
        result = call()
    except errors as exc:
        message = str(exc)
        if not pattern.search(message):
            raise AssertionError(
                f"expected a {names} whose message matches {match!r}, got {type(exc).__name__}: {message}"
            ) from exc
        if not quiet:
            # wrapped like the code above it, so that a long message fits the text column
            print(textwrap.fill(f"Refused: {message}", width=79, subsequent_indent="  ",
                                break_long_words=False, break_on_hyphens=False))
        return message
    raise AssertionError(f"expected the call to be refused with a {names} matching {match!r}, "
                         f"but it returned {_describe(result)}")


def glue_sci(name: str, value: float, digits: int = 1) -> None:
    """Glue ``value`` as inline math for prose: paste it with ``{glue:md}`name``` (not ``glue:text``)."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty str (the key the prose pastes), got {name!r}")
    from myst_nb import glue

    glue(name, _markdown(f"${sci(value, digits)}$"), display=False)


_MATH = re.compile(r"(?<!\\)\$[^$]+(?<!\\)\$")


def _pipe_safe(text: str) -> str:
    """``text`` with no bare ``|`` left for a pipe table to split a row on.

    Inside ``$...$`` the bars become ``\\Vert`` (for ``\\|``) and ``\\vert`` (for ``|``): a table row
    would split on the bare bar, and would strip the backslash of ``\\|`` (a norm read as ``|x|``).
    Outside math a bare ``|`` is escaped as ``\\|``.
    """
    out, last = [], 0
    for m in _MATH.finditer(text):
        out.append(re.sub(r"(?<!\\)\|", r"\\|", text[last:m.start()]))
        out.append(m.group().replace("\\|", "\\Vert ").replace("|", "\\vert "))
        last = m.end()
    out.append(re.sub(r"(?<!\\)\|", r"\\|", text[last:]))
    return "".join(out)


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return _pipe_safe(str(value)).replace("\n", " ")


def table(rows: Sequence[Sequence[Any]], header: Sequence[str], *, align: str | None = None):
    """A Markdown table the page typesets: ``header`` names the columns, ``rows`` hold the cells.

    Cells are written with ``str`` (format numbers before passing them); ``$...$`` in a cell is math.
    ``align`` is one letter per column, ``l``, ``c`` or ``r`` (default: left). Returns an
    ``IPython.display.Markdown`` object: make it the last expression of a cell, or ``glue`` it.
    """
    from IPython.display import Markdown

    header = list(header)
    if not header or not all(isinstance(h, str) for h in header):
        raise TypeError("header must be a non-empty sequence of column names (str)")
    width = len(header)
    rows = [list(r) for r in rows]
    for i, row in enumerate(rows):
        if len(row) != width:
            raise ValueError(f"rows[{i}] has {len(row)} cells but header has {width} columns")
    align = align or "l" * width
    if len(align) != width or set(align) - set("lcr"):
        raise ValueError(f"align must be one of l/c/r per column ({width} letters), got {align!r}")
    rule = {"l": ":--", "c": ":-:", "r": "--:"}
    lines = ["| " + " | ".join(_cell(h) for h in header) + " |", "|" + "|".join(rule[a] for a in align) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return Markdown("\n".join(lines))


def prose_list(items: Sequence[Any], conjunction: str = "and") -> str:
    """``['a', 'b', 'c'] -> 'a, b and c'``: a list for running text."""
    items = [str(i) for i in items]
    if not items:
        raise ValueError("items must not be empty")
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + f" {conjunction} " + items[-1]


def glue_md(name: str, text: str) -> None:
    """Glue ``text`` (Markdown, math in ``$...$``) for prose: paste it with ``{glue:md}`name:myst```."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty str (the key the prose pastes), got {name!r}")
    if not isinstance(text, str) or not text:
        raise ValueError(f"text must be a non-empty string, got {text!r}")
    from myst_nb import glue

    glue(name, _markdown(text), display=False)


def _markdown(text: str):
    """IPython's Markdown holding ``text`` as it is: ``Markdown(text)`` reads a file instead when ``text``
    names one (``Markdown(".")``, a clause's final full stop, fails: "Is a directory")."""
    from IPython.display import Markdown

    shown = Markdown("")
    shown.data = text
    return shown


def figure_svg(fig) -> str:
    """``fig`` as SVG text, sized in CSS pixels at the figure's own dpi (so it shows as large as the PNG it
    replaces) and marked with the smallest font of its visible text, in those pixels, as
    ``<!-- memcap-figure min-font-px="..." -->`` (the browser check scales it to the width shown).
    """
    import io

    from matplotlib.figure import Figure
    from matplotlib.text import Text

    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    fig.canvas.draw()
    sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None})
    svg = buffer.getvalue()
    px = fig.dpi / 72  # matplotlib writes pt; a CSS px is 1/96 in, the figure's pixel 1/dpi in
    head, body = svg.split("<svg", 1)
    attributes, rest = body.split(">", 1)
    attributes = re.sub(r'(width|height)="([0-9.]+)pt"',
                        lambda m: f'{m.group(1)}="{float(m.group(2)) * px:.1f}px"', attributes)
    mark = f'<!-- memcap-figure min-font-px="{min(sizes) * px if sizes else 0:.2f}" -->'
    return f"{head}<svg{attributes}>{mark}{rest}"


PHONE_WIDTH = 3.6
"""Inches: the width of a figure's phone variant (:func:`stack_for_phone`), 396 px at the figures' 110 dpi.
A figure on a phone gets the article column less its padding, 342 CSS px on a 390 px screen: 9-pt text
(13.75 px in the drawing) reads at 11.9 px there, and at 9.4 px on the narrowest phones (320 px)."""

_PANEL_HEIGHT = (1.6, 2.6)
"""Inches: the least and most height of a stacked panel's plotting area (its axes box)."""


def _renderer(fig):
    return fig._get_renderer()


def _lay_out(fig) -> None:
    """Run the layout without rendering; constrained layout's warnings about a trial size are dropped
    (the final drawing, by :func:`figure_svg`, is done at a size that fits and would show them)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fig.draw_without_rendering()


_MATH_SPACE = "\x00"


def _wrapped(text: str, chars: int) -> str:
    """``text`` broken into lines of about ``chars`` characters at spaces outside ``$...$`` (mathtext is
    laid out line by line, so a formula must stay on one line)."""
    protected = re.sub(r"\$[^$]*\$", lambda m: m.group().replace(" ", _MATH_SPACE), text.replace("\n", " "))
    lines = textwrap.wrap(protected, width=max(chars, 8), break_long_words=False, break_on_hyphens=False)
    return "\n".join(lines).replace(_MATH_SPACE, " ") if lines else text


def _fit_text(artist, limit: float, renderer, *, vertical: bool = False) -> None:
    """Break the text of ``artist`` into lines until it is at most ``limit`` display pixels long (its width,
    or its height for rotated text such as a y label); a text that does not fit on one line stays whole."""
    text = artist.get_text()
    if not artist.get_visible() or not text.strip():
        return
    for _ in range(6):
        box = artist.get_window_extent(renderer)
        length = box.height if vertical else box.width
        if length <= limit:
            return
        longest = max(len(line) for line in artist.get_text().split("\n"))
        chars = int(longest * limit / length * 0.95)
        new = _wrapped(text, chars)
        if new == artist.get_text() or chars < 8:
            return
        artist.set_text(new)


def _set_legend_columns(legend, ncols: int) -> None:
    """Re-pack the entries of ``legend`` into ``ncols`` columns (``Legend.set_ncols`` only takes effect
    when a legend is made: the entries, handles and all, are moved into new column boxes)."""
    from matplotlib.offsetbox import VPacker

    box = legend._legend_handle_box
    columns = box.get_children()
    items = [item for column in columns for item in column.get_children()]
    ncols = max(1, min(ncols, len(items)))
    sizes = [len(items) // ncols + (k < len(items) % ncols) for k in range(ncols)]
    start, packed = 0, []
    for size in sizes:
        column = VPacker(pad=columns[0].pad, sep=columns[0].sep, align=columns[0].align,
                         children=items[start:start + size])
        column.set_figure(legend.get_figure(root=False))
        packed.append(column)
        start += size
    box._children = packed
    legend._ncols = ncols
    legend.stale = True


def _fit_legend(legend, limit: float, renderer) -> None:
    """Fewer columns, then labels broken into lines, until ``legend`` is at most ``limit`` pixels wide."""
    while legend.get_window_extent(renderer).width > limit and len(legend._legend_handle_box.get_children()) > 1:
        _set_legend_columns(legend, len(legend._legend_handle_box.get_children()) - 1)
    width = legend.get_window_extent(renderer).width
    if width > limit and legend.texts:
        room = limit - (width - max(t.get_window_extent(renderer).width for t in legend.texts))
        for text in legend.texts:
            _fit_text(text, max(room, 40.0), renderer)


def _is_colorbar(ax, fig) -> bool:
    return hasattr(ax, "_colorbar") or hasattr(ax, "_colorbar_info") or any(
        ax in getattr(other, "_colorbars", ()) for other in fig.axes)


def _scale_narrow(fig, width: float):
    """The fallback of :func:`stack_for_phone` for a figure whose panels it cannot move (axes placed by hand
    with ``fig.add_axes``, or none): the same layout, narrower and proportionally shorter, text kept at its
    size (the layout engine, when there is one, makes room for it)."""
    w, h = fig.get_size_inches()
    fig.set_size_inches(width, h * max(width / w, 0.75) if w > width else h)
    _lay_out(fig)
    return fig


def stack_for_phone(fig, *, width: float = PHONE_WIDTH):
    """Lay ``fig`` out again for a phone, in place, and return it: :data:`PHONE_WIDTH` (or ``width``) inches
    wide, its panels stacked in one column in reading order (row by row).

    A panel is an axes placed by a grid (:func:`memcap.plotting.figure`); its colour bars and insets go with
    it, twin axes share its row, and tick labels that shared axes hid beside a neighbour are shown again.
    Each panel's plotting area keeps the height it had on the desktop, a little less for a full-width panel
    (between 1.6 and 2.6 in). Legends, the figure's own (:func:`memcap.plotting.legend_below`) and the
    panels', get fewer columns (a panel's legend placed at its right or below it goes under its x axis),
    and titles, axis labels and legend entries still too long for the narrow figure are broken into lines
    (at spaces, never inside ``$...$``). A figure with an axes placed by hand (``fig.add_axes``) cannot be
    restacked generically: it is only made narrower (its layout kept, in proportion). Called by
    :func:`glue_figure` after the desktop drawing is made; ``width`` is in inches, from 2 to the desktop's 6.25.
    """
    from matplotlib.figure import Figure
    from matplotlib.gridspec import GridSpec

    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    if isinstance(width, bool) or not isinstance(width, (int, float)) or not 2 <= width <= 6.25:   # NaN too
        raise ValueError(f"width must be a number of inches in [2, 6.25] (a phone's figure), got {width!r}")
    width = float(width)
    colorbars = [ax for ax in fig.axes if _is_colorbar(ax, fig)]
    panels = [ax for ax in fig.axes if ax not in colorbars]
    if (not panels or any(ax.get_subplotspec() is None for ax in panels)
            or any(ax.get_subplotspec() is not None for ax in colorbars)
            or fig.get_layout_engine() is None):
        # fig.add_axes (or a colour bar placed by a grid, or no layout engine to make room): not movable
        return _scale_narrow(fig, width)
    _lay_out(fig)  # the desktop layout, if the figure was not drawn yet
    old_w, old_h = fig.get_size_inches()

    groups: dict[tuple, list] = {}
    for ax in panels:   # twin axes share their panel's grid cell
        spec = ax.get_subplotspec()
        groups.setdefault((id(spec.get_gridspec()), spec.num1, spec.num2), []).append(ax)
    grids = {key[0] for key in groups}

    def reading_order(item):
        spec = item[1][0].get_subplotspec()
        if len(grids) == 1:
            return (spec.rowspan.start, spec.colspan.start)
        box = item[1][0].get_position(original=True)
        return (-round(box.y1, 2), box.x0)

    shown = [axes for _, axes in sorted(groups.items(), key=reading_order)
             if any(ax.get_visible() for ax in axes)]
    hidden = [ax for axes in groups.values() if not any(a.get_visible() for a in axes) for ax in axes]
    if not shown:
        return _scale_narrow(fig, width)
    # the height of a panel's plotting area: the desktop's, a little less where the panel was wide
    boxes = [axes[0].get_position(original=True) for axes in shown]
    desk_h = sorted(b.height * old_h for b in boxes)[len(boxes) // 2]
    desk_w = sorted(b.width * old_w for b in boxes)[len(boxes) // 2]
    target = min(max(desk_h * min(max((width - 0.9) / desk_w, 0.75), 1.0), _PANEL_HEIGHT[0]), _PANEL_HEIGHT[1])

    if len(grids) == 1:
        _name_places(shown)
    grid = GridSpec(len(shown), 1, figure=fig)
    for row, axes in enumerate(shown):
        for ax in axes:
            ax.set_subplotspec(grid[row, 0])
    for ax in hidden:
        ax.set_subplotspec(grid[len(shown) - 1, 0])
        ax.set_in_layout(False)
    for axes in shown:
        for ax in axes:
            _show_shared_tick_labels(ax)

    n = len(shown)
    height = n * (target + 1.4) + 0.6
    fig.set_size_inches(width, height)
    renderer = _renderer(fig)
    limit = 0.96 * fig.bbox.width
    for legend in list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]:
        _fit_legend(legend, limit, renderer)
    for axes in shown:
        for ax in axes:
            for title in (ax.title, ax._left_title, ax._right_title):
                _fit_text(title, limit, renderer)
            _fit_text(ax.xaxis.label, limit, renderer)
            _fit_text(ax.yaxis.label, target * fig.dpi, renderer, vertical=True)
    for text in fig.texts:
        _fit_text(text, limit, renderer)
    _lay_out(fig)
    for axes in shown:
        for ax in axes:
            _legend_under_panel(ax, target * fig.dpi, limit, renderer)
    for _ in range(6):   # constrained layout gives every row the same plotting height: solve for it
        _lay_out(fig)
        have = min(axes[0].get_position(original=True).height * height for axes in shown)
        if abs(have - target) < 0.01:
            break
        height = max(height + n * (target - have), n * target)
        fig.set_size_inches(width, height)
    return fig


_COLUMN_WORDS = {2: ("left", "right"), 3: ("left", "middle", "right")}
_ROW_WORDS = {2: ("top", "bottom"), 3: ("top", "middle", "bottom")}


def _name_places(shown: list[list]) -> None:
    """Captions point at panels by where they sit on the desktop ("Left:", "top right"); stacked in one
    column, each panel of a grid with several columns says so in its title ("Left: ..." or "Left")."""
    rows, cols = shown[0][0].get_subplotspec().get_gridspec().get_geometry()
    if cols < 2:
        return   # one column already: stacking keeps every panel where the caption says
    for axes in shown:
        if not any(ax.axison for ax in axes):
            continue   # a panel with its axis turned off (one holding only a legend) has no place to name
        spec = axes[0].get_subplotspec()
        place = " ".join(word for word in (_place(spec.rowspan, rows, _ROW_WORDS, "row"),
                                           _place(spec.colspan, cols, _COLUMN_WORDS, "column")) if word)
        if place:
            title = axes[0].get_title()
            axes[0].set_title(f"{place.capitalize()}: {title}" if title else place.capitalize())


def _place(span: range, total: int, words: dict[int, tuple[str, ...]], name: str) -> str:
    """The word for the row (or column) ``span`` of a grid of ``total`` rows: '' when it spans them all."""
    if len(span) == total:
        return ""
    return words[total][span.start] if total in words else f"{name} {span.start + 1}"


def _legend_under_panel(ax, panel_px: float, limit: float, renderer) -> None:
    """An axes legend placed outside its axes, at the right (``finish(legend="right")``: no room beside a
    panel on a phone) or below it (``finish(legend="below")``), is put under the panel's x axis, clear of
    its tick labels and label whatever the panel's height (``panel_px``, display pixels, the height the
    layout is then solved for), with as many columns as fit ``limit``."""
    legend = ax.get_legend()
    if legend is None or not legend.get_visible():
        return
    anchor, box = legend.get_bbox_to_anchor(), ax.bbox
    right, below = anchor.x0 >= box.x1 - 1, anchor.y1 <= box.y0 + 1
    if not (right or below):
        return
    decorations = ax.xaxis.get_tightbbox(renderer)
    depth = box.y0 - decorations.y0 if decorations is not None and decorations.height > 0 else 0.0
    clear = -(max(depth, 0.0) + 0.06 * ax.get_figure(root=True).dpi) / panel_px
    y = clear if right else min(clear, (anchor.y0 - box.y0) / box.height)
    legend.set_bbox_to_anchor((0.5, y), transform=ax.transAxes)
    legend.set_loc("upper center")
    if right:
        _set_legend_columns(legend, 3)
        _fit_legend(legend, limit, renderer)


def _show_shared_tick_labels(ax) -> None:
    """Tick labels that sharing an axis hid (``sharex``/``sharey``: only the outer panels of a grid label
    it) are shown again: once stacked, each panel stands on its own."""
    for axis, side in ((ax.xaxis, "labelbottom"), (ax.yaxis, "labelleft")):
        shared = (ax.get_shared_x_axes() if axis is ax.xaxis else ax.get_shared_y_axes()).get_siblings(ax)
        if len(shared) < 2 or not axis.get_visible():
            continue
        if axis.get_label_position() != side.removeprefix("label"):
            continue
        if not axis.get_tick_params(which="major").get(side, True):
            axis.set_tick_params(which="both", **{side: True})
            axis.offsetText.set_visible(True)


def glue_figure(name: str, fig) -> None:
    """Hand the Matplotlib figure ``fig`` to myst-nb's ``glue`` under ``name``, as SVG (:func:`figure_svg`:
    sharp at any zoom and on high-density screens), and close it, so that it is drawn once, where the
    chapter's ``{glue:figure}`` directive places it (with its number and caption).

    The SVG carries, in a comment, the figure's phone variant: the same figure laid out again by
    :func:`stack_for_phone` (panels in one column, :data:`PHONE_WIDTH` inches wide), which
    ``memcap.textbook.phone_figures`` writes beside it and offers to narrow screens when the site is built."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty str (the key the chapter's glue:figure names), got {name!r}")
    import matplotlib.pyplot as plt
    from IPython.display import SVG
    from myst_nb import glue

    from memcap.textbook.phone_figures import embed_phone_variant

    svg = figure_svg(fig)
    svg = embed_phone_variant(svg, figure_svg(stack_for_phone(fig)))   # the desktop drawing is written first
    glue(name, SVG(data=svg), display=False)
    plt.close(fig)
