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


def _cached_paper_profile(folder, monkeypatch) -> str:
    """dana_fig4's whole paper profile in a cache at ``folder`` (made by this engine, on an H100); its name."""
    monkeypatch.delenv("MEMCAP_PROFILE", raising=False)
    name = "dana_fig4"
    cache = ResultCache(folder)
    for job in experiments.jobs(name, "paper"):
        cache.put(name, job, {"records": [{"accuracy": 1.0}]}, MANIFEST)
    return name


def test_caption_names_commit_device_and_date_of_cached_paper_results(tmp_path, monkeypatch):
    name = _cached_paper_profile(tmp_path, monkeypatch)
    res = experiments.load_or_run(name, cache_dir=tmp_path)
    assert (res.profile, res.source) == ("paper", "cache")
    assert res.caption == "(paper profile, cached results: commit 0123abc, NVIDIA H100 80GB HBM3, 2026-11-20)"
    assert res.provenance["commits"] == ["0123abc"] and res.provenance["engine_versions"] == [ENGINE_VERSION]
    assert res.provenance["wall_seconds"] == pytest.approx(12.5 * len(res.jobs))
    assert res.records and res.records[0]["accuracy"] == 1.0
    # results from two commits, two GPUs and several days say so
    jobs = experiments.jobs(name, "paper")
    other = {**MANIFEST, "git_commit": "fedcba98" * 5, "git_modified": True, "device_name": "NVIDIA A100",
             "date": "2026-11-22T01:00:00+00:00"}
    ResultCache(tmp_path).put(name, jobs[1], {"records": []}, other)
    res = experiments.load_or_run(name, cache_dir=tmp_path)
    assert res.caption == ("(paper profile, cached results: commits 0123abc, fedcba9 with local changes, "
                           "NVIDIA H100 80GB HBM3, NVIDIA A100, 2026-11-20 to 2026-11-22)")


def test_quick_caption_is_unchanged():
    res = experiments.ExperimentResults(name="x", label="x", profile="quick", source="computed", jobs=(),
                                        results=(), manifests=(MANIFEST,))
    assert res.caption == "(quick profile)" and res.provenance["devices"] == ["NVIDIA H100 80GB HBM3"]



@pytest.mark.parametrize("name", experiments.EXPERIMENTS)
def test_results_know_the_grid_they_were_made_with(name):
    module = experiments.get(name)
    for profile, grid in (("quick", module.QUICK), ("paper", module.PAPER)):
        res = experiments.ExperimentResults(name=name, label=module.LABEL, profile=profile, source="computed",
                                            jobs=(), results=())
        assert res.grid is grid and experiments.profile_grid(name, profile) is grid
    assert module.QUICK is not module.PAPER
    with pytest.raises(ValueError, match="profile must be one of"):
        experiments.profile_grid(name, "papers")
    with pytest.raises(ValueError, match="experiment must be one of"):
        experiments.profile_grid("fig2a", "quick")

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
    removed = cache.prune("exp")              # "exp" is no experiment of the book: prune() alone skips it
    assert sorted(p.name for p in removed) == [f"engine-{ENGINE_VERSION}.json"] * 2
    assert cache.get("exp", jobs[0]) == report.results[0]


def test_book_refuses_stale_paper_results_and_says_how_to_refresh(tmp_path, monkeypatch):
    name = _cached_paper_profile(tmp_path, monkeypatch)
    monkeypatch.setattr(sweep, "ENGINE_VERSION", ENGINE_VERSION + 1)
    assert experiments.cached(name, "paper", tmp_path) is None
    with pytest.raises(experiments.StaleResultsError,
                       match=rf"dana_fig4: 20 of 20 cached paper results are stale \(made by engine version "
                             rf"{ENGINE_VERSION}, this memcap's engine is {ENGINE_VERSION + 1};.*"
                             + re.escape(f"python -m memcap sweep dana_fig4 --profile paper --cache {tmp_path}")):
        experiments.load_or_run(name, cache_dir=tmp_path)


def test_paper_results_of_a_newer_engine_say_to_update_memcap_not_to_prune(tmp_path, monkeypatch):
    """Prune keeps a newer engine's results (another checkout's), so the hint must not suggest it."""
    name = _cached_paper_profile(tmp_path, monkeypatch)
    monkeypatch.setattr(sweep, "ENGINE_VERSION", ENGINE_VERSION - 1)   # this checkout is the older one
    with pytest.raises(experiments.StaleResultsError) as caught:
        experiments.load_or_run(name, cache_dir=tmp_path)
    message = str(caught.value)
    assert "made by a newer memcap than this one: update this checkout to draw them" in message
    assert "--prune" not in message.split(";", 1)[1]
    assert f"python -m memcap sweep dana_fig4 --profile paper --cache {tmp_path}" in message


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
    assert cache.prune("exp") == [legacy] and not legacy.exists()


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
    assert len(cache.prune("exp")) == len(leftovers) and not list((tmp_path / "exp").rglob("*"))
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
    assert (paper.jobs, paper.current, paper.stale, paper.newer, paper.missing, paper.complete) == (2, 1, 0, 1, 0,
                                                                                                      False)
    assert (quick.jobs, quick.current, quick.missing) == (1, 0, 1)
    assert paper.provenance == "commit 0123abc, NVIDIA H100 80GB HBM3, 2026-11-20"
    assert disk == {name: {"current": 1, "newer": 1, "unused": 1}}     # engine + 5: another checkout's, kept


# pruning only what is memcap's, and never finished work -------------------------------------------------

def _stale_entry(cache: ResultCache, experiment: str, seed: int = 0):
    """An entry of an older engine version (prunable) for a job of ``experiment``."""
    return cache.put(experiment, _jobs(seed + 1)[seed], {"v": seed}, {**MANIFEST, "engine_version": ENGINE_VERSION - 1})


def test_prune_looks_only_into_experiment_folders_and_at_memcap_names(tmp_path):
    """The audit's case: pointed at a copy of the repository, prune deleted its recorded runs and book data."""
    cache = ResultCache(tmp_path)
    theirs = {"memcap/experiments/recorded/dana_fig1b_paper.json": "{not json", "book/appendix/gpu_book.json": "[",
              "notes/arrays.npz": "x", "notes/.draft.tmp": "x",
              # inside an experiment's folder, files memcap does not name so
              "syn_exact/readme.json": "{", "syn_exact/data.npz": "x", "syn_exact/.swap.tmp": "x",
              "syn_exact/plots/fig.json": "{", "syn_exact/0123456789abcdef0123/notes.txt": "x",
              "syn_exact/0123456789abcdef0123/engine-x.json": "{", "syn_exact/not-a-key/engine-6.json": "{",
              "syn_exact/0123456789abcdef0123/engine-6.checkpoint/notes.json": "{"}
    for name, text in theirs.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert cache.experiments() == ["syn_exact"]
    stale = _stale_entry(cache, "syn_exact")
    found = {str(p.relative_to(tmp_path)): status for status, p, _, _ in cache.entries("syn_exact")}
    assert found == {**{name: "foreign" for name in theirs if name.startswith("syn_exact/")},
                     str(stale.relative_to(tmp_path)): "stale"}
    assert cache.prune() == [stale]
    assert all((tmp_path / name).read_text() == text for name, text in theirs.items())
    with pytest.raises(ValueError, match="statuses must be statuses of entries.. other than 'foreign'"):
        cache.prune("syn_exact", statuses=("foreign",))
    with pytest.raises(TypeError, match="statuses must be a list or tuple of statuses, got 'stale'"):
        cache.prune("syn_exact", statuses="stale")


def test_prune_keeps_the_entries_and_checkpoints_of_a_newer_engine(tmp_path):
    """Two checkouts sharing a cache: the older one must not destroy the newer one's finished work."""
    cache = ResultCache(tmp_path)
    job = _jobs(1)[0]
    newer = cache.put("exp", job, {"v": 1, "arrays": {"w": np.ones(2)}},
                      {**MANIFEST, "engine_version": ENGINE_VERSION + 1})
    folder = newer.parent
    checkpoint = folder / f"engine-{ENGINE_VERSION + 1}.checkpoint"
    checkpoint.mkdir()
    (checkpoint / "abc.step.pt").write_bytes(b"progress")
    writing = folder / f".engine-{ENGINE_VERSION + 1}.json.abcd_123.tmp"    # its write in progress
    writing.write_text("{")
    old = _stale_entry(cache, "exp")
    old_checkpoint = folder / f"engine-{ENGINE_VERSION - 1}.checkpoint"
    old_checkpoint.mkdir()
    (old_checkpoint / "abc.step.pt").write_bytes(b"progress")
    found = {str(p.relative_to(folder)): (status, reason) for status, p, _, reason in cache.entries("exp")}
    assert {name: status for name, (status, _) in found.items()} == {
        newer.name: "newer", f"{checkpoint.name}/abc.step.pt": "newer", writing.name: "newer", old.name: "stale",
        f"{old_checkpoint.name}/abc.step.pt": "stale"}                  # (the newer NPZ goes with its JSON)
    assert found[newer.name][1] == f"made by engine version {ENGINE_VERSION + 1}, newer than this memcap's " \
                                   f"({ENGINE_VERSION}): kept"
    entry = cache.lookup("exp", job)
    assert entry.status == "stale" and "newer" in entry.reason and "--prune` keeps it" in entry.reason
    assert sorted(cache.prune("exp")) == sorted([old, old_checkpoint / "abc.step.pt"])
    assert newer.is_file() and newer.with_suffix(".npz").is_file() and (checkpoint / "abc.step.pt").is_file()
    assert writing.is_file() and not old_checkpoint.exists()
    assert ResultCache(tmp_path).get("exp", job) is None               # not used here: recomputed beside it


@pytest.mark.parametrize("engine", ['"6"', "true", "null", str(ENGINE_VERSION - 1)])
def test_an_entry_whose_engine_version_is_wrong_is_corrupt_everywhere(tmp_path, monkeypatch, engine):
    """The table (lookup), the files on disk (entries) and prune agree: an engine version that is no int, or not
    the one the file's name says, makes the entry corrupt."""
    name = "dana_fig4"
    job = _jobs(1)[0]
    monkeypatch.setattr(experiments.get(name), "jobs", lambda profile: [job])
    cache = ResultCache(tmp_path)
    path = cache.put(name, job, {"v": 1}, MANIFEST)
    path.write_text(path.read_text().replace(f'"engine_version": {ENGINE_VERSION},', f'"engine_version": {engine},'))
    entry = cache.lookup(name, job)
    assert entry.status == "corrupt" and "engine_version" in entry.reason
    rows, disk = experiments.cache_status(tmp_path, names=(name,))
    assert {(r.current, r.corrupt) for r in rows} == {(0, 1)} and disk == {name: {"corrupt": 1}}
    assert cache.prune(name) == [path]


def test_a_deeply_nested_json_is_corrupt_not_a_crash(tmp_path, monkeypatch):
    name = "dana_fig4"
    job = _jobs(1)[0]
    monkeypatch.setattr(experiments.get(name), "jobs", lambda profile: [job])
    cache = ResultCache(tmp_path)
    path = cache.path(name, job)
    path.parent.mkdir(parents=True)
    path.write_text("[" * 100_000)
    merged = path.with_name(f"engine-{ENGINE_VERSION}.checkpoint") / "merged-run.json"
    merged.parent.mkdir()
    merged.write_text('{"jobs": ' + "[" * 100_000)
    legacy = tmp_path / name / "0123456789abcdef0123.json"
    legacy.write_text("[" * 100_000)
    entry = cache.lookup(name, job)
    assert entry.status == "corrupt" and "nested too deeply" in entry.reason
    assert {p.name: s for s, p, *_ in cache.entries(name)} == {path.name: "corrupt", "merged-run.json": "checkpoint",
                                                               legacy.name: "corrupt"}
    rows, disk = experiments.cache_status(tmp_path, names=(name,))
    assert {r.corrupt for r in rows} == {1} and disk == {name: {"corrupt": 2, "checkpoint": 1}}


# a blocked entry path; a store that fails -------------------------------------------------------------

@pytest.mark.parametrize("blocker", ["file for the key folder", "folder for the JSON", "folder for the NPZ",
                                     "file for the checkpoint folder", "link to nothing", "file for the experiment"])
def test_a_blocked_entry_path_is_refused_before_any_job_runs(tmp_path, blocker):
    """The audit's case: a file where the job's folder belongs was found only after training (a traceback), and a
    folder where its JSON belongs threw the finished result away."""
    cache = ResultCache(tmp_path / "c9")
    jobs = _jobs(3)
    meta = cache.path("syn_exact", jobs[1])
    place = {"file for the key folder": meta.parent, "folder for the JSON": meta, "folder for the NPZ":
             meta.with_suffix(".npz"), "file for the checkpoint folder": meta.with_suffix(".checkpoint"),
             "link to nothing": meta.parent, "file for the experiment": meta.parent.parent}[blocker]
    place.parent.mkdir(parents=True, exist_ok=True)
    if blocker.startswith("file"):
        place.write_text("x")
    elif blocker.startswith("folder"):
        (place / "theirs").mkdir(parents=True)
    else:
        place.symlink_to(tmp_path / "nowhere")
    calls = []
    first = 0 if blocker == "file for the experiment" else 1
    with pytest.raises(OSError, match=re.escape(f"the result of syn_exact's jobs[{first}] cannot be stored: "
                                                f"{place} ")) as stop:
        run_sweep("syn_exact", jobs, cache=cache, fn=_counting(calls))
    assert isinstance(stop.value, sweep.CacheStoreError) and "no job was run" in str(stop.value)
    assert calls == []                                                   # nothing trained for nothing
    assert place.is_symlink() or place.exists()                          # and nothing of theirs deleted
    if blocker != "file for the checkpoint folder":                      # (no result is stored there)
        entry = cache.lookup("syn_exact", jobs[1])
        assert entry.status == "corrupt" and str(place) in entry.reason
    # without checkpoints, a file where the checkpoint folder goes is in nobody's way
    if blocker == "file for the checkpoint folder":
        assert len(run_sweep("syn_exact", jobs, cache=cache, fn=lambda job: {"v": job["seed"]},
                             checkpoint_every=float("inf"))) == 3


def test_a_result_whose_store_fails_is_kept_and_the_sweep_says_where(tmp_path):
    """A folder appears where the JSON goes while the job trains (another process): the finished result is kept
    in <cache>/unstored, the error names both places, and the sweep stops as after a failed job."""
    cache = ResultCache(tmp_path)
    jobs = _jobs(3)
    meta = cache.path("exp", jobs[1])

    def fn(job):
        if job["seed"] == 1:
            (meta / "theirs").mkdir(parents=True)
        return {"v": job["seed"], "arrays": {"w": np.full(2, job["seed"])}}

    with pytest.warns(CacheWarning, match="could not be stored"), \
            pytest.raises(sweep.CacheStoreError, match=rf"jobs\[1\] could not be stored at {re.escape(str(meta))} "
                                                       rf"\(.*{meta} is a folder, not a file\); it is kept in "
                                                       rf"{re.escape(str(tmp_path / 'unstored'))}"):
        run_sweep("exp", jobs, cache=cache, fn=fn)
    kept = ResultCache(tmp_path / "unstored").get("exp", jobs[1])
    assert kept["v"] == 1 and np.array_equal(kept["arrays"]["w"], [1, 1])
    assert cache.get("exp", jobs[0])["v"] == 0 and cache.lookup("exp", jobs[2]).status == "missing"
    assert (meta / "theirs").is_dir()
    assert cache.prune() == [] and (tmp_path / "unstored").is_dir()     # never pruned: not an experiment's folder


def test_a_result_that_cannot_be_written_in_the_cache_goes_to_the_temporary_folder(tmp_path, monkeypatch):
    """A full disk under the cache: the result goes to the system's temporary folder, the checkpoint stays."""
    import errno
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    real = sweep._atomic_write

    def full(path, data):
        if tmp_path / "cache" in path.parents and path.parent.suffix != ".checkpoint":
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, data)

    monkeypatch.setattr(sweep, "_atomic_write", full)
    cache = ResultCache(tmp_path / "cache")
    job = _jobs(1)[0]
    checkpoint = cache.checkpoint_folder("exp", job)

    def fn(job):
        checkpoint.mkdir(parents=True)
        (checkpoint / "abc.step.pt").write_bytes(b"progress")
        return {"n": 1}

    with pytest.warns(CacheWarning), pytest.raises(sweep.CacheStoreError, match="it is kept in " + re.escape(
            str(tmp_path / "tmp" / "memcap-unstored" / "exp"))):
        run_sweep("exp", [job], cache=cache, fn=fn)
    assert (checkpoint / "abc.step.pt").is_file()                       # a rerun goes on from it
    assert ResultCache(tmp_path / "tmp" / "memcap-unstored").get("exp", job) == {"n": 1}

    monkeypatch.setattr(sweep, "_atomic_write", lambda path, data: (_ for _ in ()).throw(OSError(errno.EROFS, "ro")))
    with pytest.warns(CacheWarning), pytest.raises(sweep.CacheStoreError, match="could not be stored anywhere"):
        run_sweep("exp", [job], cache=cache, fn=lambda job: {"n": 1}, checkpoint_every=float("inf"))
