"""Smoke tests of the command line ``python -m memcap`` (subprocesses, tiny configs)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from memcap import experiments
from memcap.sweep import train_job
from memcap.train import AoTSpec, TrainConfig


def _run(*args: str, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    import os
    env = {**os.environ, "MEMCAP_DEVICE": "cpu", **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "memcap", "--threads", "1", *args], capture_output=True,
                          text=True, env=env, timeout=120)


def test_bench_json_reports_both_sides():
    out = _run("bench", "--models", "2", "--steps", "3", "--workload", "aot", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    r = result["workloads"]["aot"]
    assert r["speedup"] > 0 and r["stacked_model_steps_per_s"] > 0 and r["loop_peak_memory_mb"] > 0
    assert result["hardware"]["device"] == "cpu" and "bench" in result["command"]


def test_sweep_runs_with_progress_and_then_reads_the_cache(tmp_path, monkeypatch):
    # a tiny experiment: the CLI is run in-process so the monkeypatched job list is seen
    from memcap.__main__ import main
    jobs = [train_job([AoTSpec(heads=1, head_dim=2, dim=2, vocab=3, seed=s)],
                      TrainConfig(steps=5, batch_size=4, device="cpu")) for s in range(2)]
    monkeypatch.setattr(experiments.get("dana_fig4"), "jobs", lambda profile: jobs)
    assert main(["sweep", "dana_fig4", "--profile", "paper", "--cache", str(tmp_path)]) == 0
    assert len(list((tmp_path / "dana_fig4").glob("*.json"))) == 2
    assert main(["sweep", "dana_fig4", "--profile", "paper", "--cache", str(tmp_path)]) == 0


def test_sweep_progress_bar_on_stderr(tmp_path, capsys, monkeypatch):
    from memcap.__main__ import main
    jobs = [train_job([AoTSpec(heads=1, head_dim=2, dim=2, vocab=3)], TrainConfig(steps=3, batch_size=4, device="cpu"))]
    monkeypatch.setattr(experiments.get("dana_fig1a"), "jobs", lambda profile: jobs)
    assert main(["sweep", "dana_fig1a", "--cache", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "1/1 jobs" in err and "ETA" in err


def test_list_and_bad_arguments():
    out = _run("list")
    assert out.returncode == 0 and "mahdavi_fig2a" in out.stdout and "aot-fig-4" in out.stdout
    bad = _run("sweep", "fig99")
    assert bad.returncode == 2 and "invalid choice: 'fig99'" in bad.stderr


@pytest.mark.parametrize("args,message", [(["bench", "--models", "0", "--steps", "1"], "models must be a positive integer"),
                                          (["sweep", "dana_fig4", "--executor", "dask", "--workers", "0"],
                                           "workers must be a positive integer")])
def test_errors_name_the_argument(args, message):
    out = _run(*args)
    assert out.returncode == 2 and message in out.stderr


def test_student_edition_outside_the_book_names_the_problem(tmp_path, monkeypatch, capsys):
    from memcap.__main__ import main

    monkeypatch.chdir(tmp_path)
    assert main(["student-edition", "--output", str(tmp_path / "out")]) == 2
    assert "root must be the book's folder (with _toc.yml)" in capsys.readouterr().err
