"""Command line: ``python -m memcap sweep|list|bench``.

* ``sweep <experiment> [--profile quick|paper] [--executor inprocess|threads|processes|dask] [--workers N]
  [--address HOST:PORT] [--cache DIR]``: run (or resume) an experiment's jobs into the results cache,
  with a progress bar and ETA on stderr.
* ``list``: the experiments and their job counts per profile.
* ``bench [--models K] [--steps S] [--workload mha|aot|both] [--device DEV] [--json]``: stacked engine
  vs one-model-at-a-time loop.
* ``student-edition [--output DIR]``: build the book without solutions (strict, like the full build).
* ``doctor [--device DEV] [--no-bench]``: check the book's code path on this machine's device (exit 1 on failure).

``--threads N`` sets torch's intra-op threads (tiny models often run fastest on 1).
"""
from __future__ import annotations

import argparse
import json
import sys
import time


class ProgressBar:
    """A one-line progress bar with elapsed time and ETA, written to stderr (no dependency)."""

    def __init__(self, label: str, width: int = 30, stream=None) -> None:
        self.label, self.width = label, width
        self.stream = stream if stream is not None else sys.stderr
        self.start = time.perf_counter()

    def __call__(self, done: int, total: int, cached: int) -> None:
        elapsed = time.perf_counter() - self.start
        ran = done - cached
        left = total - done
        eta = f"{elapsed / ran * left:.0f}s" if ran > 0 and left > 0 else ("0s" if left == 0 else "?")
        filled = self.width * done // max(total, 1)
        bar = "#" * filled + "." * (self.width - filled)
        self.stream.write(f"\r{self.label} [{bar}] {done}/{total} jobs ({cached} cached) "
                          f"elapsed {elapsed:.0f}s ETA {eta}")
        if done == total:
            self.stream.write("\n")
        self.stream.flush()


def _sweep(args: argparse.Namespace) -> int:
    from memcap import experiments
    from memcap.sweep import check_profile, make_executor

    args.profile = check_profile(args.profile)
    executor = make_executor(args.executor, workers=args.workers, address=args.address)
    try:
        res = experiments.run(args.experiment, args.profile, args.cache, executor=executor,
                              progress=ProgressBar(f"{args.experiment} ({args.profile})"))
    finally:
        executor.shutdown(wait=True)
    where = "all from cache" if res.source == "cache" else "computed"
    models = len(res.records) + len(res.capacities)
    print(f"{args.experiment}: {len(res.jobs)} jobs, {models} models/searches, {where}; "
          f"cache: {args.cache or 'default'}")
    return 0


def _list(args: argparse.Namespace) -> int:
    from memcap import experiments

    for name in experiments.EXPERIMENTS:
        module = experiments.get(name)
        counts = ", ".join(f"{p}: {len(module.jobs(p))} jobs" for p in experiments.PROFILES)
        print(f"{name:15s} {module.LABEL:11s} {counts}  {module.TITLE}")
    return 0


def _bench(args: argparse.Namespace) -> int:
    from memcap.bench import WORKLOADS, format_bench, run_bench

    workloads = WORKLOADS if args.workload == "both" else (args.workload,)
    result = run_bench(workloads, models=args.models, steps=args.steps, device=args.device)
    print(json.dumps(result, indent=1) if args.json else format_bench(result))
    return 0


def _student_edition(args: argparse.Namespace) -> int:
    from pathlib import Path

    from memcap.edition import build_student_edition

    html = build_student_edition(Path.cwd(), args.output)
    print(f"student edition: {html / 'index.html'}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m memcap``."""
    from memcap.experiments import EXPERIMENTS
    from memcap.sweep import EXECUTORS, PROFILES, current_profile

    parser = argparse.ArgumentParser(prog="python -m memcap", description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads")
    sub = parser.add_subparsers(dest="command", required=True)
    sweep = sub.add_parser("sweep", help="run or resume an experiment's sweep into the results cache")
    sweep.add_argument("experiment", choices=EXPERIMENTS)
    sweep.add_argument("--profile", choices=PROFILES, default=None,
                       help=f"grid to run (default: MEMCAP_PROFILE, now {current_profile()!r})")
    sweep.add_argument("--executor", choices=EXECUTORS, default="inprocess")
    sweep.add_argument("--workers", type=int, default=None, help="pool size for threads/processes/dask")
    sweep.add_argument("--address", default=None, help="Dask scheduler address (default: a local cluster)")
    sweep.add_argument("--cache", default=None, help="results cache folder (default: MEMCAP_CACHE or ./results)")
    sweep.set_defaults(run=_sweep)
    lister = sub.add_parser("list", help="list the experiments")
    lister.set_defaults(run=_list)
    bench = sub.add_parser("bench", help="time the stacked engine against a one-model-at-a-time loop")
    bench.add_argument("--models", type=int, default=16)
    bench.add_argument("--steps", type=int, default=200)
    bench.add_argument("--workload", choices=("mha", "aot", "both"), default="both")
    bench.add_argument("--device", default=None)
    bench.add_argument("--json", action="store_true", help="print the result as JSON")
    bench.set_defaults(run=_bench)
    student = sub.add_parser("student-edition", help="build the book without solutions (run from the book's root)")
    student.add_argument("--output", default="_build/student", help="output folder (default: _build/student)")
    student.set_defaults(run=_student_edition)
    from memcap.doctor import add_subcommand as add_doctor   # ``doctor``: see memcap/doctor.py
    add_doctor(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status. Invalid arguments print a message naming them and exit 2."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.threads is not None:
        if args.threads < 1:
            parser.error(f"--threads must be a positive integer, got {args.threads}")
        import torch
        torch.set_num_threads(args.threads)
    try:
        return args.run(args)
    except (ValueError, TypeError, ImportError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
