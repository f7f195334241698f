"""The Python steps of ``tests/gpu_scale.sh`` (issue 31), each one runnable, and tested, on a CPU:

    python -m tests.gpu_scale modes OUT      # the stacked step per mode (eager, CUDA graphs, compiled)
                                             #   -> OUT/stacked_modes.json
    python -m tests.gpu_scale pick OUT       # the sweeps' step from OUT/stacked_modes.json and the GPU tests'
                                             #   report OUT/gpu_scale_tests.log: prints "GRAPHS COMPILE"
    python -m tests.gpu_scale bench OUT/bench.json     # one line per workload of a bench's JSON
    python -m tests.gpu_scale records OUT    # a record of every experiment whose paper jobs are all finished in
                                             #   OUT/results -> OUT/recorded/<experiment>_paper.json

``modes`` times each mode as (long run - short run) / (long - short) steps, so that set-up, the first
evaluation, recording a graph and compiling cancel out (the first run of each mode, which pays them, is
reported as ``first_run_seconds``). On CUDA it also profiles the eager step: how many kernels one step
launches and how long the GPU is busy with them. That busy time is the floor a CUDA graph can reach, since a
replay runs the same kernels without the launches in between. ``pick`` takes the fastest mode that its GPU
test passed. It takes 'compiled' only when it at least halves the step, because a paper sweep compiles every
stack shape it meets anew, and the timings do not count that.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

import torch

MODES = {"eager": ("never", "never"), "graphs": ("never", "always"), "compiled": ("always", "never")}
"""Mode name -> (compile, cuda_graphs) of :func:`memcap.train.train_models`."""

WORKLOADS = ("dana_fig1a", "mahdavi_fig2c")
"""The two workloads the issue's bar names (fraction of peak >= 0.05 and >= 0.3)."""

TESTS = {"graphs": ("test_steps_recorded_as_cuda_graphs_give_the_eager_numbers",
                    "test_cuda_graphs_a_capture_out_of_memory_leaves_the_eager_step_and_a_working_gpu",
                    "test_cuda_graphs_a_warm_up_out_of_memory_splits_the_stack"),
         "compiled": ("test_the_compiled_step_on_cuda_computes_what_the_eager_step_computes",)}
"""The GPU tests (``tests/test_gpu.py``) a mode must have passed, in pytest's ``-rA`` report, to be picked: the
graphs' numbers, and what a paper-scale stack that runs out of memory while being recorded does."""

COMPILED_MARGIN = 0.5
"""'compiled' is picked only if its step takes at most this fraction of the best other mode's."""


def _time(specs, config, compile: str, graphs: str, steps: int, sync) -> float:
    from memcap.train import TrainConfig, train_models

    cfg = TrainConfig(**{**config.to_dict(), "steps": steps, "betas": config.betas, "eval_every": 10 ** 6})
    sync()
    start = time.perf_counter()
    train_models(specs, cfg, compile=compile, cuda_graphs=graphs)
    sync()
    return time.perf_counter() - start


def _busy(specs, config, steps: tuple[int, int], sync, device_type: str = "cuda") -> dict:
    """Kernels per eager step and the GPU's busy time per step (profiled, long run minus short run). On a
    CPU (``device_type`` 'cpu', for the tests) the operators and their CPU time stand for them."""
    from torch.profiler import ProfilerActivity, profile

    cuda = device_type == "cuda"
    counted = []
    for n in steps:
        with profile(activities=[ProfilerActivity.CUDA if cuda else ProfilerActivity.CPU]) as prof:
            _time(specs, config, "never", "never", n, sync)
        kernels, busy_us = 0, 0.0
        for event in prof.key_averages():
            if cuda:   # torch >= 2.4 names it self_device_time_total
                us = getattr(event, "self_device_time_total", None)
                us = getattr(event, "self_cuda_time_total", 0.0) if us is None else us
            else:
                us = event.self_cpu_time_total
            if us > 0:
                kernels += event.count
                busy_us += us
        counted.append((kernels, busy_us))
    (k0, b0), (k1, b1) = counted
    return {"kernels_per_step": (k1 - k0) / (steps[1] - steps[0]),
            "busy_seconds_per_step": (b1 - b0) / 1e6 / (steps[1] - steps[0])}


def measure_modes(device: str = "cuda", workloads: tuple[str, ...] = WORKLOADS,
                  modes: tuple[str, ...] = tuple(MODES), steps: tuple[int, int] = (100, 400),
                  save: Path | None = None) -> dict:
    """The stacked step of each workload in each mode on ``device``: seconds per step, model-steps per second
    and fraction of the float32 matrix-product peak; on CUDA first the eager step's kernels and busy time.
    Mode by mode, each on every workload (the slow compiled mode last, by default). A mode that fails gets its
    error instead of timings, and the others still run. ``save``: a JSON file rewritten after every row, so a
    run stopped by its time limit keeps what it measured."""
    from memcap.experiments import bench
    from memcap.train import TrainConfig

    dev = torch.device(device)
    sync = (lambda: torch.cuda.synchronize(dev)) if dev.type == "cuda" else (lambda: None)
    short, long = steps
    if not 0 < short < long:
        raise ValueError(f"steps must be (short, long) with 0 < short < long, got {steps!r}")
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise ValueError(f"modes must be names in {tuple(MODES)}, got {unknown}")
    result = {"command": f"python -m tests.gpu_scale modes (device {dev}, {long} minus {short} steps)",
              "device": str(dev), "device_name": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
              "peak_gflops": bench.peak_gflops(dev), "rows": []}

    def add(row: dict) -> None:
        result["rows"].append(row)
        if save is not None:
            Path(save).write_text(json.dumps(result, indent=1))
    jobs = {}
    for name in workloads:
        specs, config = bench.workload(name)
        config = TrainConfig(**{**config.to_dict(), "betas": config.betas, "device": str(dev)})
        jobs[name] = specs, config, sum(bench.flops_per_model_step(s, config.batch_size) for s in specs)
    for name, (specs, config, flops) in jobs.items():
        if dev.type == "cuda":
            try:
                row = {"workload": name, "mode": "eager profile", **_busy(specs, config, steps, sync)}
                row["busy_fraction_of_peak"] = flops / row["busy_seconds_per_step"] / 1e9 / result["peak_gflops"]
            except Exception as err:   # noqa: BLE001 - the timings below count without it
                row = {"workload": name, "mode": "eager profile", "error": f"{type(err).__name__}: {err}"[:500]}
            add(row)
    for mode in modes:
        compile, graphs = MODES[mode]
        for name, (specs, config, flops) in jobs.items():
            try:
                first = _time(specs, config, compile, graphs, 20, sync)
                per_step = (_time(specs, config, compile, graphs, long, sync)
                            - _time(specs, config, compile, graphs, short, sync)) / (long - short)
            except Exception as err:   # noqa: BLE001 - a mode that fails here is not picked
                add({"workload": name, "mode": mode, "error": f"{type(err).__name__}: {err}"[:500]})
                continue
            add({"workload": name, "mode": mode, "models": len(specs), "seconds_per_step": per_step,
                 "model_steps_per_s": len(specs) / per_step,
                 "fraction_of_peak": flops / per_step / 1e9 / result["peak_gflops"], "first_run_seconds": first})
    return result


def format_modes(result: dict) -> str:
    lines = [f"stacked step per mode on {result['device_name']} ({result['command']}; float32 matrix product "
             f"{result['peak_gflops']:.0f} GFLOP/s)"]
    for r in result["rows"]:
        head = f"  {r['workload']:14s} {r['mode']:14s}"
        if "error" in r:
            lines.append(f"{head} failed: {r['error'].splitlines()[0] if r['error'] else ''}")
        elif "kernels_per_step" in r:
            lines.append(f"{head} {r['kernels_per_step']:6.0f} kernels/step, GPU busy "
                         f"{r['busy_seconds_per_step'] * 1e3:7.3f} ms/step (a replay's floor: fraction_of_peak "
                         f"{r['busy_fraction_of_peak']:.3f})")
        else:
            lines.append(f"{head} {r['seconds_per_step'] * 1e3:8.3f} ms/step {r['model_steps_per_s']:9.0f} "
                         f"model-steps/s  fraction_of_peak {r['fraction_of_peak']:.3f}  (first run "
                         f"{r['first_run_seconds']:.1f} s)")
    return "\n".join(lines)


def passed_tests(report: str) -> set[str]:
    """Names of the tests a pytest ``-rA`` report lists as PASSED."""
    return set(re.findall(r"^PASSED \S*::(\w+)", report, re.M))


def pick(result: dict, report: str) -> tuple[str, str, str]:
    """``(cuda_graphs, compile, why)`` for the sweeps: the fastest mode (summed seconds per step over the
    workloads, each measured on every workload) whose GPU test passed; 'compiled' only if it at least halves
    the step (see :data:`COMPILED_MARGIN`); eager when nothing else qualifies."""
    passed = passed_tests(report)
    per_mode: dict[str, dict[str, float]] = {}
    for r in result.get("rows", []):
        if r.get("mode") in MODES and "seconds_per_step" in r:
            per_mode.setdefault(r["mode"], {})[r["workload"]] = r["seconds_per_step"]
    workloads = {r["workload"] for r in result.get("rows", [])}
    total = {m: sum(t.values()) for m, t in per_mode.items() if set(t) == workloads}
    ok = {m: s for m, s in total.items() if m == "eager" or set(TESTS[m]) <= passed}
    skipped = sorted(set(MODES) - set(ok))
    if not ok:
        return "never", "never", "eager: no mode was measured on every workload"
    best_other = min((s for m, s in ok.items() if m != "compiled"), default=None)
    if "compiled" in ok and best_other is not None and ok["compiled"] > COMPILED_MARGIN * best_other:
        del ok["compiled"]
    mode = min(ok, key=ok.get)
    compile, graphs = MODES[mode]
    times = ", ".join(f"{m} {s * 1e3:.2f} ms" for m, s in sorted(total.items()))
    why = f"{mode}: the fastest qualifying step (summed over {sorted(workloads)}: {times})"
    if skipped:
        why += f"; not qualified: {', '.join(skipped)} (not measured on every workload or its GPU test not passed)"
    return graphs, compile, why


def format_bench(path: Path) -> str:
    """One line per workload of a ``python -m memcap bench --json`` result (or why there is none)."""
    try:
        result = json.loads(Path(path).read_text())
    except (OSError, ValueError) as err:
        return f"  bench: no result ({err})"
    lines = [f"  bench: {result.get('command')} (CUDA graphs: {result.get('cuda_graphs', 'never')})"]
    for name, w in result["workloads"].items():
        lines.append(f"  {name:14s} stacked {w['stacked_model_steps_per_s']:9.0f} model-steps/s  speedup "
                     f"{w['speedup']:5.1f}  vs authors {w['speedup_vs_authors']:5.0f}  fraction_of_peak "
                     f"{w['fraction_of_peak']:.3f}")
    return "\n".join(lines)


def write_records(out: Path, machine: str) -> list[Path]:
    """A record (``memcap.experiments.recorded``) of every experiment with ``finding`` whose paper jobs are all
    finished in ``out/results`` at one commit, in ``out/recorded``; the others are named with the reason."""
    from memcap import experiments
    from memcap.experiments import recorded

    folder = out / "recorded"
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name in experiments.EXPERIMENTS:
        module = experiments.get(name)
        if not hasattr(module, "finding") or hasattr(module, "recorded_finding"):
            continue            # Part III's experiments, and mahdavi_fig3's record of its own kind
        try:
            data = recorded.from_cache(name, out / "results", machine=machine)
        except ValueError as err:
            print(f"{name}: no record yet ({err})")
            continue
        written.append(recorded.save(data, folder))
        print(f"{name}: recorded {len(data['records'])} models in {written[-1]} ({data['command']})")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.gpu_scale", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="step", required=True)
    modes = sub.add_parser("modes")
    modes.add_argument("out", type=Path)
    modes.add_argument("--device", default="cuda")
    modes.add_argument("--workloads", default=",".join(WORKLOADS))
    modes.add_argument("--modes", default=",".join(MODES))
    modes.add_argument("--steps", default="100,400", help="SHORT,LONG")
    chosen = sub.add_parser("pick")
    chosen.add_argument("out", type=Path)
    summary = sub.add_parser("bench")
    summary.add_argument("path", type=Path)
    records = sub.add_parser("records")
    records.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    if args.step == "modes":
        steps = tuple(int(s) for s in args.steps.split(","))
        args.out.mkdir(parents=True, exist_ok=True)
        result = measure_modes(args.device, tuple(args.workloads.split(",")), tuple(args.modes.split(",")), steps,
                               save=args.out / "stacked_modes.json")
        print(format_modes(result))
    elif args.step == "pick":
        try:
            result = json.loads((args.out / "stacked_modes.json").read_text())
        except (OSError, ValueError) as err:
            result = {"rows": []}
            print(f"no stacked_modes.json ({err})", file=sys.stderr)
        log = args.out / "gpu_scale_tests.log"
        graphs, compile, why = pick(result, log.read_text() if log.is_file() else "")
        if result["rows"]:
            print(format_modes(result), file=sys.stderr)
        print(why, file=sys.stderr)
        print(graphs, compile)
    elif args.step == "bench":
        print(format_bench(args.path))
    else:
        gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
        write_records(args.out, f"one {gpu} (a lent device machine, tests/gpu_scale.sh)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
