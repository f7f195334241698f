"""Building jobs from the grids of the experiment modules.

A job trains one list of models; the engine stacks all models of a job that can share a stack (different
H, d_h, n, d, T are zero-padded or masked exactly). ``split_by`` names the spec field whose values get
separate jobs (None: one job), e.g. one job per T in the paper profile, so that a sweep spreads over
several workers; the quick profile uses one job per figure, the fastest on one CPU.
"""
from __future__ import annotations

from typing import Sequence

from memcap.experiments.sweep import capacity_job, train_job
from memcap.train import AoTSpec, MHASpec, TrainConfig


def split_jobs(specs: Sequence, config: TrainConfig, split_by: str | None, *, keep_params: bool = False) -> list[dict]:
    """One train job per value of the field ``split_by`` (in order of appearance), or one job when None."""
    if split_by is None:
        return [train_job(specs, config, keep_params=keep_params)]
    groups: dict = {}
    for spec in specs:
        groups.setdefault(getattr(spec, split_by), []).append(spec)
    return [train_job(group, config, keep_params=keep_params) for group in groups.values()]


def mha_jobs(base: dict, axis: str, values: Sequence[int], examples: Sequence[int], seeds: Sequence[int],
             train: dict, *, split_by: str | None = None, keep_params: bool = False) -> list[dict]:
    """Train jobs for every (v, T, seed): ``axis`` (a field of :class:`MHASpec`) = v, ``examples`` = T.

    Seed s draws both the weights and the data (``data_seed`` = s), so models with different ``axis``
    values but the same (T, s) see the same training set, as in Mahdavi et al.'s runs (seed 42 each).
    """
    specs = [MHASpec(**{**base, axis: v}, examples=T, seed=s, data_seed=s)
             for v in values for T in examples for s in seeds]
    return split_jobs(specs, TrainConfig(**train), split_by, keep_params=keep_params)


def aot_jobs(base: dict, axis: str, values: Sequence[int], seeds: Sequence[int], train: dict, *,
             split_by: str | None = None) -> list[dict]:
    """Train jobs for every (v, seed) with ``axis`` (a field of :class:`AoTSpec`) = v."""
    specs = [AoTSpec(**{**base, axis: v}, seed=s, data_seed=s) for v in values for s in seeds]
    return split_jobs(specs, TrainConfig(**train), split_by)


def mha_sweep_jobs(grid: dict, axis: str, profile: str) -> list[dict]:
    """A figure's MHA sweep along ``axis`` from its ``grid`` (its PAPER or QUICK: ``model``, ``axis``,
    ``examples``, ``seeds``, ``train``): one stacked job (quick) or one job per T (paper)."""
    return mha_jobs(grid["model"], axis, grid[axis], grid["examples"], grid["seeds"], grid["train"],
                    split_by="examples" if profile == "paper" else None)


def aot_sweep_jobs(grid: dict, axis: str, profile: str) -> list[dict]:
    """A figure's AoT sweep along ``axis`` from its ``grid`` (its PAPER or QUICK: ``model``, ``axis``,
    ``seeds``, ``train``): one stacked job (quick) or one job per seed (paper)."""
    return aot_jobs(grid["model"], axis, grid[axis], grid["seeds"], grid["train"],
                    split_by="seed" if profile == "paper" else None)


def mha_capacity_jobs(base: dict, heads: Sequence[int], candidates: Sequence[int], seeds: Sequence[int],
                      train: dict, rounds: int, points: int) -> list[dict]:
    """One capacity-search job: every H and seed, the ladder ``candidates`` stacked, then bisection."""
    config = TrainConfig(**train)
    specs = [MHASpec(**base, heads=H, examples=1, seed=s, data_seed=s) for H in heads for s in seeds]
    return [capacity_job(specs, candidates, config, rounds=rounds, points=points)]
