"""Time the training engine of an earlier commit against this checkout's, in one process, interleaved.

    python -m tests.engine_ab BASE WORKLOAD [--steps 200] [--rounds 12] [--compile auto|always|never]

Separate runs on the shared reference machine differ by 20 to 40 % from one minute to the next, more than
the changes being judged. Here both engines train ``WORKLOAD`` (one of ``memcap.experiments.bench``'s
workloads, each side built by its own version) in one process, one thread, alternating base, head, head,
base, ... so that each pair sees the same machine; printed: the median seconds of each side and the
geometric mean of the pairs' speed ratios (head / base: above 1, this checkout is faster).

BASE (a commit) is exported with ``git archive`` into a temporary folder and imported as ``memcap_base``
(its own imports renamed), so nothing in this checkout changes.
"""
from __future__ import annotations

import argparse
import importlib
import io
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_NAME = re.compile(r"\bmemcap(?=[.\s'\"]|$)", re.M)


def export_base(commit: str, folder: Path) -> Path:
    """``commit``'s ``memcap/`` as the package ``folder/memcap_base`` (every ``memcap`` import renamed)."""
    blob = subprocess.run(["git", "archive", commit, "memcap"], cwd=ROOT, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        tar.extractall(folder, filter="data")
    package = folder / "memcap_base"
    (folder / "memcap").rename(package)
    for path in package.rglob("*.py"):
        path.write_text(_NAME.sub("memcap_base", path.read_text()))
    return package


def _side(package: str, name: str, steps: int, mode: str):
    bench = importlib.import_module(f"{package}.experiments.bench")
    train = importlib.import_module(f"{package}.train")
    specs, config = bench.workload(name)
    fields = {**config.to_dict(), "betas": config.betas, "device": "cpu", "eval_every": 10 * steps}
    train.train_models(specs, train.TrainConfig(**{**fields, "steps": 2}), compile=mode)   # compiles, warms up
    config = train.TrainConfig(**{**fields, "steps": steps})
    return lambda: train.train_models(specs, config, compile=mode)


def compare(name: str, steps: int, rounds: int, mode: str) -> dict:
    """Seconds of each side per round and the pairs' speed ratios (head / base)."""
    import torch

    torch.set_num_threads(1)
    sides = {"base": _side("memcap_base", name, steps, mode), "head": _side("memcap", name, steps, mode)}
    seconds: dict[str, list[float]] = {"base": [], "head": []}
    for r in range(rounds):
        for side in ("base", "head") if r % 2 == 0 else ("head", "base"):
            start = time.perf_counter()
            sides[side]()
            seconds[side].append(time.perf_counter() - start)
    ratios = [b / h for b, h in zip(seconds["base"], seconds["head"])]
    return {"seconds": seconds, "ratios": ratios, "speed": statistics.geometric_mean(ratios)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.engine_ab", description=__doc__.splitlines()[0])
    parser.add_argument("base", help="the earlier commit")
    parser.add_argument("workload", help="a workload of memcap.experiments.bench")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--compile", default="auto", choices=("auto", "always", "never"))
    args = parser.parse_args(argv)
    if args.steps < 1 or args.rounds < 2:
        parser.error("--steps must be at least 1 and --rounds at least 2")
    with tempfile.TemporaryDirectory() as folder:
        export_base(args.base, Path(folder))
        sys.path.insert(0, folder)
        out = compare(args.workload, args.steps, args.rounds, args.compile)
    s, r = out["seconds"], out["ratios"]
    print(f"{args.workload}, compile {args.compile}, {args.steps} steps x {args.rounds} rounds: "
          f"{args.base} median {statistics.median(s['base']):.3f} s, head {statistics.median(s['head']):.3f} s; "
          f"speed head/base {out['speed']:.3f} (geometric mean of the pairs; {min(r):.2f} to {max(r):.2f}, "
          f"{sum(x < 1 for x in r)} of {len(r)} below 1)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
