"""Summaries of Mahdavi et al.'s training experiments (memcap.experiments.mahdavi_fig*)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memcap import bounds
from memcap.experiments import (
    mahdavi_common,
    mahdavi_fig2a,
    mahdavi_fig2b,
    mahdavi_fig2c,
    mahdavi_fig3,
    mahdavi_fig4,
    mahdavi_fig5,
)
from memcap.train import MHASpec


def _records(axis, values, examples, value_of, seeds=(0,), **base):
    """Fake engine records: spec fields plus accuracy/loss given by ``value_of(v, T, seed)``."""
    fixed = {"heads": 4, "context_size": 8, "dim": 16, "classes": 100, "shared": True, **base}
    out = []
    for v in values:
        for T in examples:
            for s in seeds:
                spec = MHASpec(**{**fixed, axis: v, "examples": T, "seed": s, "data_seed": s})
                y = value_of(v, T, s)
                acc, loss = (y, 1.0) if spec.classes else (None, y)
                out.append({**spec.to_dict(), "accuracy": acc, "loss": loss, "job": 0})
    return out


def test_curves_average_seeds_and_count_duplicates_once():
    recs = _records("heads", [1, 2, 4], [100, 200], lambda v, T, s: 0.1 * v + 0.01 * s, seeds=(0, 1))
    c = mahdavi_common.curves(recs + recs[:3], "heads")
    assert c.x.tolist() == [1, 2, 4] and c.examples.tolist() == [100, 200] and c.seeds == 2
    assert c.mean == pytest.approx(np.array([[0.105, 0.205, 0.405]] * 2))
    assert c.low[0, 0] == pytest.approx(0.1) and c.high[0, 0] == pytest.approx(0.11)


def test_curves_refuse_incomplete_grids_and_bad_arguments():
    recs = _records("heads", [1, 2], [100, 200], lambda v, T, s: 0.5)
    with pytest.raises(ValueError, match="incomplete"):
        mahdavi_common.curves(recs[:-1], "heads")
    with pytest.raises(ValueError, match="axis must be a field"):
        mahdavi_common.curves(recs, "width")
    with pytest.raises(ValueError, match="no record matches"):
        mahdavi_common.curves(recs, "heads", where={"classes": None})
    with pytest.raises(TypeError, match="records must be"):
        mahdavi_common.curves([1, 2], "heads")


@settings(max_examples=25, deadline=None)
@given(H=st.integers(1, 30), n=st.integers(1, 20), d_h=st.integers(1, 20), T=st.integers(1, 2000),
       C=st.integers(2, 200))
def test_theory_accuracy_is_guarantee_plus_chance_on_the_rest(H, n, d_h, T, C):
    f = min(1.0, bounds.mha_capacity(H, n, d_h) / T)
    acc = mahdavi_common.theory_accuracy(H, n, d_h, T, C)
    assert acc == pytest.approx(f + (1 - f) / C)
    assert 1.0 / C <= acc <= 1.0
    assert mahdavi_common.theory_mse(H, n, d_h, T) == pytest.approx((1 - f) / 12)


def test_theory_rejects_nonpositive_sizes():
    with pytest.raises(ValueError, match="examples"):
        mahdavi_common.theory_accuracy(2, 8, 16, 0, 100)
    with pytest.raises(ValueError, match="classes"):
        mahdavi_common.theory_accuracy(2, 8, 16, 10, 0)


def test_fig2a_summary_fits_the_line_before_saturation():
    recs = _records("heads", [1, 2, 3, 5, 7, 9], [400], lambda v, T, s: min(1.0, 0.02 + 0.14 * v))
    out = mahdavi_fig2a.summarize(recs)
    assert out["slope"][0] == pytest.approx(0.14) and out["r2"][0] == pytest.approx(1.0)
    assert out["fit_heads"][0].tolist() == [1, 2, 3, 5, 7]  # up to and with the first saturated point
    assert out["theory"][0, 0] == pytest.approx(8 / 400 + (1 - 8 / 400) / 100)  # H=1: H(8-1)+1 = 8
    assert mahdavi_common.linear_on_unsaturated([1, 2, 3], [1.0, 1.0, 1.0]) is None


def test_fig2b_worst_drop_detects_non_monotone_curves():
    recs = _records("context_size", [1, 2, 4, 8], [200], lambda v, T, s: {1: .1, 2: .4, 4: .35, 8: .9}[v])
    out = mahdavi_fig2b.summarize(recs)
    assert out["worst_drop"][0] == pytest.approx(0.05)
    assert out["theory"][0, 0] == pytest.approx(1 / 200 + (1 - 1 / 200) / 100)  # n = 1: capacity 1


def test_fig2c_gains_below_and_above_n():
    recs = _records("head_dim", [1, 3, 6, 16], [300], lambda v, T, s: 0.1 * min(v, 6), context_size=6)
    out = mahdavi_fig2c.summarize(recs)
    assert out["gain_below"][0] == pytest.approx(0.1) and out["gain_above"][0] == pytest.approx(0.0)
    assert out["theory"][0, 2] == pytest.approx(out["theory"][0, 3])  # bound flat once d_h >= n
    wide = _records("head_dim", [1, 3, 10, 16], [300], lambda v, T, s: 0.1 * min(v, 6) + 0.01 * max(0, v - 6),
                    context_size=6)                                   # n = 6 is not on the grid
    off_grid = mahdavi_fig2c.summarize(wide)
    assert off_grid["gain_below"][0] == pytest.approx(0.1) and off_grid["gain_above"][0] == pytest.approx(0.01)
    peak = _records("head_dim", [1, 6, 10, 16], [300], lambda v, T, s: {1: .2, 6: .45, 10: .53, 16: .5}[v],
                    context_size=6)                                   # rises past n, then falls back
    out = mahdavi_fig2c.summarize(peak)
    assert out["gain_above"][0] == pytest.approx(0.005) and out["steepest_above"][0] == pytest.approx(0.02)
    assert out["steepest_at"][0] == 10
    with pytest.raises(ValueError, match="two values <= n"):
        mahdavi_fig2c.summarize(recs[:2] + recs[3:])                  # 1, 3, 16: one value above n


def test_saturation_counts_heads_and_examples():
    theta = np.array([[[1.0, 0.0], [0.5, 0.5]], [[0.995, 0.005], [0.999, 0.001]]])  # (T=2, H=2, n=2)
    out = mahdavi_fig3.saturation(theta)
    assert out["count"].tolist() == [1, 2]
    assert out["fraction_saturated"] == pytest.approx(0.75)
    assert out["fraction_with_unsaturated"] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="shape"):
        mahdavi_fig3.saturation(theta[0])
    with pytest.raises(ValueError, match="softmax"):
        mahdavi_fig3.saturation(2 * theta)


def test_fig4_and_fig5_panels_from_the_quick_grid():
    g = mahdavi_fig4.QUICK
    recs = []
    for classes, t_heads, t_context in ((100, g["classification_examples_heads"], g["classification_examples_context"]),
                                        (None, g["regression_examples"], g["regression_examples"])):
        recs += _records("heads", g["heads"], t_heads, lambda v, T, s: 0.1 * v if classes else 0.1 / v,
                         context_size=g["context_size_for_heads"], shared=False, classes=classes)
        recs += _records("context_size", g["context_size"], t_context,
                         lambda v, T, s: 0.05 * v if classes else 0.1 / v,
                         heads=g["heads_for_context"], shared=False, classes=classes)
    panels = mahdavi_fig4.summarize(recs, "quick")
    assert set(panels) == {(t, a) for t in ("classification", "regression") for a in ("heads", "context_size")}
    assert panels[("classification", "heads")]["r2"][0] == pytest.approx(1.0)
    assert np.isnan(panels[("regression", "heads")]["r2"][0])
    assert (panels[("regression", "heads")]["theory"] <= 1 / 12).all()
    g5 = mahdavi_fig5.QUICK
    recs5 = (_records("heads", g5["heads"], g5["examples_heads"], lambda v, T, s: 0.1 / v,
                      context_size=g5["context_size_for_heads"], classes=None)
             + _records("context_size", g5["context_size"], g5["examples_context"], lambda v, T, s: 0.1 / v,
                        heads=g5["heads_for_context"], classes=None))
    p5 = mahdavi_fig5.summarize(recs5, "quick")
    assert p5["heads"]["worst_rise"][0] == 0.0 and p5["heads"]["mse"][0, 0] == pytest.approx(0.1)
    with pytest.raises(ValueError, match="profile"):
        mahdavi_fig5.summarize(recs5, "huge")


def test_matches_equality_and_membership():
    r = {"heads": 4, "examples": 300, "classes": None}
    assert mahdavi_common.matches(r, {"heads": 4, "examples": [300, 600], "classes": None})
    assert not mahdavi_common.matches(r, {"examples": (100, 200)})
    assert not mahdavi_common.matches(r, {"classes": 100})


def test_fig3_summary_recomputes_attention_from_kept_weights(tmp_path):
    from types import SimpleNamespace

    from memcap.experiments.sweep import run_job, train_job
    from memcap.train import TrainConfig

    spec = MHASpec(heads=2, context_size=4, examples=12, dim=8)
    job = train_job([spec], TrainConfig(steps=60, batch_size=12, lr=1e-2, eval_every=30), keep_params=True)
    res = run_job(job)
    results = SimpleNamespace(jobs=(job,), results=(res,),
                              capacities=[{"spec": spec.to_dict(), "capacity": 12, "upper": None}])
    (m,) = mahdavi_fig3.summarize(results)
    assert m["saturated"].shape == (12, 2) and m["count"].shape == (12,)
    assert m["capacity"] == 12 and 0.0 <= m["fraction_saturated"] <= 1.0
    assert ((m["max_weight"] >= 0.25 - 1e-9) & (m["max_weight"] <= 1.0)).all()  # max of 4 weights >= 1/4
    res_without = {k: v for k, v in res.items() if k != "arrays"}
    with pytest.raises(ValueError, match="keep the trained weights"):
        mahdavi_fig3.summarize(SimpleNamespace(jobs=(job,), results=(res_without,), capacities=[]))


# --- verdicts: the words the chapter glues, decided from the summaries ------------------------------

def test_fig2a_verdict_linear_partly_and_not():
    line = _records("heads", [1, 2, 3, 4, 6], [300, 500], lambda v, T, s: 0.1 * v * 300 / T)
    v = mahdavi_fig2a.verdict(mahdavi_fig2a.summarize(line))
    assert v.status == "yes" and "rises with every added head for every $T$" in v.text
    assert r"$R^2 \ge 0.98$ for every $T$" in v.text
    bent = _records("heads", [1, 2, 3, 4, 6], [300], lambda v, T, s: 0.01 * v ** 2.5)
    v = mahdavi_fig2a.verdict(mahdavi_fig2a.summarize(bent))
    assert v.status == "partly" and "$R^2 < 0.98$ ($T = 300$)" in v.text
    assert "gains less than the fitted slope" in mahdavi_fig2a.curvature(mahdavi_fig2a.summarize(bent))
    falls = _records("heads", [1, 2, 3, 4], [300], lambda v, T, s: {1: .3, 2: .2, 3: .1, 4: .05}[v])
    assert mahdavi_fig2a.verdict(mahdavi_fig2a.summarize(falls)).status == "no"


def test_fig2a_verdict_counts_falls_within_the_noise_as_rises():
    """A 5e-4 dip among saturated points is noise (the verdict said 'partly' on it); a fall of 0.05 is not,
    and ``criteria`` tells which check fails, for the chapter's reading."""
    heads = [1, 5, 10, 20, 30, 40, 50, 60]
    dip = [0.05, 0.20, 0.39, 0.78, 1.0, 1.0, 0.9995, 1.0]
    s = mahdavi_fig2a.summarize(_records("heads", heads, [10_000], lambda v, T, _: dip[heads.index(v)]))
    v = mahdavi_fig2a.verdict(s)
    assert v.status == "yes" and "up to falls within the 0.02 we count as training noise" in v.text
    assert mahdavi_fig2a.criteria(s)["rises"].all() and not mahdavi_fig2a.criteria(s)["strict"].all()
    fall = [0.05, 0.20, 0.39, 0.78, 1.0, 1.0, 0.95, 1.0]
    s = mahdavi_fig2a.summarize(_records("heads", heads, [10_000], lambda v, T, _: fall[heads.index(v)]))
    checks = mahdavi_fig2a.criteria(s)
    assert not checks["rises"].all() and checks["linear"].all()
    v = mahdavi_fig2a.verdict(s)
    assert v.status == "partly" and "accuracy falls by more than 0.02 where a head is added" in v.text
    with pytest.raises(ValueError, match="noise"):
        mahdavi_fig2a.criteria(s, noise=float("nan"))


def test_fig2a_reading_names_the_check_that_fails():
    """The chapter's reading of the recorded run blamed the first saturated point whenever the verdict was not
    'yes' and the points below saturation lie on a line, even when a fall, not R², failed the verdict."""
    heads = [1, 5, 10, 20, 30, 40, 50, 60]

    def summary(acc):
        return mahdavi_fig2a.summarize(_records("heads", heads, [10_000], lambda v, T, _: acc[heads.index(v)]))
    build = summary([0.03 + 0.01 * h for h in heads])                                         # 'yes'
    fall = summary([0.05, 0.20, 0.39, 0.78, 1.0, 1.0, 0.95, 1.0])                             # R² passes
    text = mahdavi_fig2a.reading(build, fall)
    assert "it is the fall where a head is added" in text and "first saturated point" not in text
    kink = summary([0.026, 0.149, 0.469, 0.981, 1.0, 1.0, 1.0, 1.0])                          # the recorded run
    text = mahdavi_fig2a.reading(build, kink)
    assert text.startswith("The line ends at the first point at 99 % or above ($H = 30$)")
    assert "what pulls $R^2$ under its criterion is the first saturated point" in text
    bent = summary([0.01, 0.02, 0.05, 0.2, 0.5, 0.9, 1.0, 1.0])
    assert "line falls short of the paper's criterion, while this build's meets it" in mahdavi_fig2a.reading(
        build, bent)
    assert "criterion too, so the quick profile's" in mahdavi_fig2a.reading(bent, bent)
    assert "criterion in this build's results too;" in mahdavi_fig2a.reading(bent, bent, profile="paper")
    assert mahdavi_fig2a.reading(build, build) == "Both runs agree with the paper."
    assert mahdavi_fig2a.reading(fall, build).startswith("At the paper's size and training the curve rises")
    assert "not a matter of size" in mahdavi_fig2a.reading(fall, build, profile="paper")
    with pytest.raises(ValueError, match="profile"):
        mahdavi_fig2a.reading(fall, build, profile="huge")


def test_fig2a_r2_below_ceiling_leaves_out_the_first_saturated_point():
    """A straight rise that saturates between two grid points: the verdict's line keeps the first saturated
    point and bends away (R^2 0.91, 'partly'); the points below 99 % alone lie on a line (R^2 0.99)."""
    acc = {1: 0.026, 5: 0.149, 10: 0.469, 20: 0.981, 30: 1.0, 40: 1.0}
    s = mahdavi_fig2a.summarize(_records("heads", list(acc), [10_000], lambda v, T, s: acc[v]))
    assert mahdavi_fig2a.verdict(s).status == "partly" and s["r2"][0] == pytest.approx(0.910, abs=1e-3)
    assert mahdavi_fig2a.r2_below_ceiling(s)[0] == pytest.approx(0.993, abs=1e-3)
    assert "(the curve bends upwards at small $H$)" in mahdavi_fig2a.curvature(s)
    rising = mahdavi_fig2a.summarize(_records("heads", [1, 2, 3, 4], [300, 500], lambda v, T, s: 0.1 * v))
    assert np.allclose(mahdavi_fig2a.r2_below_ceiling(rising), rising["r2"])   # nothing saturated: the same line
    short = mahdavi_fig2a.summarize(_records("heads", [1, 2, 3, 4], [300], lambda v, T, s: min(1.0, 0.45 * v)))
    assert np.isnan(mahdavi_fig2a.r2_below_ceiling(short)[0])                   # two points below the ceiling


def test_fig2b_verdict_tolerates_small_falls_only():
    def summary(values):
        return mahdavi_fig2b.summarize(_records("context_size", [1, 2, 4, 8], [200], lambda v, T, s: values[v]))
    assert mahdavi_fig2b.verdict(summary({1: .1, 2: .4, 4: .6, 8: .9})).text == (
        "accuracy grows with $n$ ($T = 200$) and never falls as $n$ grows")
    v = mahdavi_fig2b.verdict(summary({1: .1, 2: .4, 4: .39, 8: .9}))
    assert v.status == "yes" and "within the 0.02" in v.text
    v = mahdavi_fig2b.verdict(summary({1: .1, 2: .6, 4: .4, 8: .9}))
    assert v.status == "partly" and "beyond the 0.02" in v.text


def test_fig2b_verdict_asks_for_growth_beyond_the_noise_and_sums_the_falls():
    """A flat curve does not grow, however it ends; falls of 0.019 in a row add up to a fall beyond the noise."""
    n = [1, 5, 10, 20, 30, 40, 50, 60]
    flat = {6000: [0.30, 0.31, 0.295, 0.31, 0.30, 0.305, 0.295, 0.3001],
            10000: [0.20, 0.19, 0.20, 0.185, 0.20, 0.19, 0.20, 0.2001]}
    s = mahdavi_fig2b.summarize(_records("context_size", n, [6000, 10000], lambda v, T, _: flat[T][n.index(v)]))
    v = mahdavi_fig2b.verdict(s)
    assert v.status == "no" and v.text.startswith("accuracy gains no more than 0.06")
    down = [0.40 - 0.019 * i for i in range(7)] + [0.41]
    s = mahdavi_fig2b.summarize(_records("context_size", n, [6000], lambda v, T, _: down[n.index(v)]))
    assert s["worst_drop"][0] == pytest.approx(0.114) and mahdavi_fig2b.verdict(s).status == "no"
    up = [0.1, 0.3, 0.5, 0.7, 0.69, 0.68, 0.67, 0.8]      # grows, but falls 0.03 over three steps of 0.01
    s = mahdavi_fig2b.summarize(_records("context_size", n, [6000], lambda v, T, _: up[n.index(v)]))
    v = mahdavi_fig2b.verdict(s)
    assert v.status == "partly" and "largest fall from one $n$ to a larger one is 0.030, beyond" in v.text
    with pytest.raises(ValueError, match="noise"):
        mahdavi_fig2b.verdict(s, noise=-0.1)


def test_fig2c_verdict_compares_gains_below_and_above_n():
    def summary(after):
        return mahdavi_fig2c.summarize(_records("head_dim", [1, 3, 6, 16], [300],
                                                lambda v, T, s: 0.1 * min(v, 6) + after * max(0, v - 6),
                                                context_size=6))
    assert mahdavi_fig2c.verdict(summary(0.0)).status == "yes"
    assert "not at all beyond it" in mahdavi_fig2c.verdict(summary(0.0)).text
    assert mahdavi_fig2c.verdict(summary(0.015)).status == "yes"     # 0.15 of the gain below
    assert mahdavi_fig2c.verdict(summary(0.03)).status == "partly"
    assert mahdavi_fig2c.verdict(summary(0.09)).status == "no"
    assert ("the gain per unit of $d_h$ falls at least 5-fold past $d_h = n = 6$ ($T = 300$)"
            == mahdavi_fig2c.verdict(summary(0.015)).text)
    assert "falls less than 10-fold" in mahdavi_fig2c.verdict(summary(0.015), stop_ratio=0.1).text
    # a rise past n that falls back by the last d_h: the endpoints show no gain, the steepest rise does
    peak = mahdavi_fig2c.summarize(_records("head_dim", [1, 3, 6, 10, 16], [300],
                                            lambda v, T, s: 0.1 * min(v, 6) + (0.12 if v == 10 else 0.0),
                                            context_size=6))
    assert peak["gain_above"][0] == 0 and mahdavi_fig2c.verdict(peak).status == "partly"   # 0.03 per unit
    for bad in (0, -0.1, 0.6, float("nan"), True):
        with pytest.raises((ValueError, TypeError), match="stop_ratio"):
            mahdavi_fig2c.verdict(summary(0.015), stop_ratio=bad)


def _saturation_model(heads, counts, unsaturated, T=100, capacity=100, upper=120):
    return {"heads": heads, "examples": T, "count": np.array(counts), "fraction_with_unsaturated": unsaturated,
            "fraction_saturated": float(np.mean(counts)) / heads, "capacity": capacity, "upper": upper}


def test_fig3_verdict_and_capacity_check():
    few = _saturation_model(4, [2] * 80 + [3] * 20, 1.0)     # 20 % of examples with > 2 of 4 saturated
    many = _saturation_model(8, [5] * 90 + [8] * 10, 0.9)
    assert mahdavi_fig3.majority_saturated(few) == pytest.approx(0.2)
    v = mahdavi_fig3.verdict([few, many])
    assert v.status == "partly" and "for $H = 8$ but not for $H = 4$" in v.text and "$H = 4$: 20 %" in v.text
    assert mahdavi_fig3.verdict([many]).status == "yes"
    assert "almost every example" in mahdavi_fig3.unsaturated_text([few, many])
    assert mahdavi_fig3.capacity_check(few) == "with $H = 4$ the search memorizes $T = 100$, but not 120"
    assert "fewer than" in mahdavi_fig3.capacity_check({**few, "capacity": 80})
    with pytest.raises(ValueError, match="at least one"):
        mahdavi_fig3.verdict([])


def test_fig3_misses_tell_which_observation_fails():
    few = _saturation_model(4, [2] * 80 + [3] * 20, 1.0)           # most heads saturated fails, H = 4
    full = _saturation_model(4, [3] * 70 + [4] * 30, 0.7)          # an unsaturated head kept fails, H = 4
    many = _saturation_model(8, [5] * 90 + [8] * 10, 0.9)
    assert mahdavi_fig3.misses([few, many]) == {"most heads saturated": (4,), "an unsaturated head kept": ()}
    assert mahdavi_fig3.misses([full, many]) == {"most heads saturated": (), "an unsaturated head kept": (4,)}
    assert mahdavi_fig3.verdict([few, many]).status == mahdavi_fig3.verdict([full, many]).status == "partly"
    assert mahdavi_fig3.misses_text(mahdavi_fig3.misses([full, many])) == "*an unsaturated head kept* fails for $H = 4$"
    assert mahdavi_fig3.misses_text(mahdavi_fig3.misses([many])) == "both observations hold"
    with pytest.raises(ValueError, match="at least one"):
        mahdavi_fig3.misses([])


def test_fig4_flattening_and_verdict():
    assert mahdavi_fig4.flattening([1, 2, 4, 8], [0.1, 0.2, 0.4, 0.8]) == pytest.approx(1.0)
    assert mahdavi_fig4.flattening([1, 2, 4, 8], [0.1, 0.5, 0.8, 0.9]) < 0.5
    panels = {("classification", "heads"): {"r2": np.array([0.99]), "examples": np.array([600])},
              ("classification", "context_size"): {"r2": np.array([0.8]), "x": np.array([1, 2, 4, 8]),
                                                   "value": np.array([[0.1, 0.5, 0.8, 0.9]]),
                                                   "examples": np.array([300])},
              ("regression", "heads"): {"value": np.array([[0.05, 0.02, 0.01, 0.001]])},
              ("regression", "context_size"): {"value": np.array([[0.05, 0.02, 0.04, 0.001]])}}
    assert mahdavi_fig4.verdict(panels).status == "yes"
    text = mahdavi_fig4.regression_text(panels)
    assert "falls at every step in $H$" in text and "rises by up to $0.020$" in text
    linear_n = {**panels, ("classification", "context_size"): {
        **panels[("classification", "context_size")], "value": np.array([[0.1, 0.2, 0.4, 0.8]])}}
    assert mahdavi_fig4.verdict(linear_n).status == "partly"
    # the control: shared-context curves that stay linear in n leave the verdict; one that flattens too
    shared = {"context_size": np.array([1, 2, 4, 8]), "accuracy": np.array([[0.1, 0.2, 0.4, 0.8],
                                                                            [0.1, 0.5, 0.8, 0.9]])}
    ratios = mahdavi_fig4.control_flattening(shared, panels)
    assert ratios[0] == pytest.approx(1.0) and ratios[1] < 0.5
    assert mahdavi_fig4.verdict(panels, control=ratios[:1]).status == "yes"
    both = mahdavi_fig4.verdict(panels, control=ratios)
    assert both.status == "partly" and "does not single out fresh contexts" in both.text
    with pytest.raises(ValueError, match="control must hold"):
        mahdavi_fig4.verdict(panels, control=[])


def test_fig4_flattening_stops_at_the_ceiling_and_the_control_spans_the_same_n():
    """A curve linear in n until it memorizes everything does not flatten (it read 0.0 and the verdict
    'yes'); the control is read over Fig. 4's n range only, not over Fig. 2(b)'s longer one."""
    n = np.array([1, 5, 10, 20, 30, 40, 50, 60])
    clipped = np.minimum(1.0, 0.05 + 0.045 * n)                   # linear up to n = 20, then 1
    assert mahdavi_fig4.flattening(n, clipped) == pytest.approx(1.0)
    assert np.isnan(mahdavi_fig4.flattening(n, np.minimum(1.0, 0.6 * n)))   # saturated at once: no reading
    assert mahdavi_fig4.flattening(n, [0.1, 0.5, 0.8, 0.9, 0.95, 0.96, 0.97, 0.98]) < 0.5
    panels = {("classification", "heads"): {"r2": np.array([0.99]), "examples": np.array([30_000])},
              ("classification", "context_size"): {"r2": np.array([0.93]), "x": n, "value": clipped[None],
                                                   "examples": np.array([20_000])}}
    shared = {"context_size": n, "accuracy": (0.02 + 0.01 * n)[None]}
    v = mahdavi_fig4.verdict(panels, control=mahdavi_fig4.control_flattening(shared, panels))
    assert v.status == "partly" and "accuracy does not flatten in $n$" in v.text
    # Fig. 2(b) on a longer grid: linear up to n = 8, flat after; on Fig. 4's n = 1..8 it does not flatten
    quick = {("classification", "context_size"): {"x": np.array([1, 2, 4, 8])}}
    longer = {"context_size": np.array([1, 2, 4, 8, 12]), "accuracy": np.array([[0.1, 0.2, 0.4, 0.8, 0.8]])}
    assert mahdavi_fig4.flattening(longer["context_size"], longer["accuracy"][0]) < 0.5
    assert mahdavi_fig4.control_flattening(longer, quick) == [pytest.approx(1.0)]
    with pytest.raises(ValueError, match="at least 3 context sizes within"):
        mahdavi_fig4.control_flattening({"context_size": np.array([1, 16, 32]), "accuracy": np.ones((1, 3))},
                                        quick)


def test_fig5_verdict_and_points_below_theory():
    def panel(mse, theory):
        mse = np.array([mse])
        return {"mse": mse, "theory": np.array([theory]), "examples": np.array([200]),
                "worst_rise": np.maximum(0.0, np.diff(mse, axis=1).max(axis=1))}
    good = {"heads": panel([0.05, 0.01, 0.001], [0.08] * 3), "context_size": panel([0.09, 0.02, 0.002], [0.08] * 3)}
    assert mahdavi_fig5.verdict(good).status == "yes"
    assert mahdavi_fig5.below_theory(good) == (5, 6)
    bumpy = {**good, "context_size": panel([0.09, 0.095, 0.002], [0.08] * 3)}
    v = mahdavi_fig5.verdict(bumpy)
    assert v.status == "partly" and "rises by up to $5.0 \\times 10^{-3}$" in v.text


def test_fig5_verdict_tolerates_noise_and_says_how_the_error_changes():
    """A rise of 1e-4 in the MSE is within the noise (the verdict said 'partly'); the 'shows' cell says how
    much the error falls, to two significant digits, or that it rises (it read 'falls by a factor of 1
    or more' for both)."""
    def panel(mse):
        return {"mse": np.array([mse]), "theory": np.array([mse]), "examples": np.array([200])}
    wiggle = {"heads": panel([0.05, 0.01, 0.001, 0.0011]), "context_size": panel([0.09, 0.02, 0.002, 0.001])}
    v = mahdavi_fig5.verdict(wiggle)
    assert v.status == "yes" and v.text == (
        "the training error falls in $H$ (up to rises of at most $10^{-4}$ between neighbouring values, within "
        "the $1.7 \\times 10^{-3}$ we count as training noise) and falls at every step in $n$")
    assert v.shows == "error falls by a factor of 45 or more across each grid"
    slow = {"heads": panel([0.08, 0.07, 0.065, 0.057]), "context_size": panel([0.08, 0.07, 0.06, 0.05])}
    assert mahdavi_fig5.verdict(slow).shows == "error falls by a factor of 1.4 or more across each grid"
    rises = {"heads": panel([0.08, 0.04, 0.02, 0.01]), "context_size": panel([0.05, 0.06, 0.07, 0.08])}
    v = mahdavi_fig5.verdict(rises)
    assert v.status == "partly" and v.shows == "error rises by a factor of 1.6 across the grid in $n$"
    assert "does not fall with $n$" in v.text
    flat = {"heads": panel([0.05, 0.0499, 0.0498, 0.0497]), "context_size": panel([0.09, 0.02, 0.002, 0.001])}
    v = mahdavi_fig5.verdict(flat)                                  # never rises, but falls by less than noise
    assert v.status == "partly" and "falls by no more than the $1.7 \\times 10^{-3}$ of training noise" in v.text
    assert [mahdavi_fig5.factor(r) for r in (37.4, 1.04, 0.625, 1.0, 1234.0)] == [
        "falls by a factor of 37", "falls by a factor of 1.0", "rises by a factor of 1.6", "does not change",
        "falls by a factor of 1,200"]
    assert mahdavi_fig5.TOLERANCE == pytest.approx(0.02 / 12)
    with pytest.raises(ValueError, match="ratio"):
        mahdavi_fig5.factor(0.0)
    with pytest.raises(ValueError, match="tolerance"):
        mahdavi_fig5.verdict(wiggle, tolerance=-1.0)


def test_training_labels_match_the_engine_at_n_equal_1():
    """With one shared context token every example gets the same output: the trained accuracy is at most
    the largest label share, the MSE at least the labels' variance, of the labels regenerated here."""
    from memcap.experiments.sweep import run_job, train_job
    from memcap.train import TrainConfig

    specs = [MHASpec(heads=2, context_size=1, examples=60, dim=8, classes=5),
             MHASpec(heads=2, context_size=1, examples=60, dim=8, classes=None, out_dim=1)]
    cls, reg = run_job(train_job(specs, TrainConfig(steps=300, batch_size=None, lr=3e-2, eval_every=100)))["records"]
    share = mahdavi_common.largest_label_share(mahdavi_common.training_labels(cls))
    assert cls["accuracy"] <= share + 1e-9
    variance = mahdavi_common.label_variance(mahdavi_common.training_labels(reg))
    assert reg["loss"] >= variance - 1e-6 and reg["loss"] == pytest.approx(variance, rel=0.05)
    with pytest.raises(ValueError, match="classes"):
        mahdavi_common.largest_label_share(np.zeros((3, 1)))


def test_plot_curves_labels_each_T_and_draws_a_theory_line_per_curve():
    from memcap import plotting

    fig, ax = plotting.figure()
    x = np.array([1, 2, 4])
    mahdavi_common.plot_curves(ax, x, np.array([[.1, .2, .4], [.05, .1, .2]]), np.full((2, 3), .05),
                               [300, 10_000])
    assert ax.get_legend_handles_labels()[1] == ["$T = 300$", r"$T = 10\,000$"] and len(ax.lines) == 4
    assert len(fig.axes) == 1                                   # several T: a legend names them, no bar
    colors = [line.get_color() for line in ax.get_legend_handles_labels()[0]]
    assert colors[0] != colors[1]
    fig1, ax1 = plotting.figure()
    mahdavi_common.plot_curves(ax1, x, np.array([[.1, .2, .4]]), np.full((1, 3), .05), [10_000])
    assert ax1.get_legend_handles_labels()[1] == [r"$T = 10\,000$"] and len(fig1.axes) == 1
    plotting.plt.close(fig1)
    assert [h.get_label() for h in mahdavi_common.style_key(fit=True)][-1] == "least-squares line"
    with pytest.raises(ValueError, match="shape"):
        mahdavi_common.plot_curves(ax, x, np.zeros((1, 3)), np.zeros((2, 3)), [300])
    plotting.plt.close(fig)


def test_log_ticks_label_narrow_ranges_and_legend_below_checks_labels():
    from memcap import plotting

    fig, (narrow, wide) = plotting.figure(ncols=2)
    narrow.plot([1, 2, 3], [0.08, 0.02, 0.004])          # 1.3 decades: ticks at 1, 2, 5 per decade
    wide.plot([1, 2, 3], [0.08, 0.002, 0.0001])          # 2.9 decades: one tick per decade
    for ax in (narrow, wide):
        mahdavi_common.log_ticks(ax)
    fig.canvas.draw()
    ticks = [t for t in narrow.get_yticks() if 0.004 <= t <= 0.08]
    assert len(ticks) >= 4 and narrow.get_yscale() == "log"
    assert len([t for t in wide.get_yticks() if 1e-4 <= t <= 0.08]) == 3
    plotting.legend_below(fig, narrow, key=mahdavi_common.style_key(fit=True), ncols=2)
    assert [t.get_text() for t in fig.legends[0].get_texts()][0] == "trained"
    wide.plot([1, 2], [0.1, 0.01], label="d_h raw")
    with pytest.raises(ValueError, match="outside"):
        plotting.legend_below(fig, wide)
    plotting.plt.close(fig)


def test_saturation_from_max_weights_equals_saturation_and_refuses_bad_input():
    theta = np.random.default_rng(0).dirichlet(np.full(5, 0.05), size=(30, 4))     # (T, H, n), peaked rows
    full = mahdavi_fig3.saturation(theta)
    short = mahdavi_fig3.saturation_of_max_weights(theta.max(axis=2))
    assert set(full) == set(short) and full["fraction_saturated"] == short["fraction_saturated"]
    assert np.array_equal(full["saturated"], short["saturated"]) and np.array_equal(full["count"], short["count"])
    with pytest.raises(ValueError, match="top must have shape"):
        mahdavi_fig3.saturation_of_max_weights(np.ones(4))
    with pytest.raises(ValueError, match="top must hold"):
        mahdavi_fig3.saturation_of_max_weights(np.full((2, 2), 1.5))
    with pytest.raises(ValueError, match="threshold"):
        mahdavi_fig3.saturation_of_max_weights(np.full((2, 2), 0.5), threshold=1.0)


def test_recorded_fig3_paper_run_recomputes_the_saturation_statistics():
    """The recorded run (its provenance is checked in test_recorded.py) is the paper's training job; the
    statistics are recomputed from the kept largest weights."""
    info, models = mahdavi_fig3.recorded_paper_run()
    assert info["jobs"] == [1] and mahdavi_fig3.jobs("paper")[1]["kind"] == "train"
    for m in models:
        assert m["saturated"].shape == (m["examples"], m["heads"]) and 0 <= m["fraction_saturated"] <= 1
        assert m["capacity"] is None and 0.0 <= m["accuracy"] <= 1.0
    assert mahdavi_fig3.verdict(models).status in ("yes", "partly", "no")
