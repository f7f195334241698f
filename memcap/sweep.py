"""Sweeps: profiles, the executor seam, the results cache, and the job runner.

A sweep is a list of *jobs*, each a JSON-able dict (``{"kind": "train", "specs": [...], "config": {...}}``
or ``{"kind": "capacity", ...}``) run by :func:`run_job`. Where jobs run is decided by an *executor*:
anything with ``submit(fn, job) -> future`` (a ``concurrent.futures.Future`` or a look-alike). The
default runs them in this process, one after the other (deterministic); :func:`make_executor` also
gives a thread pool, a process pool and a Dask distributed client (optional dependency
``dask[distributed]``), so a paper-scale sweep can spread over several GPUs or machines without any
change to the experiments.

Results go to a :class:`ResultCache`: one JSON file per job (NumPy arrays, if any, in an NPZ next to
it), never pickle, written atomically (temporary file + ``os.replace``), keyed by a hash of the job and
the memcap version. A sweep that is interrupted keeps every finished job; run it again and only the
missing jobs run.
"""
from __future__ import annotations

import concurrent.futures as cf
import hashlib
import importlib.metadata
import io
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

PROFILES = ("quick", "paper")
"""``quick``: small grids that run in minutes on a laptop CPU (the default for every build);
``paper``: the papers' grids."""

EXECUTORS = ("inprocess", "threads", "processes", "dask")
"""Names accepted by :func:`make_executor`."""


def current_profile() -> str:
    """The profile selected by the environment variable ``MEMCAP_PROFILE`` ('quick' when unset)."""
    value = os.environ.get("MEMCAP_PROFILE", "").strip() or "quick"
    if value not in PROFILES:
        raise ValueError(f"MEMCAP_PROFILE must be one of {PROFILES}, got {value!r}")
    return value


def check_profile(profile: str | None) -> str:
    """``profile`` if it is one of :data:`PROFILES`; None means :func:`current_profile`."""
    if profile is None:
        return current_profile()
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}, got {profile!r}")
    return profile


def memcap_version() -> str:
    """The installed memcap version; part of every cache key, so a new release never reads stale results."""
    try:
        return importlib.metadata.version("memcap")
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"


def default_cache_dir() -> Path:
    """``MEMCAP_CACHE`` if set, else ``results/`` at the root of the source checkout."""
    env = os.environ.get("MEMCAP_CACHE", "").strip()
    return Path(env) if env else Path(__file__).resolve().parents[1] / "results"


def _canonical(job: dict) -> str:
    return json.dumps(job, sort_keys=True, separators=(",", ":"))


def job_key(job: dict) -> str:
    """Cache key of a job: SHA-256 (first 20 hex digits) of its canonical JSON and the memcap version."""
    if not isinstance(job, dict):
        raise TypeError(f"job must be a dict, got {type(job).__name__}")
    try:
        text = _canonical(job)
    except TypeError as err:
        raise TypeError(f"job must be JSON-serializable (dicts, lists, numbers, strings): {err}") from None
    return hashlib.sha256(f"{memcap_version()}|{text}".encode()).hexdigest()[:20]


def _atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the whole new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class ResultCache:
    """Job results on disk under ``root/<experiment>/<key>.json`` (+ ``<key>.npz`` for arrays).

    A result is a JSON-able dict; its optional entry ``"arrays"`` maps names to NumPy arrays, which are
    stored in the NPZ (loaded with ``allow_pickle=False``). The JSON file is written last, so its presence
    means the job finished.
    """

    def __init__(self, root: str | os.PathLike | None = None) -> None:
        self.root = Path(root) if root is not None else default_cache_dir()

    def _paths(self, experiment: str, job: dict) -> tuple[Path, Path]:
        if not isinstance(experiment, str) or not experiment or "/" in experiment or experiment.startswith("."):
            raise ValueError(f"experiment must be a plain name (no '/', not hidden), got {experiment!r}")
        key = job_key(job)
        folder = self.root / experiment
        return folder / f"{key}.json", folder / f"{key}.npz"

    def get(self, experiment: str, job: dict) -> dict | None:
        """The stored result of ``job``, or None when it has not finished yet."""
        meta_path, npz_path = self._paths(experiment, job)
        if not meta_path.exists():
            return None
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if meta.get("memcap_version") != memcap_version() or meta.get("job") != json.loads(_canonical(job)):
            return None
        result = meta["result"]
        if meta.get("has_arrays"):
            with np.load(npz_path, allow_pickle=False) as npz:
                result["arrays"] = {name: npz[name] for name in npz.files}
        return result

    def put(self, experiment: str, job: dict, result: dict) -> Path:
        """Store ``result`` of ``job`` atomically; returns the JSON path."""
        if not isinstance(result, dict):
            raise TypeError(f"result must be a dict, got {type(result).__name__}")
        meta_path, npz_path = self._paths(experiment, job)
        arrays = result.get("arrays")
        body = {k: v for k, v in result.items() if k != "arrays"}
        if arrays:
            buffer = io.BytesIO()
            np.savez(buffer, **{name: np.asarray(a) for name, a in arrays.items()})
            _atomic_write(npz_path, buffer.getvalue())
        meta = {"memcap_version": memcap_version(), "key": job_key(job), "job": json.loads(_canonical(job)),
                "has_arrays": bool(arrays), "result": body}
        try:
            text = json.dumps(meta, indent=1, allow_nan=True)
        except TypeError as err:
            raise TypeError(f"result must be JSON-serializable apart from 'arrays': {err}") from None
        _atomic_write(meta_path, text.encode("utf-8"))
        return meta_path

    def __repr__(self) -> str:
        return f"ResultCache({str(self.root)!r})"


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

    def __init__(self, client: Any) -> None:
        self.client = client
        self._executor = client.get_executor(pure=False)
        self.parallelism = max(1, sum(client.nthreads().values()))

    def submit(self, fn: Callable[[dict], Any], job: dict) -> cf.Future:
        return self._executor.submit(fn, job)

    def shutdown(self, wait: bool = True) -> None:
        self._executor.shutdown(wait=wait)
        self.client.close()


def make_executor(kind: str = "inprocess", *, workers: int | None = None, address: str | None = None) -> Any:
    """An executor for :func:`run_sweep`.

    ``kind``: 'inprocess' (default, deterministic), 'threads' or 'processes' (``concurrent.futures`` pools
    with ``workers`` workers), or 'dask' (a ``distributed.Client`` connected to ``address``, or a local
    cluster of ``workers`` single-threaded processes when ``address`` is None; needs
    ``pip install 'dask[distributed]'``).
    """
    if kind not in EXECUTORS:
        raise ValueError(f"executor must be one of {EXECUTORS}, got {kind!r}")
    if workers is not None:
        from memcap._checks import positive_int
        positive_int("workers", workers)
    if kind == "inprocess":
        return InProcessExecutor()
    if kind == "threads":
        return cf.ThreadPoolExecutor(max_workers=workers or 2)
    if kind == "processes":
        import multiprocessing
        return cf.ProcessPoolExecutor(max_workers=workers or 2, mp_context=multiprocessing.get_context("spawn"))
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise ImportError("the 'dask' executor needs Dask distributed: pip install 'dask[distributed]' "
                          "(or pip install 'memcap[distributed]')") from None
    if address is not None:
        return _DaskExecutor(Client(address))
    cluster = LocalCluster(n_workers=workers or 2, threads_per_worker=1, processes=True, dashboard_address=None)
    return _DaskExecutor(Client(cluster))


def _parallelism(executor: Any) -> int:
    value = getattr(executor, "parallelism", None) or getattr(executor, "_max_workers", None) or 4
    return max(1, int(value))


# ---------------------------------------------------------------------------------------------------
# jobs
# ---------------------------------------------------------------------------------------------------

def train_job(specs: Sequence[Any], config: Any, *, keep_params: bool = False, seed: int = 0) -> dict:
    """A job that trains ``specs`` (MHASpec/AoTSpec) with ``config`` (TrainConfig) as stacks."""
    return {"kind": "train", "specs": [s.to_dict() for s in specs], "config": config.to_dict(),
            "keep_params": bool(keep_params), "seed": int(seed)}


def capacity_job(specs: Sequence[Any], candidates: Sequence[int], config: Any, *, rounds: int = 2,
                 points: int = 3, seed: int = 0) -> dict:
    """A job that runs :func:`memcap.train.capacity_search` for ``specs`` over the ladder ``candidates``."""
    return {"kind": "capacity", "specs": [s.to_dict() for s in specs], "candidates": [int(T) for T in candidates],
            "config": config.to_dict(), "rounds": int(rounds), "points": int(points), "seed": int(seed)}


def run_job(job: dict) -> dict:
    """Run one job (see :func:`train_job`, :func:`capacity_job`); returns a JSON-able dict.

    Train jobs give ``records`` (one dict per model: spec fields, accuracy, loss, memorized, steps,
    stop_step), ``history`` (periodic full-set accuracies) and, with ``keep_params``, ``arrays`` holding
    ``"<i>/<weight>"`` per model. Capacity jobs give ``capacities`` (one dict per spec). torch's global
    RNG is seeded with ``job['seed']`` first, so pooled and serial runs agree.
    """
    import torch

    from memcap.train import TrainConfig, capacity_search, spec_from_dict, train_models

    if not isinstance(job, dict) or job.get("kind") not in ("train", "capacity"):
        raise ValueError(f"job must be a dict with kind 'train' or 'capacity', got {job!r:.80}")
    torch.manual_seed(int(job.get("seed", 0)))
    specs = [spec_from_dict(s) for s in job["specs"]]
    config = TrainConfig.from_dict(job["config"])
    start = time.perf_counter()
    if job["kind"] == "capacity":
        found = capacity_search(specs, job["candidates"], config, rounds=job["rounds"], points=job["points"])
        return {"capacities": [c.to_dict() for c in found], "seconds": time.perf_counter() - start}
    result = train_models(specs, config, keep_params=bool(job.get("keep_params")))
    out = {"records": result.records(), "seconds": result.seconds, "device": result.device,
           "history": {"steps": result.history_steps.tolist(), "accuracy": result.history_accuracy.tolist(),
                       "loss": result.history_loss.tolist()}}
    if result.params is not None:
        out["arrays"] = {f"{i}/{name}": w for i, p in enumerate(result.params) for name, w in p.items()}
    return out


def run_sweep(experiment: str, jobs: Sequence[dict], *, executor: Any = None, cache: ResultCache | None = None,
              fn: Callable[[dict], dict] = run_job,
              progress: Callable[[int, int, int], None] | None = None) -> list[dict]:
    """Run every job not yet in ``cache`` on ``executor``; return all results in the order of ``jobs``.

    ``executor``: anything with ``submit(fn, job) -> future`` (default :class:`InProcessExecutor`); at
    most its parallelism many jobs are in flight, and each finished job is written to ``cache`` at once.
    If a job fails, the jobs in flight still finish and are stored, then the first error is raised: a
    rerun continues where the sweep stopped. ``progress(done, total, cached)`` is called after each job.
    ``cache=None`` keeps results in memory only.
    """
    jobs = list(jobs)
    for i, job in enumerate(jobs):
        if not isinstance(job, dict):
            raise TypeError(f"jobs[{i}] must be a dict, got {type(job).__name__}")
    if cache is not None and not isinstance(cache, ResultCache):
        raise TypeError(f"cache must be a ResultCache or None, got {type(cache).__name__}")
    executor = InProcessExecutor() if executor is None else executor
    if not callable(getattr(executor, "submit", None)):
        raise TypeError(f"executor must have a submit(fn, job) method, got {type(executor).__name__}")
    results: list[dict | None] = [None] * len(jobs)
    todo = []
    for i, job in enumerate(jobs):
        hit = cache.get(experiment, job) if cache is not None else None
        if hit is None:
            todo.append(i)
        else:
            results[i] = hit
    cached = len(jobs) - len(todo)
    done = cached
    if progress is not None:
        progress(done, len(jobs), cached)
    window = _parallelism(executor)
    pending: dict[cf.Future, int] = {}
    error: BaseException | None = None
    queue = iter(todo)
    while True:
        while error is None and len(pending) < window:
            i = next(queue, None)
            if i is None:
                break
            pending[executor.submit(fn, jobs[i])] = i
        if not pending:
            break
        finished, _ = cf.wait(list(pending), return_when=cf.FIRST_COMPLETED)
        for future in finished:
            i = pending.pop(future)
            try:
                result = future.result()
            except BaseException as err:   # keep draining in-flight jobs, then re-raise
                error = error or err
                continue
            if cache is not None:
                cache.put(experiment, jobs[i], result)
            results[i] = result
            done += 1
            if progress is not None:
                progress(done, len(jobs), cached)
    if error is not None:
        raise error
    return results  # type: ignore[return-value]
