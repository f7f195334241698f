"""The paper-against-quick grid tables of the experiment chapters (memcap.experiments.grid_tables)."""
from types import SimpleNamespace

import pytest

from memcap.experiments import dana_fig1a, dana_fig2b, grid_tables, mahdavi_fig2a, mahdavi_fig3


def _mha(label, paper_T, quick_T, seeds=(0,)):
    def grid(dim, T, steps, lr):
        return {"model": {"dim": dim}, "examples": T, "train": {"steps": steps, "lr": lr}, "seeds": list(seeds)}
    return SimpleNamespace(LABEL=label, PAPER=grid(64, paper_T, 50_000, 1e-3), QUICK=grid(16, quick_T, 2_000, 0.01))


def test_figure_name_reads_the_label():
    assert grid_tables.figure_name("mha-fig-2a") == "Fig.\u00a02(a)"
    assert grid_tables.figure_name("aot-fig-3") == "Fig.\u00a03"
    for bad in ("fig2a", "mha-fig-", 3):
        with pytest.raises(ValueError, match="label"):
            grid_tables.figure_name(bad)


def test_mahdavi_rows_show_paper_then_quick():
    t = grid_tables.mahdavi_profiles([_mha("mha-fig-2a", [1000, 25_600], [300]), _mha("mha-fig-5", [800], [800])])
    assert t.header[0] == "figure" and len(t.align) == len(t.header) == len(t.rows[0])
    assert t.rows[0] == ["Fig.\u00a02(a)", "–\u00a0→ –", "–\u00a0→ –", "1\u202f000\u2060–\u206025\u202f600 → 300",
                         r"$50\,000 \to 2\,000$", r"$0.001 \to 0.01$", r"$1 \to 1$"]
    assert t.rows[1][3] == "800 → 800"                   # one T: no range
    # T given per number of heads (a dict, as in Fig. 3's grid): those are its H
    fig3 = _mha("mha-fig-3", {4: 550, 8: 1300}, {4: 120, 8: 250})
    row = grid_tables.mahdavi_profiles([fig3]).rows[0]
    assert row[3] == "550\u2060–\u20601\u202f300 → 120\u2060–\u2060250"
    assert row[1] == "4,\u00a08\u00a0→ 4,\u00a08"
    # numbers never break inside a table cell: narrow no-break spaces, word joiners at the dash
    assert grid_tables.number(1_234_567) == "1\u202f234\u202f567" and grid_tables.span(7, 7) == "7"


def test_mahdavi_rows_of_the_real_grids():
    t = grid_tables.mahdavi_profiles((mahdavi_fig2a, mahdavi_fig3))
    assert [r[0] for r in t.rows] == ["Fig.\u00a02(a)", "Fig.\u00a03"]
    # Fig. 2(a) sweeps H at a fixed n; the quick profile shrinks both
    heads = mahdavi_fig2a.PAPER["heads"], mahdavi_fig2a.QUICK["heads"]
    assert t.rows[0][1] == f"{grid_tables.span(min(heads[0]), max(heads[0]))}\u00a0→ " \
                           f"{grid_tables.span(min(heads[1]), max(heads[1]))}"
    assert t.rows[0][2] == (f"{mahdavi_fig2a.PAPER['model']['context_size']}\u00a0→ "
                            f"{mahdavi_fig2a.QUICK['model']['context_size']}")


def test_dana_rows_pair_each_paper_grid_with_its_quick_one():
    t = grid_tables.dana_profiles([dana_fig1a, dana_fig2b])
    assert len(t.rows) == 4 and [r[0] for r in t.rows[1::2]] == ["quick", "quick"]
    assert t.rows[0][0] == "Fig.\u00a01(a) paper" and t.rows[2][0] == "Fig.\u00a02(b) paper"
    assert len(t.align) == len(t.header) == len(t.rows[0])
    for row, grid in zip(t.rows, (dana_fig1a.PAPER, dana_fig1a.QUICK)):
        batch = grid["train"]["batch_size"]
        assert row[4] == ("full" if batch is None else batch) and row[6] == len(grid["seeds"])
    assert "S =" not in t.rows[0][1]                      # the sequence length is the same everywhere


def test_dana_long_sweeps_are_shortened():
    grid = {"model": {"vocab": 32, "dim": 8, "seq_len": 2}, "heads": list(range(1, 11)), "dims": [4],
            "train": {"steps": 12_000, "batch_size": None, "lr": 0.003}, "seeds": [0, 1]}
    row = grid_tables.dana_profiles([SimpleNamespace(LABEL="aot-fig-1a", PAPER=grid, QUICK=grid)]).rows[0]
    assert row[1] == "$N = 32$, $d = 8$"
    assert row[2] == r"$H \in \{1, 2, \dots, 10\}$"       # a one-value list is not a sweep
    assert row[3:] == [r"$12\,000$", "full", "0.003", 2]
    uneven = {**grid, "heads": [1, 2, 3, 4, 5, 6, 8, 10]}           # the dots would claim 7 and 9
    row = grid_tables.dana_profiles([SimpleNamespace(LABEL="aot-fig-1a", PAPER=uneven, QUICK=uneven)]).rows[0]
    assert row[2] == r"$H \in \{1, 2, 3, 4, 5, 6, 8, 10\}$"


def test_bad_figures_are_refused():
    with pytest.raises(TypeError, match="non-empty"):
        grid_tables.mahdavi_profiles([])
    with pytest.raises(TypeError, match="QUICK"):
        grid_tables.dana_profiles([SimpleNamespace(LABEL="aot-fig-1a", PAPER={})])
    with pytest.raises(TypeError, match="figures"):
        grid_tables.dana_profiles(dana_fig1a)


def test_quick_differs_names_the_figures_whose_quick_models_shrink():
    from memcap.experiments import dana_fig1a, dana_fig1b, dana_fig2a, dana_fig2b, dana_fig3, dana_fig4

    figures = (dana_fig1a, dana_fig1b, dana_fig2a, dana_fig2b, dana_fig3, dana_fig4)
    shrunk = grid_tables.quick_differs(figures, ("vocab", "dim", "dims"))
    for m in figures:   # a figure is named iff its quick N or d differs from the paper's
        same = all(m.QUICK.get("model", {}).get(f, m.QUICK.get(f)) == m.PAPER.get("model", {}).get(f, m.PAPER.get(f))
                   for f in ("vocab", "dim", "dims"))
        assert (grid_tables.figure_name(m.LABEL) in shrunk) == (not same)
    assert grid_tables.figure_name(dana_fig1a.LABEL) not in shrunk      # Fig. 1(a) keeps the paper's model
    assert grid_tables.figure_name(dana_fig3.LABEL) in shrunk           # Fig. 3: N = 16 instead of 70
    with pytest.raises(ValueError, match="fields must be a non-empty list"):
        grid_tables.quick_differs(figures, [])


def test_figure_list_reads_as_english():
    nb = grid_tables.NBSP
    assert grid_tables.figure_list([f"Fig.{nb}3"]) == f"Fig.{nb}3"
    assert grid_tables.figure_list([f"Fig.{nb}2(a)", f"Fig.{nb}3"]) == f"Figs.{nb}2(a) and 3"
    assert grid_tables.figure_list([f"Fig.{nb}2(a)", f"Fig.{nb}2(b)", f"Fig.{nb}3"]) == f"Figs.{nb}2(a), 2(b) and 3"
    with pytest.raises(ValueError, match="names must be a non-empty list of figure names"):
        grid_tables.figure_list([])
