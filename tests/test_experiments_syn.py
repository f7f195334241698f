"""Tests of the Part III experiments (memcap/experiments/syn_*.py): their jobs, and their summaries on
synthetic results (no training, except a few steps where trained weights are needed)."""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from memcap import bounds, synthesis
from memcap.experiments import (
    syn_common,
    syn_efficiency,
    syn_exact,
    syn_headdim,
    syn_saturation,
    syn_tokens,
    syn_vectors,
)
from memcap.experiments.sweep import run_job
from memcap.train import AoTSpec, MHASpec

MODULES = (syn_tokens, syn_vectors, syn_exact, syn_headdim, syn_saturation, syn_efficiency)


@pytest.mark.parametrize("module", MODULES)
def test_module_contract(module):
    assert module.NAME.startswith("syn_") and module.LABEL.startswith("syn-fig-") and module.TITLE
    quick, paper = module.jobs("quick"), module.jobs("paper")
    assert quick and paper and all(j["kind"] in ("train", "capacity") for j in quick + paper)
    assert sum(len(j["specs"]) for j in quick) <= sum(len(j["specs"]) for j in paper)


def test_sweep_points_share_the_base_and_refuse_bad_axes():
    pts = syn_common.sweep_points({"a": 1, "b": 2}, {"a": [1, 3], "b": [2, 5]})
    assert pts == [{"a": 1, "b": 2}, {"a": 3, "b": 2}, {"a": 1, "b": 5}]
    with pytest.raises(ValueError, match="field of the base"):
        syn_common.sweep_points({"a": 1}, {"c": [1]})
    with pytest.raises(ValueError, match="at least one field"):
        syn_common.sweep_points({"a": 1}, {})


def _capacities(make_spec, base, axes, capacity, seeds=(0,), censored=()):
    out = []
    for s in seeds:
        for p in syn_common.sweep_points(base, axes):
            cap = capacity(p, s)
            out.append({"spec": make_spec(p, s).to_dict(), "capacity": cap,
                        "upper": None if tuple(sorted(p.items())) in censored else cap + 1})
    return out


def test_measured_curves_average_seeds_and_flag_censoring():
    base, axes = {"vocab": 8, "seq_len": 2, "dim": 4, "head_dim": 2, "heads": 2}, {"heads": [1, 2, 4]}
    caps = _capacities(syn_tokens._spec, base, axes, lambda p, s: 10 * p["heads"] + s, seeds=(0, 2),
                       censored={tuple(sorted({**base, "heads": 4}.items()))})
    curve = syn_common.measured_curves(caps, base, axes)["heads"]
    assert curve.values.tolist() == [1, 2, 4]
    assert curve.capacity.tolist() == [11, 21, 41] and curve.low.tolist() == [10, 20, 40]
    assert curve.censored.tolist() == [False, False, True]
    with pytest.raises(ValueError, match="no capacity was measured"):
        syn_common.measured_curves(caps, base, {"heads": [8]})


def _curve(values, capacity, axis="heads"):
    v, c = np.array(values), np.array(capacity, dtype=float)
    return syn_common.Curve(axis, v, c, c, c, np.zeros(len(v), bool), tuple({axis: x} for x in values),
                            c + 1)


def test_growth_per_doubling_compares_ranges_of_different_sizes():
    # A capacity that doubles with H over 1..32 and with d_h over 1..4 grows by 100 % per doubling on
    # both axes, while its changes across the two ranges are 3100 % and 300 %.
    assert syn_common.growth_per_doubling(_curve([1, 2, 32], [5, 10, 160])) == pytest.approx(1.0)
    assert syn_common.growth_per_doubling(_curve([1, 4], [5, 20], "head_dim")) == pytest.approx(1.0)
    # c ~ v^(1/2): sqrt(2) - 1 per doubling, whatever the range; only the ends count.
    assert syn_common.growth_per_doubling(_curve([3, 5, 27], [9, 1, 27])) == pytest.approx(math.sqrt(2) - 1)
    assert syn_common.growth_per_doubling(_curve([2, 8], [40, 10])) == pytest.approx(-0.5)
    for values, caps, says in (([1], [4], "at least two values"), ([0, 2], [1, 2], "ascending positive"),
                               ([4, 2], [1, 2], "ascending positive"), ([1, 2], [0, 3], "positive first")):
        with pytest.raises(ValueError, match=says):
            syn_common.growth_per_doubling(_curve(values, caps))
    with pytest.raises(TypeError, match="Curve"):
        syn_common.growth_per_doubling({"values": [1, 2]})


def test_lowest_capacities_read_the_worst_seed_where_the_mean_hides_it():
    # the review's case: at H = 1 seeds reach 10, 12 and 50 (mean 24 > a count of 20; two seeds below it)
    base, axes = {"vocab": 8, "seq_len": 2, "dim": 4, "head_dim": 2, "heads": 2}, {"heads": [1, 2]}
    caps = _capacities(syn_tokens._spec, base, axes,
                       lambda p, s: {0: 10, 1: 12, 2: 50}[s] if p["heads"] == 1 else 40 + s, seeds=(0, 1, 2))
    sweep = syn_common.summarize_sweep(caps, {"base": base, "axes": axes}, lambda p, c: None)
    assert [c for _, c, _ in syn_common.distinct_points(sweep)] == [24.0, 41.0]
    assert syn_common.lowest_capacities(sweep).tolist() == [10.0, 40.0]
    with pytest.raises(TypeError, match="Sweep"):
        syn_common.lowest_capacities([])


def test_distinct_points_list_the_base_once_and_describe_reads_them():
    base, axes = {"vocab": 8, "seq_len": 2, "dim": 4, "head_dim": 2, "heads": 2}, {"heads": [1, 2], "dim": [4, 6]}
    caps = _capacities(syn_tokens._spec, base, axes, lambda p, s: 10 * p["heads"] + p["dim"])
    theory = SimpleNamespace(dana=SimpleNamespace(value=4))
    sweep = syn_common.summarize_sweep(caps, {"base": base, "axes": axes}, lambda p, c: theory)
    points = syn_common.distinct_points(sweep)
    assert [p for p, _, _ in points] == [{**base, "heads": 1}, base, {**base, "dim": 6}]   # base once
    assert [c for _, c, _ in points] == [14.0, 24.0, 26.0]
    assert syn_common.ratios(sweep, "dana").tolist() == [3.5, 6.0, 6.5]
    assert syn_common.lowest_capacities(sweep).tolist() == [14.0, 24.0, 26.0]      # one seed: the means
    assert syn_common.describe_point(base) == "$H = 2$, $d_h = 2$, $d = 4$, $S = 2$"
    assert syn_common.describe_point({"context_size": 3, "vocab": 9}) == "$n = 3$"
    with pytest.raises(TypeError, match="Sweep"):
        syn_common.distinct_points(points)
    with pytest.raises(TypeError, match="mapping"):
        syn_common.describe_point([("heads", 2)])


def test_token_summary_puts_both_theories_beside_the_measurements():
    g = syn_tokens.QUICK
    caps = _capacities(syn_tokens._spec, g["base"], g["axes"], lambda p, s: 20 * p["heads"])
    sweep = syn_tokens.summarize(SimpleNamespace(capacities=caps, profile="quick"))
    for axis, curve in sweep.curves.items():
        for point, th, cap in zip(curve.points, sweep.theory[axis], curve.capacity):
            H, d_h, d, N = point["heads"], point["head_dim"], point["dim"], point["vocab"]
            assert th.dana.applies and th.constructed_ok and th.margin > 0
            assert th.constructed <= th.dana.value <= H * d_h + d
            assert th.mahdavi.value == bounds.mha_capacity(H, point["seq_len"], d_h)
            if cap > N:      # more sequences than tokens: two share their last token
                assert not th.mahdavi.applies and "coincide" in th.mahdavi.why and th.mahdavi.guarantee == 1
    assert np.all(syn_common.ratios(sweep, "dana") > 0)


def test_vector_summary_runs_mahdavis_construction_in_the_trained_model():
    g = syn_vectors.QUICK
    caps = _capacities(syn_vectors._spec, g["base"], g["axes"], lambda p, s: 16 * p["heads"])
    sweep = syn_vectors.summarize(SimpleNamespace(capacities=caps, profile="quick"))
    for axis, curve in sweep.curves.items():
        for point, th in zip(curve.points, sweep.theory[axis]):
            assert th.mahdavi.applies and th.constructed_ok
            assert th.constructed == th.mahdavi.value == bounds.mha_capacity(point["heads"], point["context_size"],
                                                                             point["head_dim"])
            assert not th.dana.applies and "Prop. 2" in th.dana.why
    assert syn_common.ratios(sweep, "mahdavi").shape == (7,)


def _exact_records(loss):
    g = syn_exact.QUICK
    return [{**MHASpec(**g["model"], heads=H, examples=T).to_dict(), "loss": loss(H, T)}
            for H in g["heads"] for T in g["examples"]]


def test_exact_summary_certifies_fits_from_the_mean_error():
    s = syn_exact.summarize(_exact_records(lambda H, T: 1e-12 if T <= 8 * H else 1e-2))
    assert s.capacity.tolist() == [8, 16, 32]
    assert s.mahdavi.tolist() == [2, 3, 5] and s.label_aware == 16
    assert np.all(s.fitted[:, 0] == 1.0)
    undecided = syn_exact.summarize(_exact_records(lambda H, T: 2e-5 if T == 8 else 1e-12))
    assert np.isnan(undecided.fitted[:, 0]).all() and undecided.capacity.tolist() == [0, 0, 0]


def test_headdim_summary_reads_the_power_law():
    g = syn_headdim.QUICK
    caps = [{"spec": AoTSpec(**g["model"], head_dim=k, shared_compression=c, examples=1).to_dict(),
             "capacity": int(3 * k ** (2 if c else 1)), "upper": None if k == 4 else 99}
            for c in (False, True) for k in g["head_dim"]]
    s = syn_headdim.summarize(caps)
    assert s[False].power.slope == pytest.approx(1.0) and s[True].power.slope == pytest.approx(2.0)
    assert s[True].quadratic.coef[2] == pytest.approx(3.0) and s[False].censored.tolist() == [False] * 2 + [True]
    assert s[False].dana.tolist() == [4 * k + 8 for k in g["head_dim"]]
    # two uncensored points of three: too few to fit without the censored one, and the summary says so
    assert s[False].fits_censored and s[False].fitted.all() and s[True].fits_censored
    with pytest.raises(ValueError, match="at least 3 values"):
        syn_headdim.summarize(caps[:2])


def test_headdim_fits_leave_out_capacities_cut_off_by_the_largest_table():
    # the review's case: Dana et al.'s law 100 + 60 d_h^2, cut off at the paper's largest table (2500) from
    # d_h = 7 on, read as concave (coefficient -28.9) when the cut-off points are fitted
    g = syn_headdim.PAPER
    top = max(g["candidates"])
    caps = [{"spec": AoTSpec(**g["model"], head_dim=k, shared_compression=c, examples=1).to_dict(),
             "capacity": min(100 + 60 * k * k, top), "upper": None if 100 + 60 * k * k >= top else 2600}
            for c in (False, True) for k in g["head_dim"]]
    s = syn_headdim.summarize(caps)[False]
    assert s.censored.tolist() == [k >= 7 for k in g["head_dim"]] and not s.fits_censored
    assert s.fitted.tolist() == [k < 7 for k in g["head_dim"]]
    assert s.quadratic.coef == pytest.approx((100.0, 0.0, 60.0), abs=1e-6) and s.quadratic.dof == 3


def test_efficiency_rows_divide_parameters_by_capacity():
    g = syn_efficiency.QUICK
    specs = syn_efficiency.specs(g, 0)
    caps = [{"spec": s.to_dict(), "capacity": 10 * (i + 1), "upper": 99} for i, s in enumerate(specs)]
    rows = syn_efficiency.summarize(SimpleNamespace(capacities=caps, profile="quick"))
    assert [r.architecture for r in rows] == list(syn_efficiency.ARCHITECTURES)
    assert [(r.heads, r.head_dim) for r in rows] == [(4, 8), (4, 2), (2, 4), (4, 2), (4, 2)]
    assert [r.size for r in rows] == [4] * 5          # the wider-heads AoT (2 heads) is matched to H = 4
    paper = syn_efficiency.PAPER
    caps = [{"spec": s.to_dict(), "capacity": 10, "upper": 11} for s in syn_efficiency.specs(paper, 0)]
    sized = syn_efficiency.summarize(SimpleNamespace(capacities=caps, profile="paper"))
    assert [r.size for r in sized] == [H for H in paper["heads"] for _ in syn_efficiency.ARCHITECTURES]
    for i, (r, s) in enumerate(zip(rows, specs)):
        assert r.parameters == synthesis.engine_param_count(s) and r.capacity == 10 * (i + 1)
        assert r.per_example == pytest.approx(r.parameters / r.capacity)
    aot, wide, mlp = rows[1], rows[2], rows[4]
    assert aot.parameters == wide.parameters == mlp.parameters   # same weights, three shapes
    assert rows[0].guarantee == bounds.mha_capacity(4, 8, 8) and rows[3].guarantee is None
    assert wide.guarantee == aot.guarantee == bounds.aot_capacity(4, 2, 8)
    assert rows[0].bits == pytest.approx(math.log2(100)) and rows[1].bits == 4.0
    with pytest.raises(ValueError, match="even"):
        syn_efficiency.specs({**g, "heads": [3]}, 0)


def test_saturation_summary_from_kept_weights():
    """A few training steps of both models with the weights kept, then the constructions' attention."""
    g = syn_saturation.QUICK
    tiny = {"steps": 30, "batch_size": 16, "lr": 1e-2, "eval_every": 10}
    jobs = [{**j, "config": {**j["config"], **tiny}} for j in syn_saturation.jobs("quick")]
    jobs = [{**j, "specs": j["specs"][:2]} for j in jobs]
    res = SimpleNamespace(jobs=jobs, results=[run_job(j) for j in jobs], profile="quick")
    out = syn_saturation.summarize(res)
    assert [(s.model, s.source) for s in out] == [("MHA", "trained"), ("AoT", "trained"),
                                                  ("MHA", "construction"), ("AoT", "construction")]
    for s in out:
        assert s.max_weight.shape == (s.examples, s.heads) and 0 <= s.fraction_saturated <= 1
    assert out[2].memorized and out[3].memorized
    assert out[2].examples == bounds.mha_capacity(4, 8, 16) and out[1].positions == g["aot"]["model"]["seq_len"]


def test_classifier_attention_is_the_models_attention_and_names_bad_arguments():
    """The classifier's attention is the training engine's (positions added, keys scaled by 1/sqrt(d)), of a
    model that classifies every example; its first head saturates nowhere, the second on most examples."""
    import torch

    from memcap.data import mahdavi_task
    from memcap.train.forward import mha_outputs

    gen = torch.Generator().manual_seed(0)
    task = mahdavi_task(15, 8, 16, classes=100, generator=gen, dtype=torch.float64, device="cpu")
    w = synthesis.mahdavi_classifier(task.contexts, task.queries, task.labels, classes=100, heads=2, head_dim=16,
                                     generator=gen)
    theta = synthesis.classifier_attention(task, w)
    assert theta.shape == (15, 2, 8) and torch.allclose(theta.sum(-1), torch.ones(15, 2, dtype=torch.float64))
    top = theta.max(-1).values
    assert (top[:, 0] <= 0.99).all() and (top[:, 1] > 0.99).sum() >= 8      # (H-1)(T-n+1) = 8
    positions = syn_saturation.sinusoidal_positions(9, 16, dtype=torch.float64, device="cpu")
    logits, engine = mha_outputs({k: v[None] for k, v in w.items()}, task.contexts[None], task.queries[None], positions)
    assert torch.allclose(theta, engine[0], rtol=0, atol=1e-12) and (logits[0].argmax(1) == task.labels).all()
    with pytest.raises(TypeError, match="task must be a memcap.data.MemorizationTask"):
        synthesis.classifier_attention((task.contexts, task.queries), w)
    with pytest.raises(TypeError, match="weights must be a dict"):
        synthesis.classifier_attention(task, [w["W_K"], w["W_Q"]])
    with pytest.raises(ValueError, match="weights has no W_Q"):
        synthesis.classifier_attention(task, {"W_K": w["W_K"]})
    with pytest.raises(ValueError, match=r"weights\['W_K'\] must have shape \(H, d, d_h\)"):
        synthesis.classifier_attention(task, {**w, "W_K": w["W_K"][:, :4]})
    with pytest.raises(ValueError, match=r"weights\['W_Q'\] must have shape"):
        synthesis.classifier_attention(task, {**w, "W_Q": w["W_Q"][:1]})
    with pytest.raises(ValueError, match=r"weights\['W_K'\]"):
        synthesis.classifier_attention(task, {**w, "W_K": w["W_K"] * float("nan")})
