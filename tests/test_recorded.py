"""The recorded paper runs (memcap.experiments.recorded): every record still matches today's paper grid and
carries its provenance; records are made from a results cache only when every job they cover is finished."""
import json
import re

import pytest

from memcap import ENGINE_VERSION, experiments
from memcap.experiments import recorded
from memcap.train import AoTSpec, MHASpec
from tests.made_up import made_up_cache

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


def test_from_cache_collects_the_finished_jobs_and_save_writes_them(tmp_path):
    cache, paper = made_up_cache(tmp_path, "dana_fig2b", [0, 3])
    data = recorded.from_cache("dana_fig2b", cache.root, machine="a test", wall_seconds=9.5, jobs=[0, 3])
    assert data["jobs"] == [0, 3] and data["job_wall_seconds"] == [2.0, 5.0]
    assert data["command"] == "python -m memcap sweep dana_fig2b --profile paper"
    assert data["config"] == paper[0]["config"] and data["sweep_wall_seconds"] == 9.5
    assert len(data["records"]) == len(paper[0]["specs"]) + len(paper[3]["specs"])
    out = recorded.save(data, tmp_path)
    assert out == tmp_path / "dana_fig2b_paper.json" and json.loads(out.read_text()) == data


def test_the_default_command_says_which_jobs_were_replayed_as_cuda_graphs(tmp_path):
    cache, _ = made_up_cache(tmp_path / "all", "dana_fig2b", [0, 3], replayed=(0, 3))
    data = recorded.from_cache("dana_fig2b", cache.root, machine="m", jobs=[0, 3])
    assert data["command"] == "python -m memcap sweep dana_fig2b --profile paper --cuda-graphs always"
    cache, _ = made_up_cache(tmp_path / "some", "dana_fig2b", [0, 3], replayed=(3,))
    data = recorded.from_cache("dana_fig2b", cache.root, machine="m", jobs=[0, 3])
    assert data["command"] == ("python -m memcap sweep dana_fig2b --profile paper "
                               "(paper jobs 3 with --cuda-graphs always)")
    assert recorded.from_cache("dana_fig2b", cache.root, machine="m", jobs=[0, 3], command="mine")["command"] == "mine"


def test_from_cache_refuses_unfinished_or_mixed_work(tmp_path):
    cache, paper = made_up_cache(tmp_path, "dana_fig2b", [0])
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
    made_up_cache(tmp_path, "dana_fig2b", [1], commit="b" * 40)
    with pytest.raises(ValueError, match="several git commits"):
        recorded.from_cache("dana_fig2b", cache.root, machine="m", jobs=[0, 1])
    with pytest.raises(ValueError, match="data lacks the provenance fields"):
        recorded.save({"experiment": "dana_fig2b"}, tmp_path)


RECORDS_OF_RECORDS = [n for n in experiments.EXPERIMENTS if n[:4] in ("dana", "mahd") and n != "mahdavi_fig3"]
"""The papers' training figures whose record keeps ``records`` (mahdavi_fig3 keeps saturation statistics)."""


@pytest.mark.parametrize("name", RECORDS_OF_RECORDS)
def test_a_record_of_the_whole_paper_profile_decides_the_same_verdict_as_the_sweep(tmp_path, name, monkeypatch):
    """What a GPU session will do for every training figure: sweep the paper profile into a cache, write the
    record, ship it. Read back, the record is the sweep's results (records, jobs, provenance) and its finding
    is the one the chapter would decide from the cache, through the same ``finding`` (mahdavi_fig4: with no
    run of its control, Fig. 2(b), recorded or in the default cache, which is empty here)."""
    monkeypatch.setenv("MEMCAP_CACHE", str(tmp_path / "empty"))
    module = experiments.get(name)
    paper = module.jobs("paper")
    assert all(job["kind"] == "train" for job in paper)
    cache, _ = made_up_cache(tmp_path, name, range(len(paper)))
    recorded.save(recorded.from_cache(name, cache.root, machine="a test", wall_seconds=60.0), tmp_path)
    assert recorded.names(tmp_path) == [name]
    res = recorded.results(name, tmp_path)
    swept = experiments.cached(name, "paper", cache.root)
    assert res.source == "recorded" and res.profile == "paper" and res.jobs == swept.jobs
    assert res.records == swept.records and len(res.records) == sum(len(j["specs"]) for j in paper)
    assert res.caption == "(paper profile, recorded run: commit aaaaaaa, unknown device, 2026-11-26)"
    found = recorded.findings([experiments.get(n) for n in experiments.EXPERIMENTS[:12]], tmp_path)
    assert list(found) == [module.LABEL]
    assert found[module.LABEL] == module.finding(swept)


def test_the_recorded_fig4_is_judged_against_fig2b_at_the_paper_size(tmp_path, monkeypatch):
    """The chapter judges Fig. 4 with Fig. 2(b)'s shared-context curves as a control; the recorded column does
    the same with Fig. 2(b)'s record from the same folder, else its paper run in the results cache (it
    skipped the control, and on these made-up results read 'partly' where the chapter's rule reads 'no')."""
    from memcap.experiments import mahdavi_fig2b, mahdavi_fig4

    monkeypatch.setenv("MEMCAP_CACHE", str(tmp_path / "empty"))
    for name in ("mahdavi_fig4", "mahdavi_fig2b"):
        cache, paper = made_up_cache(tmp_path / "cache", name, range(len(experiments.get(name).jobs("paper"))))
        (tmp_path / name).mkdir()
        recorded.save(recorded.from_cache(name, cache.root, machine="a test"), tmp_path / name)
    (tmp_path / "mahdavi_fig2b" / "mahdavi_fig4_paper.json").write_bytes(
        recorded.path("mahdavi_fig4", tmp_path / "mahdavi_fig4").read_bytes())
    both = recorded.finding(mahdavi_fig4, tmp_path / "mahdavi_fig2b")                     # both recorded
    assert both.status == "no" and "does not single out fresh contexts" in both.text
    rec4 = recorded.results("mahdavi_fig4", tmp_path / "mahdavi_fig4")
    panels = mahdavi_fig4.summarize(rec4.records, rec4.profile)
    shared = mahdavi_fig2b.summarize(recorded.results("mahdavi_fig2b", tmp_path / "mahdavi_fig2b").records)
    chapter = mahdavi_fig4.verdict(panels, control=mahdavi_fig4.control_flattening(shared, panels))
    assert both == chapter
    monkeypatch.setenv("MEMCAP_CACHE", str(cache.root))
    assert recorded.finding(mahdavi_fig4, tmp_path / "mahdavi_fig4") == chapter           # Fig. 2(b) cached
    monkeypatch.setenv("MEMCAP_CACHE", str(tmp_path / "empty"))
    alone = recorded.finding(mahdavi_fig4, tmp_path / "mahdavi_fig4")                     # no control at hand
    assert alone.status == "partly" and "no run of Fig. 2(b) at this size is at hand" in alone.text
    assert "at hand" not in recorded.account(mahdavi_fig4, tmp_path / "mahdavi_fig2b")
    with pytest.raises(ValueError, match="shared must be the results of mahdavi_fig2b"):
        mahdavi_fig4.finding(rec4, rec4)


def test_results_refuses_a_record_that_is_not_todays_grid(tmp_path):
    cache, paper = made_up_cache(tmp_path, "dana_fig2b", [0, 1])
    data = recorded.from_cache("dana_fig2b", cache.root, machine="m", jobs=[0, 1])
    n0 = len(paper[0]["specs"])
    swapped = {**data, "records": data["records"][n0:] + data["records"][:n0]}
    recorded.save(swapped, tmp_path)
    with pytest.raises(ValueError, match="does not hold paper job 0's models in order.*make the record again"):
        recorded.results("dana_fig2b", tmp_path)
    recorded.save({**data, "records": data["records"] + data["records"][:1]}, tmp_path)
    with pytest.raises(ValueError, match="holds 1 records beyond its jobs"):
        recorded.results("dana_fig2b", tmp_path)
    with pytest.raises(ValueError, match="lacks the fields \\['records'\\]"):
        recorded.results("mahdavi_fig3")      # saturation statistics: read by mahdavi_fig3 itself
    with pytest.raises(ValueError, match="folder must be an existing directory"):
        recorded.names(tmp_path / "nowhere")
    with pytest.raises(ValueError, match="modules must be a sequence of experiment modules"):
        recorded.findings("dana_fig2b")


def test_the_shipped_records_decide_the_chapters_column():
    """``findings`` over a chapter's figures gives each recorded figure its verdict: mahdavi_fig3 through its
    own reader, the others through ``finding`` on :func:`recorded.results`."""
    from memcap.experiments import dana_fig2b, mahdavi_fig3

    modules = [experiments.get(n) for n in experiments.EXPERIMENTS[:12]]
    found = recorded.findings(modules)
    assert set(found) == {experiments.get(n).LABEL for n in recorded.names()}
    assert found["mha-fig-3"] == mahdavi_fig3.verdict(mahdavi_fig3.recorded_paper_run()[1])
    assert found["aot-fig-2b"] == dana_fig2b.verdict(dana_fig2b.summarize(recorded.load("dana_fig2b")[1]))


def test_caption_account_and_results_if_recorded_say_whether_a_run_is_kept(tmp_path):
    from memcap.experiments import dana_fig2b, mahdavi_fig2c

    assert recorded.results_if_recorded("mahdavi_fig2c", tmp_path) is None
    assert recorded.caption("mahdavi_fig2c", "Right", tmp_path) == "No run at the paper's size is recorded yet."
    none = recorded.account(mahdavi_fig2c, tmp_path)
    assert none.startswith("*At the paper's size.* No run") and "sweep mahdavi_fig2c --profile paper" in none
    cache, paper = made_up_cache(tmp_path, "dana_fig2b", range(len(experiments.get("dana_fig2b").jobs("paper"))))
    recorded.save(recorded.from_cache("dana_fig2b", cache.root, machine="a test box", wall_seconds=600.0), tmp_path)
    assert recorded.results_if_recorded("dana_fig2b", tmp_path).source == "recorded"
    assert recorded.caption("dana_fig2b", "Bottom", tmp_path) == (
        "Bottom: a run at the paper's grid (paper profile, recorded run: commit aaaaaaa, unknown device, "
        "2026-11-26), read like published data.")
    text = recorded.account(dana_fig2b, tmp_path)
    verdict = recorded.finding(dana_fig2b, tmp_path)
    assert text.startswith("*At the paper's size, recorded.* One run of the paper profile (all 11 paper jobs, "
                           "385 models) took 10 min on a test box") and "commit aaaaaaa" in text
    assert text.endswith(f"It shows {verdict.shows}; {recorded.STATUS_WORDS[verdict.status]}.")
    with pytest.raises(ValueError, match="where must name the recorded panel's place"):
        recorded.caption("dana_fig2b", " ", tmp_path)


def test_the_environment_variable_moves_the_default_folder(tmp_path, monkeypatch):
    monkeypatch.setenv(recorded.ENV, str(tmp_path))
    assert recorded.names() == [] and recorded.path("dana_fig1b") == tmp_path / "dana_fig1b_paper.json"
    monkeypatch.setenv(recorded.ENV, str(tmp_path / "gone"))
    with pytest.raises(ValueError, match="the folder of records MEMCAP_RECORDED must be an existing directory"):
        recorded.names()
