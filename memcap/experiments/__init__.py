"""The training experiments of both papers, one module per figure, each with a ``quick`` and a ``paper`` profile.

Every module defines ``NAME`` (its cache folder), ``LABEL`` (the figure's label in the book),
``TITLE``, the grids ``QUICK`` and ``PAPER`` (plain dicts, shown in the chapters) and
``jobs(profile) -> list[dict]`` (JSON-able jobs for :func:`memcap.experiments.sweep.run_job`). Chapters call
:func:`load_or_run`: it returns cached paper-profile results when all of them are present, and otherwise
computes (or reads from the cache) the profile selected by ``MEMCAP_PROFILE`` (quick by default).
The summaries several figures share live in ``mahdavi_common`` and ``dana_common``; they are not
experiments (not in :data:`EXPERIMENTS`).

Usage in a chapter::

    from memcap import experiments
    res = experiments.load_or_run("mahdavi_fig2a")
    # one dict per trained model: heads, examples, accuracy, ...
    rows = res.records
    # "(quick profile)" or "(paper profile, cached results: commit ..., device, date)"
    caption = f"Accuracy vs H {res.caption}"

Cached paper results carry their provenance (:attr:`ExperimentResults.provenance`: git commit,
device, date of the runs) and the caption names it. Paper results made by another version of the
training engine are never drawn: :func:`load_or_run` raises :class:`StaleResultsError` saying how to
refresh them.
"""
from __future__ import annotations

import importlib
import warnings
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable

from memcap._checks import listed
from memcap.experiments.sweep import (
    PROFILES,
    CacheWarning,
    Entry,
    ResultCache,
    _by_newer_engine,
    check_profile,
    run_sweep_report,
)

EXPERIMENTS: tuple[str, ...] = (
    "mahdavi_fig2a", "mahdavi_fig2b", "mahdavi_fig2c", "mahdavi_fig3", "mahdavi_fig4", "mahdavi_fig5",
    "dana_fig1a", "dana_fig1b", "dana_fig2a", "dana_fig2b", "dana_fig3", "dana_fig4",
    "syn_tokens", "syn_vectors", "syn_exact", "syn_headdim", "syn_saturation", "syn_efficiency",
)
"""Every training experiment, in the order of the book."""


class StaleResultsError(RuntimeError):
    """Paper results of an experiment are all in the cache, but some were made by another engine version."""


def get(name: str) -> ModuleType:
    """The module of experiment ``name`` (one of :data:`EXPERIMENTS`)."""
    if name not in EXPERIMENTS:
        raise ValueError(f"experiment must be one of {EXPERIMENTS}, got {name!r}")
    return importlib.import_module(f"memcap.experiments.{name}")


def jobs(name: str, profile: str | None = None) -> list[dict]:
    """The jobs of experiment ``name`` under ``profile`` (None: :func:`memcap.profiles.current_profile`)."""
    return get(name).jobs(check_profile(profile))


def profile_grid(name: str, profile: str | None = None) -> dict:
    """The grid of experiment ``name`` under ``profile``: its module's ``PAPER`` or ``QUICK`` dict (None:
    :func:`memcap.profiles.current_profile`). The dict itself, not a copy: read it, do not change it."""
    module = get(name)
    return module.PAPER if check_profile(profile) == "paper" else module.QUICK


def _distinct(values) -> list:
    out = []
    for v in values:
        if v not in out:
            out.append(v)
    return out


def _commit(manifest: dict) -> str:
    commit = manifest.get("git_commit")
    if not commit:
        return "unknown commit"
    return f"{commit[:7]} with local changes" if manifest.get("git_modified") else commit[:7]


def _listing(kind: str, values: list[str]) -> str:
    """'commit a1b2c3d', 'commits a1b2c3d, e4f5a6b' or '4 commits (a1b2c3d, ...)'."""
    if len(values) == 1:
        return f"{kind} {values[0]}" if kind else values[0]
    if len(values) <= 2:
        return f"{kind + 's ' if kind else ''}{', '.join(values)}"
    return f"{len(values)} {kind + 's' if kind else 'kinds'} ({values[0]}, ...)"


@dataclass(frozen=True)
class ExperimentResults:
    """What an experiment produced: ``results[j]`` is the output of ``jobs[j]``
    (see :func:`memcap.experiments.sweep.run_job`).

    ``source``: 'cache' (every job read from the cache), 'computed' (at least one job ran now) or 'recorded'
    (a run kept with the package, :func:`memcap.experiments.recorded.results`).
    ``manifests[j]``: where ``results[j]`` came from (see
    :class:`memcap.experiments.sweep.ResultCache`; empty when unknown).
    """

    name: str
    label: str
    profile: str
    source: str
    jobs: tuple[dict, ...]
    results: tuple[dict, ...]
    manifests: tuple[dict, ...] = ()

    @property
    def records(self) -> list[dict]:
        """One dict per trained model over all train jobs (spec fields + accuracy, loss, ...; ``job`` index)."""
        return [{**r, "job": j} for j, res in enumerate(self.results) for r in res.get("records", [])]

    @property
    def capacities(self) -> list[dict]:
        """One dict per capacity search over all capacity jobs (spec, capacity, upper, tried; ``job`` index)."""
        return [{**c, "job": j} for j, res in enumerate(self.results) for c in res.get("capacities", [])]

    @property
    def grid(self) -> dict:
        """The grid these results were made with (:func:`memcap.experiments.profile_grid` of ``name`` and
        ``profile``)."""
        return profile_grid(self.name, self.profile)

    @property
    def provenance(self) -> dict | None:
        """Where the results came from, over all jobs, or None when no manifest is known.

        Keys: ``commits`` (short git commits, 'with local changes' when memcap differed from the
        commit), ``devices`` (device names), ``dates`` (first and last day), ``engine_versions``,
        ``memcap_versions``, ``torch_versions``, ``dtypes``, ``wall_seconds`` (total run time of the jobs).
        """
        known = [m for m in self.manifests if m]
        if not known:
            return None
        days = sorted(str(m.get("date", ""))[:10] for m in known if m.get("date"))
        return {
            "commits": _distinct(_commit(m) for m in known),
            "devices": _distinct(str(m.get("device_name") or m.get("device") or "unknown device") for m in known),
            "dates": (days[0], days[-1]) if days else None,
            "engine_versions": _distinct(m.get("engine_version") for m in known),
            "memcap_versions": _distinct(m.get("memcap_version") for m in known),
            "torch_versions": _distinct(m.get("torch_version") for m in known),
            "dtypes": _distinct(m.get("dtype") for m in known),
            "wall_seconds": sum(float(m.get("wall_seconds") or 0.0) for m in known),
        }

    @property
    def provenance_note(self) -> str:
        """Provenance in a few words: 'commit a1b2c3d, NVIDIA H100 80GB HBM3, 2026-11-20' ('' if unknown)."""
        info = self.provenance
        if info is None:
            return ""
        parts = [_listing("commit", info["commits"]), _listing("", info["devices"])]
        if info["dates"]:
            first, last = info["dates"]
            parts.append(first if first == last else f"{first} to {last}")
        return ", ".join(parts)

    @property
    def caption(self) -> str:
        """The figure-caption note: '(quick profile)', or for the paper profile where its results came from:
        '(paper profile, cached results: commit a1b2c3d, NVIDIA H100 80GB HBM3, 2026-11-20)', or 'recorded run'
        in place of 'cached results' for a run kept with the package."""
        if self.profile != "paper":
            return f"({self.profile} profile)"
        where = {"cache": "cached results", "recorded": "recorded run"}.get(self.source, "computed")
        note = self.provenance_note
        return f"({self.profile} profile, {where}{': ' + note if note else ''})"


def _lookups(name: str, job_list: list[dict], cache: ResultCache, *, arrays: bool = True) -> list[Entry]:
    entries = [cache.lookup(name, job, arrays=arrays) for job in job_list]
    for entry in entries:
        if entry.status == "corrupt":
            warnings.warn(f"results cache: ignoring corrupt entry {entry.path}: {entry.reason}; rerun the sweep "
                          "to recompute it", CacheWarning, stacklevel=3)
    return entries


def _refresh_hint(name: str, cache_dir: Any, stale: list[Entry]) -> str:
    where = f" --cache {cache_dir}" if cache_dir is not None else ""
    sweep = f"`python -m memcap sweep {name} --profile paper{where}`"
    if all(map(_by_newer_engine, stale)):   # prune keeps them: only updating memcap, or recomputing, helps
        return (f"they were made by a newer memcap than this one: update this checkout to draw them, or "
                f"recompute them for this engine with {sweep} (both versions are kept)")
    return (f"refresh them with {sweep}, or delete them with `python -m memcap cache --prune{where}` (the book "
            "then draws the quick profile)")


def run(name: str, profile: str | None = None, cache_dir: Any = None, *, executor: Any = None,
        progress: Callable[[int, int, int], None] | None = None, use_cache: bool = True) -> ExperimentResults:
    """Run (or read from the cache) every job of ``name`` under ``profile``; ``use_cache=False`` stores nothing.

    Stale or corrupt cache entries are recomputed and replaced.
    """
    module = get(name)
    profile = check_profile(profile)
    job_list = module.jobs(profile)
    cache = ResultCache(cache_dir) if use_cache else None
    report = run_sweep_report(name, job_list, executor=executor, cache=cache, progress=progress)
    return ExperimentResults(name=name, label=module.LABEL, profile=profile,
                             source="cache" if report.computed == 0 and cache is not None else "computed",
                             jobs=tuple(job_list), results=report.results, manifests=report.manifests)


def cached(name: str, profile: str, cache_dir: Any = None) -> ExperimentResults | None:
    """The results of ``name`` under ``profile`` if every job has a current entry in the cache, else None
    (computes nothing; stale entries do not count, corrupt ones warn)."""
    module = get(name)
    profile = check_profile(profile)
    job_list = module.jobs(profile)
    entries = _lookups(name, job_list, ResultCache(cache_dir))
    if any(e.status != "current" for e in entries):
        return None
    return ExperimentResults(name=name, label=module.LABEL, profile=profile, source="cache",
                             jobs=tuple(job_list), results=tuple(e.result for e in entries),
                             manifests=tuple(e.manifest for e in entries))


def load_or_run(name: str, profile: str | None = None, cache_dir: Any = None, *, executor: Any = None,
                progress: Callable[[int, int, int], None] | None = None) -> ExperimentResults:
    """Results for a chapter: cached paper results when all are present, else run ``profile``.

    ``profile=None``: paper results from the cache if complete, otherwise the profile of
    ``MEMCAP_PROFILE`` (quick by default). If every paper job is in the cache but some entries were made
    by another engine version, raises :class:`StaleResultsError` (the message says how to refresh them)
    rather than silently drawing old numbers or silently falling back. The quick profile is always
    computed afresh and never read from (or written to) the cache: reading quick results back would let
    a change in the engine that forgot its version bump leave stale figures in the book. The paper
    profile is read from the cache where present and computed (resumably) otherwise. Check ``.source``,
    ``.profile`` and ``.provenance`` (or use ``.caption``) to say where the numbers came from.
    """
    if profile is None:
        module = get(name)
        job_list = module.jobs("paper")
        entries = _lookups(name, job_list, ResultCache(cache_dir))
        if all(e.status == "current" for e in entries):
            return ExperimentResults(name=name, label=module.LABEL, profile="paper", source="cache",
                                     jobs=tuple(job_list), results=tuple(e.result for e in entries),
                                     manifests=tuple(e.manifest for e in entries))
        stale = [e for e in entries if e.status == "stale"]
        if stale and all(e.status in ("current", "stale") for e in entries):
            raise StaleResultsError(f"{name}: {len(stale)} of {len(entries)} cached paper results are stale "
                                    f"({stale[0].reason}; e.g. {stale[0].path}), so the book does not draw them; "
                                    + _refresh_hint(name, cache_dir, stale))
    chosen = check_profile(profile)
    return run(name, chosen, cache_dir, executor=executor, progress=progress, use_cache=chosen != "quick")


@dataclass(frozen=True)
class ProfileStatus:
    """How complete one experiment's profile is in the cache (see :func:`cache_status`)."""

    name: str
    profile: str
    jobs: int
    current: int
    stale: int       # jobs this engine must recompute: their entry was made by an older engine or is unusable
    newer: int       # jobs whose entry only a newer memcap can use (another checkout's; kept by ``cache --prune``)
    corrupt: int
    missing: int
    provenance: str

    @property
    def complete(self) -> bool:
        """Every job has a current result."""
        return self.current == self.jobs


def cache_status(cache_dir: Any = None, names: tuple[str, ...] = EXPERIMENTS
                 ) -> tuple[list[ProfileStatus], dict[str, dict[str, int]]]:
    """What the results cache holds, loading no arrays.

    Returns one :class:`ProfileStatus` per experiment and profile, and per experiment the files on disk
    counted by status (those of :meth:`memcap.experiments.sweep.ResultCache.entries`; current entries that belong to no
    job of today's grids are counted as 'unused').
    """
    names = listed("names", names, "experiment names")
    cache = ResultCache(cache_dir)
    rows, disk = [], {}
    for name in names:
        module = get(name)
        keys = set()
        for profile in PROFILES:
            job_list = module.jobs(profile)
            entries = [cache.lookup(name, job, arrays=False) for job in job_list]
            keys.update(cache.path(name, job).parent for job in job_list)
            counts = {s: sum(e.status == s for e in entries) for s in ("current", "stale", "corrupt", "missing")}
            counts["newer"] = sum(e.status == "stale" and _by_newer_engine(e) for e in entries)
            counts["stale"] -= counts["newer"]
            current = tuple(e.manifest for e in entries if e.status == "current")
            note = ExperimentResults(name=name, label=module.LABEL, profile=profile, source="cache", jobs=(),
                                     results=(), manifests=current).provenance_note
            rows.append(ProfileStatus(name, profile, len(job_list), provenance=note, **counts))
        files: dict[str, int] = {}
        for status, path, _, _ in cache.entries(name):
            if status == "current" and path.parent not in keys:
                status = "unused"
            files[status] = files.get(status, 0) + 1
        if files:
            disk[name] = files
    return rows, disk


__all__ = ["EXPERIMENTS", "PROFILES", "ExperimentResults", "ProfileStatus", "StaleResultsError", "cache_status",
           "cached", "get", "jobs", "load_or_run", "profile_grid", "run"]
