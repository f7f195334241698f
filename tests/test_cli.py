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
    args = ["--threads", "1", "sweep", "dana_fig4", "--profile", "paper", "--cache", str(tmp_path), "--executor",
            "inprocess"]
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


def test_sweep_runs_one_single_threaded_process_per_core_by_default_on_a_cpu(tmp_path, monkeypatch, capsys):
    """No --executor on a CPU with 2 cores: a pool of 2 processes (memcap.experiments.sweep.default_executor)."""
    from memcap.__main__ import main
    from memcap.experiments import sweep

    made = []
    real = sweep.make_executor
    monkeypatch.setattr(sweep, "make_executor",
                        lambda kind, **kw: made.append((kind, kw["workers"])) or real(kind, **kw))
    monkeypatch.setattr(sweep, "usable_cores", lambda: 2)
    monkeypatch.setenv("MEMCAP_DEVICE", "cpu")
    monkeypatch.setattr(experiments.get("dana_fig4"), "jobs", lambda profile: _tiny_jobs(2))
    assert main(["sweep", "dana_fig4", "--profile", "paper", "--cache", str(tmp_path)]) == 0
    assert made == [("processes", 2)]
    assert "dana_fig4 (paper): 2 jobs, 0 from the cache, 2 computed;" in capsys.readouterr().out


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
    (["sweep", "dana_fig4", "--executor", "processes", "--workers", "99999999999999999999"],
     "argument --workers: must be at most 1,024, got '99999999999999999999'"),
    (["bench", "--models", "10000000000", "--steps", "1"], "argument --models: must be at most 10,000"),
    (["bench", "--steps", "99999999999999999999999"], "argument --steps: must be at most 1,000,000,000"),
    (["bench", "--authors-steps", "99999999999999999999999"], "argument --authors-steps: must be at most"),
    (["sweep", "dana_fig4", "--merge", "99999999999999999999999"], "argument --merge: must be at most"),
    (["grade", ".", "--chapter", "skip", "--memory", "17592186044416"], "argument --memory: must be at most"),
    (["sweep", "dana_fig4", "--cache", "{tmp}", "--executor", "dask", "--address", "not an address"],
     "--address 'not an address': ValueError"),
])
def test_argument_errors_are_one_line_naming_the_argument(args, message, tmp_path):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    out = _run(*args)
    assert out.returncode == 2 and message in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr, out.stderr


@pytest.mark.parametrize("command", [["doctor", "--no-bench"], ["estimate", "dana_fig4", "--profile", "quick"]])
@pytest.mark.parametrize("variable,value", [("MEMCAP_COMPILE", "yes"), ("MEMCAP_CUDA_GRAPHS", "maybe")])
def test_commands_training_with_the_environment_modes_refuse_a_bad_one_before_any_work(command, variable, value):
    out = _run(*command, env_extra={variable: value})
    assert out.returncode == 2 and out.stdout == "", out.stdout
    assert out.stderr.strip() == (f"python -m memcap: error: the environment variable {variable} must be one of "
                                  f"{out.stderr.split('must be one of ')[1].strip()}")
    assert f"got {value!r}" in out.stderr


def test_a_reader_that_leaves_early_gets_no_traceback():
    """`python -m memcap list | head -1`: the pipe closes before the listing is written (here `true` reads
    nothing and exits at once, long before memcap has imported torch)."""
    import sys as _sys

    done = subprocess.run(f"{_sys.executable} -m memcap list | true", shell=True, capture_output=True, text=True,
                          timeout=120, cwd=str(ROOT))
    assert done.stderr == "", done.stderr


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
    import json, os, signal, sys
    # a user's Ctrl-C reaches a command whose SIGINT is handled; a test run launched in the background of a
    # non-interactive shell (nohup ... &) inherits SIGINT ignored, and the sweep would never see it
    signal.signal(signal.SIGINT, signal.default_int_handler)
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
    assert "Traceback (most recent call last)" in err and "['heads'] must be a positive integer, got 0" in err


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
    extra = ["--executor", "inprocess"] if executor == "inprocess" else ["--executor", executor, "--workers", "2"]
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
        "cancelled; run the same command again to continue (a job that was running goes on from its last checkpoint)"]
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
    cache.put("dana_fig4", jobs[1], {"v": 1}, {**manifest, "engine_version": ENGINE_VERSION - 1})
    newer = cache.put("dana_fig4", jobs[2], {"v": 1}, {**manifest, "engine_version": ENGINE_VERSION + 1})
    assert main(["cache", "dana_fig4", "--cache", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert ("dana_fig4       paper       3        1      1      1        0        0  commit abcdef1, NVIDIA H100, "
            "2026-11-20") in out                                  # the newer engine's job is not called stale
    assert "dana_fig4       quick       1        1      0      0        0        0  commit abcdef1" in out
    assert "(a job that has only those counts as newer above)" in out
    assert f"dana_fig4: files on disk: 1 current, 1 newer (engine > {ENGINE_VERSION}), 1 stale" in out
    assert "--prune" in out and "--prune keeps them" in out
    assert main(["cache", "dana_fig4", "--cache", str(tmp_path), "--prune"]) == 0
    out = capsys.readouterr().out
    assert f"pruned 1 file (stale, legacy, corrupt or partial entries, orphan checkpoints) from {tmp_path}" in out
    assert cache.lookup("dana_fig4", jobs[0]).status == "current"
    assert cache.lookup("dana_fig4", jobs[1]).status == "missing"
    assert newer.is_file() and "newer" in cache.lookup("dana_fig4", jobs[2]).reason   # another checkout's work


def _stale_put(cache: ResultCache, experiment: str, job: dict):
    from memcap import ENGINE_VERSION

    return cache.put(experiment, job, {"v": 1}, {"engine_version": ENGINE_VERSION - 1})


def test_cache_prune_prunes_only_the_experiments_named(tmp_path, monkeypatch, capsys):
    jobs = _tiny_jobs(1)
    for name in ("dana_fig4", "mahdavi_fig2a"):
        monkeypatch.setattr(experiments.get(name), "jobs", lambda profile: jobs)
    cache = ResultCache(tmp_path)
    mine, other = _stale_put(cache, "dana_fig4", jobs[0]), _stale_put(cache, "mahdavi_fig2a", jobs[0])
    code, out, _ = _answer(["cache", "dana_fig4", "--cache", str(tmp_path), "--prune"], capsys)
    assert code == 0 and f"pruned 1 file (stale, legacy, corrupt or partial entries, orphan checkpoints) from " \
                         f"{tmp_path}" in out
    assert not mine.exists() and other.is_file()
    assert "mahdavi_fig2a" not in out


def test_cache_prune_refuses_a_folder_that_is_no_results_cache(tmp_path, capsys):
    """The audit's case: pointed at a copy of the repository, prune deleted its recorded runs."""
    theirs = [tmp_path / "memcap" / "experiments" / "recorded" / "dana_fig1b_paper.json",
              tmp_path / "book" / "appendix" / "gpu_book.json", tmp_path / "results.npz"]
    for path in theirs:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{")
    code, out, err = _answer(["cache", "--prune", "--cache", str(tmp_path)], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert f"--cache: {tmp_path} holds no experiment's folder (such as mahdavi_fig2a/): it is not a memcap " \
           "results cache, nothing pruned" in err
    assert all(path.read_text() == "{" for path in theirs)
    # in a cache, files memcap did not name are listed as not memcap's and kept
    (tmp_path / "dana_fig4").mkdir()
    (tmp_path / "dana_fig4" / "notes.json").write_text("{")
    code, out, err = _answer(["cache", "dana_fig4", "--prune", "--cache", str(tmp_path)], capsys)
    assert code == 0 and "pruned 0 files" in out and "dana_fig4: files on disk: 1 not memcap's" in out
    assert "left alone" in out and (tmp_path / "dana_fig4" / "notes.json").read_text() == "{"
    assert all(path.read_text() == "{" for path in theirs)


@pytest.mark.parametrize("prune", [[], ["--prune"]])
def test_cache_says_when_its_folder_does_not_exist(tmp_path, monkeypatch, capsys, prune):
    """A --cache or MEMCAP_CACHE naming no folder is refused in one line; the default cache of a fresh clone, not
    made yet, is reported with every job missing (exit 0)."""
    import memcap.experiments.sweep as sweep

    absent = tmp_path / "absent"
    monkeypatch.delenv("MEMCAP_CACHE", raising=False)
    code, out, err = _answer(["cache", "dana_fig4", "--cache", str(absent), *prune], capsys)
    assert (code, out) == (2, "") and err.strip() == (f"python -m memcap: error: --cache: {absent} does not exist: "
                                                      "there is no results cache there (a sweep makes one)")
    monkeypatch.setenv("MEMCAP_CACHE", str(absent))
    code, out, err = _answer(["cache", "dana_fig4", *prune], capsys)
    assert code == 2 and f"MEMCAP_CACHE: {absent} does not exist" in err
    monkeypatch.delenv("MEMCAP_CACHE")
    monkeypatch.setattr(sweep, "default_cache_dir", lambda: absent)
    jobs = _tiny_jobs(2)
    monkeypatch.setattr(experiments.get("dana_fig4"), "jobs", lambda profile: jobs)
    code, out, err = _answer(["cache", "dana_fig4", *prune], capsys)
    assert code == 0 and err == ""
    assert out.splitlines()[0] == (f"results cache {absent} does not exist yet: no sweep has stored a result"
                                   f"{' (nothing to prune)' if prune else ''}; `python -m memcap sweep EXPERIMENT` "
                                   "makes it")
    assert "dana_fig4       paper       2        0      0      0        0        2  -" in out and not absent.exists()


@pytest.mark.parametrize("text", ["[" * 100_000, "engine version as a string"])
def test_cache_counts_an_unreadable_entry_as_corrupt_everywhere(tmp_path, monkeypatch, capsys, text):
    """A JSON nested 100,000 deep crashed `cache` (RecursionError); an engine_version "6" was current in the table,
    stale on disk and pruned: both are corrupt in the table, on disk and for --prune."""
    from memcap import ENGINE_VERSION

    jobs = _tiny_jobs(1)
    monkeypatch.setattr(experiments.get("dana_fig4"), "jobs", lambda profile: jobs)
    cache = ResultCache(tmp_path)
    path = cache.put("dana_fig4", jobs[0], {"v": 1}, {"engine_version": ENGINE_VERSION})
    if text.startswith("["):
        path.write_text(text)
    else:
        path.write_text(path.read_text().replace(f'"engine_version": {ENGINE_VERSION}',
                                                 f'"engine_version": "{ENGINE_VERSION}"'))
    code, out, _ = _answer(["cache", "dana_fig4", "--cache", str(tmp_path)], capsys)
    assert code == 0 and "dana_fig4       paper       1        0      0      0        1        0  -" in out
    assert "dana_fig4: files on disk: 1 corrupt" in out
    code, out, _ = _answer(["cache", "dana_fig4", "--cache", str(tmp_path), "--prune"], capsys)
    assert code == 0 and "pruned 1 file" in out and not path.exists()


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


# --- every subcommand answers a wrong argument in one line, exit 2 (in-process: no interpreter start) -------

def _answer(argv: list[str], capsys) -> tuple[int, str, str]:
    """``main(argv)``'s exit status, stdout and stderr; argparse's own refusals exit through SystemExit."""
    from memcap.__main__ import main

    try:
        code = main(argv)
    except SystemExit as stop:
        code = stop.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def no_cuda(monkeypatch):
    """This machine seen without CUDA or MPS, whatever it has: the refusals below are the same everywhere."""
    import torch

    import memcap.device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    monkeypatch.setattr(memcap.device, "_mps_available", lambda: False)


@pytest.fixture
def one_gpu(monkeypatch):
    """This machine seen with one CUDA device (no tensor is made on it: the refusals come before any work)."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)


_UNWRITABLE = "/proc/memcap-cannot-be-here"   # no user, root included, can make a folder in /proc
_NO_CUDA = "requested but CUDA is not available on this machine"

# (arguments, environment, what the one line must say); {file} is a regular file, {tmp} a fresh folder
REFUSALS = [
    # an unavailable device (the issue: doctor --device cuda printed a traceback)
    (["doctor", "--device", "cuda"], {}, f"--device: device 'cuda' {_NO_CUDA}"),
    (["doctor", "--device", "mps"], {}, "--device: device 'mps' requested but MPS is not available"),
    (["doctor", "--device", "cpu:x"], {}, "--device: Invalid device string: 'cpu:x'"),
    (["doctor"], {"MEMCAP_DEVICE": "cuda:1"}, f"MEMCAP_DEVICE: device 'cuda:1' {_NO_CUDA}"),
    (["bench", "--device", "cuda"], {}, f"--device: device 'cuda' {_NO_CUDA}"),
    (["bench", "--device", ""], {}, "--device: device must be one of ('cuda', 'mps', 'cpu')"),
    (["sweep", "dana_fig4"], {"MEMCAP_DEVICE": "cuda"}, f"MEMCAP_DEVICE: device 'cuda' {_NO_CUDA}"),
    # a bad path
    (["sweep", "dana_fig4", "--cache", "{file}/cache"], {}, "--cache: {file}/cache cannot be a folder: {file} is a"),
    (["sweep", "dana_fig4", "--cache", _UNWRITABLE], {}, f"--cache: {_UNWRITABLE} cannot be written: /proc refuses"),
    (["cache", "--cache", "{file}"], {}, "--cache: {file} is a file, not a folder"),
    (["cache", "--prune", "--cache", _UNWRITABLE], {}, f"--cache: {_UNWRITABLE} cannot be written"),
    (["student-edition", "--output", _UNWRITABLE], {}, f"--output: {_UNWRITABLE} cannot be written"),
    (["pdf", "--edition", "student", "--student-output", _UNWRITABLE], {},
     f"--student-output: {_UNWRITABLE} cannot be written"),
    (["pdf", "--edition", "full", "--build", "{tmp}"], {}, "--build: {tmp} holds no HTML build of the book"),
    (["pdf", "--edition", "all"], {}, "argument --edition: invalid choice: 'all'"),
    (["grade", "{tmp}/absent", "--chapter", "skip"], {}, "submissions folder '{tmp}/absent' does not exist"),
    (["grade", "{tmp}", "--chapter", "skip", "--output", "{file}/grades"], {},
     "--output: {file}/grades cannot be a folder: {file} is a file, not a folder"),
    (["grade", "{tmp}", "--chapter", "skip", "--output", _UNWRITABLE], {},
     f"--output: {_UNWRITABLE} cannot be written"),
    # a bad number or choice
    (["--threads", "0", "list"], {}, "argument --threads: must be a positive integer, got '0'"),
    (["--threads", "99999999999999999999", "list"], {}, "argument --threads: must be at most the"),
    (["bench", "--threads", "x"], {}, "argument --threads: must be a positive integer, got 'x'"),
    (["doctor", "--threads", "-1"], {}, "argument --threads: must be a positive integer, got '-1'"),
    (["sweep", "dana_fig4", "--threads", "0"], {}, "argument --threads: must be a positive integer, got '0'"),
    (["bench", "--steps", "1.5"], {}, "argument --steps: must be a positive integer, got '1.5'"),
    (["bench", "--authors-steps", "0"], {}, "argument --authors-steps: must be a positive integer, got '0'"),
    (["bench", "--repeats", "0"], {}, "argument --repeats: must be a positive integer, got '0'"),
    (["bench", "--workload", "fig99"], {}, "argument --workload: invalid choice: 'fig99'"),
    (["doctor", "--steps", "0"], {}, "argument --steps: must be a positive integer, got '0'"),
    (["sweep", "dana_fig4", "--merge", "0"], {}, "argument --merge: must be a positive integer, got '0'"),
    (["sweep", "dana_fig4", "--executor", "ray"], {}, "argument --executor: invalid choice: 'ray'"),
    (["sweep", "dana_fig4", "--profile", "full"], {}, "argument --profile: invalid choice: 'full'"),
    (["bench", "--cuda-graphs", "sometimes"], {}, "argument --cuda-graphs: invalid choice: 'sometimes'"),
    (["sweep", "dana_fig4"], {"MEMCAP_CUDA_GRAPHS": "maybe"},
     "the environment variable MEMCAP_CUDA_GRAPHS must be one of ('always', 'never'), got 'maybe'"),
    # a mode this machine cannot honour
    (["bench", "--cuda-graphs", "always"], {},
     "--cuda-graphs: 'always' cannot be honoured here: CUDA graphs need a CUDA device, and this run is on cpu"),
    (["sweep", "dana_fig4"], {"MEMCAP_CUDA_GRAPHS": "always"},
     "MEMCAP_CUDA_GRAPHS: 'always' cannot be honoured here: CUDA graphs need a CUDA device"),
    (["cache", "fig99"], {}, "experiment must be one of"),
    # an empty path is the current folder: refused, never a build over the full edition's _build/html
    (["student-edition", "--output", ""], {}, "--output: must name a folder, got an empty string"),
    (["student-edition", "--output", "   "], {}, "--output: must name a folder, got '   ' (only spaces)"),
    (["pdf", "--edition", "student", "--student-output", ""], {},
     "--student-output: must name a folder, got an empty string"),
    (["pdf", "--edition", "full", "--build", " "], {}, "--build: must name a folder, got ' ' (only spaces)"),
    (["cache", "--cache", "  "], {}, "--cache: must name a folder, got '  ' (only spaces)"),
    (["grade", "{tmp}", "--chapter", "skip", "--output", ""], {}, "--output: must name a folder, got an empty string"),
    # grade's output as the submissions folder: its notebooks/ would be graded as a student's next time (a
    # folder inside it is left out of the submissions, so `grade .` with the default output is fine)
    (["grade", "{tmp}", "--chapter", "skip", "--output", "{tmp}"], {}, "output '{tmp}' is the submissions folder"),
    (["sweep", "dana_fig4", "--checkpoint-every", "1e400"], {},
     "argument --checkpoint-every: must be a finite number of seconds, got '1e400'"),
    (["grade", "{tmp}", "--chapter", "skip", "--memory", "lots"], {}, "argument --memory: must be a positive integer"),
    (["grade", "{tmp}", "--chapter", "skip", "--cell-timeout", "0"], {}, "argument --cell-timeout: must be a positive"),
    (["grade", "{tmp}", "--chapter", "skip", "--sandbox", "docker"], {},
     "argument --sandbox: invalid choice: 'docker'"),
    (["grade", "{tmp}", "--chapter", "no-such-chapter", "--sandbox", "none"], {},
     "chapter 'no-such-chapter' has no exercise with a checker"),
]


@pytest.mark.parametrize("argv,env,message", REFUSALS, ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_every_command_refuses_a_wrong_argument_in_one_line_before_any_work(argv, env, message, tmp_path,
                                                                            monkeypatch, capsys, no_cuda):
    if _UNWRITABLE in argv and not os.path.isdir("/proc"):
        pytest.skip("needs Linux's /proc for a folder nobody can write")
    work = []
    monkeypatch.setattr(memcap.train, "train_models", lambda *a, **k: work.append(a))
    monkeypatch.setattr("memcap.experiments.bench.run_bench", lambda *a, **k: work.append(a))
    monkeypatch.setattr("memcap.doctor.run_doctor", lambda *a, **k: work.append(a))
    monkeypatch.setattr("memcap.textbook.pdf.build_pdf", lambda *a, **k: work.append(a))
    monkeypatch.setattr("memcap.textbook.edition.build_student_edition", lambda *a, **k: work.append(a))
    a_file = tmp_path / "afile"
    a_file.write_text("")
    (tmp_path / "subs").mkdir()
    fill = {"file": str(a_file), "tmp": str(tmp_path / "subs")}
    for name, value in {"MEMCAP_DEVICE": "cpu", "MEMCAP_CACHE": str(tmp_path / "cache"), **env}.items():
        monkeypatch.setenv(name, value)
    code, out, err = _answer([a.format(**fill) for a in argv], capsys)
    assert code == 2 and message.format(**fill) in err, err
    assert len(err.strip().splitlines()) == 1 and err.startswith("python -m memcap") and "Traceback" not in err
    assert out == "" and work == [], "work started before the argument was refused"
    assert not (tmp_path / "cache").exists() and a_file.read_text() == ""


@pytest.mark.parametrize("device", ["cuda:1", "cuda:x", "cuda:-1"])
def test_a_cuda_index_this_machine_lacks_is_refused_in_one_line(device, capsys, monkeypatch, one_gpu):
    monkeypatch.setattr("memcap.doctor.run_doctor", lambda *a, **k: pytest.fail("the doctor ran"))
    code, out, err = _answer(["doctor", "--device", device], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and err.startswith("python -m memcap: error: --device: ")
    if device == "cuda:1":
        assert "device 'cuda:1' requested but this machine has 1 CUDA device (cuda:0)" in err


def test_doctor_without_cuda_answers_in_one_line_through_the_real_entry_point():
    """The issue's case, in a fresh interpreter that sees no GPU (CUDA_VISIBLE_DEVICES empty) on any machine."""
    out = subprocess.run([sys.executable, "-m", "memcap", "doctor", "--device", "cuda"], capture_output=True,
                         text=True, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""}, timeout=120, cwd=ROOT)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == f"python -m memcap: error: --device: device 'cuda' {_NO_CUDA}\n"


# --- help, version, console script ----------------------------------------------------------------------

def _subcommands(parser) -> dict[str, str]:
    """Each subcommand's name and its one-line help."""
    import argparse

    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return {choice.dest: choice.help for choice in sub._choices_actions}


def test_help_is_plain_text_listing_every_command_on_one_line(capsys, monkeypatch):
    from memcap.__main__ import build_parser

    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = _answer(["--help"], capsys)
    assert code == 0 and err == ""
    commands = _subcommands(build_parser())
    assert set(commands) == {"sweep", "cache", "list", "estimate", "bench", "student-edition", "pdf", "doctor",
                             "grade"}
    lines = out.splitlines()
    for name, help_line in commands.items():
        assert [line for line in lines if line.split() and line.split()[0] == name] == \
            [f"  {name:<15s}  {help_line}"], f"{name} is not listed on one line of its own"
    for markup in ("``", ":func:", ":mod:", "* ``"):
        assert markup not in out, f"reStructuredText {markup!r} in --help"


def test_every_flag_of_every_command_has_a_help_string():
    import argparse

    from memcap.__main__ import build_parser

    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    parsers = {"python -m memcap": parser, **{f"{name}": p for name, p in sub.choices.items()}}
    missing = [f"{name} {action.dest}" for name, p in parsers.items() for action in p._actions
               if action is not sub and (not action.help or action.help == argparse.SUPPRESS)]
    assert missing == []


def test_version_names_memcap_and_the_engine(capsys):
    from memcap import ENGINE_VERSION, __version__

    code, out, err = _answer(["--version"], capsys)
    assert code == 0 and out == f"memcap {__version__} (engine version {ENGINE_VERSION})\n"


def test_pyproject_declares_the_memcap_command_and_it_runs_when_installed():
    import importlib
    from importlib.metadata import entry_points

    from memcap import ENGINE_VERSION

    tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from Python 3.11")

    target = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]["memcap"]
    module, _, name = target.partition(":")
    assert getattr(importlib.import_module(module), name) is importlib.import_module("memcap.__main__").cli
    installed = [e for e in entry_points(group="console_scripts") if e.name == "memcap"]
    script = os.path.join(os.path.dirname(sys.executable), "memcap")
    if not installed or not os.path.exists(script):
        pytest.skip("memcap is not installed with its console script here (pip install -e . installs it)")
    assert installed[0].value == target
    done = subprocess.run([script, "--version"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and f"(engine version {ENGINE_VERSION})" in done.stdout
    refused = subprocess.run([script, "--threads", "0", "list"], capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and refused.stderr.startswith("memcap: error: argument --threads")


# --- --threads before or after the command; counts with their nouns ---------------------------------------

@pytest.mark.parametrize("argv,threads", [
    (["bench"], None),
    (["--threads", "2", "bench"], 2),
    (["bench", "--threads", "1"], 1),
    (["--threads", "2", "bench", "--threads", "1"], 1),
    (["--threads", "1", "doctor", "--threads", "2"], 2),
    (["--threads", "2", "sweep", "dana_fig4"], 2),
    (["sweep", "dana_fig4", "--threads", "2"], 2),
])
def test_threads_is_accepted_before_and_after_the_command_and_the_later_wins(argv, threads, monkeypatch):
    from memcap.__main__ import build_parser

    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    assert build_parser().parse_args(argv).threads == threads


def test_main_sets_torch_threads_from_after_the_command(monkeypatch, capsys):
    import torch

    set_to = []
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    monkeypatch.setattr(torch, "set_num_threads", set_to.append)
    monkeypatch.setattr("memcap.doctor.run_doctor", lambda *a, **k: True)
    code, _, err = _answer(["--threads", "2", "doctor", "--device", "cpu", "--threads", "1"], capsys)
    assert code == 0 and err == "" and set_to == [1]


def test_bench_after_threads_runs_with_that_many_threads():
    out = subprocess.run([sys.executable, "-m", "memcap", "bench", "--threads", "1", "--models", "1", "--steps",
                          "1", "--workload", "aot", "--json"], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "MEMCAP_DEVICE": "cpu"}, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["hardware"]["torch_threads"] == 1


def test_counts_printed_by_the_command_line_agree_with_their_nouns(tmp_path, monkeypatch, capsys):
    from memcap.experiments.bench import format_bench, run_bench
    from memcap.experiments.sweep import SweepInterrupted
    from memcap.textbook.grading import GradeReport

    monkeypatch.setattr(experiments.get("dana_fig4"), "jobs", lambda profile: _tiny_jobs(1 if profile == "quick"
                                                                                         else 2, steps=2))
    code, out, _ = _answer(["list"], capsys)
    assert code == 0 and "dana_fig4" in out and "quick: 1 job, paper: 2 jobs" in out
    code, out, _ = _answer(["sweep", "dana_fig4", "--profile", "quick", "--cache", str(tmp_path)], capsys)
    assert code == 0 and "dana_fig4 (quick): 1 job, 0 from the cache, 1 computed;" in out
    assert SweepInterrupted("e", 1, 0, 1, 1).summary().startswith(
        "interrupted: e: 1 job of 1 in the cache (1 finished in this run), 1 queued or running job cancelled;")
    assert SweepInterrupted("e", 3, 0, 0, 3).summary().startswith("interrupted: e: 0 jobs of 3 in the cache")
    report = GradeReport("book/mahdavi/skip", ["ex-1"], rows=[{"student": "zoe", "exercise": "ex-1",
                                                              "result": "pass"}], sandbox="none")
    assert report.summary().startswith("chapter book/mahdavi/skip: 1 submission, 1 checked exercise, graded")
    text = format_bench(run_bench(("aot",), models=1, steps=1, authors_steps=1, device="cpu"))
    assert text.startswith("memcap bench: 1 model x 1 step on cpu") and "1 step in the authors' recipes" in text
    assert "aot (1 model): stacked" in text


def test_a_path_in_the_caches_way_is_one_line_and_nothing_runs(tmp_path, capsys):
    from memcap import experiments
    from memcap.__main__ import main
    from memcap.experiments.sweep import job_key

    (tmp_path / "dana_fig4").mkdir()
    key = job_key(experiments.get("dana_fig4").jobs("quick")[0])
    (tmp_path / "dana_fig4" / key).write_text("not a folder")   # a file where the job's folder belongs
    assert main(["sweep", "dana_fig4", "--cache", str(tmp_path), "--executor", "inprocess", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "dana_fig4" in err, err


@pytest.mark.parametrize("command", [["doctor", "--no-bench"], ["estimate", "dana_fig4", "--profile", "quick"]])
def test_doctor_and_estimate_refuse_a_compile_mode_they_cannot_honour(command, monkeypatch, capsys, no_cuda):
    # MEMCAP_COMPILE=always without a C++ compiler: sweep and bench refused it, these two crashed (traceback)
    work = []
    monkeypatch.setattr("memcap.train.compiled.compile_blocker", lambda device: "no C++ compiler found")
    monkeypatch.setattr("memcap.doctor.run_doctor", lambda *a, **k: work.append(a))
    monkeypatch.setattr("memcap.experiments.estimate.estimate_profile", lambda *a, **k: work.append(a))
    monkeypatch.setenv("MEMCAP_COMPILE", "always")
    monkeypatch.setenv("MEMCAP_DEVICE", "cpu")
    code, out, err = _answer(command, capsys)
    assert code == 2 and out == "" and work == []
    assert err.strip() == ("python -m memcap: error: MEMCAP_COMPILE: 'always' cannot be honoured here: no C++ "
                           "compiler found; use auto or never")


def test_estimate_runs_a_repeated_experiment_once(monkeypatch, capsys):
    from types import SimpleNamespace

    asked = []
    monkeypatch.setattr("memcap.experiments.estimate.estimate_profile",
                        lambda name, profile, steps: asked.append(name) or SimpleNamespace(seconds=60.0))
    monkeypatch.setattr("memcap.experiments.estimate.format_estimate", lambda found: "an estimate")
    monkeypatch.setenv("MEMCAP_DEVICE", "cpu")
    code, out, _ = _answer(["estimate", "dana_fig4", "dana_fig4", "--profile", "quick"], capsys)
    assert code == 0 and asked == ["dana_fig4"] and "total" not in out   # one experiment: no double-counted total
    code, out, _ = _answer(["estimate", "dana_fig4", "dana_fig1b", "dana_fig4", "--profile", "quick"], capsys)
    assert asked[1:] == ["dana_fig4", "dana_fig1b"] and "total: about 2" in out


def test_the_doctors_benchmark_records_the_command_that_ran_it(monkeypatch, capsys):
    seen = {}
    monkeypatch.setattr("memcap.doctor.run_doctor", lambda *a, **k: seen.update(k) or True)
    monkeypatch.setenv("MEMCAP_DEVICE", "cpu")
    code, _, _ = _answer(["doctor", "--models", "2", "--steps", "3"], capsys)
    assert code == 0 and seen["command"] == "python -m memcap doctor --models 2 --steps 3"


def test_ctrl_c_before_a_sweep_starts_is_one_line_and_status_130():
    # Ctrl-C while the modules load (before the sweep's own handler) printed ~50 lines of traceback, status 1
    code = ("import memcap.__main__ as m\n"
            "def stopped(*a, **k):\n    raise KeyboardInterrupt\n"
            "m.main = stopped\nm.cli(['list'])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 130 and done.stderr == "python -m memcap: interrupted\n" and done.stdout == ""


def test_a_closed_stdout_is_no_error():
    # `python -m memcap list >&-`: sys.stdout is None, print writes nothing; the flush at exit raised AttributeError
    done = subprocess.run(f"{sys.executable} -m memcap list >&-", shell=True, capture_output=False,
                          stderr=subprocess.PIPE, text=True, timeout=120, cwd=str(ROOT))
    assert done.returncode == 0 and done.stderr == "", done.stderr


def test_the_prune_hint_can_be_pasted_as_it_is(tmp_path, monkeypatch, capsys):
    from memcap.__main__ import main

    root = tmp_path / "a cache"
    cache = ResultCache(root)
    job = _tiny_jobs(1)[0]
    _stale_put(cache, "dana_fig4", job)
    assert main(["cache", "dana_fig4", "--cache", str(root)]) == 0
    out = capsys.readouterr().out
    assert f"`python -m memcap cache dana_fig4 --prune --cache '{root}'`" in out
