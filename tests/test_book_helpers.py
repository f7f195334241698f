"""memcap.textbook.page and memcap.notation: the helpers chapters use to show refusals, tables, numbers,
sentences and figures."""
import pytest

from memcap import notation
from memcap.textbook import page as book


def _refuse(message="Assumption 1 fails: queries 0, 1 are dependent"):
    raise ValueError(message)


def test_expect_refusal_prints_and_returns_the_message(capsys):
    message = book.expect_refusal(_refuse, match="Assumption 1")
    assert message.startswith("Assumption 1 fails")
    assert capsys.readouterr().out.strip() == f"Refused: {message}"


def test_expect_refusal_fails_when_nothing_is_refused():
    with pytest.raises(AssertionError, match="but it returned 42"):
        book.expect_refusal(lambda: 42, match="Assumption 1")


def test_expect_refusal_fails_on_the_wrong_message():
    with pytest.raises(AssertionError, match="matches 'Assumption 2'"):
        book.expect_refusal(_refuse, match="Assumption 2")


def test_expect_refusal_lets_other_errors_through():
    def crash():
        raise RuntimeError("an unrelated bug")
    with pytest.raises(RuntimeError, match="unrelated bug"):
        book.expect_refusal(crash, match=".")


def test_expect_refusal_takes_other_error_types_and_checks_its_arguments():
    def type_error():
        raise TypeError("heads must be a positive integer")
    assert "heads" in book.expect_refusal(type_error, match="heads", error=TypeError, quiet=True)
    with pytest.raises(TypeError, match="callable"):
        book.expect_refusal("not callable", match="x")
    with pytest.raises(TypeError, match="non-empty"):
        book.expect_refusal(_refuse, match="")
    with pytest.raises(ValueError, match="regular expression"):
        book.expect_refusal(_refuse, match="(")


@pytest.mark.parametrize("value, text", [(0.0078, "7.8 \\times 10^{-3}"), (0.25, "0.25"), (1234.5, "1234"),
                                         (0.0123, "0.012"), (2.4e-16, "2.4 \\times 10^{-16}"),
                                         (1e-12, "10^{-12}"), (0, "0"),
                                         (-3.1e-5, "-3.1 \\times 10^{-5}"), (5e6, "5.0 \\times 10^{6}")])
def test_sci(value, text):
    assert notation.sci(value) == text


@pytest.mark.parametrize("value, digits, text", [
    (0.0999, 1, "0.10"), (-0.0999, 1, "-0.10"), (0.998, 1, "1.0"), (9.96, 1, "10"), (0.0999, 2, "0.0999"),
    (0.00999, 1, "0.010"), (0.00949, 1, "9.5 \\times 10^{-3}"),
    (9999.7, 1, "10^{4}"), (-9999.7, 2, "-10^{4}"), (9999.4, 1, "9999"), (9950.0, 0, "9950")])
def test_sci_chooses_the_form_from_the_rounded_magnitude(value, digits, text):
    """digits + 1 significant digits once rounded (0.0999 -> '0.10', not '0.100'), and the plain form only
    for a rounded magnitude in [0.01, 10^4) (9999.7 -> '10^{4}', not '10000'; 0.00999 -> '0.010')."""
    assert notation.sci(value, digits) == text


def test_sci_refuses_non_finite():
    with pytest.raises(ValueError, match="finite"):
        notation.sci(float("nan"))
    with pytest.raises(TypeError):
        notation.sci("1")


def test_table_is_markdown_with_a_rule_and_aligned_columns():
    md = book.table([["$H$", 3], ["$d_h$", 4]], ["symbol", "value"], align="lr").data
    lines = md.splitlines()
    assert lines[0] == "| symbol | value |" and lines[1] == "|:--|--:|" and lines[3] == "| $d_h$ | 4 |"
    with pytest.raises(ValueError, match="rows\\[0\\] has 1 cells but header has 2"):
        book.table([[1]], ["a", "b"])
    with pytest.raises(ValueError, match="align"):
        book.table([[1, 2]], ["a", "b"], align="lx")


def test_table_keeps_bars_inside_math_out_of_the_row_syntax():
    md = book.table([[r"$|x|$", "a|b"]], [r"$\|\Delta\|_2$", r"largest $|\sigma_k|$"]).data
    header, _, row = md.splitlines()
    # a pipe table splits on every bare bar and strips the backslash of an escaped one (``\|``)
    assert header == r"| $\Vert \Delta\Vert _2$ | largest $\vert \sigma_k\vert $ |"
    assert row == r"| $\vert x\vert $ | a\|b |"


def test_prose_list():
    assert book.prose_list([1, 2, 3]) == "1, 2 and 3"
    assert book.prose_list(["a"]) == "a"
    with pytest.raises(ValueError):
        book.prose_list([])


def test_expect_refusal_wraps_a_long_message_to_the_column(capsys):
    long = "Assumption 1 fails: " + " ".join(f"query{k}" for k in range(40))
    message = book.expect_refusal(lambda: _refuse(long), match="Assumption 1")
    lines = capsys.readouterr().out.rstrip("\n").split("\n")
    assert message == long and len(lines) > 1
    assert all(len(line) <= 79 for line in lines)
    assert " ".join(line.strip() for line in lines) == f"Refused: {long}"


def test_glue_md_and_glue_figure_refuse_what_they_cannot_glue():
    pytest.importorskip("myst_nb")
    import matplotlib.pyplot as plt

    with pytest.raises(TypeError, match="name must be a non-empty str"):
        book.glue_md("", "text")
    with pytest.raises(ValueError, match="text must be a non-empty string"):
        book.glue_md("key", "")
    # text that names a file is still text: "." (a sentence's end) once read the current folder
    assert book._markdown(".")._repr_markdown_() == "."
    assert book._markdown("README.md")._repr_markdown_() == "README.md"
    with pytest.raises(TypeError, match="name must be a non-empty str"):
        book.glue_figure(None, plt.figure())
    with pytest.raises(TypeError, match="fig must be a matplotlib Figure, got Axes"):
        book.glue_figure("key", plt.figure().add_subplot())
    plt.close("all")


def test_glue_figure_closes_the_figure_it_glues(capsys):
    pytest.importorskip("myst_nb")
    import matplotlib.pyplot as plt

    fig = plt.figure()
    book.glue_figure("key", fig)
    assert not plt.fignum_exists(fig.number)


def test_figure_svg_is_sized_in_css_pixels_and_marks_its_smallest_text():
    import re

    import matplotlib.pyplot as plt

    from memcap import plotting

    fig, ax = plotting.figure()
    ax.plot([0, 1], [0, 1])
    ax.annotate("small", (0.5, 0.5), fontsize=6)
    plotting.finish(ax, xlabel="x", ylabel="y", legend=False)
    svg = book.figure_svg(fig)
    width = float(re.search(r'<svg[^>]* width="([0-9.]+)px"', svg).group(1))
    assert abs(width - plotting.WIDTH * plotting.DPI) < 1          # as wide as the PNG it replaces
    mark = float(re.search(r'<!-- memcap-figure min-font-px="([0-9.]+)" -->', svg).group(1))
    assert mark == pytest.approx(6 * plotting.DPI / 72, abs=0.01)  # the 6-pt annotation, in those pixels
    with pytest.raises(TypeError, match="fig must be a matplotlib Figure"):
        book.figure_svg(ax)
    plt.close("all")
