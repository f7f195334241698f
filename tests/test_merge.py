"""Tests of memcap/experiments/merge.py and ``merge`` in memcap/experiments/sweep.py: train jobs of one config
trained as one run give each job the result it gets alone, stored as its own."""
from __future__ import annotations

import numpy as np
import pytest

from memcap.experiments.merge import merge_groups, merged_job, split_result
from memcap.experiments.sweep import ResultCache, SweepInterrupted, capacity_job, run_job, run_sweep_report, train_job
from memcap.train import AoTSpec, MHASpec, TrainConfig

pytestmark = pytest.mark.usefixtures("one_thread")

CONFIG = TrainConfig(steps=150, batch_size=8, lr=5e-2, schedule="constant", device="cpu", eval_every=10,
                     dtype="float64")


def _jobs() -> list[dict]:
    """Three jobs of one config (AoTs of two shapes, so the merged run has stacks of models from several jobs;
    tiny vocabularies, so some models memorize and stop early), an MHA job of another config, and a job of
    the first config with its weights kept."""
    aot = [train_job([AoTSpec(heads=1 + (i + j) % 2, head_dim=4, dim=4, vocab=3 + j, seed=10 * i + j)
                      for j in range(2 + i % 2)], CONFIG, seed=i) for i in range(3)]
    mha = train_job([MHASpec(heads=2, context_size=3, examples=6, dim=4, classes=3, seed=s) for s in range(2)],
                    TrainConfig(steps=60, batch_size=4, lr=3e-2, device="cpu", eval_every=10, dtype="float64"))
    kept = train_job([AoTSpec(heads=2, head_dim=2, dim=2, vocab=4, seed=7)], CONFIG, keep_params=True)
    return [*aot, mha, kept]


def test_merge_groups_puts_train_jobs_of_one_config_together_in_order_up_to_the_limit():
    jobs = _jobs()
    capacity = capacity_job([AoTSpec(heads=1, head_dim=2, dim=2, vocab=4)], [4, 8], CONFIG)
    jobs = [jobs[0], capacity, *jobs[1:]]
    assert merge_groups(jobs, 1) == [[0], [1], [2], [3], [4], [5]]
    assert merge_groups(jobs, 8) == [[0, 2, 3], [1], [4], [5]]     # capacity jobs and other configs alone
    assert merge_groups(jobs, 2) == [[0, 2], [1], [3], [4], [5]]
    with pytest.raises(ValueError, match="limit"):
        merge_groups(jobs, 0)


def test_merged_job_refuses_jobs_that_cannot_share_a_run():
    jobs = _jobs()
    assert merged_job(jobs[:1]) is jobs[0]
    assert merged_job(jobs[:3])["specs"] == jobs[0]["specs"] + jobs[1]["specs"] + jobs[2]["specs"]
    for mixed in ([jobs[0], jobs[3]], [jobs[0], jobs[4]]):   # another config; weights kept in one only
        with pytest.raises(ValueError, match="same 'config' and 'keep_params'"):
            merged_job(mixed)
    with pytest.raises(ValueError, match="at least one job"):
        merged_job([])
    with pytest.raises(ValueError, match="5 records"):
        split_result({"records": [{}] * 4}, [2, 3])


def _close(merged: dict, alone: dict) -> None:
    assert len(merged["records"]) == len(alone["records"])
    for a, b in zip(merged["records"], alone["records"]):
        assert {k: v for k, v in a.items() if k not in ("loss", "accuracy")} == \
            {k: v for k, v in b.items() if k not in ("loss", "accuracy")}
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-9, abs=1e-12)
        assert a["accuracy"] == pytest.approx(b["accuracy"])
    assert merged["compiled"] == alone["compiled"]
    assert merged["history"]["steps"] == alone["history"]["steps"]     # the evaluations the job had alone
    for key in ("accuracy", "loss"):
        final = [r[key] for r in alone["records"]]
        for row, row_alone in zip(merged["history"][key], alone["history"][key]):
            # where the job alone had no evaluation (a stopped model's stack had ended), a merged stack that
            # trains on may evaluate the frozen model: its final value
            expected = [f if np.isnan(v) and not np.isnan(m) else v for v, m, f in zip(row_alone, row, final)]
            assert row == pytest.approx(expected, rel=1e-9, abs=1e-12, nan_ok=True)
    assert sorted(merged.get("arrays", {})) == sorted(alone.get("arrays", {}))
    for name, w in alone.get("arrays", {}).items():
        np.testing.assert_allclose(merged["arrays"][name], w, rtol=1e-9, atol=1e-12)


def test_a_merged_sweep_gives_every_job_its_own_result_stored_as_its_own(tmp_path):
    jobs = _jobs()
    alone = [run_job(job) for job in jobs]
    assert any(r["stop_step"] >= 0 for a in alone for r in a["records"]), "no model stopped early: a weak test"
    cache = ResultCache(tmp_path)
    report = run_sweep_report("exp", jobs, cache=cache, merge=3)
    assert report.computed == len(jobs)
    for job, merged, one in zip(jobs, report.results, alone):
        _close(merged, one)
        _close(cache.get("exp", job), one)
    together = [m.get("merged") for m in report.manifests]
    assert [t and (t["jobs"], t["models"]) for t in together] == [(3, 7), (3, 7), (3, 7), None, None]
    shares = [report.results[i]["seconds"] for i in range(3)]
    assert sum(shares) == pytest.approx(together[0]["seconds"])         # the run's time, shared by models
    assert shares[1] == pytest.approx(shares[0] * 3 / 2)
    assert not any(p.name.startswith(".") or "checkpoint" in p.name for p in (tmp_path / "exp").iterdir())
    again = run_sweep_report("exp", jobs, cache=cache, merge=1)         # stored as each job's own entry
    assert (again.cached, again.computed) == (len(jobs), 0)


def test_ctrl_c_during_a_merged_run_keeps_the_runs_that_finished(tmp_path):
    jobs = _jobs()
    calls = []

    def second_run_interrupted(job):
        calls.append(len(job["specs"]))
        if len(calls) == 2:
            raise KeyboardInterrupt
        return run_job(job)

    cache = ResultCache(tmp_path)
    with pytest.raises(SweepInterrupted) as stop:
        run_sweep_report("exp", [jobs[3], *jobs[:3]], cache=cache, fn=second_run_interrupted, merge=3)
    assert calls == [2, 7]                                               # the MHA job, then the merged run
    assert (stop.value.computed, stop.value.dropped) == (1, 3)
    rest = run_sweep_report("exp", [jobs[3], *jobs[:3]], cache=cache, merge=3)
    assert (rest.cached, rest.computed) == (1, 3)


def test_a_merged_runs_checkpoint_is_pruned_once_a_job_of_it_is_stored_since(tmp_path):
    jobs = _jobs()[:3]
    cache = ResultCache(tmp_path)

    def stopped(job):
        raise KeyboardInterrupt

    with pytest.raises(SweepInterrupted):
        run_sweep_report("exp", jobs, cache=cache, fn=stopped, merge=3)
    folder = cache.checkpoint_folder("exp", merged_job(jobs))
    (folder / "abc.step.pt").write_bytes(b"saved state")              # as a training that saved its state
    assert {p.name: status for status, p, _, _ in cache.entries("exp")} == \
        {"abc.step.pt": "checkpoint", "merged-run.json": "checkpoint"}
    assert cache.prune("exp") == [] and folder.is_dir()                # the same sweep would go on from it
    run_sweep_report("exp", jobs[1:2], cache=cache, merge=1)           # one of its jobs stored another way
    statuses = {(p.parent == folder, status) for status, p, _, reason in cache.entries("exp")}
    assert statuses == {(True, "orphan"), (False, "current")}
    assert "1 of them stored since" in next(r for s, _, _, r in cache.entries("exp") if s == "orphan")
    assert sorted(p.name for p in cache.prune("exp")) == ["abc.step.pt", "merged-run.json"]
    assert not folder.exists() and cache.lookup("exp", jobs[1]).status == "current"
    rest = run_sweep_report("exp", jobs, cache=cache, merge=3)
    assert (rest.cached, rest.computed) == (1, 2)


def test_a_stored_jobs_leftover_checkpoint_is_an_orphan(tmp_path):
    job = _jobs()[3]
    cache = ResultCache(tmp_path)
    run_sweep_report("exp", [job], cache=cache)
    folder = cache.checkpoint_folder("exp", job)                       # as if killed before deleting it
    folder.mkdir()
    (folder / "abc.done.pt").write_bytes(b"x")
    assert [(s, r) for s, p, _, r in cache.entries("exp") if p.parent == folder] == \
        [("orphan", "progress of a job whose result is stored")]
    assert cache.prune("exp") == [folder / "abc.done.pt"] and not folder.exists()


def test_note_merged_run_needs_a_merged_run(tmp_path):
    with pytest.raises(ValueError, match="jobs must be a merged run of two or more jobs, got 1"):
        ResultCache(tmp_path).note_merged_run("exp", _jobs()[:1])


def test_the_checkpoint_of_a_job_whose_stored_result_is_corrupt_is_kept(tmp_path):
    """A corrupt result is recomputed, and the sweep goes on from the job's checkpoint: that is no orphan."""
    job = _jobs()[3]
    cache = ResultCache(tmp_path)
    run_sweep_report("exp", [job], cache=cache)
    cache.path("exp", job).write_text("{")                               # corrupt since
    folder = cache.checkpoint_folder("exp", job)
    folder.mkdir()
    (folder / "abc.done.pt").write_bytes(b"x")
    assert [s for s, p, _, _ in cache.entries("exp") if p.parent == folder] == ["checkpoint"]
    assert cache.prune("exp") == [cache.path("exp", job)] and (folder / "abc.done.pt").is_file()
