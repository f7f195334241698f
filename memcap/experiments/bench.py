"""Benchmark: the stacked engine against a one-model-at-a-time loop and against the papers' own recipes.

Per workload, measured in one run on one device: model-steps per second (one optimizer step of one
model) of the stacked engine (:func:`memcap.train.train_models` on all models at once), of the same
engine called one model at a time (the loop), and of the authors' recipe
(``memcap.train.authors.train_like_authors``: how each paper's code trains one model); the ratios
``speedup`` = stacked / loop and ``speedup_vs_authors`` = stacked / authors; the engine's achieved
GFLOP/s from an analytic FLOP count (:func:`flops_per_model_step`) and ``fraction_of_peak``, that rate
over the device's measured peak (a large float32 matrix product timed in the same run,
:func:`peak_gflops`). Early stop is off so every side does exactly its steps. Each side is timed
``repeats`` times, the three sides in turn, and the median of each side's times is reported: on a shared
VM one burst of another tenant's work can halve one timing of a fraction of a second, and the median of
three is immune to one such burst while the best of three would favour whichever side was lucky.

Each workload runs the way its jobs run (``memcap.train.compiled``): under the default compile mode
'auto', the paper workloads, whose jobs train 10,000 steps and more, go through ``torch.compile`` on a CPU
with a C++ compiler, loop and stack alike, and the small ones eagerly. Compiling is done in a warm-up
before the timings (one compilation per stack shape, reused by the timed runs); its time is reported as
``warmup_seconds``, and ``compiled`` says which path was timed. The authors' recipes run as their code does.
``python -m memcap bench``.
"""
from __future__ import annotations

import resource
import statistics
import sys
import time

import torch

from memcap._checks import listed, positive_int
from memcap.device import describe, pick_device
from memcap.experiments.syn_prose import count_noun
from memcap.train import AoTSpec, MHASpec, TrainConfig, spec_from_dict, train_models
from memcap.train.authors import train_like_authors
from memcap.train.compiled import compile_mode, use_compile
from memcap.train.graphs import graph_mode

__all__ = ["WORKLOADS", "SMALL_WORKLOADS", "PAPER_WORKLOADS", "LARGE_WORKLOADS", "workload", "flops_per_model_step", "peak_gflops",
           "run_bench", "format_bench"]

SMALL_WORKLOADS = ("mha", "aot")
"""'mha': Mahdavi-style models (d = 16, n = 8, H = 1..8, T = 400, 100 classes, batch 128);
'aot': Dana-style AoTs (N = 20, S = 2, d = d_h = 5, H = 1..8, batch 256). ``models`` of them."""

PAPER_WORKLOADS = ("dana_fig1a", "dana_fig4", "mahdavi_fig2a")
"""The first job of each experiment's paper profile, its own models and training recipe (steps cut to the
benchmark's): dana_fig1a 7 AoTs (N = 50, d = d_h = 10, H = 1..31, batch 1024), dana_fig4 21 AoTs
(N = 10, d = d_h = 2, H = 1..21), mahdavi_fig2a 8 models (d = 64, n = 32, H = 1..60, T = 10,000, batch 256)."""

LARGE_WORKLOADS = ("mahdavi_fig2c",)
"""The largest job of either paper (by :func:`flops_per_model_step` times steps: 0.72 PFLOP of Mahdavi et al.'s
8.4), its first paper job: 12 models (d = 64, n = 32, H = 30, d_h = 10..64, T = 10,000, batch 256, 300,000
steps), big enough to show how much of a GPU the engine can use. On a CPU it is slow to time (its twelve
models one at a time, each compiled), so the command line's default leaves it out."""

WORKLOADS = SMALL_WORKLOADS + PAPER_WORKLOADS + LARGE_WORKLOADS
"""Every workload of :func:`run_bench`."""


def workload(name: str, models: int = 16) -> tuple[list, TrainConfig]:
    """The specs and the config of workload ``name`` (one of :data:`WORKLOADS`); ``models`` sizes the small
    ones (the paper workloads have their job's own models)."""
    k = positive_int("models", models)
    if name == "mha":
        specs = [MHASpec(heads=1 + i % 8, context_size=8, examples=400, dim=16, classes=100, seed=i, data_seed=i % 2)
                 for i in range(k)]
        return specs, TrainConfig(batch_size=128, lr=1e-2, early_stop=False)
    if name == "aot":
        specs = [AoTSpec(heads=1 + i % 8, head_dim=5, dim=5, vocab=20, seed=i, data_seed=i % 2) for i in range(k)]
        return specs, TrainConfig(batch_size=256, lr=1e-2, schedule="constant", early_stop=False)
    if name in PAPER_WORKLOADS + LARGE_WORKLOADS:
        from memcap import experiments

        job = experiments.get(name).jobs("paper")[0]
        config = TrainConfig.from_dict({**job["config"], "early_stop": False, "epochs": None})
        return [spec_from_dict(r) for r in job["specs"]], config
    raise ValueError(f"workload must be one of {WORKLOADS}, got {name!r}")


def flops_per_model_step(spec: AoTSpec | MHASpec, batch: int) -> float:
    """Floating-point operations of one optimizer step of one model on ``batch`` examples, counted by hand.

    The forward pass of the papers' formulation (a multiply-add = 2 operations), times 3 for forward plus
    backward (the backward pass costs about twice the forward). AoT (Eqs. (1)-(2), S tokens, per
    example): H (2 d d_h (1 + 2 S) + 4 S d_h + 2 d_h d) for queries at the last position, keys and values
    at every position, scores, the weighted sum and W_O; + 4 d w for the MLP; + 2 d N for the
    unembedding. Mahdavi et al.'s model on a shared context: per example 2 d^2 (embedding of the query) +
    2 d H d_h (queries) + 2 H n (d_h + d_v) (scores, weighted values) + 2 H d_v d (W_O) + 2 d C (readout),
    and once per step 2 n d^2 + 2 n d H (d_h + d_v) (embedding, keys and values of the context). The
    engine's closed forms do fewer operations than this count, so its "achieved" rate is an effective
    rate: the papers' arithmetic per second.
    """
    B = positive_int("batch", batch)
    if isinstance(spec, AoTSpec):
        H, d, k, S, N, w = spec.heads, spec.dim, spec.head_dim, spec.seq_len, spec.vocab, spec.mlp_width
        forward = B * (H * (2 * d * k * (1 + 2 * S) + 4 * S * k + 2 * k * d) + 4 * d * w + 2 * d * N)
    elif isinstance(spec, MHASpec):
        H, d, k, n, v, C = spec.heads, spec.dim, spec.d_h, spec.context_size, spec.value_dim, spec.output_width
        forward = B * (2 * d * d + 2 * d * H * k + 2 * H * n * (k + v) + 2 * H * v * d + 2 * d * C) \
            + 2 * n * d * d + 2 * n * d * H * (k + v)
    else:
        raise TypeError(f"spec must be an AoTSpec or MHASpec, got {type(spec).__name__}")
    return 3.0 * forward


def peak_gflops(device: torch.device, size: int = 2048, repeats: int = 5) -> float:
    """GFLOP/s of a ``size`` x ``size`` float32 matrix product on ``device`` (best of ``repeats``): the peak
    that :func:`run_bench`'s ``fraction_of_peak`` is measured against."""
    n = positive_int("size", size)
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    best = float("inf")
    for _ in range(positive_int("repeats", repeats) + 1):   # the first product warms up
        seconds, _ = _timed(lambda: a @ b, device)
        best = min(best, seconds)
    return 2 * n ** 3 / best / 1e9


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


def run_bench(workloads: tuple[str, ...] = SMALL_WORKLOADS, *, models: int = 16, steps: int = 200,
              authors_steps: int | None = None, device: str | None = None, command: str | None = None,
              repeats: int = 3, compile: str | None = None, cuda_graphs: str | None = None) -> dict:
    """Time the stacked engine, the one-model loop and the authors' recipe on each workload.

    Every model does ``steps`` steps in the engine (stacked and looped) and ``authors_steps`` (default
    steps // 10, at least 2: the recipes are slow) in the authors' recipe; rates are per model-step, so
    the step counts cancel out of the ratios. Each side runs ``repeats`` times (in turn: loop, stacked,
    authors, loop, ...) and its median time counts. Returns a JSON-able dict: hardware
    (:func:`memcap.device.describe`), the command line, ``peak_gflops``, ``repeats`` and per workload the
    model-steps per second of each side, ``speedup``, ``speedup_vs_authors``, ``gflops``, ``fraction_of_peak``
    (and ``loop_fraction_of_peak``, the loop's: where it is already high, no stacking can be much faster),
    the median seconds of each side and every timing (``*_seconds_each``), the peak memory (MiB; on
    CPU the process's peak resident set, which only grows), ``compiled`` and ``warmup_seconds``.
    ``compile``: 'auto', 'always', 'never' or None (``MEMCAP_COMPILE``, else 'auto'), applied to each
    workload at its jobs' step count (see the module's docstring). ``cuda_graphs``: 'always', 'never' or None
    (``MEMCAP_CUDA_GRAPHS``, else 'never'), whether the engine's steps (stacked and one model at a time) are
    recorded as CUDA graphs and replayed (``memcap.train.graphs``); the result's ``cuda_graphs`` says which.
    """
    mode = compile_mode(compile)
    graphs = graph_mode(cuda_graphs)
    k, S = positive_int("models", models), positive_int("steps", steps)
    R = positive_int("repeats", repeats)
    workloads = listed("workloads", workloads, f"workload names from {WORKLOADS}")
    A = max(2, S // 10) if authors_steps is None else positive_int("authors_steps", authors_steps)
    for name in workloads:
        if name not in WORKLOADS:
            raise ValueError(f"workloads must be names in {WORKLOADS}, got {name!r}")
    dev = pick_device(device)
    out = {"hardware": describe(dev), "command": command if command is not None else "python -m memcap " + " ".join(sys.argv[1:]),
           "models": k, "steps": S, "authors_steps": A, "repeats": R, "peak_gflops": peak_gflops(dev),
           "cuda_graphs": graphs, "workloads": {}}
    for name in workloads:
        specs, config = workload(name, k)
        job_steps = config.steps if name in PAPER_WORKLOADS + LARGE_WORKLOADS else S   # what decides compiling in a real job
        config = TrainConfig(**{**config.to_dict(), "steps": S, "betas": config.betas, "device": str(dev),
                                "eval_every": 10 * S})
        # 'always' compiles every stack; under 'auto' a paper job would too (its stacks all compile well,
        # memcap.train.compiled.compiles_well; tests/test_compiled.py checks)
        compiled = use_compile(mode, dev, job_steps)
        how = "always" if compiled else "never"
        m = len(specs)
        short = TrainConfig(**{**config.to_dict(), "steps": 2 if compiled else 5, "betas": config.betas})
        start = time.perf_counter()
        if compiled:   # every stack shape the timed runs meet: the stack's and each model's alone
            train_models(specs, short, compile=how, cuda_graphs=graphs)
            for s in specs:
                train_models([s], short, compile=how, cuda_graphs=graphs)
        else:
            train_models(specs[:2], short, compile=how, cuda_graphs=graphs)
        warmup = time.perf_counter() - start
        train_like_authors(specs[0], config, 2, device=dev)   # its first call pays one-time costs (2.6x on mha)
        each: dict[str, list[float]] = {"loop": [], "stacked": [], "authors": []}
        loop_mem = stack_mem = 0.0
        for _ in range(R):
            seconds, mem = _timed(lambda: [train_models([s], config, compile=how, cuda_graphs=graphs)
                                           for s in specs], dev)
            each["loop"].append(seconds)
            loop_mem = max(loop_mem, mem)
            seconds, mem = _timed(lambda: train_models(specs, config, compile=how, cuda_graphs=graphs), dev)
            each["stacked"].append(seconds)
            stack_mem = max(stack_mem, mem)
            each["authors"].append(_timed(lambda: [train_like_authors(s, config, A, device=dev) for s in specs],
                                          dev)[0])
        loop_s, stack_s, authors_s = (statistics.median(each[side]) for side in ("loop", "stacked", "authors"))
        batch = config.batch_size
        flops = sum(flops_per_model_step(s, batch if batch is not None else s.T0 if isinstance(s, AoTSpec)
                                         else s.examples) for s in specs) * S
        stacked_rate, authors_rate = m * S / stack_s, m * A / authors_s
        out["workloads"][name] = {
            "models": m, "loop_model_steps_per_s": m * S / loop_s, "stacked_model_steps_per_s": stacked_rate,
            "authors_model_steps_per_s": authors_rate, "speedup": loop_s / stack_s,
            "speedup_vs_authors": stacked_rate / authors_rate, "gflops": flops / stack_s / 1e9,
            "fraction_of_peak": flops / stack_s / 1e9 / out["peak_gflops"],
            "loop_fraction_of_peak": flops / loop_s / 1e9 / out["peak_gflops"],
            "loop_seconds": loop_s, "stacked_seconds": stack_s, "authors_seconds": authors_s,
            "loop_seconds_each": each["loop"], "stacked_seconds_each": each["stacked"],
            "authors_seconds_each": each["authors"],
            "loop_peak_memory_mb": loop_mem, "stacked_peak_memory_mb": stack_mem,
            "compiled": compiled, "warmup_seconds": warmup,
        }
    return out


def format_bench(result: dict) -> str:
    """A short human-readable report of :func:`run_bench`'s result."""
    hw = result["hardware"]
    lines = [f"memcap bench: {count_noun(result['models'], 'model')} x {count_noun(result['steps'], 'step')} on {hw['device']} (paper workloads: "
             f"their own models; {count_noun(result['authors_steps'], 'step')} in the authors' recipes) ({hw['device_name']}; "
             f"{count_noun(hw['cpu_count'], 'CPU core')}, {count_noun(hw['torch_threads'], 'torch thread')}), torch {hw['torch']}, Python {hw['python']}; float32 matrix product: "
             f"{result['peak_gflops']:.0f} GFLOP/s; median of {count_noun(result['repeats'], 'timing')} per side"
             + ("; steps recorded as CUDA graphs" if result.get("cuda_graphs") == "always" else ""),
             f"command: {result['command']}"]
    for name, r in result["workloads"].items():
        lines.append(f"  {name} ({count_noun(r['models'], 'model')}{', compiled' if r.get('compiled') else ''}): "
                     f"stacked {r['stacked_model_steps_per_s']:.0f} model-steps/s, "
                     f"loop {r['loop_model_steps_per_s']:.0f}, authors' recipe {r['authors_model_steps_per_s']:.1f}; "
                     f"speedup {r['speedup']:.1f}x, vs authors {r['speedup_vs_authors']:.0f}x; "
                     f"{r['gflops']:.1f} GFLOP/s = {r['fraction_of_peak']:.2f} of peak "
                     f"(loop {r['loop_fraction_of_peak']:.2f}); "
                     f"peak memory stacked {r['stacked_peak_memory_mb']:.0f} MiB, loop {r['loop_peak_memory_mb']:.0f} MiB")
    return "\n".join(lines)
