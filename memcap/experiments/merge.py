"""Train jobs of one experiment merged into one run, and the run's result split back into the jobs' own.

On a GPU a job of a few small models leaves the card idle between kernel launches; the same step for the
models of several jobs costs about as much as for one job's. Train jobs with the same ``config`` and
``keep_params`` can therefore be trained as one job whose ``specs`` are theirs one after the other: every
model's weights, training set and mini-batches come from its own seeds (``memcap.train.prepare``), not from
the stack it lands in, so each model's numbers are those of its job run alone up to float rounding in the
stacked kernels (``tests/test_merge.py`` checks it on the CPU).

What a job gets back from a merged run (:func:`split_result`): its own records, compile flags, weights and
history columns (the evaluations of its models up to the last step one of them trained: a stack that
trains on after them evaluates them again, rows the job alone would not have), and ``seconds``, the run's
training time times the job's share of its models.
"""
from __future__ import annotations

import json
import math
from typing import Sequence

from memcap._checks import positive_int


def _merge_key(job: dict) -> str | None:
    """Jobs with equal keys may be merged; None: a job that is never merged (not a train job)."""
    if job.get("kind") != "train":
        return None
    return json.dumps([job.get("config"), bool(job.get("keep_params", False))], sort_keys=True)


def merge_groups(jobs: Sequence[dict], limit: int) -> list[list[int]]:
    """Indices of ``jobs`` in runs of at most ``limit`` jobs each, in the order the jobs come.

    Train jobs with the same ``config`` and ``keep_params`` share runs (the first ``limit`` of them, the
    next ``limit``, ...); other jobs run alone. ``limit`` 1: every job alone, as without merging.
    """
    positive_int("limit", limit)
    open_runs: dict[str, list[int]] = {}
    runs: list[list[int]] = []
    for i, job in enumerate(jobs):
        key = _merge_key(job)
        if key is None or limit == 1:
            runs.append([i])
            continue
        run = open_runs.get(key)
        if run is None or len(run) == limit:
            run = open_runs[key] = []
            runs.append(run)
        run.append(i)
    return runs


def merged_job(jobs: Sequence[dict]) -> dict:
    """One train job of the ``jobs``' models, in their order (one job: that job itself).

    The jobs must share ``kind`` 'train', ``config`` and ``keep_params`` (see :func:`merge_groups`); the
    merged job's ``seed`` is the first job's (training draws nothing from torch's global generator)."""
    if not jobs:
        raise ValueError("jobs must hold at least one job, got none")
    if len(jobs) == 1:
        return jobs[0]
    keys = {_merge_key(job) for job in jobs}
    if None in keys or len(keys) != 1:
        raise ValueError("jobs can be merged only when all are train jobs with the same 'config' and "
                         "'keep_params'")
    return {**jobs[0], "specs": [spec for job in jobs for spec in job["specs"]]}


def split_result(result: dict, sizes: Sequence[int]) -> list[dict]:
    """The result of each of the merged jobs from ``result``, the merged job's (see
    :func:`memcap.experiments.sweep.run_job`); ``sizes``: the jobs' numbers of models, in order."""
    total = sum(sizes)
    if len(result.get("records", ())) != total:
        raise ValueError(f"result must hold {total} records, one per model of the merged jobs, got "
                         f"{len(result.get('records', ()))}")
    if len(sizes) == 1:
        return [result]
    history = result["history"]
    out, lo = [], 0
    for size in sizes:
        hi = lo + size
        part = {**result, "records": result["records"][lo:hi], "compiled": result["compiled"][lo:hi],
                "seconds": result["seconds"] * size / total}
        last = max(int(r["steps"]) for r in part["records"])   # alone, the job's training ends there
        rows = [e for e, accs in enumerate(history["accuracy"]) if history["steps"][e] <= last and
                (any(not _missing(a) for a in accs[lo:hi]) or any(not _missing(v) for v in history["loss"][e][lo:hi]))]
        part["history"] = {"steps": [history["steps"][e] for e in rows],
                           "accuracy": [history["accuracy"][e][lo:hi] for e in rows],
                           "loss": [history["loss"][e][lo:hi] for e in rows]}
        if "arrays" in result:
            part["arrays"] = {f"{int(i) - lo}/{name}": w for key, w in result["arrays"].items()
                              for i, name in [key.split("/", 1)] if lo <= int(i) < hi}
        out.append(part)
        lo = hi
    return out


def _missing(value: float | None) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))
