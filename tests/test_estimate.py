"""Tests of memcap/experiments/estimate.py and ``python -m memcap estimate``: a profile's time from its first
and last job, each run for S and 3 S steps."""
from __future__ import annotations

import pytest

from memcap import experiments
from memcap.__main__ import main
from memcap.experiments import estimate


def test_the_estimate_separates_setup_from_steps_and_scales_each_sampled_job(monkeypatch):
    """With job i taking setup_i + steps * t_i seconds, the estimate is exactly the mean over the first and last
    job of setup_i + t_i * (its full steps), times the number of jobs."""
    jobs = experiments.get("dana_fig2b").jobs("paper")
    cost = {id(jobs[0]): (2.0, 0.010), id(jobs[-1]): (5.0, 0.030)}   # (setup s, s per step)
    asked: list[int] = []

    def timed(job, steps):
        asked.append(steps)
        setup, per_step = cost[id(job)]
        return setup + per_step * steps
    monkeypatch.setattr(estimate, "_timed", timed)
    monkeypatch.setattr(experiments.get("dana_fig2b"), "jobs", lambda profile: jobs)
    found = estimate.estimate_profile("dana_fig2b", "paper", steps=10)
    assert asked == [10, 30, 10, 30]
    assert found.sampled == (0, len(jobs) - 1) and found.jobs == len(jobs)
    assert found.setup_seconds == pytest.approx((2.0, 5.0)) and found.step_seconds == pytest.approx((0.010, 0.030))
    full = (jobs[0]["config"]["steps"], jobs[-1]["config"]["steps"])
    assert found.steps == full
    assert found.seconds == pytest.approx(((2.0 + 0.010 * full[0]) + (5.0 + 0.030 * full[1])) / 2 * len(jobs))
    line = estimate.format_estimate(found)
    assert line.startswith(f"dana_fig2b (paper): {len(jobs)} jobs, about ")
    assert "job 1: 10.0 ms/step x" in line and f"job {len(jobs)}: 30.0 ms/step x" in line


def test_full_steps_follow_the_epochs_rule():
    job = {"config": {"steps": 100, "epochs": 10, "batch_size": 8}, "specs": [{"examples": 40}, {"examples": 200}]}
    assert estimate.full_steps(job) == 10 * 200 // 8
    assert estimate.full_steps({**job, "config": {"steps": 1000, "epochs": 10, "batch_size": 8}}) == 1000
    assert estimate.full_steps({"config": {"steps": 7}, "specs": []}) == 7
    with pytest.raises(ValueError, match="job must be a dict with a 'config' holding 'steps'"):
        estimate.full_steps({"specs": []})


@pytest.mark.parametrize("kwargs,error,message", [
    ({"experiment": "fig99"}, ValueError, "experiment must be one of"),
    ({"experiment": "dana_fig4", "profile": "huge"}, ValueError, "profile must be one of"),
    ({"experiment": "dana_fig4", "steps": 0}, ValueError, "steps must be a positive int"),
])
def test_bad_arguments_are_refused_naming_them(kwargs, error, message):
    with pytest.raises(error, match=message):
        estimate.estimate_profile(**kwargs)


def test_durations_read_well():
    assert [estimate.duration(s) for s in (0, 45.4, 119, 120, 7199, 7200, 36000)] == \
        ["0 s", "45 s", "119 s", "2 min", "120 min", "2.0 h", "10.0 h"]
    with pytest.raises(ValueError, match="seconds must be >= 0"):
        estimate.duration(-1)


def test_the_command_times_a_real_job_and_totals(capsys):
    assert main(["--threads", "1", "estimate", "dana_fig4", "syn_exact", "--profile", "quick", "--steps", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("dana_fig4 (quick): 1 job, about ") and lines[1].startswith("syn_exact (quick): ")
    assert lines[2].startswith("total: about ") and lines[2].endswith("one job after the other (1 thread(s))")
    with pytest.raises(SystemExit) as refused:
        main(["estimate", "fig99"])
    assert refused.value.code == 2
