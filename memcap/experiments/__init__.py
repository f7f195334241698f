"""The training experiments of both papers, one module per figure, each with a ``quick`` and a ``paper`` profile.

Every module defines ``NAME`` (its cache folder), ``LABEL`` (the figure's label in the book),
``TITLE``, the grids ``QUICK`` and ``PAPER`` (plain dicts, shown in the chapters) and
``jobs(profile) -> list[dict]`` (JSON-able jobs for :func:`memcap.sweep.run_job`). Chapters call
:func:`load_or_run`: it returns cached paper-profile results when all of them are present, and otherwise
computes (or reads from the cache) the profile selected by ``MEMCAP_PROFILE`` (quick by default).
The summaries several figures share live in ``mahdavi_common`` and ``dana_common``; they are not
experiments (not in :data:`EXPERIMENTS`).

Usage in a chapter::

    from memcap import experiments
    res = experiments.load_or_run("mahdavi_fig2a")
    # one dict per trained model: heads, examples, accuracy, ...
    rows = res.records
    # "(quick profile)" or "(paper profile, cached results)"
    caption = f"Accuracy vs H {res.caption}"
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable

from memcap.sweep import PROFILES, ResultCache, check_profile, run_sweep

EXPERIMENTS: tuple[str, ...] = (
    "mahdavi_fig2a", "mahdavi_fig2b", "mahdavi_fig2c", "mahdavi_fig3", "mahdavi_fig4", "mahdavi_fig5",
    "dana_fig1a", "dana_fig1b", "dana_fig2a", "dana_fig2b", "dana_fig3", "dana_fig4",
)
"""Every training experiment, in the order of the book."""


def get(name: str) -> ModuleType:
    """The module of experiment ``name`` (one of :data:`EXPERIMENTS`)."""
    if name not in EXPERIMENTS:
        raise ValueError(f"experiment must be one of {EXPERIMENTS}, got {name!r}")
    return importlib.import_module(f"memcap.experiments.{name}")


def jobs(name: str, profile: str | None = None) -> list[dict]:
    """The jobs of experiment ``name`` under ``profile`` (None: :func:`memcap.sweep.current_profile`)."""
    return get(name).jobs(check_profile(profile))


@dataclass(frozen=True)
class ExperimentResults:
    """What an experiment produced: ``results[j]`` is the output of ``jobs[j]`` (see :func:`memcap.sweep.run_job`).

    ``source``: 'cache' (every job read from the cache) or 'computed' (at least one job ran now).
    """

    name: str
    label: str
    profile: str
    source: str
    jobs: tuple[dict, ...]
    results: tuple[dict, ...]

    @property
    def records(self) -> list[dict]:
        """One dict per trained model over all train jobs (spec fields + accuracy, loss, ...; ``job`` index)."""
        return [{**r, "job": j} for j, res in enumerate(self.results) for r in res.get("records", [])]

    @property
    def capacities(self) -> list[dict]:
        """One dict per capacity search over all capacity jobs (spec, capacity, upper, tried; ``job`` index)."""
        return [{**c, "job": j} for j, res in enumerate(self.results) for c in res.get("capacities", [])]

    @property
    def caption(self) -> str:
        """The figure-caption note: '(quick profile)' or '(paper profile, cached results)'."""
        where = "cached results" if self.source == "cache" and self.profile == "paper" else None
        return f"({self.profile} profile{', ' + where if where else ''})"


def run(name: str, profile: str | None = None, cache_dir: Any = None, *, executor: Any = None,
        progress: Callable[[int, int, int], None] | None = None, use_cache: bool = True) -> ExperimentResults:
    """Run (or read from the cache) every job of ``name`` under ``profile``; ``use_cache=False`` stores nothing."""
    module = get(name)
    profile = check_profile(profile)
    job_list = module.jobs(profile)
    cache = ResultCache(cache_dir) if use_cache else None
    hits = sum(cache.get(name, j) is not None for j in job_list) if cache is not None else 0
    results = run_sweep(name, job_list, executor=executor, cache=cache, progress=progress)
    return ExperimentResults(name=name, label=module.LABEL, profile=profile,
                             source="cache" if hits == len(job_list) else "computed",
                             jobs=tuple(job_list), results=tuple(results))


def cached(name: str, profile: str, cache_dir: Any = None) -> ExperimentResults | None:
    """The results of ``name`` under ``profile`` if every job is in the cache, else None (computes nothing)."""
    module = get(name)
    profile = check_profile(profile)
    cache = ResultCache(cache_dir)
    job_list = module.jobs(profile)
    results = [cache.get(name, j) for j in job_list]
    if any(r is None for r in results):
        return None
    return ExperimentResults(name=name, label=module.LABEL, profile=profile, source="cache",
                             jobs=tuple(job_list), results=tuple(results))


def load_or_run(name: str, profile: str | None = None, cache_dir: Any = None, *, executor: Any = None,
                progress: Callable[[int, int, int], None] | None = None) -> ExperimentResults:
    """Results for a chapter: cached paper results when all are present, else run ``profile``.

    ``profile=None``: paper results from the cache if complete, otherwise the profile of
    ``MEMCAP_PROFILE`` (quick by default). The quick profile is always computed afresh and never read
    from (or written to) the cache: the cache is keyed by configuration and memcap version, not by the
    code, so reading quick results back would let a change in the engine leave stale figures in the book.
    The paper profile is read from the cache where present and computed (resumably) otherwise. Check
    ``.source`` and ``.profile`` (or use ``.caption``) to say where the numbers came from.
    """
    if profile is None:
        paper = cached(name, "paper", cache_dir)
        if paper is not None:
            return paper
    chosen = check_profile(profile)
    return run(name, chosen, cache_dir, executor=executor, progress=progress, use_cache=chosen != "quick")


__all__ = ["EXPERIMENTS", "PROFILES", "ExperimentResults", "cached", "get", "jobs", "load_or_run", "run"]
