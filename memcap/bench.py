"""Benchmark: the stacked engine against a one-model-at-a-time loop on the same models.

Both sides run the same code (:func:`memcap.train.train_models`), the loop with one model per call, so
the ratio measures what stacking buys: one forward, backward and Adam step for k models instead of k.
Early stop is off so both sides do exactly ``steps`` updates per model. ``python -m memcap bench``.
"""
from __future__ import annotations

import resource
import sys
import time

import torch

from memcap._checks import listed, positive_int
from memcap.device import describe, pick_device
from memcap.train import AoTSpec, MHASpec, TrainConfig, train_models

__all__ = ["WORKLOADS", "workload", "run_bench", "format_bench"]

WORKLOADS = ("mha", "aot")
"""'mha': Mahdavi-style models (d = 16, n = 8, H = 1..8, T = 400, 100 classes, batch 128);
'aot': Dana-style AoTs (N = 20, S = 2, d = d_h = 5, H = 1..8, batch 256)."""


def workload(name: str, models: int) -> tuple[list, TrainConfig]:
    """The ``models`` specs and the config of workload ``name`` (one of :data:`WORKLOADS`)."""
    k = positive_int("models", models)
    if name == "mha":
        specs = [MHASpec(heads=1 + i % 8, context_size=8, examples=400, dim=16, classes=100, seed=i, data_seed=i % 2)
                 for i in range(k)]
        return specs, TrainConfig(batch_size=128, lr=1e-2, early_stop=False)
    if name == "aot":
        specs = [AoTSpec(heads=1 + i % 8, head_dim=5, dim=5, vocab=20, seed=i, data_seed=i % 2) for i in range(k)]
        return specs, TrainConfig(batch_size=256, lr=1e-2, schedule="constant", early_stop=False)
    raise ValueError(f"workload must be one of {WORKLOADS}, got {name!r}")


def _peak_memory_mb(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2 ** 20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024   # Linux: KiB; peak of the process


def _timed(fn, device: torch.device) -> tuple[float, float]:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
    start = time.perf_counter()
    fn()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - start, _peak_memory_mb(device)


def run_bench(workloads: tuple[str, ...] = WORKLOADS, *, models: int = 16, steps: int = 200,
              device: str | None = None, command: str | None = None) -> dict:
    """Time stacked vs looped training of ``models`` models for ``steps`` steps on each workload.

    Returns a JSON-able dict: hardware (:func:`memcap.device.describe`), the command line, and per
    workload the model-steps per second of both sides, their ratio and the peak memory (MiB; on CPU the
    process's peak resident set, which only grows, so the loop, run first, reads lower). ``command`` is
    the command line to record (default: this process's own arguments).
    """
    k, S = positive_int("models", models), positive_int("steps", steps)
    workloads = listed("workloads", workloads, f"workload names from {WORKLOADS}")
    dev = pick_device(device)
    out = {"hardware": describe(dev), "command": command if command is not None else "python -m memcap " + " ".join(sys.argv[1:]),
           "models": k, "steps": S, "workloads": {}}
    for name in workloads:
        specs, config = workload(name, k)
        config = TrainConfig(**{**config.to_dict(), "steps": S, "betas": config.betas, "device": str(dev),
                                "eval_every": 10 * S})
        train_models(specs[:2], TrainConfig(**{**config.to_dict(), "steps": 5, "betas": config.betas}))   # warm-up
        loop_s, loop_mem = _timed(lambda: [train_models([s], config) for s in specs], dev)
        stack_s, stack_mem = _timed(lambda: train_models(specs, config), dev)
        out["workloads"][name] = {
            "loop_model_steps_per_s": k * S / loop_s, "stacked_model_steps_per_s": k * S / stack_s,
            "speedup": loop_s / stack_s, "loop_seconds": loop_s, "stacked_seconds": stack_s,
            "loop_peak_memory_mb": loop_mem, "stacked_peak_memory_mb": stack_mem,
        }
    return out


def format_bench(result: dict) -> str:
    """A short human-readable report of :func:`run_bench`'s result."""
    hw = result["hardware"]
    lines = [f"memcap bench: {result['models']} models x {result['steps']} steps on {hw['device']} "
             f"({hw['device_name']}; {hw['cpu_count']} CPU cores, {hw['torch_threads']} torch threads), "
             f"torch {hw['torch']}, Python {hw['python']}",
             f"command: {result['command']}"]
    for name, r in result["workloads"].items():
        lines.append(f"  {name}: stacked {r['stacked_model_steps_per_s']:.0f} model-steps/s, "
                     f"loop {r['loop_model_steps_per_s']:.0f} model-steps/s, speedup {r['speedup']:.1f}x; "
                     f"peak memory stacked {r['stacked_peak_memory_mb']:.0f} MiB, loop {r['loop_peak_memory_mb']:.0f} MiB")
    return "\n".join(lines)
