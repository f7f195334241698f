"""Paper-profile runs too long for the build, made once on the reference machine and kept with their provenance.

A record is the file ``<experiment>_paper.json`` in this folder. It says how it was made
(:data:`PROVENANCE`: ``command``, ``machine``, wall times (``sweep_wall_seconds``: the whole run, None
if not measured; ``job_wall_seconds``: per job), ``dates``, ``engine_version``, ``git_commit``,
``torch_version``, ``config``), which paper jobs it covers (``jobs``: indices into the experiment's
``jobs("paper")``) and what came out: ``records``, one per trained model as a sweep stores them (an
experiment may keep other fields instead, e.g. ``models``). The chapters read a record like published
data; the tests check that it still matches today's paper grid, so a change of grid asks for a new record.

To make one, run the paper sweep into a results cache, then::

    from memcap.experiments import recorded
    data = recorded.from_cache("dana_fig2b", "results", machine="...",
                               wall_seconds=3410)
    recorded.save(data)
"""
from __future__ import annotations

import json
import os
from dataclasses import fields
from pathlib import Path
from typing import Sequence

__all__ = ["FOLDER", "PROVENANCE", "path", "names", "load", "spec_of", "from_cache", "save"]

FOLDER = Path(__file__).parent
"""Where the records live (shipped with the package)."""

PROVENANCE = ("experiment", "profile", "jobs", "command", "machine", "sweep_wall_seconds", "job_wall_seconds",
              "dates", "engine_version", "git_commit", "torch_version", "config")
"""Fields every record has besides its results."""


def path(experiment: str) -> Path:
    """The record file of ``experiment`` (whether or not it exists)."""
    if not isinstance(experiment, str) or not experiment.isidentifier():
        raise ValueError(f"experiment must be an experiment's name (e.g. 'dana_fig1b'), got {experiment!r}")
    return FOLDER / f"{experiment}_paper.json"


def names() -> list[str]:
    """The experiments that have a record, sorted."""
    return sorted(p.name.removesuffix("_paper.json") for p in FOLDER.glob("*_paper.json"))


def load(experiment: str, payload: str | None = None) -> tuple[dict, list]:
    """``(provenance, results)`` of ``experiment``'s record: ``results`` is its ``payload`` field (a list;
    None: ``records``, or ``models`` in a record without ``records``), ``provenance`` every other field.
    ValueError when there is no record, or a field is missing."""
    file = path(experiment)
    if not file.exists():
        raise ValueError(f"experiment {experiment!r} has no recorded paper run (have: {', '.join(names())})")
    data = json.loads(file.read_text(encoding="utf-8"))
    if payload is None:
        payload = "records" if "records" in data else "models"
    missing = [k for k in PROVENANCE + (payload,) if k not in data]
    if missing:
        raise ValueError(f"the record {file.name} lacks the fields {missing}")
    results = data.pop(payload)
    if not isinstance(results, list) or not results:
        raise ValueError(f"the record {file.name}'s {payload!r} must be a non-empty list")
    return data, results


def spec_of(record: dict):
    """The model spec (:class:`~memcap.train.MHASpec` or :class:`~memcap.train.AoTSpec`) a result record was
    trained from: its spec fields, the result fields left out."""
    from memcap.train import AoTSpec, MHASpec, spec_from_dict

    if not isinstance(record, dict) or record.get("model") not in ("mha", "aot"):
        raise ValueError(f"record must be a dict with 'model' 'mha' or 'aot', got {record!r:.80}")
    cls = MHASpec if record["model"] == "mha" else AoTSpec
    return spec_from_dict({"model": record["model"], **{f.name: record[f.name] for f in fields(cls)
                                                        if f.name in record}})


def from_cache(experiment: str, cache: str | os.PathLike | None = None, *, machine: str,
               wall_seconds: float | None = None, jobs: Sequence[int] | None = None,
               command: str | None = None) -> dict:
    """A record of ``experiment``'s paper jobs (``jobs``: their indices, default all) from a results cache
    where every one of them is finished by this engine version.

    ``machine``: the hardware in words; ``wall_seconds``: the sweep's wall time if measured (the jobs' own
    times come from the cache); ``command``: what ran them (default: the paper sweep's command). All jobs
    must share one config and one git commit. ValueError naming the job otherwise.
    """
    from memcap import experiments
    from memcap.experiments.sweep import ResultCache

    if not isinstance(machine, str) or not machine.strip():
        raise ValueError(f"machine must describe the hardware in words, got {machine!r}")
    if wall_seconds is not None and not float(wall_seconds) > 0:
        raise ValueError(f"wall_seconds must be positive, got {wall_seconds!r}")
    paper = experiments.get(experiment).jobs("paper")
    picked = list(range(len(paper))) if jobs is None else list(jobs)
    if not picked or any(not isinstance(i, int) or not 0 <= i < len(paper) for i in picked) \
            or len(set(picked)) != len(picked):
        raise ValueError(f"jobs must be distinct indices in 0..{len(paper) - 1}, got {jobs!r}")
    store = ResultCache(cache)
    entries = []
    for i in picked:
        entry = store.lookup(experiment, paper[i], arrays=False)
        if entry.status != "current":
            raise ValueError(f"paper job {i} of {experiment} is {entry.status} in the cache {store.root}"
                             + (f" ({entry.reason})" if entry.reason else "") + ": finish the sweep first")
        entries.append(entry)
    configs = {json.dumps(paper[i]["config"], sort_keys=True) for i in picked}
    commits = {e.manifest.get("git_commit") for e in entries}
    if len(configs) != 1:
        raise ValueError(f"jobs must share one training config, got {len(configs)}")
    if len(commits) != 1:
        raise ValueError(f"the jobs were run at several git commits {sorted(map(str, commits))}: rerun them at one")
    first = entries[0].manifest
    return {
        "experiment": experiment, "profile": "paper", "jobs": picked,
        "command": command or f"python -m memcap sweep {experiment} --profile paper", "machine": machine,
        "sweep_wall_seconds": None if wall_seconds is None else round(float(wall_seconds), 1),
        "job_wall_seconds": [round(float(e.manifest["wall_seconds"]) + float((e.manifest.get("resumed") or {}).get(
            "earlier_seconds", 0.0)), 1) for e in entries],   # resumed: + its stacks' earlier training time
        "dates": [e.manifest["date"] for e in entries],
        **{k: first.get(k) for k in ("memcap_version", "engine_version", "git_commit", "git_modified",
                                      "torch_version", "python_version", "device_name", "dtype")},
        "config": paper[picked[0]]["config"],
        "records": [r for e in entries for r in e.result["records"]],
    }


def save(data: dict, folder: str | os.PathLike | None = None) -> Path:
    """Write ``data`` (as :func:`from_cache` makes it) to its record file in ``folder`` (default: this
    package's folder); returns the path."""
    missing = [k for k in PROVENANCE if k not in data]
    if missing:
        raise ValueError(f"data lacks the provenance fields {missing}")
    target = Path(folder) / path(data["experiment"]).name if folder is not None else path(data["experiment"])
    target.write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")
    return target
