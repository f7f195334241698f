"""The Python steps of the prepared GPU run (tests/gpu_scale.py), on a CPU: what a lease's script decides
from its own measurements must be right before the lease, since a wrong choice costs the lease."""
from __future__ import annotations

import json
import math

import pytest

from memcap import experiments
from memcap.experiments import bench, recorded
from tests import gpu_scale
from tests.made_up import made_up_cache

PASSED = "\n".join(f"PASSED tests/test_gpu.py::{name}" for names in gpu_scale.TESTS.values() for name in names)


def _rows(**ms_per_step) -> dict:
    """A made-up modes result: ``mode=(dana ms, mahdavi ms)`` per mode; None: that workload failed."""
    rows = []
    for mode, times in ms_per_step.items():
        for workload, ms in zip(gpu_scale.WORKLOADS, times):
            rows.append({"workload": workload, "mode": mode, "error": "RuntimeError: x"} if ms is None else
                        {"workload": workload, "mode": mode, "seconds_per_step": ms / 1e3})
    return {"rows": rows}


@pytest.mark.parametrize("result,report,chosen", [
    (_rows(eager=(6, 9), graphs=(2, 8), compiled=(1.9, 7)), PASSED, ("always", "never")),
    (_rows(eager=(6, 9), graphs=(2, 8), compiled=(1, 3)), PASSED, ("never", "always")),   # halves it: compiled
    (_rows(eager=(6, 9), graphs=(2, 8)), "", ("never", "never")),                  # graphs' GPU test not passed
    (_rows(eager=(6, 9), graphs=(2, 8)), PASSED.replace("PASSED", "FAILED"), ("never", "never")),
    (_rows(eager=(6, 9), graphs=(2, None)), PASSED, ("never", "never")),          # failed on one workload
    (_rows(eager=(2, 8), graphs=(6, 9)), PASSED, ("never", "never")),              # slower than eager
    (_rows(eager=(6, 9), graphs=(2, 8)), PASSED.split("\n")[0], ("never", "never")),   # its OOM tests not passed
    (_rows(eager=(6, 9), compiled=(1, 2)), PASSED.split("\n")[-1], ("never", "always")),
    ({"rows": []}, PASSED, ("never", "never")),
], ids=["graphs fastest", "compiled halves the step", "graphs untested", "graphs failed its test",
        "graphs failed on a workload", "eager fastest", "graphs' memory tests not passed",
        "compiled without graphs", "nothing measured"])
def test_pick_takes_the_fastest_mode_whose_gpu_test_passed(result, report, chosen):
    graphs, compile, why = gpu_scale.pick(result, report)
    assert (graphs, compile) == chosen
    assert why.startswith({("always", "never"): "graphs", ("never", "always"): "compiled"}.get(chosen, "eager"))


def test_pick_reads_pytest_reports():
    report = ("PASSED tests/test_gpu.py::test_steps_recorded_as_cuda_graphs_give_the_eager_numbers\n"
              "FAILED tests/test_gpu.py::test_the_compiled_step_on_cuda_computes_what_the_eager_step_computes - x\n"
              "  PASSED tests/test_gpu.py::test_indented_is_not_a_summary_line\n")
    assert gpu_scale.passed_tests(report) == {gpu_scale.TESTS["graphs"][0]}


def test_modes_on_a_cpu_time_each_mode_and_keep_a_failure_as_a_row(monkeypatch):
    result = gpu_scale.measure_modes("cpu", ("aot",), ("eager", "graphs"), (2, 6))
    assert result["device"] == "cpu" and result["peak_gflops"] > 0
    assert [(r["workload"], r["mode"]) for r in result["rows"]] == [("aot", "eager"), ("aot", "graphs")]
    for r in result["rows"]:
        assert r["models"] == 16 and math.isfinite(r["seconds_per_step"]) and r["first_run_seconds"] > 0
        assert r["fraction_of_peak"] == pytest.approx(
            sum(bench.flops_per_model_step(s, 256) for s in bench.workload("aot")[0])
            / r["seconds_per_step"] / 1e9 / result["peak_gflops"])
    text = gpu_scale.format_modes(result)
    assert "aot" in text and "graphs" in text and "ms/step" in text

    import memcap.train
    real = memcap.train.train_models

    def fails_with_graphs(specs, config, **kw):
        if kw["cuda_graphs"] == "always":
            raise RuntimeError("operation not permitted when stream is capturing")
        return real(specs, config, **kw)
    monkeypatch.setattr(memcap.train, "train_models", fails_with_graphs)
    result = gpu_scale.measure_modes("cpu", ("aot",), ("eager", "graphs"), (2, 4))
    assert "operation not permitted" in result["rows"][1]["error"] and "seconds_per_step" in result["rows"][0]
    assert "graphs         failed: RuntimeError" in gpu_scale.format_modes(result)
    assert gpu_scale.pick(result, PASSED)[:2] == ("never", "never")
    with pytest.raises(ValueError, match="modes must be names in"):
        gpu_scale.measure_modes("cpu", ("aot",), ("fast",))
    with pytest.raises(ValueError, match="steps must be"):
        gpu_scale.measure_modes("cpu", ("aot",), ("eager",), (4, 4))


def test_the_command_line_writes_modes_then_picks_from_them(tmp_path, capsys, monkeypatch):
    """Mode after mode, each on every workload, the file rewritten after each row: a run stopped by its time
    limit keeps what it measured."""
    saved = []
    real = gpu_scale._time
    monkeypatch.setattr(gpu_scale, "_time", lambda *a: saved.append(len(json.loads(
        (tmp_path / "stacked_modes.json").read_text())["rows"]) if (tmp_path / "stacked_modes.json").exists()
        else 0) or real(*a))
    assert gpu_scale.main(["modes", str(tmp_path), "--device", "cpu", "--workloads", "aot,dana_fig4", "--modes",
                           "eager,graphs", "--steps", "2,4"]) == 0
    rows = json.loads((tmp_path / "stacked_modes.json").read_text())["rows"]
    assert [(r["workload"], r["mode"]) for r in rows] == [("aot", "eager"), ("dana_fig4", "eager"), ("aot", "graphs"),
                                                          ("dana_fig4", "graphs")]
    assert saved == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]       # three runs per row, each row saved at once
    capsys.readouterr()
    assert gpu_scale.main(["pick", str(tmp_path)]) == 0
    out = capsys.readouterr()
    assert out.out == "never never\n" and "eager: the fastest qualifying step" in out.err
    assert "dana_fig4      graphs" in out.err                 # the table of modes, for the log
    assert gpu_scale.main(["pick", str(tmp_path / "absent")]) == 0
    out = capsys.readouterr()
    assert out.out == "never never\n" and "no stacked_modes.json" in out.err


def test_bench_summary_reads_a_bench_result_or_says_there_is_none(tmp_path):
    result = bench.run_bench(("aot",), models=2, steps=2, authors_steps=2, device="cpu", command="b", repeats=1)
    (tmp_path / "bench.json").write_text(json.dumps(result))
    text = gpu_scale.format_bench(tmp_path / "bench.json")
    assert "CUDA graphs: never" in text and "aot" in text and "fraction_of_peak" in text
    assert gpu_scale.format_bench(tmp_path / "absent.json").startswith("  bench: no result")


def test_records_are_written_for_finished_experiments_only(tmp_path, capsys):
    paper = range(len(experiments.get("dana_fig2b").jobs("paper")))
    made_up_cache(tmp_path, "dana_fig2b", paper, replayed=tuple(paper))
    (tmp_path / "cache").rename(tmp_path / "results")
    made_up_cache(tmp_path, "dana_fig1a", [0])          # one paper job of several: no record
    for entry in (tmp_path / "cache").iterdir():
        entry.rename(tmp_path / "results" / entry.name)
    written = gpu_scale.write_records(tmp_path, "one test GPU")
    assert written == [tmp_path / "recorded" / "dana_fig2b_paper.json"]
    info, records = recorded.load("dana_fig2b", "records", tmp_path / "recorded")
    assert info["machine"] == "one test GPU" and info["command"].endswith("--cuda-graphs always")
    out = capsys.readouterr().out
    assert "dana_fig1a: no record yet (paper job 1 of dana_fig1a is missing" in out
    assert "mahdavi_fig3" not in out      # a record of its own kind


def test_the_profile_counts_the_operators_of_one_step():
    """On CUDA ``_busy`` counts kernels and their GPU time; on a CPU the same code counts operators."""
    specs, config = bench.workload("aot", 2)
    one, two = (gpu_scale._busy(specs, config, (2, 6), lambda: None, "cpu") for _ in range(2))
    assert 20 < one["kernels_per_step"] == two["kernels_per_step"] < 5000     # a step's operators, every time
    assert math.isfinite(one["busy_seconds_per_step"])    # their time: a difference of two runs, noisy on a CPU
