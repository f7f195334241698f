import matplotlib
import pytest

from memcap import plotting


def test_figure_uses_the_book_style_and_draws_theory_dashed():
    fig, ax = plotting.figure()
    (line,) = plotting.theory_line(ax, [1, 2, 3], [1, 2, 3], "Theorem 1: H(r-1)+1")
    plotting.measured(ax, [1, 2, 3], [1, 1.5, 2.5], "measured")
    plotting.finish(ax, xlabel="heads $H$", ylabel="rank")
    assert line.get_linestyle() == "--" and line.get_color() == plotting.THEORY
    assert ax.get_xlabel() == "heads $H$"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["Theorem 1: H(r-1)+1", "measured"]
    assert matplotlib.rcParams["axes.spines.top"] is False
    matplotlib.pyplot.close(fig)


def test_figure_grid_and_bad_sizes():
    fig, axes = plotting.figure(ncols=2)
    assert len(axes) == 2
    matplotlib.pyplot.close(fig)
    with pytest.raises(ValueError, match="ncols and nrows must be >= 1"):
        plotting.figure(ncols=0)


def test_measured_with_error_bars():
    fig, ax = plotting.figure()
    container = plotting.measured(ax, [1, 2], [0.5, 0.7], "acc", yerr=[0.1, 0.1])
    assert len(container.lines) == 3
    matplotlib.pyplot.close(fig)
