"""torch.compile for the training step (memcap/train/compiled.py): when it is used, that it computes what the
eager step computes, and what happens where it cannot be used."""
from __future__ import annotations

import os
import sys
import types
import warnings

import numpy as np
import pytest
import torch

from memcap.experiments import bench
from memcap.train import AoTSpec, MHASpec, TrainConfig, compiled, loop, train_models
from memcap.train.compiled import CompileWarning

pytestmark = pytest.mark.usefixtures("one_thread")

CPU = torch.device("cpu")
needs_compiler = pytest.mark.skipif(compiled.compile_blocker(CPU) is not None,
                                    reason=f"cannot compile here: {compiled.compile_blocker(CPU)}")


def test_the_mode_is_the_argument_else_the_environment_else_auto(monkeypatch):
    monkeypatch.delenv("MEMCAP_COMPILE", raising=False)
    assert compiled.compile_mode(None) == "auto"
    monkeypatch.setenv("MEMCAP_COMPILE", "never")
    assert compiled.compile_mode(None) == "never" and compiled.compile_mode("always") == "always"
    monkeypatch.setenv("MEMCAP_COMPILE", "yes")
    with pytest.raises(ValueError, match="environment variable MEMCAP_COMPILE must be one of"):
        compiled.compile_mode(None)
    with pytest.raises(ValueError, match="compile must be one of"):
        compiled.compile_mode("fast")
    with pytest.raises(ValueError, match="compile must be one of"):
        train_models([AoTSpec(heads=1, head_dim=1, dim=1, vocab=2)], TrainConfig(steps=1), compile="fast")


def test_a_gpu_compiles_only_when_asked_until_it_is_measured_there(monkeypatch):
    cuda = torch.device("cuda")
    monkeypatch.setattr(compiled, "compile_blocker", lambda device: None)
    assert not compiled.use_compile("auto", cuda, 10 ** 6)
    assert compiled.use_compile("always", cuda, 1)


def test_auto_compiles_long_jobs_on_a_cpu_that_can_and_always_says_why_it_cannot(monkeypatch):
    monkeypatch.setattr(compiled, "compile_blocker", lambda device: None)
    assert compiled.use_compile("auto", CPU, compiled.COMPILE_MIN_STEPS)
    assert not compiled.use_compile("auto", CPU, compiled.COMPILE_MIN_STEPS - 1)   # the quick profiles
    assert compiled.use_compile("always", CPU, 1) and not compiled.use_compile("never", CPU, 10 ** 6)
    monkeypatch.setattr(compiled, "compile_blocker", lambda device: "no C++ compiler found")
    assert not compiled.use_compile("auto", CPU, 10 ** 6)
    with pytest.raises(RuntimeError, match="compile='always' cannot be honoured: no C\\+\\+ compiler found"):
        compiled.use_compile("always", CPU, 1)


def test_what_blocks_compiling_is_named(monkeypatch):
    assert "CPU and CUDA only" in compiled.compile_blocker(torch.device("mps"))
    monkeypatch.setitem(sys.modules, "triton", None)   # import triton fails
    assert "through Triton, which this environment lacks" in compiled.compile_blocker(torch.device("cuda"))
    monkeypatch.setitem(sys.modules, "triton", types.ModuleType("triton"))
    assert compiled.compile_blocker(torch.device("cuda")) is None
    monkeypatch.setattr(compiled.shutil, "which", lambda name: None)
    monkeypatch.delenv("CXX", raising=False)
    assert "no C++ compiler found" in compiled.compile_blocker(CPU)


def _two_stacks():
    aot = [AoTSpec(heads=H, head_dim=2, dim=3, vocab=5, seed=i, data_seed=i) for i, H in enumerate((1, 3))]
    mha = [MHASpec(heads=H, context_size=4, examples=12, dim=4, classes=3, seed=i) for i, H in enumerate((1, 2))]
    config = TrainConfig(steps=25, batch_size=8, lr=1e-2, schedule="constant", early_stop=False, device="cpu")
    return aot, mha, config


@needs_compiler
@pytest.mark.parametrize("family", ["aot", "mha"])
def test_the_compiled_step_trains_as_the_eager_step_does(family):
    """25 steps of a padded stack (AoTs through the two-token closed form, or MHAs), compiled and eager, in
    float32: the same weights up to rounding (the compiled kernels add in another order), the same loss."""
    aot, mha, config = _two_stacks()
    specs = aot if family == "aot" else mha
    fast = train_models(specs, config, compile="always", keep_params=True)
    slow = train_models(specs, config, compile="never", keep_params=True)
    assert fast.compiled.all() and not slow.compiled.any()
    for a, b in zip(fast.params, slow.params):
        for name in b:
            np.testing.assert_allclose(a[name], b[name], rtol=0, atol=2e-4, err_msg=name)
    np.testing.assert_allclose(fast.loss, slow.loss, rtol=1e-3)
    moved = max(np.abs(b[n] - c[n]).max() for b, c in zip(slow.params, train_models(
        specs, TrainConfig(**{**config.to_dict(), "steps": 1, "betas": config.betas}), keep_params=True,
        compile="never").params) for n in b if b[n].size)
    assert moved > 1e-2   # training moved the weights far more than the tolerance above


def test_a_failed_compilation_falls_back_to_the_eager_step_with_a_warning(monkeypatch):
    """Under 'auto' a stack whose compiled first step raises trains eagerly (the same bits as 'never') and the
    result says so; under 'always' the error is raised."""
    def broken(*args):
        raise RuntimeError("C++ compile error: omp.h not found")

    aot, _, config = _two_stacks()
    monkeypatch.setattr(loop, "use_compile", lambda mode, device, steps: mode != "never")
    monkeypatch.setattr(loop, "compiled_stack_loss", lambda device_type="cpu": broken)
    with pytest.warns(CompileWarning, match="omp.h not found"):
        fell_back = train_models(aot, config, compile="auto", keep_params=True)
    eager = train_models(aot, config, compile="never", keep_params=True)
    assert not fell_back.compiled.any()
    for a, b in zip(fell_back.params, eager.params):
        for name in b:
            np.testing.assert_array_equal(a[name], b[name])
    with pytest.raises(RuntimeError, match="omp.h not found"):
        train_models(aot, config, compile="always")


def test_the_bench_decides_at_the_step_count_of_the_workload_s_jobs(monkeypatch):
    """Paper workloads are timed as their 10,000-step jobs run (compiled under 'auto' where possible), small
    ones at the benchmark's own steps; the result says which path was timed."""
    asked = []
    monkeypatch.setattr(bench, "use_compile", lambda mode, device, steps: asked.append((mode, steps)) or False)
    result = bench.run_bench(("aot", "dana_fig4"), models=2, steps=2, authors_steps=2, device="cpu", repeats=1,
                             command="test")
    assert asked == [("auto", 2), ("auto", 10_000)]
    assert [r["compiled"] for r in result["workloads"].values()] == [False, False]
    assert all(r["warmup_seconds"] > 0 for r in result["workloads"].values())


def test_auto_compiles_the_stacks_that_gain_and_leaves_narrow_busy_aot_stacks_eager(monkeypatch):
    """compiles_well: MHA stacks and AoTs of width d > 3 always; AoTs of d <= 3 only while their work per step
    is at most one STACK_COST (dana_fig2b's d = 3 stacks ran 0.85 to 1.10 times as fast compiled). The
    benchmark's paper workloads compile every stack under 'always', which is what 'auto' does for their
    jobs: all their stacks compile well."""
    from memcap.train.loop import group_by_shape, split_group

    wide = [AoTSpec(heads=31, head_dim=10, dim=10, vocab=50) for _ in range(4)]
    narrow_busy = [AoTSpec(heads=31, head_dim=3, dim=3, vocab=50) for _ in range(20)]
    narrow_small = [AoTSpec(heads=H, head_dim=2, dim=2, vocab=10) for H in (1, 11, 21)]
    mha = [MHASpec(heads=2, context_size=4, examples=12, dim=4, classes=3)]
    assert compiled.compiles_well(wide, 1024) and compiled.compiles_well(mha, 8)
    assert not compiled.compiles_well(narrow_busy, 1024) and compiled.compiles_well(narrow_small, 1024)
    for name in bench.PAPER_WORKLOADS + bench.LARGE_WORKLOADS:
        specs, config = bench.workload(name)
        for group in group_by_shape(specs):
            for sub in split_group([specs[i] for i in group], config.batch_size, "cpu"):
                assert compiled.compiles_well([specs[group[j]] for j in sub], config.batch_size), name
    # a stack that does not compile well trains eagerly under 'auto', compiled under 'always'
    monkeypatch.setattr(loop, "use_compile", lambda mode, device, steps: mode != "never")
    monkeypatch.setattr(loop, "compiles_well", lambda specs, batch: False)
    aot, _, config = _two_stacks()
    assert not train_models(aot, config, compile="auto").compiled.any()


@needs_compiler
def test_the_bench_times_the_compiled_step_after_compiling_in_its_warm_up():
    result = bench.run_bench(("aot",), models=1, steps=3, authors_steps=2, device="cpu", repeats=1,
                             command="test", compile="always")
    r = result["workloads"]["aot"]
    assert r["compiled"] and r["warmup_seconds"] > r["stacked_seconds"]
    assert "aot (1 model, compiled)" in bench.format_bench(result)


def test_the_command_line_refuses_a_wrong_mode_before_any_work(monkeypatch, capsys, tmp_path):
    from memcap.__main__ import main

    monkeypatch.setenv("MEMCAP_DEVICE", "cpu")
    monkeypatch.setenv("MEMCAP_COMPILE", "sometimes")
    assert main(["sweep", "dana_fig4", "--cache", str(tmp_path)]) == 2
    assert "MEMCAP_COMPILE must be one of" in capsys.readouterr().err
    monkeypatch.delenv("MEMCAP_COMPILE")
    monkeypatch.setattr(compiled, "compile_blocker", lambda device: "no C++ compiler found")
    assert main(["bench", "--compile", "always", "--workload", "aot", "--steps", "1"]) == 2
    assert "--compile: 'always' cannot be honoured here: no C++ compiler found" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_a_sweep_hands_its_mode_to_the_jobs_and_restores_the_environment(monkeypatch, tmp_path, capsys):
    from memcap import experiments
    from memcap.__main__ import main
    from memcap.experiments import sweep
    from memcap.experiments.sweep import train_job

    seen, graphs_seen = [], []
    monkeypatch.setattr(loop, "use_compile", lambda mode, device, steps: seen.append(mode) or False)
    monkeypatch.setattr(loop, "graph_mode", lambda mode: graphs_seen.append(os.environ.get("MEMCAP_CUDA_GRAPHS"))
                        or "never")
    monkeypatch.setenv("MEMCAP_DEVICE", "cpu")
    monkeypatch.delenv("MEMCAP_COMPILE", raising=False)
    monkeypatch.delenv("MEMCAP_CUDA_GRAPHS", raising=False)
    job = train_job([AoTSpec(heads=1, head_dim=1, dim=1, vocab=3)], TrainConfig(steps=2, batch_size=2, device="cpu"))
    monkeypatch.setattr(experiments.get("dana_fig4"), "jobs", lambda profile: [job])
    assert main(["sweep", "dana_fig4", "--cache", str(tmp_path), "--executor", "inprocess",
                 "--compile", "never", "--cuda-graphs", "never"]) == 0
    assert seen == ["never"] and "MEMCAP_COMPILE" not in os.environ
    assert graphs_seen == ["never"] and "MEMCAP_CUDA_GRAPHS" not in os.environ
    entry = sweep.ResultCache(tmp_path).get("dana_fig4", job)
    assert entry["compiled"] == [False]
    assert sweep.ResultCache(tmp_path).lookup("dana_fig4", job).manifest["cuda_graphs"] == "never"


def test_no_warnings_from_the_eager_path():
    """The book's builds run the eager step (quick profiles) and fail on any warning."""
    aot, _, config = _two_stacks()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not train_models(aot, config).compiled.any()
