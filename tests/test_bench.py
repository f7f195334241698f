"""The benchmark (memcap/experiments/bench.py) and the authors' recipes it times (memcap/train/authors.py)."""
from __future__ import annotations

import pytest
import torch

from memcap import experiments
from memcap.experiments import bench
from memcap.train import AoTSpec, MHASpec, TrainConfig, spec_from_dict
from memcap.train.authors import train_like_authors

pytestmark = pytest.mark.usefixtures("one_thread")


def test_flop_count_follows_its_formula():
    """One head, d = d_h = 1, S = 2, N = 3, batch 1: H (2 d d_h (1 + 2S) + 4 S d_h + 2 d_h d) + 2 d N
    = 10 + 8 + 2 + 6 = 26, forward plus backward 3 x 26; the head part grows linearly in H, all in the batch."""
    spec = AoTSpec(heads=1, head_dim=1, dim=1, vocab=3)
    assert bench.flops_per_model_step(spec, 1) == 3 * 26
    two = AoTSpec(heads=2, head_dim=1, dim=1, vocab=3)
    assert bench.flops_per_model_step(two, 4) == 4 * 3 * (2 * 20 + 6)
    mha = MHASpec(heads=1, context_size=1, examples=5, dim=1, classes=2)
    # per example 2 + 2 + 2*(1 + 1) + 2 + 4 = 14, once 2 + 2*2 = 6
    assert bench.flops_per_model_step(mha, 1) == 3 * (14 + 6)
    with pytest.raises(ValueError, match="batch must be a positive integer"):
        bench.flops_per_model_step(spec, 0)


def test_paper_workloads_are_the_first_paper_jobs_without_early_stop():
    specs, config = bench.workload("dana_fig1a")
    assert [s.heads for s in specs] == [1, 6, 11, 16, 21, 26, 31] and config.batch_size == 1024
    assert not config.early_stop and config.epochs is None
    specs, config = bench.workload("mahdavi_fig2a")
    assert len(specs) == 8 and specs[0].dim == 64 and config.batch_size == 256
    # the largest paper job of either paper, the workload that can fill a GPU
    def work(job: dict) -> float:
        specs, batch = [spec_from_dict(r) for r in job["specs"]], job["config"]["batch_size"]
        return job["config"]["steps"] * sum(bench.flops_per_model_step(
            s, batch or (s.T0 if isinstance(s, AoTSpec) else s.examples)) for s in specs)
    largest = max((work(j), name) for name in experiments.EXPERIMENTS if name.startswith(("dana", "mahdavi"))
                  for j in experiments.get(name).jobs("paper") if j["kind"] == "train")
    assert largest[1] == "mahdavi_fig2c" and largest[0] > 7e14
    specs, config = bench.workload("mahdavi_fig2c")
    assert len(specs) == 12 and {s.heads for s in specs} == {30}
    with pytest.raises(ValueError, match="workload must be one of"):
        bench.workload("fig9")


@pytest.mark.parametrize("spec", [AoTSpec(heads=2, head_dim=3, dim=3, vocab=5),
                                  MHASpec(heads=4, context_size=4, examples=8, dim=8, classes=3)])
def test_authors_recipe_trains(spec):
    """The recipe learns: after 150 steps its batch loss is below the loss of a uniform guess."""
    config = TrainConfig(batch_size=32, lr=3e-2, schedule="constant")
    classes = spec.vocab if isinstance(spec, AoTSpec) else spec.classes
    assert train_like_authors(spec, config, 150) < 0.8 * torch.log(torch.tensor(float(classes)))


def test_run_bench_reports_every_ratio():
    result = bench.run_bench(("aot",), models=2, steps=4, authors_steps=2, device="cpu", command="test")
    r = result["workloads"]["aot"]
    assert result["peak_gflops"] > 0 and result["command"] == "test"
    for key in ("speedup", "speedup_vs_authors", "fraction_of_peak", "gflops", "authors_model_steps_per_s"):
        assert r[key] > 0, key
    assert r["fraction_of_peak"] == pytest.approx(r["gflops"] / result["peak_gflops"])
    assert r["loop_fraction_of_peak"] == pytest.approx(r["fraction_of_peak"] / r["speedup"])   # same FLOPs
    assert "vs authors" in bench.format_bench(result)
    assert result["cuda_graphs"] == "never" and "CUDA graphs" not in bench.format_bench(result)
    with pytest.raises(ValueError, match="workloads must be names in"):
        bench.run_bench(("gpu",), steps=1)


def test_run_bench_runs_and_reports_the_cuda_graph_mode(monkeypatch):
    """Every engine run of the bench (stacked, one model at a time, warm-up) takes the mode; the result says it."""
    modes = []
    real = bench.train_models
    monkeypatch.setattr(bench, "train_models", lambda *a, **k: modes.append(k["cuda_graphs"]) or real(*a, **k))
    result = bench.run_bench(("aot",), models=2, steps=3, authors_steps=2, device="cpu", command="t", repeats=1,
                             cuda_graphs="always")   # on a CPU: the recordable step, not recorded
    assert result["cuda_graphs"] == "always" and "steps recorded as CUDA graphs" in bench.format_bench(result)
    assert len(modes) == 4 and set(modes) == {"always"}   # warm-up, two models alone, the stack
    with pytest.raises(ValueError, match="cuda_graphs must be one of"):
        bench.run_bench(("aot",), steps=1, cuda_graphs="yes")


def test_run_bench_reports_the_median_of_its_repeats():
    """Each side is timed `repeats` times; the reported seconds are the medians and the rates follow them."""
    import statistics

    result = bench.run_bench(("aot",), models=2, steps=3, authors_steps=2, device="cpu", command="test", repeats=3)
    r = result["workloads"]["aot"]
    assert result["repeats"] == 3 and "median of 3 timings" in bench.format_bench(result)
    for side in ("loop", "stacked", "authors"):
        each = r[f"{side}_seconds_each"]
        assert len(each) == 3 and r[f"{side}_seconds"] == statistics.median(each)
    assert r["speedup"] == pytest.approx(r["loop_seconds"] / r["stacked_seconds"])
    assert r["stacked_model_steps_per_s"] == pytest.approx(2 * 3 / r["stacked_seconds"])
    with pytest.raises(ValueError, match="repeats must be a positive integer"):
        bench.run_bench(("aot",), steps=1, repeats=0)
