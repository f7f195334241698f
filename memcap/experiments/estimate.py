"""How long an experiment's profile would take on this machine, from two of its jobs run briefly.

Before a paper profile runs for hours, :func:`estimate_profile` times its first and last job twice, for S
and for 3 S optimizer steps (every other setting as the profile has it), on the device the library picks
(``MEMCAP_DEVICE`` to choose). The difference of the two times is the time of 2 S steps, so what a job
spends outside its steps (making its data and models, compiling, the last evaluation) cancels out and is
kept apart as its setup. Each sampled job is then scaled to its full step count (with ``epochs``, its
largest training set's), the two are averaged, and the mean is multiplied by the number of jobs.

The estimate is the time of the jobs one after the other in one process (with torch's current number of
threads); a sweep that spreads them over k worker processes takes about 1/k of it. It assumes the jobs
between the first and last cost about their mean (the grids grow one parameter from the first job to the
last) and that every step costs the same (early stopping only makes a job shorter).
``python -m memcap estimate`` prints it per experiment, with the total.
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass

from memcap._checks import finite_real, positive_int
from memcap.experiments.syn_prose import count_noun

__all__ = ["SAMPLE_STEPS", "Estimate", "full_steps", "estimate_profile", "duration", "format_estimate"]

SAMPLE_STEPS = 40
"""S: the sampled jobs run S and 3 S steps (enough that the difference is well above timer noise)."""


@dataclass(frozen=True)
class Estimate:
    """The estimated time of one experiment's profile.

    ``sampled``: indices of the jobs timed (first and last); ``setup_seconds`` and ``step_seconds``: each
    sampled job's time outside its steps and per step; ``steps``: each sampled job's full step count;
    ``seconds``: the estimate for all ``jobs``.
    """

    experiment: str
    profile: str
    jobs: int
    sampled: tuple[int, ...]
    setup_seconds: tuple[float, ...]
    step_seconds: tuple[float, ...]
    steps: tuple[int, ...]
    seconds: float


def full_steps(job: dict) -> int:
    """Optimizer steps of ``job``'s longest-training model: ``config['steps']``, or with ``epochs`` set,
    ``max(steps, epochs * T // batch_size)`` for the largest training set T of its specs."""
    config = job.get("config") if isinstance(job, dict) else None
    if not isinstance(config, dict) or "steps" not in config:
        raise ValueError(f"job must be a dict with a 'config' holding 'steps', got {job!r:.80}")
    steps = positive_int("job['config']['steps']", config["steps"])
    if not config.get("epochs"):
        return steps
    largest = max((int(s.get("examples") or 0) for s in job.get("specs", [])), default=0)
    batch = config.get("batch_size") or largest
    return max(steps, config["epochs"] * largest // batch) if largest else steps


def _timed(job: dict, steps: int) -> float:
    """Seconds to run ``job`` with ``steps`` optimizer steps (evaluated once, at the end)."""
    from memcap.experiments.sweep import run_job

    job = copy.deepcopy(job)
    job["config"].update(steps=steps, eval_every=steps, epochs=None)
    began = time.perf_counter()
    run_job(job)
    return time.perf_counter() - began


def estimate_profile(experiment: str, profile: str = "paper", steps: int = SAMPLE_STEPS) -> Estimate:
    """Estimate the time of ``experiment``'s ``profile`` on this machine (see the module): its first and last
    job are run for ``steps`` and 3 ``steps`` optimizer steps."""
    from memcap import experiments
    from memcap.experiments.sweep import check_profile

    profile = check_profile(profile)
    steps = positive_int("steps", steps)
    jobs = experiments.get(experiment).jobs(profile)
    sampled = tuple(sorted({0, len(jobs) - 1}))
    setups, per_step, totals = [], [], []
    for i in sampled:
        short, long = _timed(jobs[i], steps), _timed(jobs[i], 3 * steps)
        step = max(long - short, 0.0) / (2 * steps)
        setups.append(max(short - step * steps, 0.0))
        per_step.append(step)
        totals.append(full_steps(jobs[i]))
    mean = sum(s + t * n for s, t, n in zip(setups, per_step, totals)) / len(sampled)
    return Estimate(experiment, profile, len(jobs), sampled, tuple(setups), tuple(per_step), tuple(totals),
                    mean * len(jobs))


def duration(seconds: float) -> str:
    """``seconds`` for a reader: '45 s', '12 min' (from 2 minutes), '3.4 h' (from 2 hours)."""
    seconds = finite_real("seconds", seconds)
    if seconds < 0:
        raise ValueError(f"seconds must be >= 0, got {seconds}")
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min" if seconds < 7200 \
        else f"{seconds / 3600:.1f} h"


def format_estimate(estimate: Estimate) -> str:
    """One line: the experiment, its jobs, the estimate, and what it rests on."""
    if not isinstance(estimate, Estimate):
        raise TypeError(f"estimate must be an Estimate, got {type(estimate).__name__}")
    parts = ", ".join(f"job {i + 1}: {t * 1e3:.1f} ms/step x {n} steps + {s:.1f} s"
                      for i, s, t, n in zip(estimate.sampled, estimate.setup_seconds, estimate.step_seconds,
                                            estimate.steps))
    return (f"{estimate.experiment} ({estimate.profile}): {count_noun(estimate.jobs, 'job')}, about "
            f"{duration(estimate.seconds)} ({parts})")
