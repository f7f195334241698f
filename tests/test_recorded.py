"""The recorded paper runs (memcap.experiments.recorded): every record still matches today's paper grid and
carries its provenance; records are made from a results cache only when every job they cover is finished."""
import json
import re

import pytest

from memcap import ENGINE_VERSION, experiments
from memcap.experiments import recorded
from memcap.experiments.sweep import ResultCache
from memcap.train import AoTSpec, MHASpec

RESULT_FIELDS = ("accuracy", "loss", "memorized", "steps", "stop_step")


@pytest.mark.parametrize("name", recorded.names())
def test_every_record_is_todays_paper_grid_with_its_provenance(name):
    """One result per model of the paper jobs it names, trained with their config by an engine no newer than
    this one, at a named commit: a change of the paper grid fails here and asks for a new record."""
    info, results = recorded.load(name)
    assert info["experiment"] == name and info["profile"] == "paper"
    assert 1 <= info["engine_version"] <= ENGINE_VERSION
    assert re.fullmatch(r"[0-9a-f]{40}", info["git_commit"]) and info["machine"] and info["command"]
    assert len(info["job_wall_seconds"]) == len(info["dates"]) == len(info["jobs"]) >= 1
    assert all(t > 0 for t in info["job_wall_seconds"])
    whole = info["sweep_wall_seconds"]   # the whole run lasts at least as long as its longest job
    assert whole is None or whole >= max(info["job_wall_seconds"])
    paper = experiments.get(name).jobs("paper")
    picked = [paper[i] for i in info["jobs"]]
    assert all(job["kind"] == "train" and job["config"] == info["config"] for job in picked)
    wanted = sorted(repr(recorded.spec_of(s)) for job in picked for s in job["specs"])
    assert sorted(repr(recorded.spec_of(r)) for r in results) == wanted
    assert all(0.0 <= r["accuracy"] <= 1.0 and 0 < r["steps"] <= info["config"]["steps"] for r in results)


def test_names_lists_the_shipped_records():
    assert {"dana_fig1b", "mahdavi_fig3"} <= set(recorded.names())
    assert all(recorded.path(n).exists() for n in recorded.names())
    assert recorded.load("mahdavi_fig3")[1] == recorded.load("mahdavi_fig3", "models")[1]   # no 'records'
    assert recorded.load("dana_fig1b")[1] == recorded.load("dana_fig1b", "records")[1]


def test_spec_of_drops_result_fields():
    spec = AoTSpec(vocab=5, seq_len=2, dim=3, heads=2, head_dim=2, seed=1)
    record = {**spec.to_dict(), "accuracy": 0.5, "loss": 1.0, "memorized": False, "steps": 3, "stop_step": -1}
    assert recorded.spec_of(record) == spec
    mha = MHASpec(dim=4, context_size=3, heads=2, examples=6, classes=3)
    assert recorded.spec_of({**mha.to_dict(), "max_weight": [[1.0]]}) == mha
    with pytest.raises(ValueError, match="record must be a dict with 'model'"):
        recorded.spec_of({"model": "mlp"})


def test_load_and_path_refuse_what_is_not_there():
    with pytest.raises(ValueError, match="experiment must be an experiment's name"):
        recorded.path("../x")
    with pytest.raises(ValueError, match="has no recorded paper run"):
        recorded.load("syn_tokens")
    with pytest.raises(ValueError, match="lacks the fields \\['nope'\\]"):
        recorded.load("dana_fig1b", "nope")


def _fake_cache(tmp_path, name, picked, commit="a" * 40):
    """A cache holding made-up results for the paper jobs ``picked`` of ``name`` (no training)."""
    cache = ResultCache(tmp_path / "cache")
    paper = experiments.get(name).jobs("paper")
    for i in picked:
        records = [{**s, "accuracy": 0.5, "loss": 1.0, "memorized": False, "steps": 10, "stop_step": -1}
                   for s in paper[i]["specs"]]
        cache.put(name, paper[i], {"records": records},
                  {"engine_version": ENGINE_VERSION, "git_commit": commit, "wall_seconds": 2.0 + i,
                   "date": "2026-11-26T00:00:00+00:00", "torch_version": "x", "dtype": "float32"})
    return cache, paper


def test_from_cache_collects_the_finished_jobs_and_save_writes_them(tmp_path):
    cache, paper = _fake_cache(tmp_path, "dana_fig2b", [0, 3])
    data = recorded.from_cache("dana_fig2b", cache.root, machine="a test", wall_seconds=9.5, jobs=[0, 3])
    assert data["jobs"] == [0, 3] and data["job_wall_seconds"] == [2.0, 5.0]
    assert data["command"] == "python -m memcap sweep dana_fig2b --profile paper"
    assert data["config"] == paper[0]["config"] and data["sweep_wall_seconds"] == 9.5
    assert len(data["records"]) == len(paper[0]["specs"]) + len(paper[3]["specs"])
    out = recorded.save(data, tmp_path)
    assert out == tmp_path / "dana_fig2b_paper.json" and json.loads(out.read_text()) == data


def test_from_cache_refuses_unfinished_or_mixed_work(tmp_path):
    cache, paper = _fake_cache(tmp_path, "dana_fig2b", [0])
    with pytest.raises(ValueError, match="paper job 1 of dana_fig2b is missing.*finish the sweep"):
        recorded.from_cache("dana_fig2b", cache.root, machine="m", jobs=[0, 1])
    with pytest.raises(ValueError, match="jobs must be distinct indices in 0..10"):
        recorded.from_cache("dana_fig2b", cache.root, machine="m", jobs=[0, 0])
    with pytest.raises(ValueError, match="jobs must be distinct indices"):
        recorded.from_cache("dana_fig2b", cache.root, machine="m", jobs=[11])
    with pytest.raises(ValueError, match="machine must describe the hardware"):
        recorded.from_cache("dana_fig2b", cache.root, machine=" ", jobs=[0])
    with pytest.raises(ValueError, match="wall_seconds must be positive"):
        recorded.from_cache("dana_fig2b", cache.root, machine="m", jobs=[0], wall_seconds=0)
    _fake_cache(tmp_path, "dana_fig2b", [1], commit="b" * 40)
    with pytest.raises(ValueError, match="several git commits"):
        recorded.from_cache("dana_fig2b", cache.root, machine="m", jobs=[0, 1])
    with pytest.raises(ValueError, match="data lacks the provenance fields"):
        recorded.save({"experiment": "dana_fig2b"}, tmp_path)
