"""Sweeps: the executor seam, the results cache, and the job runner (the profiles are :mod:`memcap.profiles`).

A sweep is a list of *jobs*, each a JSON-able dict (``{"kind": "train", "specs": [...], "config": {...}}``
or ``{"kind": "capacity", ...}``) run by :func:`run_job`. Where jobs run is decided by an *executor*:
anything with ``submit(fn, job) -> future`` (a ``concurrent.futures.Future`` or a look-alike). The
default runs them in this process, one after the other (deterministic); :func:`make_executor` also
gives a thread pool, a process pool and a Dask distributed client (optional dependency
``dask[distributed]``), so a paper-scale sweep can spread over several GPUs or machines without any
change to the experiments.

Results go to a :class:`ResultCache`, keyed by what determines them: the job with every field that has
its default value left out (:func:`canonical_job`; adding a field with a default to a spec keeps every
key), and the training engine's version ``memcap.ENGINE_VERSION``. Each result is stored as
``<experiment>/<key>/engine-<E>.json`` (NumPy arrays, if any, in an NPZ next to it; never pickle),
written atomically (temporary file + ``os.replace``), with a *manifest* saying where it came from:
memcap and engine versions, git commit, torch version, device, dtype, date and wall time. A result made
by another engine version is never returned as a hit (a sweep recomputes it; the book refuses it with a
message saying how to refresh it); one made by an older engine is *stale* and :meth:`ResultCache.prune`
deletes it, one made by a newer engine (another checkout sharing the cache) is kept. A corrupt or truncated
entry is a miss with a :class:`CacheWarning`. A sweep that is interrupted keeps every finished job; run it
again and only the missing jobs run. A sweep checks every job's entry path before it runs any job, and a
result it cannot store is kept elsewhere (:class:`CacheStoreError` says where): the cache never loses
finished work.
"""
from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import functools
import gc
import hashlib
import io
import json
import os
import platform
import re
import shutil
import subprocess
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from memcap._checks import check_bool, nonnegative_int, positive_int, seed_int
from memcap._files import atomic_write as _atomic_write
from memcap._version import ENGINE_VERSION, __version__
from memcap.experiments.merge import merge_groups, merged_job, split_result
from memcap.profiles import PROFILES, check_profile, current_profile  # noqa: F401  (re-exported: sweep's callers read them here)

EXECUTORS = ("inprocess", "threads", "processes", "dask")
"""Names accepted by :func:`make_executor`."""

CACHE_FORMAT = 2
"""Layout of the results cache: 1 was ``<key>.json`` keyed by the whole job and the memcap version
(no manifest); 2 is ``<key>/engine-<E>.json`` keyed by :func:`canonical_job`, with a manifest."""

JOB_DEFAULTS: dict[str, dict[str, Any]] = {
    "train": {"keep_params": False, "seed": 0},
    "capacity": {"rounds": 2, "points": 3, "seed": 0},
}
"""Defaults of the job-level fields of :func:`train_job` and :func:`capacity_job` (left out of keys)."""


MERGED_RUN = "merged-run.json"
"""File in a merged run's checkpoint folder naming the jobs the run trains (:meth:`ResultCache.note_merged_run`)."""


UNSTORED = "unstored"
"""Folder of the cache root where a sweep keeps a result it could not store in its entry (a cache of the same
layout, never pruned: it is not an experiment's folder); see :class:`CacheStoreError`."""

ENTRY_STATUSES = ("current", "newer", "stale", "legacy", "corrupt", "partial", "checkpoint", "orphan", "foreign")
"""What :meth:`ResultCache.entries` can say of a file."""

PRUNED = ("stale", "legacy", "corrupt", "partial", "orphan")
"""The statuses :meth:`ResultCache.prune` deletes by default."""

# memcap's names in the cache: <experiment>/<key>/engine-<E>.json|.npz (format 1: <experiment>/<key>.json|.npz),
# <experiment>/<key>/engine-<E>.checkpoint/ holding <stack key>.done.pt|.step.pt and merged-run.json, and the
# temporary files of atomic writes: '.<name>.<8 random characters>.tmp' (memcap._files.atomic_write)
_KEY = re.compile(r"[0-9a-f]{20}")
_LEGACY_FILE = re.compile(r"([0-9a-f]{20})\.(json|npz)")
_ENTRY_FILE = re.compile(r"engine-(0|[1-9][0-9]*)\.(json|npz)")
_CHECKPOINT_FOLDER = re.compile(r"engine-(0|[1-9][0-9]*)\.checkpoint")
_CHECKPOINT_FILE = re.compile(r"[0-9a-f]+\.(done|step)\.pt|" + re.escape(MERGED_RUN))
_TEMPORARY = re.compile(r"\.(.+)\.[a-z0-9_]{8}\.tmp")


def _by_newer_engine(entry: Entry) -> bool:
    """Whether a stale entry is a file made by a newer engine than this memcap's (another checkout's)."""
    found = _ENTRY_FILE.fullmatch(entry.path.name) if entry.path is not None else None
    return found is not None and int(found[1]) > ENGINE_VERSION


class CacheWarning(UserWarning):
    """A cache entry could not be read (corrupt or truncated): it is treated as missing. Also: a finished
    result could not be stored in its entry and was kept elsewhere (the message says where)."""


class CacheStoreError(OSError):
    """A job's result cannot be stored in the results cache: something not memcap's is in the way of its entry
    (raised before the sweep runs any job), or writing it failed (raised once the jobs in flight are done,
    naming where the result was kept instead)."""


def memcap_version() -> str:
    """memcap's release (``memcap.__version__``), recorded in every manifest."""
    return __version__


def default_cache_dir() -> Path:
    """``MEMCAP_CACHE`` if set, else ``results/`` at the root of the source checkout."""
    env = os.environ.get("MEMCAP_CACHE", "").strip()
    return Path(env) if env else Path(__file__).resolve().parents[2] / "results"


# ---------------------------------------------------------------------------------------------------
# what identifies a job
# ---------------------------------------------------------------------------------------------------

def _to_json(value: Any, what: str = "job") -> Any:
    """``value`` as plain JSON types (tuples become lists); TypeError naming ``what`` if impossible."""
    try:
        return json.loads(json.dumps(value, allow_nan=True))
    except TypeError as err:
        raise TypeError(f"{what} must be JSON-serializable (dicts, lists, numbers, strings): {err}") from None


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON text (so 1, 1.0 and True differ, as they do in a job)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


@functools.lru_cache(maxsize=None)
def _field_defaults(kind: str) -> dict[str, Any]:
    """Defaults of the fields of MHASpec ('mha'), AoTSpec ('aot') or TrainConfig ('config'), as JSON."""
    from memcap.train import AoTSpec, MHASpec, TrainConfig

    cls = {"mha": MHASpec, "aot": AoTSpec, "config": TrainConfig}[kind]
    out = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            out[f.name] = _to_json(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = _to_json(f.default_factory())
    return out


def _without_defaults(record: dict, defaults: dict[str, Any]) -> dict:
    return {k: v for k, v in record.items() if not (k in defaults and _same(v, defaults[k]))}


def canonical_job(job: dict) -> dict:
    """What determines a job's result: ``job`` as JSON with every field at its default left out.

    Dropped: the job-level fields of :data:`JOB_DEFAULTS`, and the fields of every spec (``MHASpec``,
    ``AoTSpec``) and of the ``TrainConfig`` that equal the dataclass's default. So a new field with a
    default keeps every key; changing a default changes the engine's numbers and needs a new
    ``memcap.ENGINE_VERSION`` (entries made before also record their whole job, and a lookup refuses
    one whose fields disagree with today's defaults).
    """
    if not isinstance(job, dict):
        raise TypeError(f"job must be a dict, got {type(job).__name__}")
    out = _without_defaults(_to_json(job), JOB_DEFAULTS.get(job.get("kind"), {}))
    if isinstance(out.get("specs"), list):
        out["specs"] = [_without_defaults(s, _field_defaults(s["model"]))
                        if isinstance(s, dict) and s.get("model") in ("mha", "aot") else s for s in out["specs"]]
    if isinstance(out.get("config"), dict):
        out["config"] = _without_defaults(out["config"], _field_defaults("config"))
    return out


def _canonical_text(job: dict) -> str:
    return json.dumps(job, sort_keys=True, separators=(",", ":"))


def job_key(job: dict) -> str:
    """Cache key of a job: SHA-256 (first 20 hex digits) of its :func:`canonical_job` as canonical JSON."""
    text = _canonical_text(canonical_job(job))
    return hashlib.sha256(f"memcap-cache-{CACHE_FORMAT}|{text}".encode()).hexdigest()[:20]


# ---------------------------------------------------------------------------------------------------
# provenance
# ---------------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def git_state() -> tuple[str | None, bool | None]:
    """(commit, modified) of the git checkout memcap runs from: ``modified`` when ``memcap/`` differs
    from the commit. (None, None) when memcap is not run from a git checkout or git is missing."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None, None
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=20)
        if head.returncode != 0:
            return None, None
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "memcap"],
                                cwd=root, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None, None
    return head.stdout.strip(), bool(status.stdout.strip()) if status.returncode == 0 else None


def environment(job: dict) -> dict[str, Any]:
    """Where ``job`` runs, for its manifest: versions, git commit, device and its name, dtype, and whether its
    steps are recorded as CUDA graphs (``cuda_graphs``: the mode of ``MEMCAP_CUDA_GRAPHS``)."""
    import torch

    from memcap.device import describe
    from memcap.train.graphs import graph_mode

    config = job.get("config") if isinstance(job.get("config"), dict) else {}
    try:
        info = describe(config.get("device"))
        device, device_name = str(info["device"]), str(info["device_name"])
    except ValueError:   # the job asks for a device this machine lacks; the job itself will say so
        device, device_name = str(config.get("device")), "unavailable"
    commit, modified = git_state()
    return {"memcap_version": __version__, "engine_version": ENGINE_VERSION, "git_commit": commit,
            "git_modified": modified, "torch_version": torch.__version__,
            "python_version": platform.python_version(), "device": device, "device_name": device_name,
            "dtype": config.get("dtype", _field_defaults("config")["dtype"]), "cuda_graphs": graph_mode()}


def run_recorded(fn: Callable[[dict], dict], job: dict, checkpoint: str | None = None,
                 checkpoint_every: float | None = None) -> tuple[dict, dict]:
    """``(fn(job), manifest)``: runs where the executor puts it, so the manifest names that machine.

    ``checkpoint``: a folder where the job's training keeps its progress (``memcap.train.checkpoint``), every
    ``checkpoint_every`` seconds (None: the default); a job that goes on from there says so in its manifest
    (``resumed``: stacks read back finished, the steps at which stopped stacks went on, and the training
    time those had had before: ``wall_seconds`` counts this run only).
    """
    env = environment(job)
    start = time.perf_counter()
    if checkpoint is None:
        result = fn(job)
    else:
        from memcap.train.checkpoint import CHECKPOINT_SECONDS, checkpointing

        every = CHECKPOINT_SECONDS if checkpoint_every is None else checkpoint_every
        with checkpointing(checkpoint, every) as kept:
            result = fn(job)
        if kept.restored or kept.resumed:
            env["resumed"] = {"stacks_restored": kept.restored, "resumed_at_steps": kept.resumed,
                              "earlier_seconds": round(kept.earlier_seconds, 3)}
    env["wall_seconds"] = round(time.perf_counter() - start, 3)
    env["date"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return result, env


# ---------------------------------------------------------------------------------------------------
# the results cache
# ---------------------------------------------------------------------------------------------------

STATUSES = ("current", "missing", "stale", "corrupt")
"""What :meth:`ResultCache.lookup` can find for a job."""


@dataclass(frozen=True)
class Entry:
    """What the cache holds for one job: ``status`` is one of :data:`STATUSES`.

    ``current``: made by this engine version, ``result`` and ``manifest`` are set. ``stale``: made by
    another engine version (or by the cache format 1, which recorded none), or for a job whose fields
    disagree with today's defaults; never used. ``corrupt``: unreadable (``reason`` says why).
    """

    status: str
    path: Path | None = None
    result: dict | None = None
    manifest: dict = field(default_factory=dict)
    reason: str = ""


class ResultCache:
    """Job results on disk under ``root/<experiment>/<key>/engine-<E>.json`` (+ ``.npz`` for arrays).

    A result is a JSON-able dict; its optional entry ``"arrays"`` maps names to NumPy arrays, which are
    stored in the NPZ (loaded with ``allow_pickle=False``, checked against the SHA-256 the JSON records).
    The JSON file is written last, so its presence means the job finished. Entries of other engine
    versions stay on disk beside the current one until :meth:`prune` removes them.
    """

    def __init__(self, root: str | os.PathLike | None = None) -> None:
        self.root = Path(root) if root is not None else default_cache_dir()
        self._legacy: dict[str, dict[str, list[Path]]] = {}

    def _folder(self, experiment: str) -> Path:
        if not isinstance(experiment, str) or not experiment or "/" in experiment or experiment.startswith("."):
            raise ValueError(f"experiment must be a plain name (no '/', not hidden), got {experiment!r}")
        return self.root / experiment

    def path(self, experiment: str, job: dict) -> Path:
        """Where the current engine's result of ``job`` lives (the JSON file)."""
        return self._folder(experiment) / job_key(job) / f"engine-{ENGINE_VERSION}.json"

    def checkpoint_folder(self, experiment: str, job: dict) -> Path:
        """Where a running ``job`` keeps its training's progress (``memcap.train.checkpoint``) until its
        result is stored: beside that result, so a stopped sweep run again goes on from it."""
        return self.path(experiment, job).with_suffix(".checkpoint")

    def note_merged_run(self, experiment: str, jobs: Sequence[dict]) -> Path:
        """Record in the checkpoint folder of the merged run of ``jobs`` (two or more) which jobs it trains
        (their :func:`job_key`), so that :meth:`entries` can tell when no sweep will go on from it: once one
        of them is stored, a sweep never forms that run again (runs are merged from the jobs still missing).
        Returns the record's path."""
        if len(jobs) < 2:
            raise ValueError(f"jobs must be a merged run of two or more jobs, got {len(jobs)}")
        record = self.checkpoint_folder(experiment, merged_job(jobs)) / MERGED_RUN
        _atomic_write(record, json.dumps({"jobs": [job_key(job) for job in jobs]}).encode("utf-8"))
        return record

    def _orphaned(self, experiment: str, folder: Path) -> str:
        """Why no sweep will go on from checkpoint ``folder`` ('' if one may): its job is stored (a sweep
        stopped between storing it and deleting the folder), or a job of its merged run is."""
        def done(key: str) -> bool:   # a readable result: a corrupt one is recomputed, and goes on from here
            path = self._folder(experiment) / key / f"engine-{ENGINE_VERSION}.json"
            try:
                return path.is_file() and bool(self._read(path, arrays=False))
            except ValueError:
                return False

        if done(folder.parent.name):
            return "progress of a job whose result is stored"
        try:
            keys = json.loads((folder / MERGED_RUN).read_text(encoding="utf-8"))["jobs"]
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            return ""
        if not isinstance(keys, list):
            return ""
        finished = [key for key in keys if isinstance(key, str) and done(key)]
        if finished:
            return (f"progress of a merged run of {len(keys)} jobs, {len(finished)} of them stored since: no sweep "
                    "forms that run again")
        return ""

    def _in_the_way(self, meta_path: Path, *, result: bool = True, checkpoint: bool = False) -> str:
        """What stands where the entry ``meta_path`` (an ``engine-<E>.json`` of this cache) would be written ('' if
        nothing): a file where a folder of its path belongs (the cache's, the experiment's, the key's), a folder
        where its JSON or NPZ belongs, a link to nothing; with ``checkpoint``, also a file where its checkpoint
        folder belongs. Without ``result``, only the folders are checked."""
        existing = self.root
        while not (existing.exists() or existing.is_symlink()) and existing != existing.parent:
            existing = existing.parent
        places = [(existing, True), (self.root, True), (meta_path.parent.parent, True), (meta_path.parent, True)]
        if result:
            places += [(meta_path, False), (meta_path.with_suffix(".npz"), False)]
        if checkpoint:
            places.append((meta_path.with_suffix(".checkpoint"), True))
        for place, folder in places:
            if place.is_symlink() and not place.exists():
                return f"{place} is a link to nothing"
            if folder and place.exists() and not place.is_dir():
                return f"{place} is a file, not a folder"
            if not folder and place.is_dir():
                return f"{place} is a folder, not a file"
        return ""

    # reading -----------------------------------------------------------------------------------------

    @staticmethod
    def _read(meta_path: Path, *, arrays: bool = True) -> tuple[dict, dict]:
        """(result, manifest) of one entry; ValueError saying what is wrong if it is corrupt.

        ``arrays=False`` checks the NPZ's checksum but does not load it (``result`` then has no arrays). An
        ``engine-<E>.json`` must record the engine version ``E`` (an int) that its name says."""
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:   # ValueError: not JSON, not UTF-8, a number too long
            raise ValueError(f"unreadable JSON ({err})") from None
        except RecursionError:
            raise ValueError("unreadable JSON (nested too deeply)") from None
        if not (isinstance(meta, dict) and isinstance(meta.get("result"), dict) and isinstance(meta.get("job"), dict)):
            raise ValueError("the JSON lacks its 'job' or 'result'")
        named = _ENTRY_FILE.fullmatch(meta_path.name)
        if named is not None:
            engine = meta.get("engine_version")
            if isinstance(engine, bool) or not isinstance(engine, int):
                raise ValueError(f"its engine_version must be an int, got {engine!r}")
            if engine != int(named[1]):
                raise ValueError(f"its engine_version is {engine}, its name says {named[1]}")
        result = dict(meta["result"])
        manifest = {k: v for k, v in meta.items() if k != "result"}
        if meta.get("has_arrays"):
            npz_path = meta_path.with_suffix(".npz")
            try:
                data = npz_path.read_bytes()
            except OSError:
                raise ValueError(f"its arrays file {npz_path.name} is missing") from None
            if meta.get("npz_sha256") not in (None, hashlib.sha256(data).hexdigest()):
                raise ValueError(f"its arrays file {npz_path.name} does not match the checksum in the JSON")
            if not arrays:
                return result, manifest
            try:
                with np.load(io.BytesIO(data), allow_pickle=False) as npz:
                    result["arrays"] = {name: npz[name] for name in npz.files}
            except Exception as err:   # zipfile, OSError, ValueError: any unreadable NPZ is corrupt
                raise ValueError(f"its arrays file {npz_path.name} is unreadable ({err})") from None
        return result, manifest

    def _legacy_index(self, experiment: str) -> dict[str, list[Path]]:
        """Format-1 entries (``<experiment>/<key>.json``) by the :func:`job_key` of the job they hold."""
        if experiment not in self._legacy:
            index: dict[str, list[Path]] = {}
            for path in sorted(self._folder(experiment).glob("*.json")):
                if not _LEGACY_FILE.fullmatch(path.name):
                    continue
                try:
                    job = json.loads(path.read_text(encoding="utf-8"))["job"]
                    key = job_key(job)
                except Exception:   # unreadable: listed as corrupt by entries(), never matched
                    continue
                index.setdefault(key, []).append(path)
            self._legacy[experiment] = index
        return self._legacy[experiment]

    def lookup(self, experiment: str, job: dict, *, arrays: bool = True) -> Entry:
        """What the cache holds for ``job``: a current result, a stale or corrupt entry, or nothing.

        'stale' covers every entry this engine cannot use: made by an older engine version, by a newer one (the
        reason says so: :meth:`prune` keeps those), by the cache format 1, or for a job whose fields differ
        from today's defaults. 'corrupt' also covers a path blocked by something memcap did not write (a file
        where the job's folder belongs, a folder where its JSON belongs): a sweep refuses to run until it is
        moved away. ``arrays=False`` leaves a current result's NumPy arrays on disk (for status reports)."""
        meta_path = self.path(experiment, job)
        if meta_path.is_file():
            try:
                result, manifest = self._read(meta_path, arrays=arrays)
                same = _same(canonical_job(manifest["job"]), canonical_job(job))
            except (ValueError, TypeError, KeyError, RecursionError) as err:
                return Entry("corrupt", meta_path, reason=str(err))
            if not same:
                return Entry("stale", meta_path, manifest=manifest,
                             reason="made for a job whose fields differ from today's defaults")
            return Entry("current", meta_path, result, manifest)
        blocked = self._in_the_way(meta_path)
        if blocked:
            return Entry("corrupt", meta_path, reason=f"{blocked}: move it away so that a sweep can store the result")
        others = sorted((int(m[1]), p) for p in meta_path.parent.glob("engine-*.json")
                        if (m := _ENTRY_FILE.fullmatch(p.name)) and int(m[1]) != ENGINE_VERSION)
        if others:
            versions = ", ".join(str(e) for e, _ in others)
            newer = [str(e) for e, _ in others if e > ENGINE_VERSION]
            reason = f"made by engine version {versions}, this memcap's engine is {ENGINE_VERSION}"
            if newer:
                reason += (f" (version {', '.join(newer)} is newer: a newer memcap can use it, and `cache --prune` "
                           "keeps it)")
            return Entry("stale", others[-1][1], reason=reason)
        legacy = self._legacy_index(experiment).get(job_key(job)) if meta_path.parent.parent.is_dir() else None
        if legacy:
            return Entry("stale", legacy[0], reason="made by memcap 0.1 (cache format 1), which recorded no "
                                                    "engine version")
        return Entry("missing")

    def get(self, experiment: str, job: dict) -> dict | None:
        """The stored result of ``job`` made by this engine version, or None (a corrupt entry warns)."""
        entry = self.lookup(experiment, job)
        if entry.status == "corrupt":
            warnings.warn(f"results cache: ignoring corrupt entry {entry.path}: {entry.reason}; "
                          "a sweep recomputes it", CacheWarning, stacklevel=2)
        return entry.result if entry.status == "current" else None

    # writing -----------------------------------------------------------------------------------------

    def put(self, experiment: str, job: dict, result: dict, manifest: dict | None = None) -> Path:
        """Store ``result`` of ``job`` atomically with its ``manifest`` (see :func:`run_recorded`;
        None: this process's :func:`environment`); returns the JSON path. :class:`CacheStoreError` (an
        OSError), writing nothing, when something not memcap's is in the way of the entry."""
        if not isinstance(result, dict):
            raise TypeError(f"result must be a dict, got {type(result).__name__}")
        arrays = result.get("arrays")
        body = {k: v for k, v in result.items() if k != "arrays"}
        info = dict(manifest) if manifest is not None else environment(job)
        info.setdefault("engine_version", ENGINE_VERSION)
        info.setdefault("date", datetime.now(timezone.utc).isoformat(timespec="seconds"))
        info.setdefault("wall_seconds", None)
        engine = info["engine_version"]
        if isinstance(engine, bool) or not isinstance(engine, int):
            raise TypeError(f"manifest['engine_version'] must be an int, got {engine!r}")
        if engine < 0:   # 'engine--1.json' would be a name memcap does not read
            raise ValueError(f"manifest['engine_version'] must be >= 0, got {engine}")
        # a worker running another engine version (an old checkout on a remote machine) is stored as such
        meta_path = self.path(experiment, job).with_name(f"engine-{engine}.json")
        meta = {"format": CACHE_FORMAT, **info, "key": job_key(job), "job": _to_json(job), "has_arrays": bool(arrays)}
        npz = None
        if arrays:
            buffer = io.BytesIO()
            np.savez(buffer, **{name: np.asarray(a) for name, a in arrays.items()})
            npz = buffer.getvalue()
            meta["npz_sha256"] = hashlib.sha256(npz).hexdigest()
        try:
            text = json.dumps({**meta, "result": body}, indent=1, allow_nan=True)
        except TypeError as err:
            raise TypeError(f"result must be JSON-serializable apart from 'arrays': {err}") from None
        blocked = self._in_the_way(meta_path)
        if blocked:
            raise CacheStoreError(f"results cache: cannot store {meta_path}: {blocked}")
        if npz is not None:
            _atomic_write(meta_path.with_suffix(".npz"), npz)
        _atomic_write(meta_path, text.encode("utf-8"))
        return meta_path

    # inspecting and pruning --------------------------------------------------------------------------

    def experiments(self) -> list[str]:
        """The folders of the cache named after an experiment of ``memcap.experiments.EXPERIMENTS``, in the book's
        order (any other folder is not memcap's and :meth:`prune` never looks into it)."""
        from memcap.experiments import EXPERIMENTS

        if not self.root.is_dir():
            return []
        return [name for name in EXPERIMENTS if (self.root / name).is_dir()]

    def entries(self, experiment: str) -> Iterator[tuple[str, Path, dict, str]]:
        """Every file of ``experiment``'s folder as ``(status, path, manifest, reason)``, without loading arrays.

        Statuses (:data:`ENTRY_STATUSES`): 'current', 'newer' (an entry, checkpoint or temporary file of a newer
        engine version than this memcap's: another checkout's work, never judged nor deleted here), 'stale' (of
        an older engine version), 'legacy' (cache format 1), 'corrupt', 'partial' (a temporary file left by a
        write that was killed, or arrays whose JSON is missing), 'checkpoint' (the saved progress of a job that
        was stopped, :meth:`checkpoint_folder`), 'orphan' (a checkpoint no sweep will go on from: its job, or a
        job of its merged run, is stored since), 'foreign' (not named as memcap names its files: not memcap's).
        An entry's NPZ beside its JSON is not listed (it goes with the JSON).
        """
        folder = self._folder(experiment)
        if not folder.is_dir():
            return
        orphaned: dict[Path, str] = {}
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                found = self._classify(experiment, path, path.relative_to(folder).parts, orphaned)
                if found is not None:
                    yield found

    def _classify(self, experiment: str, path: Path, parts: tuple[str, ...],
                  orphaned: dict[Path, str]) -> tuple[str, Path, dict, str] | None:
        """The ``(status, path, manifest, reason)`` of :meth:`entries` for the file ``path`` (``parts``: its path
        below the experiment's folder); None for an NPZ whose JSON is there."""
        foreign = ("foreign", path, {}, "not memcap's (not named as memcap names its files): left alone")
        temporary = _TEMPORARY.fullmatch(path.name)
        name = temporary[1] if temporary else path.name
        if len(parts) == 1:   # cache format 1: <experiment>/<key>.json|.npz
            if not _LEGACY_FILE.fullmatch(name):
                return foreign
            engine = None
        elif len(parts) == 2 and _KEY.fullmatch(parts[0]):   # <experiment>/<key>/engine-<E>.json|.npz
            named = _ENTRY_FILE.fullmatch(name)
            if named is None:
                return foreign
            engine = int(named[1])
        elif len(parts) == 3 and _KEY.fullmatch(parts[0]) and _CHECKPOINT_FOLDER.fullmatch(parts[1]) \
                and _CHECKPOINT_FILE.fullmatch(name):   # <experiment>/<key>/engine-<E>.checkpoint/...
            engine = int(_CHECKPOINT_FOLDER.fullmatch(parts[1])[1])
            if engine > ENGINE_VERSION:
                return "newer", path, {}, (f"checkpoint of engine version {engine}, newer than this memcap's "
                                           f"({ENGINE_VERSION}): kept")
            if engine < ENGINE_VERSION:
                return "stale", path, {}, f"checkpoint of engine version {engine}"
            if temporary:
                return "partial", path, {}, "temporary file of an interrupted write"
            if path.parent not in orphaned:
                orphaned[path.parent] = self._orphaned(experiment, path.parent)
            if orphaned[path.parent]:
                return "orphan", path, {}, orphaned[path.parent]
            return "checkpoint", path, {}, "progress of a stopped job (the next sweep goes on from it)"
        else:
            return foreign
        if path.suffix == ".npz" and not temporary and path.with_suffix(".json").is_file():
            return None
        if engine is not None and engine > ENGINE_VERSION:
            return "newer", path, {}, (f"made by engine version {engine}, newer than this memcap's ({ENGINE_VERSION}): "
                                       "kept")
        if temporary:
            return "partial", path, {}, "temporary file of an interrupted write"
        if path.suffix == ".npz":
            return "partial", path, {}, "arrays without their JSON"
        try:
            _, manifest = self._read(path, arrays=False)
        except ValueError as err:
            return "corrupt", path, {}, str(err)
        if engine is None:
            return "legacy", path, manifest, "cache format 1 (no engine version)"
        if engine < ENGINE_VERSION:
            return "stale", path, manifest, f"engine version {engine}"
        return "current", path, manifest, ""

    def prune(self, experiment: str | None = None, statuses: Sequence[str] = PRUNED) -> list[Path]:
        """Delete the files of ``experiment`` (None: every experiment of :meth:`experiments`) whose status in
        :meth:`entries` is in ``statuses`` (default :data:`PRUNED`), with an entry's NPZ, and the folders of
        memcap's naming left empty; return the paths of the files deleted.

        Never deleted by default: a current entry (the cache keeps every result this engine made), a 'newer' one
        (another checkout's finished work), a checkpoint a sweep can go on from; and never, whatever
        ``statuses`` says, a 'foreign' file, nor anything outside the experiments' folders.
        """
        if isinstance(statuses, str) or not isinstance(statuses, (list, tuple, set, frozenset)):
            raise TypeError(f"statuses must be a list or tuple of statuses, got {statuses!r}")
        wrong = [s for s in statuses if s not in ENTRY_STATUSES or s == "foreign"]
        if wrong:
            raise ValueError(f"statuses must be statuses of entries() other than 'foreign' (files not memcap's are "
                             f"never deleted): {[s for s in ENTRY_STATUSES if s != 'foreign']}, got {wrong[0]!r}")
        removed = []
        for name in [experiment] if experiment is not None else self.experiments():
            folder = self._folder(name)
            for status, path, _, _ in list(self.entries(name)):
                if status not in statuses:
                    continue
                targets = [path]
                if path.suffix == ".json" and path.name != MERGED_RUN and path.with_suffix(".npz").is_file():
                    targets.append(path.with_suffix(".npz"))
                for target in targets:
                    target.unlink(missing_ok=True)
                    removed.append(target)
            keys = [p for p in folder.iterdir() if _KEY.fullmatch(p.name) and p.is_dir() and not p.is_symlink()] \
                if folder.is_dir() else []
            for key in keys:
                for sub in key.iterdir():
                    named = _CHECKPOINT_FOLDER.fullmatch(sub.name)
                    if named and int(named[1]) <= ENGINE_VERSION and sub.is_dir() and not sub.is_symlink():
                        _remove_if_empty(sub)
                _remove_if_empty(key)
            self._legacy.pop(name, None)
        return removed

    def __repr__(self) -> str:
        return f"ResultCache({str(self.root)!r})"


def _remove_if_empty(folder: Path) -> None:
    try:
        if not any(folder.iterdir()):
            folder.rmdir()
    except OSError:   # filled or removed meanwhile (another process): leave it
        pass


# ---------------------------------------------------------------------------------------------------
# executors
# ---------------------------------------------------------------------------------------------------

class InProcessExecutor:
    """Runs each job at ``submit`` time in this process and returns a finished future (deterministic)."""

    parallelism = 1

    def submit(self, fn: Callable[[dict], Any], job: dict) -> cf.Future:
        future: cf.Future = cf.Future()
        try:
            future.set_result(fn(job))
        except Exception as err:   # handed to the caller through the future, as any executor does
            future.set_exception(err)
        return future

    def shutdown(self, wait: bool = True) -> None:
        """Nothing to release."""


class _DaskExecutor:
    """Adapter: a Dask distributed ``Client`` behind the ``submit(fn, job) -> future`` seam."""

    def __init__(self, client: Any, cluster: Any = None) -> None:
        self.client, self.cluster = client, cluster
        self._executor = client.get_executor(pure=False)
        self.parallelism = max(1, sum(client.nthreads().values()))

    def submit(self, fn: Callable[[dict], Any], job: dict) -> cf.Future:
        return self._executor.submit(fn, job)

    def shutdown(self, wait: bool = True) -> None:
        self._executor.shutdown(wait=wait)
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()

    def abandon(self) -> None:
        """Cancel every queued and running task on the cluster now (quietly: the user asked for it).

        A local cluster's worker processes (ours) are ended first, with SIGKILL, as a process pool's are:
        a worker busy with a running job cannot stop it, and left to the cluster's own close it kept the
        job running for up to the nanny's 4-s grace while the scheduler went away, and could print
        "Failed to communicate with scheduler during heartbeat" and its traceback on the user's terminal
        (seen once, on a loaded machine). A remote cluster's workers are not ours: there the tasks are
        only cancelled."""
        import logging

        logging.getLogger("distributed").setLevel(logging.ERROR)
        futures = list(getattr(self._executor, "_futures", ()))
        if futures:
            self.client.cancel(futures, force=True)
        if self.cluster is not None:
            _end_local_workers(self.cluster)
        self.shutdown(wait=False)


def _end_local_workers(cluster: Any) -> None:
    """SIGKILL the worker processes of our own dask ``LocalCluster``, each nanny told first not to restart
    its worker (``close_gracefully``), and wait (at most 10 s) until they are gone."""
    import signal

    kill = getattr(signal, "SIGKILL", signal.SIGTERM)   # Windows has no SIGKILL; its SIGTERM terminates
    pids = []
    for nanny in list(getattr(cluster, "workers", {}).values()):
        pid = getattr(nanny, "pid", None)
        if not pid:   # a thread worker (processes=False) or a worker not started yet
            continue
        nanny.close_gracefully(reason="memcap-sweep-interrupted")
        try:
            os.kill(pid, kill)
        except (ProcessLookupError, PermissionError):   # already gone (its pid perhaps reused)
            continue
        pids.append(pid)
    deadline = time.monotonic() + 10
    while pids and time.monotonic() < deadline:
        pids = [pid for pid in pids if _pid_running(pid)]
        time.sleep(0.02)


def _pid_running(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie, ended but not yet reaped by its parent, does not)."""
    if os.name != "posix":   # Windows: os.kill(pid, 0) would send Ctrl-C; TerminateProcess does not linger
        return False
    if not os.path.isdir("/proc"):   # macOS: ask the kernel (a zombie counts as running there)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(") ", 1)[-1][:1] != "Z"
    except OSError:
        return False


def _exit_with_parent(parent: int) -> None:
    """Have the kernel end this process when ``parent`` (the pool's owner, by pid) ends, on Linux.

    A sweep killed with ``kill`` (SIGTERM) or SIGKILL never reaches the code that terminates its pool, and
    the workers would run on, each training its job, with no one to receive the result. Elsewhere nothing
    is done (no such kernel call)."""
    import ctypes
    import signal
    import sys

    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)   # PR_SET_PDEATHSIG: SIGTERM when the parent exits
    except (OSError, AttributeError):   # no libc with prctl (e.g. musl without it): leave it to the parent
        return
    if os.getppid() != parent:   # the parent ended before the call took effect
        os._exit(1)


def _start_worker(threads: int, parent: int | None = None) -> None:
    """A pool worker: ``threads`` torch threads (so that the workers share the cores, not oversubscribe
    them), Ctrl-C left to the parent, which cancels the sweep and terminates the workers, and, given the
    ``parent``'s pid, an exit when the parent is killed (:func:`_exit_with_parent`)."""
    import signal

    import torch

    torch.set_num_threads(threads)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if parent is not None:
        _exit_with_parent(parent)


def usable_cores() -> int:
    """CPU cores this process may run on (its affinity where the platform says, else ``os.cpu_count()``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:   # macOS, Windows
        return max(1, os.cpu_count() or 1)


def default_executor(device_type: str, jobs: int, cores: int | None = None) -> tuple[str, int | None]:
    """``(kind, workers)`` of the executor ``python -m memcap sweep`` uses for ``jobs`` jobs when none is named.

    On a CPU with ``cores`` >= 2 (None: :func:`usable_cores`) and at least two jobs: 'processes', one
    single-threaded worker per core (at most one per job). Why processes: a worker's Python work (op
    dispatch, autograd; about 1.4 ms of a 3-9 ms stack step on dana_fig2b's paper models, see
    ``memcap.train.partition.STACK_COST``) never waits for another worker's interpreter lock, and
    the ~3 CPU-seconds a process spends starting (spawn, import torch) are nothing next to a paper job.
    Measured on the shared 2-core reference machine (four dana_fig2b paper jobs cut to 150 steps, 6 s
    each; best runs at a load of 2-3): 2 processes 22 s, 2 threads 17-22 s, in process 23 s; cut to 500
    steps, one run each while other work loaded the machine (load 7, 5, 3): threads 130 s, processes
    164 s, in process 83 s. On a machine whose cores are taken by other work, no pool is faster.
    On a GPU, a single core or for a single job: 'inprocess' (no worker to start).
    """
    if not isinstance(device_type, str):
        raise TypeError(f"device_type must be a string such as 'cpu' or 'cuda', got {type(device_type).__name__}")
    from memcap._checks import nonnegative_int, positive_int

    nonnegative_int("jobs", jobs)
    cores = usable_cores() if cores is None else positive_int("cores", cores)
    workers = min(cores, jobs)
    if device_type != "cpu" or workers < 2:
        return "inprocess", None
    return "processes", workers


def make_executor(kind: str = "inprocess", *, workers: int | None = None, address: str | None = None,
                  threads: int | None = None) -> Any:
    """An executor for :func:`run_sweep`.

    ``kind``: 'inprocess' (default, deterministic), 'threads' or 'processes' (``concurrent.futures`` pools
    with ``workers`` workers, default 2; each process runs ``threads`` torch threads, None: usable_cores()
    // workers, at least one), or 'dask' (a ``distributed.Client`` connected to ``address``, or a local
    cluster of ``workers`` single-threaded processes when ``address`` is None; needs
    ``pip install 'dask[distributed]'``). ``workers`` is refused for 'inprocess' and for 'dask' with an
    ``address`` (the cluster has its own workers); ``address`` is refused for every kind but 'dask',
    ``threads`` for every kind but 'processes'.
    """
    if kind not in EXECUTORS:
        raise ValueError(f"executor must be one of {EXECUTORS}, got {kind!r}")
    if threads is not None:
        from memcap._checks import positive_int
        positive_int("threads", threads)
        if kind != "processes":
            raise ValueError(f"threads is only used by the processes executor, not by executor {kind!r}")
    if workers is not None:
        from memcap._checks import positive_int
        positive_int("workers", workers)
        if kind == "inprocess" or (kind == "dask" and address is not None):
            raise ValueError(f"workers is only used by the threads, processes and local dask executors, "
                             f"not by executor {kind!r}{' with an address' if address is not None else ''}")
    if address is not None and kind != "dask":
        raise ValueError(f"address is only used by the dask executor, not by executor {kind!r}")
    if kind == "inprocess":
        return InProcessExecutor()
    if kind == "threads":
        return cf.ThreadPoolExecutor(max_workers=workers or 2)
    if kind == "processes":
        import multiprocessing
        workers = workers or 2
        return cf.ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                                      initializer=_start_worker,
                                      initargs=(threads or max(1, usable_cores() // workers), os.getpid()))
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise ImportError("the 'dask' executor needs Dask distributed: pip install 'dask[distributed]' "
                          "(or pip install 'memcap[distributed]')") from None
    if address is not None:
        return _DaskExecutor(Client(address))
    import logging

    # a random port for the scheduler's HTTP server (8787 may be taken), and the workers' logs only for errors
    cluster = LocalCluster(n_workers=workers or 2, threads_per_worker=1, processes=True, dashboard_address=":0",
                           silence_logs=logging.ERROR)
    return _DaskExecutor(Client(cluster), cluster)


def abandon(executor: Any) -> None:
    """Stop ``executor`` at once after an interruption, dropping its queued and running jobs.

    Process pools: queued jobs are cancelled and the workers terminated. Dask: every task is cancelled on
    the cluster, and a local cluster's worker processes (ours) are ended before it closes. Threads cannot
    be stopped from outside: their queue is cancelled, and the command line ends the process without
    waiting for the running ones.
    """
    if isinstance(executor, cf.ProcessPoolExecutor):
        processes = list((getattr(executor, "_processes", None) or {}).values())
        manager = getattr(executor, "_executor_manager_thread", None)
        executor.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.terminate()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not all(_ended(p) for p in processes):
            time.sleep(0.02)
        if manager is not None:
            # The pool's own thread closes its queues once it sees the workers gone. The command line
            # leaves with os._exit after an interruption; before that thread is done, the queues' five
            # semaphores would still be registered, and multiprocessing's resource tracker would print
            # "leaked semaphore objects" on the user's terminal.
            manager.join(timeout=max(0.0, deadline - time.monotonic()))
            del manager
            gc.collect()
    elif isinstance(executor, cf.ThreadPoolExecutor):
        executor.shutdown(wait=False, cancel_futures=True)
    elif callable(getattr(executor, "abandon", None)):
        executor.abandon()
    elif callable(getattr(executor, "shutdown", None)):
        executor.shutdown(wait=False)


def _ended(process: Any) -> bool:
    """Whether a pool's worker process has exited (the pool's own thread may have reaped it first)."""
    process.join(timeout=0)
    if process.exitcode is not None:
        return True
    if os.name != "posix":   # Windows: the handle's exit code is final; os.kill(pid, 0) would send Ctrl-C
        return False
    try:
        os.kill(process.pid, 0)
    except ProcessLookupError:
        return True
    return False


def _parallelism(executor: Any) -> int:
    value = getattr(executor, "parallelism", None) or getattr(executor, "_max_workers", None) or 4
    return max(1, int(value))


# ---------------------------------------------------------------------------------------------------
# jobs
# ---------------------------------------------------------------------------------------------------

def train_job(specs: Sequence[Any], config: Any, *, keep_params: bool = False, seed: int = 0) -> dict:
    """A job that trains ``specs`` (MHASpec/AoTSpec) with ``config`` (TrainConfig) as stacks. ``keep_params``
    must be a bool and ``seed`` an integer in [0, 2**63 - 1] (a truthy string or a float seed is refused, not
    converted)."""
    return {"kind": "train", "specs": [s.to_dict() for s in specs], "config": config.to_dict(),
            "keep_params": check_bool("keep_params", keep_params), "seed": seed_int("seed", seed)}


def capacity_job(specs: Sequence[Any], candidates: Sequence[int], config: Any, *, rounds: int = 2,
                 points: int = 3, seed: int = 0) -> dict:
    """A job that runs :func:`memcap.train.capacity_search` for ``specs`` over the ladder ``candidates``."""
    return {"kind": "capacity", "specs": [s.to_dict() for s in specs],
            "candidates": [positive_int(f"candidates[{i}]", T) for i, T in enumerate(candidates)],
            "config": config.to_dict(), "rounds": nonnegative_int("rounds", rounds),
            "points": positive_int("points", points), "seed": seed_int("seed", seed)}


def run_job(job: dict) -> dict:
    """Run one job (see :func:`train_job`, :func:`capacity_job`); returns a JSON-able dict.

    Train jobs give ``records`` (one dict per model: spec fields, accuracy, loss, memorized, steps,
    stop_step), ``history`` (periodic full-set accuracies), ``compiled`` (per model, whether its steps went
    through ``torch.compile``, ``memcap.train.compiled``) and, with ``keep_params``, ``arrays`` holding
    ``"<i>/<weight>"`` per model. Capacity jobs give ``capacities`` (one dict per spec). torch's global
    RNG is seeded with ``job['seed']`` first, so pooled and serial runs agree.
    """
    import torch

    from memcap.train import TrainConfig, capacity_search, spec_from_dict, train_models

    if not isinstance(job, dict) or job.get("kind") not in ("train", "capacity"):
        raise ValueError(f"job must be a dict with kind 'train' or 'capacity', got {job!r:.80}")
    from memcap.experiments._jobs import check_job

    check_job(job)
    torch.manual_seed(int(job.get("seed", 0)))
    specs = [spec_from_dict(s) for s in job["specs"]]
    config = TrainConfig.from_dict(job["config"])
    start = time.perf_counter()
    if job["kind"] == "capacity":
        found = capacity_search(specs, job["candidates"], config, rounds=job.get("rounds", 2),
                                points=job.get("points", 3))
        return {"capacities": [c.to_dict() for c in found], "seconds": time.perf_counter() - start}
    result = train_models(specs, config, keep_params=bool(job.get("keep_params")))
    out = {"records": result.records(), "seconds": result.seconds, "device": result.device,
           "compiled": [bool(c) for c in result.compiled],
           "history": {"steps": result.history_steps.tolist(), "accuracy": result.history_accuracy.tolist(),
                       "loss": result.history_loss.tolist()}}
    if result.params is not None:
        out["arrays"] = {f"{i}/{name}": w for i, p in enumerate(result.params) for name, w in p.items()}
    return out


# ---------------------------------------------------------------------------------------------------
# the sweep
# ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SweepReport:
    """What :func:`run_sweep_report` did: ``results[j]`` and ``manifests[j]`` belong to ``jobs[j]``.

    ``cached``: jobs read from the cache; ``computed``: jobs run now; ``refreshed``: of those, how many
    replaced a stale entry; ``corrupt``: how many replaced a corrupt one.
    """

    results: tuple[dict, ...]
    manifests: tuple[dict, ...]
    cached: int
    computed: int
    refreshed: int
    corrupt: int


def _caused_by_interrupt(err: BaseException) -> bool:
    """Whether a KeyboardInterrupt is in ``err``'s chain of causes: Ctrl-C during an import (torch.compile's
    first call imports torch._dynamo for seconds) can come back wrapped, e.g. as a RuntimeError from a
    dataclass's ``__set_name__``; it is still the user's Ctrl-C, not a failed job."""
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, KeyboardInterrupt):
            return True
        seen.add(id(err))
        err = err.__cause__ or err.__context__
    return False


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C (or another KeyboardInterrupt) stopped a sweep; every finished job is in the cache."""

    def __init__(self, experiment: str, total: int, cached: int, computed: int, dropped: int) -> None:
        super().__init__(experiment)
        self.experiment, self.total, self.cached, self.computed, self.dropped = (experiment, total, cached,
                                                                                   computed, dropped)

    def summary(self) -> str:
        """One line for the user: what is stored and how to go on."""
        stored = self.cached + self.computed
        from memcap.experiments.syn_prose import count_noun

        return (f"interrupted: {self.experiment}: {count_noun(stored, 'job')} of {self.total} in the cache "
                f"({self.computed} finished in this run), {count_noun(self.dropped, 'queued or running job')} "
                f"cancelled; run the same command again to continue (a job that was running goes on from its last "
                "checkpoint)")


def run_sweep_report(experiment: str, jobs: Sequence[dict], *, executor: Any = None,
                     cache: ResultCache | None = None, fn: Callable[[dict], dict] = run_job,
                     progress: Callable[[int, int, int], None] | None = None,
                     checkpoint_every: float | None = None, merge: int = 1) -> SweepReport:
    """Run every job that has no current result in ``cache`` on ``executor``; see :func:`run_sweep`.

    ``merge``: up to this many train jobs with the same config run as one (``memcap.experiments.merge``: on a
    GPU one step of several jobs' models costs about what one job's does); each job's result is split out
    and stored as it would be alone, its manifest saying ``merged`` (how many jobs and models ran together,
    and the run's seconds). 1 (the default): every job runs alone.

    With a ``cache``, each job's training keeps checkpoints (``memcap.train.checkpoint``) in
    :meth:`ResultCache.checkpoint_folder` every ``checkpoint_every`` seconds (None: the default, 60 s;
    ``float('inf')``: none), so a job that was stopped goes on where it was; the folder is removed once
    the job's result is stored.

    Stale and corrupt entries are recomputed (a corrupt one with a :class:`CacheWarning`). A
    KeyboardInterrupt cancels the jobs not yet started and raises :class:`SweepInterrupted` (finished jobs
    are stored as they finish, and one that finished as the interruption came is stored first).

    Before any job runs, the path of every entry to be written (and of its checkpoint folder) is checked: if
    something memcap did not write is in the way (a file where the job's folder belongs, a folder where its JSON
    belongs), :class:`CacheStoreError` names it and nothing runs (memcap deletes nothing it did not write). A
    finished result whose store fails all the same (a full disk, a folder made read-only) is kept in
    ``<cache>/unstored/`` (a cache of the same layout; else in the system's temporary folder) with a
    :class:`CacheWarning`, the jobs in flight finish and are stored, and then :class:`CacheStoreError` says
    where each such result is and where it belongs.
    """
    jobs = list(jobs)
    for i, job in enumerate(jobs):
        if not isinstance(job, dict):
            raise TypeError(f"jobs[{i}] must be a dict, got {type(job).__name__}")
    if cache is not None and not isinstance(cache, ResultCache):
        raise TypeError(f"cache must be a ResultCache or None, got {type(cache).__name__}")
    positive_int("merge", merge)
    if checkpoint_every is not None and (isinstance(checkpoint_every, bool) or
                                         not isinstance(checkpoint_every, (int, float)) or not checkpoint_every >= 0):
        raise ValueError(f"checkpoint_every must be a number of seconds >= 0 or None, got {checkpoint_every!r}")
    executor = InProcessExecutor() if executor is None else executor
    if not callable(getattr(executor, "submit", None)):
        raise TypeError(f"executor must have a submit(fn, job) method, got {type(executor).__name__}")
    results: list[dict | None] = [None] * len(jobs)
    manifests: list[dict] = [{} for _ in jobs]
    todo, stale, corrupt, unusable = [], 0, 0, []
    for i, job in enumerate(jobs):
        entry = cache.lookup(experiment, job) if cache is not None else Entry("missing")
        if entry.status == "current":
            results[i], manifests[i] = entry.result, entry.manifest
            continue
        todo.append(i)
        stale += entry.status == "stale"
        if entry.status == "corrupt":
            corrupt += 1
            unusable.append(entry)
    keep = cache is not None and checkpoint_every != float("inf")
    runs = [[todo[j] for j in run] for run in merge_groups([jobs[i] for i in todo], merge)]
    if cache is not None:
        _check_entry_paths(cache, experiment, jobs, runs, keep)
    for entry in unusable:
        warnings.warn(f"results cache: ignoring corrupt entry {entry.path}: {entry.reason}; recomputing it",
                      CacheWarning, stacklevel=2)
    cached = len(jobs) - len(todo)
    computed = 0
    if progress is not None:
        progress(cached, len(jobs), cached)
    window = _parallelism(executor)

    def task_for(job: dict) -> Callable[[dict], tuple[dict, dict]]:
        if not keep:
            return functools.partial(run_recorded, fn)
        return functools.partial(run_recorded, fn, checkpoint=str(cache.checkpoint_folder(experiment, job)),
                                 checkpoint_every=checkpoint_every)
    pending: dict[cf.Future, list[int]] = {}
    error: BaseException | None = None
    queue = iter(runs)
    try:
        while True:
            while error is None and len(pending) < window:
                run = next(queue, None)
                if run is None:
                    break
                job = merged_job([jobs[i] for i in run])
                if keep and len(run) > 1:
                    cache.note_merged_run(experiment, [jobs[i] for i in run])
                pending[executor.submit(task_for(job), job)] = run
            if not pending:
                break
            finished, _ = cf.wait(list(pending), return_when=cf.FIRST_COMPLETED)
            for future in finished:
                run = pending.pop(future)
                try:
                    result, manifest = future.result()
                except KeyboardInterrupt:
                    raise
                except BaseException as err:   # keep draining in-flight jobs, then re-raise
                    if _caused_by_interrupt(err):
                        raise KeyboardInterrupt from err
                    error = error or err
                    continue
                parts = [(result, manifest)]
                if len(run) > 1:
                    sizes = [len(jobs[i]["specs"]) for i in run]
                    together = {"jobs": len(run), "models": sum(sizes), "seconds": result.get("seconds")}
                    parts = [(part, {**manifest, "merged": together}) for part in split_result(result, sizes)]
                if cache is not None:
                    stored, failures = 0, []
                    try:
                        for i, (part, part_manifest) in zip(run, parts):
                            failures.append(_store(cache, experiment, jobs, i, part, part_manifest))
                            stored += 1
                    except KeyboardInterrupt:   # the jobs are finished: store them, then stop
                        for i, (part, part_manifest) in list(zip(run, parts))[stored:]:
                            _store(cache, experiment, jobs, i, part, part_manifest)
                        raise
                    failed = [failure for failure in failures if failure is not None]
                    if failed:   # the checkpoint stays: a rerun goes on from it
                        error = error or failed[0]
                    else:
                        shutil.rmtree(cache.checkpoint_folder(experiment, merged_job([jobs[i] for i in run])),
                                      ignore_errors=True)
                for i, (part, part_manifest) in zip(run, parts):
                    outcome = _stale_worker(i, part_manifest)
                    if isinstance(outcome, BaseException):
                        error = error or outcome
                        continue
                    results[i], manifests[i] = part, part_manifest
                    computed += 1
                if progress is not None:
                    progress(cached + computed, len(jobs), cached)
    except KeyboardInterrupt:
        for future in pending:
            future.cancel()
        raise SweepInterrupted(experiment, len(jobs), cached, computed, len(todo) - computed) from None
    if error is not None:
        raise error
    return SweepReport(tuple(results), tuple(manifests), cached, computed,  # type: ignore[arg-type]
                       refreshed=stale, corrupt=corrupt)


def _check_entry_paths(cache: ResultCache, experiment: str, jobs: list[dict], runs: list[list[int]],
                       checkpoints: bool) -> None:
    """Raise :class:`CacheStoreError` if something not memcap's is in the way of an entry the ``runs`` of ``jobs``
    will write (with ``checkpoints``, also of their checkpoint folders, a merged run's included): before any job
    runs, so that no training is spent on a result that cannot be stored."""
    blocked = []
    for run in runs:
        for i in run:
            why = cache._in_the_way(cache.path(experiment, jobs[i]), checkpoint=checkpoints)
            if why:
                blocked.append((i, why))
        if checkpoints and len(run) > 1:
            why = cache._in_the_way(cache.path(experiment, merged_job([jobs[i] for i in run])), result=False,
                                    checkpoint=True)
            if why:
                blocked.append((run[0], why))
    if blocked:
        from memcap.experiments.syn_prose import count_noun

        i, why = blocked[0]
        more = f" ({count_noun(len(blocked) - 1, 'other job')} blocked too)" if len(blocked) > 1 else ""
        raise CacheStoreError(f"results cache: the result of {experiment}'s jobs[{i}] cannot be stored: {why}; "
                              f"move it out of the way (memcap deletes nothing it did not write) and run again; no job "
                              f"was run{more}")


def _store(cache: ResultCache, experiment: str, jobs: list[dict], i: int, result: dict,
           manifest: dict) -> BaseException | None:
    """Store ``jobs[i]``'s finished ``result``; if that fails, the error to raise once the sweep's jobs in flight are
    done (None if stored). A result that cannot be written to its entry (an OSError) is kept in ``<cache>/unstored``
    (else in the system's temporary folder), said at once in a :class:`CacheWarning`, and the error names it."""
    try:
        cache.put(experiment, jobs[i], result, manifest)
        return None
    except Exception as err:   # noqa: BLE001 - handed back, raised once the jobs in flight are stored
        if not isinstance(err, OSError):
            return err
        target = cache.path(experiment, jobs[i]).with_name(f"engine-{manifest.get('engine_version')}.json")
        failed = [f"{target}: {err}"]
        for aside in (cache.root / UNSTORED, Path(tempfile.gettempdir()) / f"memcap-{UNSTORED}"):
            try:
                kept = ResultCache(aside).put(experiment, jobs[i], result, manifest)
            except OSError as again:
                failed.append(f"{aside}: {again}")
                continue
            files = f"{kept}{' and its .npz' if kept.with_suffix('.npz').exists() else ''}"
            message = (f"results cache: the result of {experiment}'s jobs[{i}] could not be stored at {target} "
                       f"({err}); it is kept in {files}: move it to {target.parent} once that is fixed (else a "
                       "sweep trains the job again)")
            break
        else:
            message = (f"results cache: the result of {experiment}'s jobs[{i}] could not be stored anywhere ("
                       + "; ".join(failed) + "): free some space or fix the folder, then run the sweep again")
        warnings.warn(message, CacheWarning, stacklevel=3)
        store_error = CacheStoreError(message)
        store_error.__cause__ = err
        return store_error


def _stale_worker(i: int, manifest: dict) -> BaseException | None:
    """The error for a result of ``jobs[i]`` that a worker computed with another engine version, else None."""
    if manifest.get("engine_version") != ENGINE_VERSION:
        return RuntimeError(f"a worker ran jobs[{i}] with engine version {manifest.get('engine_version')} (memcap at "
                            f"commit {manifest.get('git_commit')}), this process has engine version {ENGINE_VERSION}: "
                            "update memcap on every worker; the result is stored as stale")
    return None


def run_sweep(experiment: str, jobs: Sequence[dict], *, executor: Any = None, cache: ResultCache | None = None,
              fn: Callable[[dict], dict] = run_job,
              progress: Callable[[int, int, int], None] | None = None,
              checkpoint_every: float | None = None, merge: int = 1) -> list[dict]:
    """Run every job not yet in ``cache`` on ``executor``; return all results in the order of ``jobs``.

    ``executor``: anything with ``submit(fn, job) -> future`` (default :class:`InProcessExecutor`); at
    most its parallelism many jobs are in flight, and each finished job is written to ``cache`` at once,
    with its manifest. If a job fails, the jobs in flight still finish and are stored, then the first
    error is raised: a rerun continues where the sweep stopped. ``progress(done, total, cached)`` is
    called after each job. ``cache=None`` keeps results in memory only. ``checkpoint_every`` and ``merge``:
    see :func:`run_sweep_report`.
    """
    return list(run_sweep_report(experiment, jobs, executor=executor, cache=cache, fn=fn, progress=progress,
                                 checkpoint_every=checkpoint_every, merge=merge).results)
