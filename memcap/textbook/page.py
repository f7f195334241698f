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
"""
from __future__ import annotations

import re
import textwrap
from typing import Any, Callable, Sequence

from memcap.notation import sci

__all__ = ["expect_refusal", "table", "glue_sci", "glue_md", "glue_figure", "figure_svg", "prose_list"]


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
    from IPython.display import Markdown
    from myst_nb import glue

    glue(name, Markdown(f"${sci(value, digits)}$"), display=False)


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
    from IPython.display import Markdown
    from myst_nb import glue

    glue(name, Markdown(text), display=False)


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


def glue_figure(name: str, fig) -> None:
    """Hand the Matplotlib figure ``fig`` to myst-nb's ``glue`` under ``name``, as SVG (:func:`figure_svg`:
    sharp at any zoom and on high-density screens), and close it, so that it is drawn once, where the
    chapter's ``{glue:figure}`` directive places it (with its number and caption)."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty str (the key the chapter's glue:figure names), got {name!r}")
    import matplotlib.pyplot as plt
    from IPython.display import SVG
    from myst_nb import glue

    svg = figure_svg(fig)
    glue(name, SVG(data=svg), display=False)
    plt.close(fig)
