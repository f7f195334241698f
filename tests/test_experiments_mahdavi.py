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
    with pytest.raises(ValueError, match="must contain n"):
        mahdavi_fig2c.summarize(recs[:2] + recs[3:])


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

    from memcap.sweep import run_job, train_job
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
