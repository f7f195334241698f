"""Tests of the results cache (memcap/experiments/sweep.py ResultCache): keys, manifests, stale, corrupt and
partial entries."""
from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import memcap.experiments.sweep as sweep
from memcap import ENGINE_VERSION, experiments
from memcap.experiments.sweep import (
    CacheWarning,
    ResultCache,
    canonical_job,
    capacity_job,
    job_key,
    run_job,
    run_sweep,
    run_sweep_report,
    train_job,
)
from memcap.train import AoTSpec, MHASpec, TrainConfig
from tests.conftest import ROOT

pytestmark = pytest.mark.usefixtures("one_thread")

CFG = TrainConfig(steps=20, batch_size=8, lr=1e-2, schedule="constant", device="cpu")
MANIFEST = {"memcap_version": "0.2.0", "engine_version": ENGINE_VERSION, "git_commit": "0123abcd" * 5,
            "git_modified": False, "torch_version": "2.13.0", "python_version": "3.11.7", "device": "cuda:0",
            "device_name": "NVIDIA H100 80GB HBM3", "dtype": "float32", "date": "2026-11-20T10:00:00+00:00",
            "wall_seconds": 12.5}


def _jobs(count: int) -> list[dict]:
    return [train_job([AoTSpec(heads=1 + i % 2, head_dim=2, dim=2, vocab=4, seed=i)], CFG, seed=i)
            for i in range(count)]


def _counting(calls: list):
    def fn(job):
        calls.append(job["seed"])
        return run_job(job)
    return fn


# keys -------------------------------------------------------------------------------------------------

def test_key_leaves_out_fields_at_their_default():
    """A field added with a default (as AoTSpec.shared_compression was) keeps every existing key."""
    job = train_job([AoTSpec(heads=2, head_dim=2, dim=3)], CFG)
    older = json.loads(json.dumps(job))
    del older["specs"][0]["shared_compression"]          # the job as memcap wrote it before that field existed
    del older["config"]["warmup_start_factor"]
    del older["keep_params"]
    assert job_key(older) == job_key(job)
    assert canonical_job(job) == canonical_job(older)
    assert "shared_compression" not in canonical_job(job)["specs"][0]
    assert canonical_job(job)["specs"][0]["heads"] == 2   # non-default fields stay
    # a non-default value of any field is a different job
    assert job_key(train_job([AoTSpec(heads=2, head_dim=2, dim=3, shared_compression=True)], CFG)) != job_key(job)
    assert job_key(train_job([AoTSpec(heads=2, head_dim=2, dim=3)], CFG, seed=1)) != job_key(job)
    assert job_key(capacity_job([MHASpec(heads=1, context_size=2, examples=1)], [2, 4], CFG)) != \
        job_key(capacity_job([MHASpec(heads=1, context_size=2, examples=1)], [2, 4], CFG, rounds=3))


def test_key_distinguishes_json_types():
    """1, 1.0 and True are different values in a job (and would build different configs)."""
    assert len({job_key({"kind": "x", "v": v}) for v in (1, 1.0, True)}) == 3


def test_entry_made_under_another_default_is_refused(tmp_path):
    """If a default changes, an entry stored with the old default (which its job records) is stale, not used."""
    cache = ResultCache(tmp_path)
    job = train_job([AoTSpec(heads=1, head_dim=2, dim=2)], CFG)
    path = cache.put("exp", job, {"v": 1}, MANIFEST)
    meta = json.loads(path.read_text())
    meta["job"]["specs"][0]["vocab"] = 7                 # as if vocab's default was 7 when it was stored
    path.write_text(json.dumps(meta))
    entry = cache.lookup("exp", job)
    assert entry.status == "stale" and "differ from today's defaults" in entry.reason
    assert cache.get("exp", job) is None


# manifests and provenance ------------------------------------------------------------------------------

def test_manifest_records_where_a_result_came_from(tmp_path):
    cache = ResultCache(tmp_path)
    job = _jobs(1)[0]
    run_sweep("exp", [job], cache=cache)
    meta = json.loads(cache.path("exp", job).read_text())
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    import torch
    assert meta["format"] == 2 and meta["engine_version"] == ENGINE_VERSION and meta["key"] == job_key(job)
    assert meta["memcap_version"] == sweep.__version__ and meta["torch_version"] == torch.__version__
    assert meta["git_commit"] == (head.stdout.strip() if head.returncode == 0 else None)
    assert meta["device"] == "cpu" and meta["device_name"] and meta["dtype"] == "float32"
    assert meta["date"].startswith("20") and meta["wall_seconds"] > 0
    assert meta["job"] == json.loads(json.dumps(job)) and meta["result"]["records"][0]["steps"] == 20


def test_caption_names_commit_device_and_date_of_cached_paper_results(tmp_path, monkeypatch):
    monkeypatch.delenv("MEMCAP_PROFILE", raising=False)
    name = "dana_fig4"
    cache = ResultCache(tmp_path)
    for job in experiments.jobs(name, "paper"):
        cache.put(name, job, {"records": [{"accuracy": 1.0}]}, MANIFEST)
    res = experiments.load_or_run(name, cache_dir=tmp_path)
    assert (res.profile, res.source) == ("paper", "cache")
    assert res.caption == "(paper profile, cached results: commit 0123abc, NVIDIA H100 80GB HBM3, 2026-11-20)"
    assert res.provenance["commits"] == ["0123abc"] and res.provenance["engine_versions"] == [ENGINE_VERSION]
    assert res.provenance["wall_seconds"] == pytest.approx(12.5 * len(res.jobs))
    assert res.records and res.records[0]["accuracy"] == 1.0
    # results from two commits, two GPUs and several days say so
    jobs = experiments.jobs(name, "paper")
    cache.put(name, jobs[1], {"records": []}, {**MANIFEST, "git_commit": "fedcba98" * 5, "git_modified": True,
                                               "device_name": "NVIDIA A100", "date": "2026-11-22T01:00:00+00:00"})
    res = experiments.load_or_run(name, cache_dir=tmp_path)
    assert res.caption == ("(paper profile, cached results: commits 0123abc, fedcba9 with local changes, "
                           "NVIDIA H100 80GB HBM3, NVIDIA A100, 2026-11-20 to 2026-11-22)")


def test_quick_caption_is_unchanged():
    res = experiments.ExperimentResults(name="x", label="x", profile="quick", source="computed", jobs=(),
                                        results=(), manifests=(MANIFEST,))
    assert res.caption == "(quick profile)" and res.provenance["devices"] == ["NVIDIA H100 80GB HBM3"]


# engine versions --------------------------------------------------------------------------------------

def test_changed_engine_version_refuses_the_old_entry_and_a_sweep_recomputes_it(tmp_path, monkeypatch):
    cache = ResultCache(tmp_path)
    jobs = _jobs(2)
    old = run_sweep("exp", jobs, cache=cache)
    monkeypatch.setattr(sweep, "ENGINE_VERSION", ENGINE_VERSION + 1)      # the engine's numerics changed
    entry = cache.lookup("exp", jobs[0])
    assert entry.status == "stale" and f"engine version {ENGINE_VERSION}," in entry.reason
    assert cache.get("exp", jobs[0]) is None
    calls = []
    report = run_sweep_report("exp", jobs, cache=cache, fn=_counting(calls))
    assert calls == [0, 1] and (report.cached, report.computed, report.refreshed) == (0, 2, 2)
    assert report.manifests[0]["engine_version"] == ENGINE_VERSION + 1
    assert report.results[0]["records"] == old[0]["records"]            # same code: same numbers
    folder = cache.path("exp", jobs[0]).parent
    assert sorted(p.name for p in folder.iterdir()) == [f"engine-{ENGINE_VERSION}.json",
                                                        f"engine-{ENGINE_VERSION + 1}.json"]   # nothing lost
    removed = cache.prune()
    assert sorted(p.name for p in removed) == [f"engine-{ENGINE_VERSION}.json"] * 2
    assert cache.get("exp", jobs[0]) == report.results[0]


def test_book_refuses_stale_paper_results_and_says_how_to_refresh(tmp_path, monkeypatch):
    monkeypatch.delenv("MEMCAP_PROFILE", raising=False)
    name = "dana_fig4"
    cache = ResultCache(tmp_path)
    for job in experiments.jobs(name, "paper"):
        cache.put(name, job, {"records": [{"accuracy": 1.0}]}, MANIFEST)
    monkeypatch.setattr(sweep, "ENGINE_VERSION", ENGINE_VERSION + 1)
    assert experiments.cached(name, "paper", tmp_path) is None
    with pytest.raises(experiments.StaleResultsError,
                       match=rf"dana_fig4: 20 of 20 cached paper results are stale \(made by engine version "
                             rf"{ENGINE_VERSION}, this memcap's engine is {ENGINE_VERSION + 1};.*"
                             + re.escape(f"python -m memcap sweep dana_fig4 --profile paper --cache {tmp_path}")):
        experiments.load_or_run(name, cache_dir=tmp_path)


def test_incomplete_stale_paper_results_leave_the_quick_profile(tmp_path, monkeypatch):
    """Only a complete (but stale) paper profile stops the book; a partial one never was drawn anyway."""
    monkeypatch.delenv("MEMCAP_PROFILE", raising=False)
    name = "dana_fig4"
    module = experiments.get(name)
    cache = ResultCache(tmp_path)
    cache.put(name, module.jobs("paper")[0], {"records": []}, MANIFEST)
    monkeypatch.setattr(sweep, "ENGINE_VERSION", ENGINE_VERSION + 1)
    small = [train_job([AoTSpec(heads=1, head_dim=2, dim=2, vocab=3)], TrainConfig(steps=5, batch_size=4))]
    paper = module.jobs("paper")
    monkeypatch.setattr(module, "jobs", lambda profile: small if profile == "quick" else paper)
    res = experiments.load_or_run(name, cache_dir=tmp_path)
    assert (res.profile, res.source) == ("quick", "computed")


def test_worker_with_another_engine_version_is_stored_as_stale_and_fails_the_sweep(tmp_path, monkeypatch):
    """A remote worker running an old checkout must not pass its numbers off as this engine's."""
    cache = ResultCache(tmp_path)
    job = _jobs(1)[0]
    real = sweep.environment
    monkeypatch.setattr(sweep, "environment", lambda j: {**real(j), "engine_version": ENGINE_VERSION - 1})
    with pytest.raises(RuntimeError, match=rf"engine version {ENGINE_VERSION - 1} .* this process has engine "
                                           rf"version {ENGINE_VERSION}: update memcap on every worker"):
        run_sweep("exp", [job], cache=cache)
    assert cache.lookup("exp", job).status == "stale"
    assert cache.path("exp", job).with_name(f"engine-{ENGINE_VERSION - 1}.json").is_file()


def test_format_1_entries_are_stale_and_pruned(tmp_path):
    """Entries of memcap 0.1 (flat <key>.json, no engine version) are recognised by their job, never used."""
    cache = ResultCache(tmp_path)
    job = train_job([AoTSpec(heads=1, head_dim=2, dim=2, vocab=4)], CFG)
    old_job = json.loads(json.dumps(job))
    del old_job["specs"][0]["shared_compression"]               # written before that field existed
    legacy = tmp_path / "exp" / "0123456789abcdef0123.json"
    legacy.parent.mkdir(parents=True)
    legacy.write_text(json.dumps({"memcap_version": "0.1.0", "key": "0123456789abcdef0123", "job": old_job,
                                  "has_arrays": False, "result": {"records": []}}))
    entry = cache.lookup("exp", job)
    assert entry.status == "stale" and "cache format 1" in entry.reason and entry.path == legacy
    assert cache.get("exp", job) is None
    assert [s for s, *_ in cache.entries("exp")] == ["legacy"]
    assert cache.prune() == [legacy] and not legacy.exists()


# corrupt, truncated and partial entries ---------------------------------------------------------------

@pytest.mark.parametrize("damage", ["truncated json", "not json", "no result", "npz missing", "npz truncated",
                                    "npz replaced"])
def test_damaged_entry_is_a_miss_with_a_warning_and_a_sweep_replaces_it(tmp_path, damage):
    cache = ResultCache(tmp_path)
    job = train_job([AoTSpec(heads=1, head_dim=2, dim=2, vocab=4)], CFG, keep_params=True)
    good = run_sweep("exp", [job], cache=cache)[0]
    path = cache.path("exp", job)
    npz = path.with_suffix(".npz")
    if damage == "truncated json":
        path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    elif damage == "not json":
        path.write_text("{'single': 'quotes'}")
    elif damage == "no result":
        path.write_text(json.dumps({"job": job}))
    elif damage == "npz missing":
        npz.unlink()
    elif damage == "npz truncated":
        npz.write_bytes(npz.read_bytes()[:100])
    else:   # another entry's arrays: readable, but not what the JSON recorded
        buffer = io.BytesIO()
        np.savez(buffer, x=np.zeros(3))
        npz.write_bytes(buffer.getvalue())
    with pytest.warns(CacheWarning, match="ignoring corrupt entry"):
        assert cache.get("exp", job) is None
    assert cache.lookup("exp", job).status == "corrupt"
    calls = []
    with pytest.warns(CacheWarning, match="recomputing it"):
        report = run_sweep_report("exp", [job], cache=cache, fn=_counting(calls))
    assert calls == [0] and report.corrupt == 1
    fixed = cache.get("exp", job)
    assert fixed["records"] == good["records"]
    assert all(np.array_equal(fixed["arrays"][k], good["arrays"][k]) for k in good["arrays"])


_KILLED_WRITE = textwrap.dedent("""
    import os, sys
    import numpy as np
    import memcap.experiments.sweep as sweep
    writes = []
    real = sweep._atomic_write
    def dying(path, data):
        writes.append(path)
        if len(writes) == int(sys.argv[2]):   # this write dies after its data is in the temporary file
            os.fsync = lambda fd: os._exit(9)
        real(path, data)
    sweep._atomic_write = dying
    sweep.ResultCache(sys.argv[1]).put("exp", {"kind": "train", "n": 1},
                                       {"v": 1, "arrays": {"w": np.ones(3)}}, {"engine_version": sweep.ENGINE_VERSION})
""")


@pytest.mark.parametrize("dying_write", [1, 2], ids=["while writing the arrays", "while writing the JSON"])
def test_a_write_killed_midway_leaves_no_entry(tmp_path, dying_write):
    """A process killed (os._exit, as by SIGKILL) in the middle of a write leaves a miss, never a partial entry."""
    proc = subprocess.run([sys.executable, "-c", _KILLED_WRITE, str(tmp_path), str(dying_write)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 9, proc.stderr
    cache = ResultCache(tmp_path)
    job = {"kind": "train", "n": 1}
    assert cache.lookup("exp", job).status == "missing"
    leftovers = [(status, path.name) for status, path, *_ in cache.entries("exp")]
    assert leftovers and all(status == "partial" for status, _ in leftovers), leftovers
    assert not cache.path("exp", job).exists()
    assert len(cache.prune()) == len(leftovers) and not list((tmp_path / "exp").rglob("*"))
    cache.put("exp", job, {"v": 1, "arrays": {"w": np.ones(3)}})
    assert cache.get("exp", job)["v"] == 1


def test_cache_status_counts_per_experiment_and_profile(tmp_path, monkeypatch):
    name = "dana_fig4"
    module = experiments.get(name)
    jobs = {"quick": _jobs(1), "paper": _jobs(3)[1:]}
    monkeypatch.setattr(module, "jobs", lambda profile: jobs[profile])
    cache = ResultCache(tmp_path)
    cache.put(name, jobs["paper"][0], {"v": 1}, MANIFEST)
    cache.put(name, jobs["paper"][1], {"v": 1}, {**MANIFEST, "engine_version": ENGINE_VERSION + 5})
    cache.put(name, _jobs(5)[4], {"v": 1}, MANIFEST)          # a job today's grids no longer have
    rows, disk = experiments.cache_status(tmp_path, names=(name,))
    paper = next(r for r in rows if r.profile == "paper")
    quick = next(r for r in rows if r.profile == "quick")
    assert (paper.jobs, paper.current, paper.stale, paper.missing, paper.complete) == (2, 1, 1, 0, False)
    assert (quick.jobs, quick.current, quick.missing) == (1, 0, 1)
    assert paper.provenance == "commit 0123abc, NVIDIA H100 80GB HBM3, 2026-11-20"
    assert disk == {name: {"current": 1, "stale": 1, "unused": 1}}
