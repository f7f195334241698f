"""``python -m memcap doctor``: can this machine's device run the book? One command, one verdict.

It reports the device :func:`memcap.device.pick_device` chooses (or the one asked for) and whether CUDA
or MPS is present, then runs on that device the checks that the book's GPU path depends on, each small
enough to take about a second:

* Mahdavi et al.'s Theorem 1 construction memorizes exactly (``max |y_hat - y| <= 1e-6`` in float64);
* Dana et al.'s Corollary 1 construction puts the argmax on every association;
* the training engine's stacked forwards equal the plain models of :mod:`memcap.models`;
* the engine trains a stack exactly as it trains its models one by one, and memorizes a tiny task;
* on a GPU, training there agrees with training on the CPU (float64, to 1e-6);

and finally the stacked-vs-loop benchmark of :mod:`memcap.experiments.bench`. Without a GPU it says so and checks
the CPU path. The exit status is 0 when every check passes and 1 otherwise; the checks fail by raising,
never by ``assert`` (which ``python -O`` strips), and compare devices with :func:`memcap.device.same_device`.
"""
from __future__ import annotations

import time
from typing import Callable

import numpy as np
import torch

from memcap import data, models
from memcap.construct import dana, mahdavi
from memcap.device import _mps_available, exact_dtype, pick_device, report, same_device
from memcap.experiments import bench
from memcap.train import AoTSpec, MHASpec, TrainConfig, aot_forward_stacked, mha_forward_stacked, train_models

__all__ = ["CHECKS", "gpu_status", "run_doctor"]


class _CheckFailed(Exception):
    """A doctor check found the device's result wrong (raised by :func:`_require`, never by ``assert``)."""


def _require(condition: bool, message: str) -> None:
    """Raise :class:`_CheckFailed` with ``message`` unless ``condition``: an ``assert`` would vanish under
    ``python -O`` and let a failing check pass."""
    if not condition:
        raise _CheckFailed(message)


def gpu_status() -> str:
    """One line: which GPUs torch sees (CUDA devices with their names, Apple's MPS), or that there is none."""
    found = []
    if torch.cuda.is_available():
        found += [f"cuda:{i} ({torch.cuda.get_device_name(i)})" for i in range(torch.cuda.device_count())]
    if _mps_available():
        found.append("mps (Apple GPU)")
    if found:
        return "GPU found: " + ", ".join(found)
    return (f"no GPU found (torch {torch.__version__}: torch.cuda.is_available() is False, "
            f"built with CUDA {torch.version.cuda}; MPS not available): checking the CPU path")


def _tolerance(dev: torch.device) -> float:
    """How exact a construction must be on ``dev``: :func:`memcap.construct.mahdavi.memorize_tolerance` of
    its construction dtype (1e-6 in float64, 1e-3 on MPS, float32 only)."""
    return mahdavi.memorize_tolerance(exact_dtype(dev))


def _check_theorem1(dev: torch.device) -> str:
    """Theorem 1 (Mahdavi et al.): T = H(n - 1) + 1 arbitrary labels, memorized to the tolerance."""
    n, d, H = 4, 8, 3
    T = H * (n - 1) + 1
    task = data.mahdavi_task(T, n, d, task="regression", generator=torch.Generator().manual_seed(0),
                             dtype=exact_dtype(dev), device=dev)
    built = mahdavi.theorem1_construction(task.contexts, task.queries, task.labels, heads=H, head_dim=n)
    _require(same_device(built.params.device, dev), f"weights on {built.params.device}, not {dev}")
    _require(built.max_error <= _tolerance(dev), f"max |y_hat - y| = {built.max_error:.2e}")
    return f"T = {T} labels, max |y_hat - y| = {built.max_error:.1e}"


def _check_corollary1(dev: torch.device) -> str:
    """Corollary 1 (Dana et al.): T0 = H d_h + 2 associations, every argmax right."""
    H, d_h = 3, 2
    tokens, targets = data.association_task(5, 2, count=H * d_h + 2, generator=torch.Generator().manual_seed(1),
                                            device=dev)
    built = dana.corollary1_aot(tokens, targets, 5, heads=H, head_dim=d_h)
    _require(same_device(built.params.device, tokens.device), f"weights on {built.params.device}, not {tokens.device}")
    right = int((models.aot_forward(built.params, tokens).argmax(dim=1) == targets).sum())
    _require(right == len(targets), f"{right} of {len(targets)} associations right")
    return f"{right} of {len(targets)} associations right"


def _check_forwards(dev: torch.device) -> str:
    """The engine's stacked forwards equal :func:`memcap.models.mha_forward` / ``aot_forward`` per model."""
    gen = torch.Generator().manual_seed(2)
    mha = [models.init_mha(2, 6, 3, 2, 4, generator=gen, dtype=torch.float32, device=dev) for _ in range(3)]
    stacked = {name: torch.stack([getattr(p, name) for p in mha]) for name in models.mha_parameter_names}
    contexts = torch.rand(3, 5, 6, generator=gen).to(dev)
    queries = torch.rand(3, 7, 6, generator=gen).to(dev)
    out = mha_forward_stacked(stacked, contexts, queries)
    gap = max(float((out[i] - models.mha_forward(p, contexts[i], queries[i])).abs().max()) for i, p in enumerate(mha))
    aot = [models.init_aot(6, 3, 4, 2, 2, generator=gen, dtype=torch.float32, device=dev) for _ in range(3)]
    stacked = {name: torch.stack([getattr(p, name) for p in aot]) for name in models.aot_parameter_names}
    tokens = torch.randint(6, (3, 9, 3), generator=gen).to(dev)
    out = aot_forward_stacked(stacked, tokens)
    gap = max(gap, max(float((out[i] - models.aot_forward(p, tokens[i])).abs().max()) for i, p in enumerate(aot)))
    _require(gap <= 1e-5, f"stacked and plain forwards differ by {gap:.2e}")
    return f"largest difference {gap:.1e} (float32)"


def _check_engine(dev: torch.device) -> str:
    """A stack trains like its models one by one (zero padding is exact), and a tiny task is memorized."""
    cfg = TrainConfig(steps=30, batch_size=8, lr=1e-2, eval_every=10, early_stop=False, device=str(dev))
    specs = [MHASpec(heads=H, context_size=n, examples=T, dim=4, classes=5, seed=s)
             for H, n, T, s in [(2, 3, 20, 0), (1, 2, 12, 1), (3, 3, 16, 2)]]
    stacked = train_models(specs, cfg, keep_params=True)
    gap = 0.0
    for i, spec in enumerate(specs):
        alone = train_models([spec], cfg, keep_params=True)
        gap = max(gap, max(float(np.abs(w - stacked.params[i][name]).max()) for name, w in alone.params[0].items()))
    _require(gap <= 1e-4, f"stacked and one-by-one weights differ by {gap:.2e}")
    tiny = train_models([AoTSpec(heads=1, head_dim=3, dim=3, vocab=3, seq_len=1)],
                        TrainConfig(steps=300, batch_size=None, lr=5e-2, schedule="constant", eval_every=10,
                                    device=str(dev)))
    _require(bool(tiny.memorized[0]), f"the 3 associations reached accuracy {tiny.accuracy[0]:.2f}, not 1")
    return f"stacked = one by one to {gap:.1e} (float32); 3 of 3 associations memorized in {tiny.steps[0]} steps"


def _check_against_cpu(dev: torch.device) -> str:
    """Training on the device agrees with training on the CPU (float64), so GPU figures match CPU ones."""
    if dev.type == "cpu":
        return "skipped: the device is the CPU"
    if exact_dtype(dev) != torch.float64:
        return f"skipped: {dev.type} has no float64"
    gap = 0.0
    for spec in _AGAINST_CPU:
        runs = [train_models([spec], TrainConfig(steps=40, batch_size=8, lr=1e-2, dtype="float64", device=where,
                                                 early_stop=False), keep_params=True) for where in ("cpu", str(dev))]
        one = max((float(np.abs(w - runs[1].params[0][name]).max()) for name, w in runs[0].params[0].items() if w.size),
                  default=0.0)
        _require(one <= 1e-6, f"weights of {spec} trained on cpu and {dev} differ by {one:.2e}")
        gap = max(gap, one)
    return f"weights of {len(_AGAINST_CPU)} models (every forward path) agree with the CPU's to {gap:.1e} (float64)"


_AGAINST_CPU = (
    MHASpec(heads=2, context_size=3, examples=20, dim=4, classes=5, seed=3),
    MHASpec(heads=2, context_size=3, examples=20, dim=4, value_dim=4, classes=None, seed=4),
    AoTSpec(heads=3, head_dim=2, dim=3, vocab=5, seq_len=2, seed=5),
    AoTSpec(heads=2, head_dim=2, dim=3, vocab=4, seq_len=3, seed=6),
)
"""One model per forward path of :mod:`memcap.train.forward`: d_v = 1 attention (hand-written backward), attention
with d_v = d on a regression task, the closed form of two-token AoTs, the general AoT."""


CHECKS: tuple[tuple[str, Callable[[torch.device], str]], ...] = (
    ("Mahdavi et al., Theorem 1 construction", _check_theorem1),
    ("Dana et al., Corollary 1 construction", _check_corollary1),
    ("stacked forwards = memcap.models", _check_forwards),
    ("training engine", _check_engine),
    ("device agrees with the CPU", _check_against_cpu),
)
"""The checks :func:`run_doctor` runs, in order: (name, function of the device returning a detail line).

:meta hide-value:
"""


def run_doctor(device: str | None = None, *, bench_models: int = 8, bench_steps: int = 50,
               run_benchmark: bool = True, out: Callable[[str], None] = print,
               command: str = "python -m memcap doctor") -> bool:
    """Report the device and run :data:`CHECKS` (and the benchmark) on it; True when every check passed.

    ``device``: 'cuda', 'cuda:1', 'mps', 'cpu' or None (:func:`memcap.device.pick_device`).
    ``bench_models`` x ``bench_steps``: the size of the stacked-vs-loop benchmark
    (:func:`memcap.experiments.bench.run_bench`), which records ``command`` as the one that produced it.
    Every line goes through ``out``.
    """
    if not isinstance(command, str) or not command.strip():
        raise ValueError(f"command must be the command line that runs the doctor, got {command!r}")
    dev = pick_device(device)
    out(report(dev))
    out(gpu_status())
    passed = True
    for name, check in CHECKS:
        start = time.perf_counter()
        try:
            detail = check(dev)
        except Exception as err:   # a failing check is reported, then the next one runs
            passed = False
            cause = str(err) if isinstance(err, _CheckFailed) else f"{type(err).__name__}: {err}"
            out(f"FAIL  {name}: {cause}")
            continue
        out(f"ok    {name}: {detail} ({time.perf_counter() - start:.1f} s)")
    if run_benchmark:
        result = bench.run_bench(models=bench_models, steps=bench_steps, device=str(dev),
                                 command=command, repeats=1)
        out(bench.format_bench(result))
    out("doctor: all checks passed" if passed else "doctor: SOME CHECKS FAILED")
    return passed
