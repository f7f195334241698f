"""Made-up paper-profile results, for testing what happens to the book when real ones arrive (no training).

A GPU session sweeps an experiment's paper profile into a results cache and writes a record of it
(:mod:`memcap.experiments.recorded`). These helpers fill a cache and a folder of records with results of the
papers' grids whose numbers are invented (:func:`made_up`), so that tests can run the summaries, verdicts and
chapters at the paper's shapes on a CPU. Never shown in the book.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from memcap import ENGINE_VERSION, experiments
from memcap.experiments import recorded
from memcap.experiments.sweep import ResultCache

PAPERS = tuple(n for n in experiments.EXPERIMENTS if n.startswith(("dana_", "mahdavi_")))
"""The papers' twelve training figures."""

OWN_KIND = ("mahdavi_fig3",)
"""Figures whose paper profile keeps weights or capacity searches (not made up here) and whose record is of its
own kind: the shipped one is used."""


def made_up(spec: dict) -> dict:
    """A result for the model ``spec`` (a spec dict) without training: accuracy (None for regression) and loss
    that grow with the model's size against its number of examples, plus a jitter from its seed, so that every
    summary has curves to fit; with a context of one token, chance (what the chapters check there)."""
    width = spec["heads"] * (spec.get("head_dim") or spec["dim"]) * spec.get("context_size", spec.get("seq_len", 1))
    width += spec.get("mlp_width", 0) * spec["dim"]
    load = (spec.get("examples") or spec.get("vocab", 10) ** 2) / 100.0
    acc = min(1.0, 0.05 + 0.9 * width / (width + load) + 0.01 * (spec["seed"] % 3))
    regression = spec["model"] == "mha" and spec.get("classes") is None
    if spec.get("context_size") == 1 and not regression:
        acc = 1.0 / spec["classes"]     # one token: no better than the most frequent label (a chapter checks it)
    return {**spec, "accuracy": None if regression else acc, "loss": 1.0 - 0.9 * acc,
            "memorized": acc == 1.0, "steps": 10, "stop_step": 10 if acc == 1.0 else -1}


def made_up_cache(root, name: str, picked, commit: str = "a" * 40, replayed=()):
    """``(cache, paper_jobs)``: the cache ``root``/cache holding made-up results for the paper train jobs
    ``picked`` (indices) of experiment ``name``, as this engine version at ``commit``; the jobs ``replayed``
    say in their manifests that their steps were replayed as CUDA graphs."""
    cache = ResultCache(Path(root) / "cache")
    paper = experiments.get(name).jobs("paper")
    for i in picked:
        records = [made_up(s) for s in paper[i]["specs"]]
        cache.put(name, paper[i], {"records": records},
                  {"engine_version": ENGINE_VERSION, "git_commit": commit, "wall_seconds": 2.0 + i,
                   "date": "2026-11-26T00:00:00+00:00", "torch_version": "x", "dtype": "float32",
                   "cuda_graphs": "always" if i in replayed else "never"})
    return cache, paper


def made_up_papers(root) -> tuple[Path, Path]:
    """``(cache_dir, records_dir)`` under ``root``: every paper job of the twelve figures but :data:`OWN_KIND`
    made up in a cache, and a record of each in a folder of records, with the shipped records of
    :data:`OWN_KIND`. Point ``MEMCAP_CACHE`` and ``MEMCAP_RECORDED`` at them to build a chapter as a GPU
    session's results would leave it."""
    records = Path(root) / "recorded"
    records.mkdir(parents=True, exist_ok=True)
    cache = None
    for name in PAPERS:
        if name in OWN_KIND:
            shutil.copy(recorded.path(name, recorded.FOLDER), records)
            continue
        cache, _ = made_up_cache(root, name, range(len(experiments.get(name).jobs("paper"))))
        recorded.save(recorded.from_cache(name, cache.root, machine="made-up results of a test",
                                          wall_seconds=60.0), records)
    return cache.root, records
