"""Tests of the command line ``python -m memcap`` (subprocesses and in-process calls, tiny configs)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import memcap.train
from memcap import experiments
from memcap.experiments.sweep import ResultCache, train_job
from memcap.train import AoTSpec, TrainConfig
from tests.conftest import ROOT


def _run(*args: str, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "MEMCAP_DEVICE": "cpu", **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "memcap", "--threads", "1", *args], capture_output=True,
                          text=True, env=env, timeout=120)


def _tiny_jobs(count: int, steps: int = 5) -> list[dict]:
    return [train_job([AoTSpec(heads=1, head_dim=2, dim=2, vocab=3, seed=s)],
                      TrainConfig(steps=steps, batch_size=4, device="cpu")) for s in range(count)]


def test_bench_json_reports_both_sides():
    out = _run("bench", "--models", "2", "--steps", "3", "--workload", "aot", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    r = result["workloads"]["aot"]
    assert r["speedup"] > 0 and r["stacked_model_steps_per_s"] > 0 and r["loop_peak_memory_mb"] > 0
    assert result["hardware"]["device"] == "cpu" and "bench" in result["command"]


def test_sweep_then_reads_the_cache_without_training_again(tmp_path, monkeypatch, capsys):
    """The second run trains nothing (counted at the engine), rewrites nothing, and says so."""
    from memcap.__main__ import main

    trainings = []
    real = memcap.train.train_models
    monkeypatch.setattr(memcap.train, "train_models", lambda specs, *a, **k: trainings.append(len(specs))
                        or real(specs, *a, **k))
    monkeypatch.setattr(experiments.get("dana_fig4"), "jobs", lambda profile: _tiny_jobs(2))
    args = ["--threads", "1", "sweep", "dana_fig4", "--profile", "paper", "--cache", str(tmp_path)]
    assert main(args) == 0
    assert trainings == [1, 1]
    assert "dana_fig4 (paper): 2 jobs, 0 from the cache, 2 computed;" in capsys.readouterr().out
    files = sorted((tmp_path / "dana_fig4").rglob("*.json"))
    stamps = [p.stat().st_mtime_ns for p in files]
    assert len(files) == 2
    assert main(args) == 0
    assert trainings == [1, 1], "the second sweep trained again instead of reading the cache"
    assert "dana_fig4 (paper): 2 jobs, 2 from the cache, 0 computed;" in capsys.readouterr().out
    assert [p.stat().st_mtime_ns for p in sorted((tmp_path / "dana_fig4").rglob("*.json"))] == stamps


def test_progress_bar_only_on_a_terminal_or_when_asked(tmp_path, capsys, monkeypatch):
    from memcap.__main__ import main

    monkeypatch.setattr(experiments.get("dana_fig1a"), "jobs", lambda profile: _tiny_jobs(1, steps=3))
    assert main(["sweep", "dana_fig1a", "--cache", str(tmp_path / "a")]) == 0
    assert capsys.readouterr().err == "", "stderr is not a terminal here: the bar must stay quiet"
    assert main(["sweep", "dana_fig1a", "--cache", str(tmp_path / "b"), "--progress"]) == 0
    err = capsys.readouterr().err
    assert "dana_fig1a (quick)" in err and "1/1" in err and "0 cached" in err and "job/s" in err   # tqdm's bar


def test_list_and_bad_arguments():
    out = _run("list")
    assert out.returncode == 0 and "mahdavi_fig2a" in out.stdout and "aot-fig-4" in out.stdout
    bad = _run("sweep", "fig99")
    assert bad.returncode == 2 and "invalid choice: 'fig99'" in bad.stderr


@pytest.mark.parametrize("args,message", [
    (["bench", "--models", "0", "--steps", "1"], "argument --models: must be a positive integer, got '0'"),
    (["bench", "--device", "tpu"], "--device: device must be one of"),
    (["sweep", "dana_fig4", "--executor", "dask", "--workers", "0"], "argument --workers: must be a positive integer"),
    (["sweep", "dana_fig4", "--workers", "2"], "--workers is only used by --executor threads, processes or dask"),
    (["sweep", "dana_fig4", "--executor", "threads", "--address", "tcp://h:8786"],
     "--address is only used by --executor dask, not by --executor threads"),
    (["sweep", "dana_fig4", "--executor", "dask", "--address", "tcp://h:8786", "--workers", "2"],
     "with --address the cluster's own workers are used"),
    (["cache", "fig99"], "experiment must be one of"),
])
def test_argument_errors_are_one_line_naming_the_argument(args, message):
    out = _run(*args)
    assert out.returncode == 2 and message in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr, out.stderr


def test_threads_flag_is_checked():
    out = _run("--threads", "0", "list")
    assert out.returncode == 2 and "argument --threads: must be a positive integer, got '0'" in out.stderr


def test_bad_profile_variable_does_not_break_help_and_is_an_argument_error():
    env = {"MEMCAP_PROFILE": "full"}
    helped = _run("--help", env_extra=env)
    assert helped.returncode == 0 and "usage: python -m memcap" in helped.stdout and helped.stderr == ""
    helped = _run("sweep", "--help", env_extra=env)
    assert helped.returncode == 0 and "MEMCAP_PROFILE" in helped.stdout
    out = _run("sweep", "dana_fig4", env_extra=env)
    assert out.returncode == 2
    assert out.stderr.strip() == "python -m memcap: error: MEMCAP_PROFILE must be one of ('quick', 'paper'), got 'full'"


_PATCHED_CLI = textwrap.dedent("""
    import json, os, sys
    from memcap import experiments
    jobs = json.loads(sys.argv[1])
    experiments.get("dana_fig4").jobs = lambda profile: jobs
    if os.environ.get("MEMCAP_TEST_STARTED_DIR"):   # announce each job as it starts (tests/started_jobs.py)
        import memcap.experiments.sweep
        from tests.started_jobs import run_job_announced
        memcap.experiments.sweep.run_sweep_report.__kwdefaults__["fn"] = run_job_announced
    from memcap.__main__ import cli
    cli(sys.argv[2:])
""")


def _patched_cli(jobs: list[dict], *args: str, env_extra: dict | None = None, **kw) -> subprocess.Popen:
    """``python -m memcap`` with dana_fig4's job list replaced by ``jobs`` (runs the real entry point)."""
    env = {**os.environ, "MEMCAP_DEVICE": "cpu", "PYTHONUNBUFFERED": "1", **(env_extra or {})}
    return subprocess.Popen([sys.executable, "-c", _PATCHED_CLI, json.dumps(jobs), "--threads", "1", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT, **kw)


def test_internal_error_keeps_its_traceback(tmp_path):
    broken = [{"kind": "train", "specs": [{"model": "aot", "heads": 0, "head_dim": 2, "dim": 2}], "config": {}}]
    proc = _patched_cli(broken, "sweep", "dana_fig4", "--cache", str(tmp_path))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1
    assert "Traceback (most recent call last)" in err and "heads must be a positive integer, got 0" in err


def test_student_edition_outside_the_book_names_the_problem(tmp_path, monkeypatch, capsys):
    from memcap.__main__ import main

    monkeypatch.chdir(tmp_path)
    assert main(["student-edition", "--output", str(tmp_path / "out")]) == 2
    assert "root must be the book's folder (with _toc.yml)" in capsys.readouterr().err


HANG = 300
"""Seconds after which a wait for an event gives up: a guard against a hung test, not a measurement (the
events take well under a second to a few seconds here)."""


def _wait_for(condition, what: str, proc: subprocess.Popen | None = None) -> None:
    """Poll ``condition()`` until it holds; fail if ``proc`` ends first, or after :data:`HANG` s (hung)."""
    deadline = time.monotonic() + HANG
    while not condition():
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"the command ended before {what}: {proc.communicate()}")
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen in {HANG} s: hung")
        time.sleep(0.05)


@pytest.mark.parametrize("executor", ["inprocess", "threads", pytest.param("processes", marks=pytest.mark.slow),
                                      pytest.param("dask", marks=pytest.mark.slow)])
def test_ctrl_c_keeps_finished_jobs_and_cancels_running_ones_at_once(tmp_path, executor, record_property):
    """SIGINT while the endless jobs run (their files in tests/started_jobs.py's folder say so): exit 130
    (the endless jobs never end, so the command cannot have waited for them), a one-line summary, the two
    finished entries current and valid (a rerun skips them), nothing partial left, no worker process left
    running. The time from Ctrl-C to the exit is reported, not asserted (the machine may be shared)."""
    from tests.started_jobs import ANNOUNCE_DIR, started_file

    quick = _tiny_jobs(2, steps=20)
    endless = [train_job([AoTSpec(heads=1, head_dim=2, dim=2, vocab=3, seed=9 + s)],
                         TrainConfig(steps=10 ** 8, batch_size=4, device="cpu", early_stop=False)) for s in range(2)]
    jobs = quick + endless
    extra = [] if executor == "inprocess" else ["--executor", executor, "--workers", "2"]
    announced = tmp_path / "started"
    announced.mkdir()
    proc = _patched_cli(jobs, "sweep", "dana_fig4", "--profile", "paper", "--cache", str(tmp_path / "cache"),
                        *extra, env_extra={ANNOUNCE_DIR: str(announced)})
    cache = ResultCache(tmp_path / "cache")
    running = endless[:1] if executor == "inprocess" else endless   # one job at a time, or two workers
    try:
        _wait_for(lambda: all(cache.path("dana_fig4", j).exists() for j in quick), "the two short jobs finished",
                  proc)
        _wait_for(lambda: all(started_file(announced, j).exists() for j in running), "the endless jobs started",
                  proc)
        children = _children(proc.pid)
        assert children or executor not in ("processes", "dask"), "found no worker processes to check"
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=HANG)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:              # never leave a sweep running behind a failed test
            for pid in _children(proc.pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            proc.kill()
            proc.communicate()
    record_property("seconds_from_ctrl_c_to_exit", round(took, 2))
    print(f"\n{executor}: exit {took:.2f} s after Ctrl-C")
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == [
        "interrupted: dana_fig4: 2 jobs of 4 in the cache (2 finished in this run), 2 queued or running jobs "
        "cancelled; run the same command again to continue"]
    assert [cache.get("dana_fig4", j)["records"][0]["steps"] for j in quick] == [20, 20]
    assert [cache.lookup("dana_fig4", j).status for j in endless] == ["missing", "missing"]
    assert [status for status, *_ in cache.entries("dana_fig4")] == ["current", "current"]   # no partial file
    _wait_for(lambda: not [pid for pid in children if _alive(pid)], "the worker processes ended")


def _children(pid: int) -> list[int]:
    """Every descendant process of ``pid``, started by any of its threads (Linux /proc)."""
    from pathlib import Path

    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for path in Path(f"/proc/{parent}/task").glob("*/children"):
            try:
                kids = [int(k) for k in path.read_text().split()]
            except OSError:
                kids = []
            found += kids
            todo += kids
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[-1][0] != "Z"
    except OSError:
        return False


def test_cache_command_reports_and_prunes(tmp_path, monkeypatch, capsys):
    from memcap import ENGINE_VERSION
    from memcap.__main__ import main

    jobs = _tiny_jobs(3)
    monkeypatch.setattr(experiments.get("dana_fig4"), "jobs", lambda profile: jobs if profile == "paper" else jobs[:1])
    cache = ResultCache(tmp_path)
    manifest = {"engine_version": ENGINE_VERSION, "git_commit": "abcdef1234", "device_name": "NVIDIA H100",
                "date": "2026-11-20T00:00:00+00:00"}
    cache.put("dana_fig4", jobs[0], {"v": 1}, manifest)
    cache.put("dana_fig4", jobs[1], {"v": 1}, {**manifest, "engine_version": ENGINE_VERSION + 1})
    assert main(["cache", "dana_fig4", "--cache", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert ("dana_fig4       paper       3        1      1        0        1  commit abcdef1, NVIDIA H100, "
            "2026-11-20") in out
    assert "dana_fig4       quick       1        1      0        0        0  commit abcdef1" in out
    assert "dana_fig4: files on disk: 1 current, 1 stale" in out and "--prune" in out
    assert main(["cache", "dana_fig4", "--cache", str(tmp_path), "--prune"]) == 0
    out = capsys.readouterr().out
    assert f"pruned 1 file (stale, legacy, corrupt or partial entries) from {tmp_path}" in out
    assert cache.lookup("dana_fig4", jobs[0]).status == "current"
    assert cache.lookup("dana_fig4", jobs[1]).status == "missing"


@pytest.mark.parametrize("command", [["cache"], ["cache", "--prune"], ["sweep", "dana_fig4"]])
@pytest.mark.parametrize("where", ["flag", "environment", "below a file"])
def test_a_cache_that_cannot_be_a_folder_is_refused_before_any_work(tmp_path, monkeypatch, capsys, command, where):
    """``--cache`` or ``MEMCAP_CACHE`` naming a regular file (or a path below one): exit 2, one line, no job run."""
    from memcap.__main__ import main

    trainings = []
    monkeypatch.setattr(memcap.train, "train_models", lambda *a, **k: trainings.append(a))
    monkeypatch.setattr(experiments.get("dana_fig4"), "jobs", lambda profile: _tiny_jobs(1))
    a_file = tmp_path / "results.txt"
    a_file.write_text("not a folder")
    path = a_file / "cache" if where == "below a file" else a_file
    if where == "environment":
        monkeypatch.setenv("MEMCAP_CACHE", str(path))
        args = command
    else:
        monkeypatch.delenv("MEMCAP_CACHE", raising=False)
        args = [*command, "--cache", str(path)]
    assert main(["--threads", "1", *args]) == 2
    err = capsys.readouterr().err
    flag = "MEMCAP_CACHE" if where == "environment" else "--cache"
    assert err.startswith(f"python -m memcap: error: {flag}: {path}") and f"{a_file} is a file, not a folder" in err
    assert len(err.strip().splitlines()) == 1 and trainings == []
    assert a_file.read_text() == "not a folder"


@pytest.mark.parametrize("args,env,message", [
    (["doctor", "--device", "cuda:7"], {}, "--device: device 'cuda:7' requested but CUDA is not available"),
    (["doctor", "--device", "tpu"], {}, "--device: device must be one of"),
    (["doctor", "--models", "0"], {}, "argument --models: must be a positive integer, got '0'"),
    (["doctor"], {"MEMCAP_DEVICE": "tpu"}, "MEMCAP_DEVICE: device must be one of"),
    (["sweep", "dana_fig4"], {"MEMCAP_DEVICE": "gpu"}, "MEMCAP_DEVICE: device must be one of"),
    (["cache"], {"MEMCAP_CACHE": "pyproject.toml"}, "MEMCAP_CACHE: pyproject.toml is a file, not a folder"),
])
def test_bad_devices_and_paths_are_one_line_exit_2(args, env, message):
    if "cuda:7" in args and __import__("torch").cuda.device_count() > 7:
        pytest.skip("this machine has a cuda:7")
    out = subprocess.run([sys.executable, "-m", "memcap", "--threads", "1", *args], capture_output=True, text=True,
                         env={**os.environ, **env}, timeout=120, cwd=ROOT)
    assert out.returncode == 2 and message in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr and out.stdout == ""


def test_student_edition_output_that_is_a_file_is_refused(tmp_path, monkeypatch, capsys):
    from memcap.__main__ import main

    monkeypatch.chdir(ROOT)
    target = tmp_path / "site"
    target.write_text("")
    assert main(["student-edition", "--output", str(target)]) == 2
    assert capsys.readouterr().err.strip() == f"python -m memcap: error: --output: {target} is a file, not a folder"
