import matplotlib
import numpy as np
import pytest
import torch
from matplotlib.lines import Line2D

from memcap import plotting


def test_figure_uses_the_book_style_and_draws_theory_dashed():
    fig, ax = plotting.figure()
    (line,) = plotting.theory_line(ax, [1, 2, 3], [1, 2, 3], "Theorem 1: $H(r-1)+1$")
    plotting.measured(ax, [1, 2, 3], [1, 1.5, 2.5], "measured")
    plotting.finish(ax, xlabel="heads $H$", ylabel="rank")
    assert line.get_linestyle() == "--" and line.get_color() == plotting.THEORY
    assert ax.get_xlabel() == "heads $H$"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["Theorem 1: $H(r-1)+1$", "measured"]
    assert matplotlib.rcParams["axes.spines.top"] is False
    matplotlib.pyplot.close(fig)


def test_figure_width_is_the_text_column():
    fig, _ = plotting.figure()
    width_px = fig.get_size_inches()[0] * fig.dpi
    assert 650 <= width_px <= 700, width_px   # the site's column is 688 px at 1280 px
    matplotlib.pyplot.close(fig)
    with pytest.raises(ValueError, match="width must be <="):
        plotting.figure(width=9)


def test_figure_grid_and_bad_sizes():
    fig, axes = plotting.figure(ncols=2)
    assert len(axes) == 2
    matplotlib.pyplot.close(fig)
    fig, axes = plotting.figure(ncols=2, nrows=3)
    assert axes.shape == (3, 2)
    matplotlib.pyplot.close(fig)
    with pytest.raises(ValueError, match="ncols and nrows must be >= 1"):
        plotting.figure(ncols=0)
    with pytest.raises(ValueError, match="stack them: ncols=2, nrows=2"):
        plotting.figure(ncols=4)


def test_measured_with_error_bars():
    fig, ax = plotting.figure()
    container = plotting.measured(ax, [1, 2], [0.5, 0.7], "acc", yerr=[0.1, 0.1])
    assert len(container.lines) == 3
    (dots,) = plotting.measured(ax, [1, 2], [0.5, 0.7], "dots", markersize=7, linestyle="none")
    assert dots.get_markersize() == 7 and dots.get_linestyle() == "None"
    matplotlib.pyplot.close(fig)


@pytest.mark.parametrize("label", ["head dimension d_h", "R^2 of the fit", "accuracy <= 1", "W_QK rank"])
def test_raw_symbols_in_labels_are_refused(label):
    fig, ax = plotting.figure()
    ax.plot([0, 1], [0, 1], label=label)
    with pytest.raises(ValueError, match="outside \\$...\\$"):
        plotting.finish(ax, xlabel="x", ylabel="y")
    with pytest.raises(ValueError, match="typeset it as math"):
        plotting.finish(ax, xlabel=label, ylabel="y")
    matplotlib.pyplot.close(fig)


def test_math_labels_pass():
    for label in ["head dimension $d_h$", "$R^2$", "$T \\le H(n-1)+1$", "plain words, T = 200"]:
        assert plotting.check_label(label) == label
    with pytest.raises(ValueError, match="unmatched"):
        plotting.check_label("$d_h")


def test_fit_line_is_clipped_to_the_fitted_range_and_labelled():
    fig, ax = plotting.figure()
    (line,) = plotting.fit_line(ax, [2, 5, 9], lambda x: 2 * x, "least squares: $2H$")
    xs = line.get_xdata()
    assert xs.min() == 2 and xs.max() == 9 and line.get_linestyle() == ":"
    assert np.allclose(line.get_ydata(), 2 * xs)
    plotting.finish(ax, xlabel="$H$", ylabel="y")
    assert "least squares: $2H$" in [t.get_text() for t in ax.get_legend().get_texts()]
    with pytest.raises(ValueError, match="non-empty"):
        plotting.fit_line(ax, [], lambda x: x, "x")
    matplotlib.pyplot.close(fig)


def test_series_colors_are_ordered_and_distinct():
    colors = plotting.series_colors(4)
    assert len(set(colors)) == 4
    lum = [np.dot(matplotlib.colors.to_rgb(c), [0.299, 0.587, 0.114]) for c in colors]
    assert lum == sorted(lum, reverse=True)   # light to dark
    with pytest.raises(ValueError):
        plotting.series_colors(0)


def test_log_axis_writes_plain_ticks():
    fig, ax = plotting.figure()
    ax.plot([1, 10, 100, 1000], [1, 2, 3, 4])
    plotting.log_axis(ax, "x")
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert "100" in labels and not any("10^" in t for t in labels)
    with pytest.raises(ValueError):
        plotting.log_axis(ax, "z")
    assert plotting._plain(1e-6) == "$10^{-6}$" and plotting._plain(0.01) == "0.01"
    matplotlib.pyplot.close(fig)


def test_legend_below_collects_every_panel_once():
    fig, axes = plotting.figure(ncols=2)
    for ax in axes:
        plotting.measured(ax, [1, 2], [1, 2], "measured")
        plotting.theory_line(ax, [1, 2], [1, 1], "bound")
    plotting.legend_below(fig, axes)
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert texts == ["measured", "bound"]
    matplotlib.pyplot.close(fig)
    fig, ax = plotting.figure()
    with pytest.raises(ValueError, match="no labelled artist in the figure and no key"):
        plotting.legend_below(fig)
    plotting.measured(ax, [1, 2], [1, 2], "measured")
    style = Line2D([], [], linestyle=":", label="least-squares line")
    plotting.legend_below(fig, ax, key=[style], ncols=1)
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["measured", "least-squares line"]
    matplotlib.pyplot.close(fig)


def test_label_line_names_a_line_at_its_end_in_its_colour():
    fig, ax = plotting.figure()
    (line,) = plotting.theory_line(ax, [1, 2, 3, np.nan], [1, 4, 9, np.nan], None)
    end = plotting.label_line(ax, line, "bound $T^2$")
    assert end.get_text() == "bound $T^2$" and end.xy == (3.0, 9.0) and end.get_color() == plotting.THEORY
    assert end.get_ha() == "left"
    start = plotting.label_line(ax, line, "start", at="start")
    assert start.xy == (1.0, 1.0) and start.xyann == (-4.0, 0.0) and start.get_ha() == "right"
    rule = ax.axhline(5, color="0.3")
    above = plotting.label_line(ax, rule, "threshold", at="start", offset=(2.0, 3.0), ha="left",
                                 va="bottom")
    fig.canvas.draw()   # an axhline runs along the axes: its label sits at the left edge, above it
    left, bottom = ax.transAxes.transform((0, 0))
    x0, y0 = above.get_window_extent().p0
    assert x0 >= left and y0 >= ax.transData.transform((1, 5))[1] and above.get_color() == "0.3"
    with pytest.raises(ValueError, match="typeset it as math"):
        plotting.label_line(ax, line, "d_h")
    middle = plotting.label_line(ax, line, "middle", at=0.75)
    assert middle.xy == (2.5, 6.5) and middle.xyann == (0.0, 4.0) and middle.get_ha() == "center"
    up = plotting.label_line(ax, ax.axvline(2), "halfway up", at=0.5)
    assert up.xy == (2.0, 0.5)   # axes fraction along an axvline
    for bad in ("middle", 1.5, True):
        with pytest.raises(ValueError, match="at must be 'start', 'end' or a fraction in"):
            plotting.label_line(ax, line, "x", at=bad)
    with pytest.raises(ValueError, match="offset must be a pair"):
        plotting.label_line(ax, line, "x", offset=(1.0, float("nan")))
    with pytest.raises(TypeError, match="line must be a matplotlib Line2D"):
        plotting.label_line(ax, ax.bar([1], [1]), "x")
    (empty,) = ax.plot([np.nan], [np.nan])
    with pytest.raises(ValueError, match="no finite point"):
        plotting.label_line(ax, empty, "x")
    matplotlib.pyplot.close(fig)


def test_tensors_are_drawn_from_the_cpu():
    """Tensors (on any device: copied to the CPU first), tensors that require grad and lists of 0-d tensors
    (as a loop on a GPU collects them) are drawn like arrays."""
    fig, ax = plotting.figure()
    x = torch.arange(3.0, requires_grad=True)
    (line,) = plotting.theory_line(ax, x, [torch.tensor(1.0), torch.tensor(2.0), 4.0], None)
    assert line.get_ydata().tolist() == [1.0, 2.0, 4.0] and line.get_xdata().tolist() == [0.0, 1.0, 2.0]
    plotting.measured(ax, x, x * 2, None, yerr=torch.ones(3))
    (fit,) = plotting.fit_line(ax, x, lambda g: torch.as_tensor(g) * 2, None, points=5)
    assert fit.get_ydata().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    matplotlib.pyplot.close(fig)


def test_panels_puts_two_per_row_and_centres_an_odd_last_one():
    import matplotlib.pyplot

    for n, rows in ((1, 1), (2, 1), (3, 2), (5, 3)):
        fig, axes = plotting.panels(n, sharey=True)
        assert isinstance(axes, list) and len(axes) == n
        specs = [ax.get_subplotspec() for ax in axes]
        assert {s.rowspan.start for s in specs} == set(range(rows))
        if n > 2:
            last = specs[-1]
            if n % 2:   # centred: the middle two of four grid columns
                assert (last.colspan.start, last.colspan.stop) == (1, 3)
            assert all(ax.get_shared_y_axes().joined(axes[0], ax) for ax in axes)
        matplotlib.pyplot.close(fig)
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="n must be a positive number of panels"):
            plotting.panels(bad)
