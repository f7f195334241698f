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

A record of ``records`` reads back as the results of a sweep (:func:`results`, source 'recorded'), so a figure
summarizes it with the very calls it uses for its quick profile, and :func:`findings` decides the verdict of
every recorded figure through its module's ``finding``: a record written after a paper run on a GPU fills the
chapters' "recorded run at the paper's size" column and the appendix with no chapter code to add.
"""
from __future__ import annotations

import json
import os
from dataclasses import fields
from pathlib import Path
from typing import Sequence

__all__ = ["FOLDER", "ENV", "PROVENANCE", "STATUS_WORDS", "path", "names", "load", "spec_of", "results",
           "results_if_recorded", "caption", "finding", "findings", "account", "from_cache", "save"]

FOLDER = Path(__file__).parent
"""Where the records live (shipped with the package)."""

ENV = "MEMCAP_RECORDED"
"""An environment variable naming another folder of records, read in place of :data:`FOLDER` (e.g. records
fresh from a GPU session, to build the chapters from them before they are copied here and committed)."""

PROVENANCE = ("experiment", "profile", "jobs", "command", "machine", "sweep_wall_seconds", "job_wall_seconds",
              "dates", "engine_version", "git_commit", "torch_version", "config")
"""Fields every record has besides its results."""


def _folder(folder) -> Path:
    if folder is None:
        folder = os.environ.get(ENV) or FOLDER
        where = f"the folder of records {ENV}"
    else:
        where = "folder"
    if not isinstance(folder, (str, os.PathLike)) or not Path(folder).is_dir():
        raise ValueError(f"{where} must be an existing directory of records, got {folder!r}")
    return Path(folder)


def path(experiment: str, folder: str | os.PathLike | None = None) -> Path:
    """The record file of ``experiment`` in ``folder`` (default: :data:`ENV`'s folder if set, else
    :data:`FOLDER`; the same default everywhere below), whether or not it exists."""
    if not isinstance(experiment, str) or not experiment.isidentifier():
        raise ValueError(f"experiment must be an experiment's name (e.g. 'dana_fig1b'), got {experiment!r}")
    return _folder(folder) / f"{experiment}_paper.json"


def names(folder: str | os.PathLike | None = None) -> list[str]:
    """The experiments that have a record in ``folder``, sorted."""
    return sorted(p.name.removesuffix("_paper.json") for p in _folder(folder).glob("*_paper.json"))


def load(experiment: str, payload: str | None = None, folder: str | os.PathLike | None = None
         ) -> tuple[dict, list]:
    """``(provenance, results)`` of ``experiment``'s record: ``results`` is its ``payload`` field (a list;
    None: ``records``, or ``models`` in a record without ``records``), ``provenance`` every other field.
    ValueError when there is no record, or a field is missing."""
    file = path(experiment, folder)
    if not file.exists():
        raise ValueError(f"experiment {experiment!r} has no recorded paper run (have: "
                         f"{', '.join(names(folder))})")
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


_MANIFEST = ("memcap_version", "engine_version", "git_commit", "git_modified", "torch_version", "python_version",
             "device_name", "dtype")
"""The fields of a cache manifest that a record keeps once for all its jobs."""


def results(experiment: str, folder: str | os.PathLike | None = None):
    """``experiment``'s record as the results of its paper sweep: an
    :class:`~memcap.experiments.ExperimentResults` with ``profile`` 'paper', ``source`` 'recorded', the paper
    jobs the record covers, each job's records and a manifest per job (commit, device, date, wall time), so
    that ``.records``, ``.provenance`` and ``.caption`` work as for a sweep's results.

    ValueError when there is no record, when it keeps ``models`` instead of ``records`` (a figure of its own
    kind, e.g. ``mahdavi_fig3``: see its module), or when its records are not one per model of those jobs,
    in the jobs' order (today's paper grid changed: the record must be made again).
    """
    from memcap import experiments

    info, records = load(experiment, "records", folder)
    module = experiments.get(experiment)
    paper = module.jobs("paper")
    picked = [paper[i] for i in info["jobs"]]
    per_job, start = [], 0
    for i, job in zip(info["jobs"], picked):
        mine = records[start:start + len(job["specs"])]
        start += len(job["specs"])
        want = [repr(spec_of(s)) for s in job["specs"]]
        if [repr(spec_of(r)) for r in mine] != want:
            raise ValueError(f"the record of {experiment} does not hold paper job {i}'s models in order: today's "
                             "paper grid differs from the recorded one; make the record again")
        per_job.append({"records": mine})
    if start != len(records):
        raise ValueError(f"the record of {experiment} holds {len(records) - start} records beyond its jobs")
    common = {k: info.get(k) for k in _MANIFEST if k in info}
    manifests = tuple({**common, "date": date, "wall_seconds": seconds}
                      for date, seconds in zip(info["dates"], info["job_wall_seconds"]))
    return experiments.ExperimentResults(name=experiment, label=module.LABEL, profile="paper", source="recorded",
                                         jobs=tuple(picked), results=tuple(per_job), manifests=manifests)


def results_if_recorded(experiment: str, folder: str | os.PathLike | None = None):
    """:func:`results` when ``experiment`` has a record in ``folder``, else None: what a figure draws beside
    its quick panel once a paper run has been recorded."""
    return results(experiment, folder) if experiment in names(folder) else None


def caption(experiment: str, where: str, folder: str | os.PathLike | None = None) -> str:
    """A sentence for the caption of ``experiment``'s figure about its recorded panel, placed at ``where`` (e.g.
    'Middle', 'Right'): which run it draws, or, without a record, that there is none yet."""
    if not isinstance(where, str) or not where.strip():
        raise ValueError(f"where must name the recorded panel's place (e.g. 'Middle'), got {where!r}")
    found = results_if_recorded(experiment, folder)
    if found is None:
        return "No run at the paper's size is recorded yet."
    return f"{where}: a run at the paper's grid {found.caption}, read like published data."


STATUS_WORDS = {"yes": "the paper's finding is reproduced", "partly": "the paper's finding is partly reproduced",
                "no": "the paper's finding is not reproduced"}
"""How :func:`account` says a verdict's status."""


def account(module, folder: str | os.PathLike | None = None) -> str:
    """A paragraph (MyST) on the experiment ``module``'s recorded paper run for its chapter: what was run, where,
    when and by which engine, and what its :func:`finding` shows; or, without a record, that none is kept yet
    and the command that makes one."""
    from memcap import experiments

    name = module.NAME
    total = len(experiments.get(name).jobs("paper"))
    if name not in names(folder):
        return (f"*At the paper's size.* No run of this figure's paper profile ({total} jobs) is recorded yet: "
                f"`python -m memcap sweep {name} --profile paper` makes one, on a GPU for the largest grids, and "
                "`memcap.experiments.recorded` keeps it (see the appendix on reproducing the figures).")
    info, kept = load(name, None, folder)
    verdict = finding(module, folder)
    seconds = info["sweep_wall_seconds"] or sum(info["job_wall_seconds"])
    took = f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"
    jobs = f"all {total} paper jobs" if len(info["jobs"]) == total else f"{len(info['jobs'])} of its {total} paper jobs"
    return (f"*At the paper's size, recorded.* One run of the paper profile ({jobs}, {len(kept)} models) took {took} "
            f"on {info['machine']}; it was made by engine version {info['engine_version']} at commit "
            f"{info['git_commit'][:7]} ({info['dates'][-1][:10]}) and is kept with its command in "
            f"`memcap.experiments.recorded`, read like published data, not recomputed by the build. It shows "
            f"{verdict.shows}; {STATUS_WORDS[verdict.status]}.")


def finding(module, folder: str | os.PathLike | None = None):
    """The :class:`~memcap.experiments.verdicts.Verdict` of the experiment ``module`` on its recorded paper run:
    ``module.recorded_finding()`` where the module defines one (a record of its own kind), else
    ``module.finding(results(module.NAME))``, the call its chapter makes on a sweep's results.

    A module whose verdict needs another experiment's run as its control names that experiment in ``CONTROL``
    (``mahdavi_fig4``: Fig. 2(b)'s shared contexts); it is judged with that experiment's paper run, recorded
    in ``folder`` or else complete in the results cache (:func:`memcap.experiments.cached`), as its chapter
    judges a paper build: ``module.finding(results(module.NAME), control_results)`` (None when neither is
    there, which the module's ``finding`` says)."""
    own = getattr(module, "recorded_finding", None)
    if own is not None:
        if folder is not None:
            raise ValueError(f"folder must be None for {module.NAME}, whose record is read by its own module")
        return own()
    control = getattr(module, "CONTROL", None)
    if control is None:
        return module.finding(results(module.NAME, folder))
    from memcap import experiments

    shared = results_if_recorded(control, folder)
    if shared is None:
        shared = experiments.cached(control, "paper")
    return module.finding(results(module.NAME, folder), shared)


def findings(modules: Sequence, folder: str | os.PathLike | None = None) -> dict:
    """``{LABEL: Verdict}`` for every experiment module in ``modules`` that has a record in ``folder``, through
    :func:`finding`: the chapters' column "recorded run at the paper's size"."""
    from types import ModuleType

    if isinstance(modules, (str, ModuleType)) or not all(isinstance(m, ModuleType) for m in modules):
        raise ValueError(f"modules must be a sequence of experiment modules, got {modules!r:.80}")
    have = set(names(folder))
    return {m.LABEL: finding(m, folder) for m in modules if m.NAME in have}


def from_cache(experiment: str, cache: str | os.PathLike | None = None, *, machine: str,
               wall_seconds: float | None = None, jobs: Sequence[int] | None = None,
               command: str | None = None) -> dict:
    """A record of ``experiment``'s paper jobs (``jobs``: their indices, default all) from a results cache
    where every one of them is finished by this engine version.

    ``machine``: the hardware in words; ``wall_seconds``: the sweep's wall time if measured (the jobs' own
    times come from the cache); ``command``: what ran them (default: the paper sweep's command, with
    ``--cuda-graphs always`` where the jobs' manifests say their steps were replayed as CUDA graphs). All jobs
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
    if command is None:   # the sweep's command, with the CUDA-graph mode its jobs' manifests say they ran in
        command = f"python -m memcap sweep {experiment} --profile paper"
        replayed = [i for i, e in zip(picked, entries) if e.manifest.get("cuda_graphs") == "always"]
        if len(replayed) == len(picked):
            command += " --cuda-graphs always"
        elif replayed:
            command += f" (paper jobs {', '.join(map(str, replayed))} with --cuda-graphs always)"
    return {
        "experiment": experiment, "profile": "paper", "jobs": picked,
        "command": command, "machine": machine,
        "sweep_wall_seconds": None if wall_seconds is None else round(float(wall_seconds), 1),
        "job_wall_seconds": [round(float(e.manifest["wall_seconds"]) + float((e.manifest.get("resumed") or {}).get(
            "earlier_seconds", 0.0)), 1) for e in entries],   # resumed: + its stacks' earlier training time
        "dates": [e.manifest["date"] for e in entries],
        **{k: first.get(k) for k in _MANIFEST},
        "config": paper[picked[0]]["config"],
        "records": [r for e in entries for r in e.result["records"]],
    }


def save(data: dict, folder: str | os.PathLike | None = None) -> Path:
    """Write ``data`` (as :func:`from_cache` makes it) to its record file in ``folder``; returns the path."""
    missing = [k for k in PROVENANCE if k not in data]
    if missing:
        raise ValueError(f"data lacks the provenance fields {missing}")
    target = path(data["experiment"], folder)
    target.write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")
    return target
