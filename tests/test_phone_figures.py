"""Figures for phones (issue 33): every glued figure has a second drawing, its panels stacked in one column and
narrow enough that its smallest text reads at 9 CSS px or more in a phone's column, and the built pages offer it
to narrow screens in a ``<picture>`` (memcap.textbook.page.stack_for_phone, memcap.textbook.phone_figures).
"""
from __future__ import annotations

import re
import warnings

import matplotlib
import numpy as np
import pytest
from matplotlib.lines import Line2D

from memcap import plotting
from memcap.textbook import phone_figures
from memcap.textbook.page import PHONE_WIDTH, figure_svg, stack_for_phone

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PHONE_COLUMN_PX = 342
"""CSS px a figure gets on a 390 px screen: the article column (358 px) less the figure's padding (measured in
Chromium on the built site)."""
MIN_TEXT_PX = 9


def _size(svg: str) -> tuple[float, float]:
    found = re.search(r'<svg[^>]* width="([0-9.]+)px" height="([0-9.]+)px"', svg)
    return float(found.group(1)), float(found.group(2))


def _min_font(svg: str) -> float:
    return float(re.search(r'<!-- memcap-figure min-font-px="([0-9.]+)" -->', svg).group(1))


def _lines(ax, n=2, label="measured"):
    for k in range(n):
        plotting.measured(ax, [1, 2, 3], [k, 1.5 + k, 2.5], f"{label} {k}" if n > 1 else label)


def _one():
    fig, ax = plotting.figure()
    plotting.theory_line(ax, [1, 2, 3], [1, 2, 3], "Theorem 1: $H(r-1)+1$")
    _lines(ax, 1)
    plotting.finish(ax, xlabel="heads $H$", ylabel="rank")
    return fig


def _two():
    fig, axes = plotting.figure(ncols=2, sharey=True)
    for ax, title in zip(axes, ("left", "right")):
        _lines(ax)
        plotting.finish(ax, xlabel="heads $H$", ylabel="rank", title=title, legend="below")
    return fig


def _grid():
    fig, axes = plotting.figure(ncols=2, nrows=2, height=6.6)
    for k, ax in enumerate(axes.ravel()):
        if k == 1:
            image = ax.imshow(np.arange(25.0).reshape(5, 5), aspect="auto")
            fig.colorbar(image, ax=ax, label="$a^h_s$")
        else:
            _lines(ax)
        plotting.finish(ax, xlabel=f"x of panel {k}", ylabel="y", title=f"panel {k}", legend=False)
    return fig


def _below():
    fig, axes = plotting.figure(ncols=2)
    for ax in axes:
        for k, color in enumerate(plotting.series_colors(5)):
            plotting.measured(ax, [1, 2, 3], [k, 1.5 + k, 2.5], f"$T = {10 ** k}$", color=color)
        plotting.finish(ax, xlabel="heads $H$", ylabel="accuracy", legend=False)
    key = [Line2D([], [], color="k", linestyle="--",
                  label="Mahdavi et al.'s Theorem 1: guaranteed accuracy (top), expected MSE (bottom)")]
    plotting.legend_below(fig, key=key)
    return fig


FIGURES = {"one panel": (_one, 1), "two panels": (_two, 2), "2x2 with a colour bar": (_grid, 4),
           "legend_below": (_below, 2)}


def _boxes(fig):
    """Pixel boxes (figure coordinates) of the panels, in the order of fig.axes."""
    renderer = fig._get_renderer()
    return [ax.get_window_extent(renderer) for ax in fig.axes if ax.get_subplotspec() is not None]


@pytest.mark.parametrize("name", FIGURES)
def test_the_phone_variant_is_one_narrow_column_with_readable_text(name):
    make, panels = FIGURES[name]
    fig = make()
    desktop = figure_svg(fig)
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # a layout warning fails the book's build
        phone = figure_svg(stack_for_phone(fig))
    try:
        width, height = _size(phone)
        assert width == pytest.approx(PHONE_WIDTH * plotting.DPI, abs=1) and width < _size(desktop)[0]
        assert 3.6 * plotting.DPI - 1 <= width <= 4.0 * plotting.DPI
        # its smallest text, shown at the phone column's width, is at least 9 CSS px
        assert _min_font(phone) * min(1.0, PHONE_COLUMN_PX / width) >= MIN_TEXT_PX
        # one column, top to bottom in reading order, every panel of a usable height, inside the figure
        boxes = _boxes(fig)
        assert len(boxes) == panels
        assert len({round(b.x0) for b in boxes}) == 1, [b.x0 for b in boxes]
        assert all(upper.y0 > lower.y1 for upper, lower in zip(boxes, boxes[1:])), "not stacked in order"
        assert all(b.height >= 1.5 * plotting.DPI for b in boxes)
        renderer = fig._get_renderer()
        everything = [fig.get_tightbbox(renderer)]
        assert everything[0].x0 >= -1 and everything[0].x1 <= width / plotting.DPI + 0.01
        # every legend fits the figure's width
        legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
        for legend in legends:
            box = legend.get_window_extent(renderer)
            assert box.x0 >= -1 and box.x1 <= fig.bbox.width + 1, (box, fig.bbox)
        assert height > 0
    finally:
        plt.close(fig)


def test_stacking_keeps_colour_bars_and_shows_shared_tick_labels():
    fig = _grid()
    stack_for_phone(fig)
    renderer = fig._get_renderer()
    colorbar = next(ax for ax in fig.axes if hasattr(ax, "_colorbar"))
    panel = fig.axes[1]
    bar, box = colorbar.get_window_extent(renderer), panel.get_window_extent(renderer)
    assert bar.x0 >= box.x1 and bar.y0 < box.y1 and bar.y1 > box.y0, "the colour bar left its panel"
    plt.close(fig)
    fig = _two()
    stack_for_phone(fig)
    right = fig.axes[1]
    assert right.yaxis.get_tick_params()["labelleft"], "the right panel of sharey lost its tick labels"
    plt.close(fig)


def test_stacked_panels_say_where_they_sat_so_that_captions_still_point_at_them():
    """A caption says "Left: ..." or "top right"; on a phone the panels are stacked, so each says where it
    was on the desktop. Panels of one column keep their titles: stacking does not move them."""
    from memcap import plotting

    titles = {}
    for rows, cols in ((1, 2), (2, 2), (1, 3), (2, 1)):
        fig, axes = (plotting.figure(nrows=rows, ncols=cols) if cols <= plotting.MAX_COLUMNS
                     else plt.subplots(rows, cols, layout="constrained"))
        for k, ax in enumerate(list(getattr(axes, "flat", [axes]))):
            ax.plot([0, 1], [0, k])
            if k == 0:
                ax.set_title("accuracy")
        stack_for_phone(fig)
        titles[rows, cols] = [ax.get_title() for ax in fig.axes]
        plt.close(fig)
    assert titles[1, 2] == ["Left: accuracy", "Right"]
    assert titles[2, 2] == ["Top left: accuracy", "Top right", "Bottom left", "Bottom right"]
    assert titles[1, 3] == ["Left: accuracy", "Middle", "Right"]
    assert titles[2, 1] == ["accuracy", ""]
    fig, axes = plotting.figure(nrows=2, ncols=2)   # the last panel holds only the others' legend
    for ax in axes.flat[:3]:
        ax.plot([0, 1], [0, 1], label="curve")
    axes.flat[3].axis("off")
    axes.flat[3].legend(*axes.flat[0].get_legend_handles_labels())
    stack_for_phone(fig)
    assert [ax.get_title() for ax in fig.axes] == ["Top left", "Top right", "Bottom left", ""]
    plt.close(fig)


def test_a_legend_too_wide_for_a_phone_gets_fewer_columns_and_broken_lines():
    fig = _below()
    legend = fig.legends[0]
    assert len(legend._legend_handle_box.get_children()) == 3
    stack_for_phone(fig)
    assert len(legend._legend_handle_box.get_children()) < 3
    long = [t.get_text() for t in legend.get_texts() if "Mahdavi" in t.get_text()]
    assert long and "\n" in long[0] and all(line.count("$") % 2 == 0 for line in long[0].split("\n"))
    assert len(legend.legend_handles) == 6
    plt.close(fig)


def test_a_legend_beside_a_panel_goes_under_it_on_a_phone():
    fig, axes = plotting.figure(nrows=2)
    for ax in axes:
        plotting.theory_line(ax, [1, 2, 3], [1, 3, 5], "upper bound $H(n-1)+1$")
        plotting.measured(ax, [1, 2, 3], [1, 2, 5], "Gaussian weights $\\times 10$", linestyle="none")
        plotting.finish(ax, xlabel="heads $H$", ylabel="rank($Z$)", legend="right")
    figure_svg(fig)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        figure_svg(stack_for_phone(fig))
    renderer = fig._get_renderer()
    for ax in axes:
        legend, box = ax.get_legend().get_window_extent(renderer), ax.get_window_extent(renderer)
        below_ticks = ax.xaxis.get_tightbbox(renderer).y0
        assert legend.y1 <= below_ticks and box.width > 0.7 * fig.bbox.width, (legend, box)
        assert legend.x0 >= 0 and legend.x1 <= fig.bbox.width
    plt.close(fig)


def test_a_figure_with_hand_placed_axes_is_only_made_narrower():
    fig = plt.figure(figsize=(plotting.WIDTH, 3.4), dpi=plotting.DPI, layout="none")
    ax = fig.add_axes((0.1, 0.15, 0.85, 0.8))
    ax.plot([0, 1], [0, 1])
    stack_for_phone(fig)
    assert fig.get_size_inches()[0] == pytest.approx(PHONE_WIDTH)
    assert tuple(np.round(ax.get_position().bounds, 3)) == (0.1, 0.15, 0.85, 0.8)
    plt.close(fig)
    empty = plt.figure()
    stack_for_phone(empty)   # a figure without axes (glue_figure accepts one)
    plt.close(empty)


def test_stack_for_phone_refuses_bad_input():
    fig = _one()
    with pytest.raises(TypeError, match="fig must be a matplotlib Figure, got Axes"):
        stack_for_phone(fig.axes[0])
    for bad in (0, 1.5, 7, float("nan"), True, "3.6"):
        with pytest.raises(ValueError, match=r"width must be a number of inches in \[2, 6.25\]"):
            stack_for_phone(fig, width=bad)
    plt.close(fig)


# --- the pages --------------------------------------------------------------------------------------

def _phone_svg() -> tuple[str, str]:
    fig = _two()
    desktop = figure_svg(fig)
    phone = figure_svg(stack_for_phone(fig))
    plt.close(fig)
    return desktop, phone


@pytest.fixture(scope="module")
def drawings():
    return _phone_svg()


def test_the_phone_drawing_travels_inside_the_desktop_svg(drawings):
    desktop, phone = drawings
    both = phone_figures.embed_phone_variant(desktop, phone)
    assert both.startswith(desktop[:desktop.index("-->") + 3]) and "<svg" in both
    assert phone_figures.split_phone_variant(both) == (desktop, phone)
    assert phone_figures.split_phone_variant(desktop) == (desktop, None)
    # IPython's SVG display (what myst-nb's glue stores) keeps the comment
    from IPython.display import SVG

    kept = SVG(data=both).data
    assert phone_figures.split_phone_variant(kept)[1] == phone


def _site(tmp_path, desktop, phone, *, name="abc123.svg"):
    (tmp_path / "_images").mkdir()
    (tmp_path / "_images" / name).write_text(phone_figures.embed_phone_variant(desktop, phone), encoding="utf-8")
    (tmp_path / "_images" / "plain.svg").write_text(desktop, encoding="utf-8")
    (tmp_path / "book").mkdir()
    page = tmp_path / "book" / "chapter.html"
    page.write_text(
        '<article class="bd-article"><figure class="align-default" id="fig-x">\n'
        f'<img alt="Two panels &amp; a legend" class="shown" src="../_images/{name}" width="90%" />\n'
        '<figcaption>\n<p><span class="caption-number">Fig. 1 </span><span class="caption-text">Two '
        'panels.</span></p>\n</figcaption>\n</figure>\n'
        '<figure><img alt="no phone drawing" src="../_images/plain.svg" /></figure>\n'
        '<img alt="elsewhere" src="https://example.org/x.svg" /></article>\n', encoding="utf-8")
    return page


def test_the_pages_offer_the_phone_drawing_in_a_picture(tmp_path, drawings):
    desktop, phone = drawings
    page = _site(tmp_path, desktop, phone)
    assert phone_figures.rewrite_site(tmp_path) == 1
    html = page.read_text(encoding="utf-8")
    assert ('<picture><source media="(max-width: 540px)" srcset="../_images/abc123.phone.svg" '
            'type="image/svg+xml"><img alt="Two panels &amp; a legend" class="shown" '
            'src="../_images/abc123.svg" width="90%" /></picture>') in html
    assert '<span class="caption-number">Fig. 1 </span>' in html and html.count("<picture>") == 1
    assert (tmp_path / "_images" / "abc123.phone.svg").read_text(encoding="utf-8") == phone
    assert (tmp_path / "_images" / "abc123.svg").read_text(encoding="utf-8") == desktop   # the copy is gone
    assert not (tmp_path / "_images" / "plain.phone.svg").exists()
    # idempotent: a second run (a rebuild's build-finished, or another builder) changes nothing
    assert phone_figures.rewrite_site(tmp_path) == 0
    assert page.read_text(encoding="utf-8") == html
    # a page built again (its img unwrapped) next to an already split image is wrapped again
    _site_again = page.read_text(encoding="utf-8").replace(
        '<picture><source media="(max-width: 540px)" srcset="../_images/abc123.phone.svg" type="image/svg+xml">',
        "").replace("</picture>", "")
    page.write_text(_site_again, encoding="utf-8")
    assert phone_figures.rewrite_site(tmp_path) == 1
    assert page.read_text(encoding="utf-8") == html


def test_a_site_without_images_is_left_alone(tmp_path):
    (tmp_path / "index.html").write_text("<p>no figures</p>", encoding="utf-8")
    assert phone_figures.rewrite_site(tmp_path) == 0
    assert phone_figures.rewrite_site(str(tmp_path)) == 0


def test_the_phone_figure_functions_refuse_bad_input(tmp_path, drawings):
    desktop, phone = drawings
    both = phone_figures.embed_phone_variant(desktop, phone)
    with pytest.raises(TypeError, match="svg must be SVG text"):
        phone_figures.embed_phone_variant(b"<svg/>", phone)
    with pytest.raises(TypeError, match="phone_svg must be SVG text"):
        phone_figures.embed_phone_variant(desktop, None)
    with pytest.raises(ValueError, match="phone_svg must be SVG text"):
        phone_figures.embed_phone_variant(desktop, "not a drawing")
    with pytest.raises(ValueError, match="svg must be marked by figure_svg"):
        phone_figures.embed_phone_variant('<svg xmlns="http://www.w3.org/2000/svg"/>', phone)
    with pytest.raises(ValueError, match="svg already carries a phone variant"):
        phone_figures.embed_phone_variant(both, phone)
    with pytest.raises(ValueError, match="phone_svg must be a plain drawing"):
        phone_figures.embed_phone_variant(desktop, both)
    with pytest.raises(TypeError, match="svg must be SVG text"):
        phone_figures.split_phone_variant(None)
    damaged = re.sub(r"zlib-base64:[A-Za-z0-9+/=]{8}", "zlib-base64:AAAAAAAA", both)
    with pytest.raises(ValueError, match="svg carries a damaged phone variant"):
        phone_figures.split_phone_variant(damaged)
    with pytest.raises(TypeError, match="outdir must be the built site's folder"):
        phone_figures.rewrite_site(None)
    with pytest.raises(ValueError, match="outdir must be an existing folder"):
        phone_figures.rewrite_site(tmp_path / "missing")
    with pytest.raises(ValueError, match="page must be an existing .html file"):
        phone_figures.rewrite_page(tmp_path / "missing.html", tmp_path)
    (tmp_path / "page.html").write_text("<p></p>", encoding="utf-8")
    with pytest.raises(ValueError, match="images must be an existing folder"):
        phone_figures.rewrite_page(tmp_path / "page.html", tmp_path / "_images")
    with pytest.raises(TypeError, match="page must be"):
        phone_figures.rewrite_page(None, tmp_path)
