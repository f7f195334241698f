"""``torch.compile`` for a stack's training loss, on the CPU, for long jobs.

Inductor fuses the step's elementwise passes and removes most of the per-operation overhead of the eager
step; on the reference 2-core machine (one thread) a stack's forward and backward took 1.3 to 1.6 times
less time compiled on the AoT workloads of the benchmark and the small MHA one, 1.08 times less on
mahdavi_fig2a (whose time is in large matrix products), but narrow AoTs (d = 3) with much arithmetic ran
slower compiled, so those stacks stay eager (:func:`compiles_well`). The price is a compilation per stack shape:
about 13 s the first time on that machine, about 3 s when Inductor's cache on disk already holds it, and
nothing for a later stack of the same shapes in the same process. So the default, ``'auto'``, compiles
only jobs of at least :data:`COMPILE_MIN_STEPS` steps (the papers' profiles; the book's quick profiles
stay eager, as do their numbers), only on the CPU, and only where a C++ compiler is found. On CUDA the
compiled step (Inductor's Triton kernels, replayed as CUDA graphs: ``mode="reduce-overhead"``) is offered
under 'always' only, until it has been measured there (``tests/gpu_check.sh`` times it beside the eager
step and ``tests/test_gpu.py`` compares their numbers); 'auto' keeps a GPU eager. A compiled step gives the eager step's numbers up to float rounding
(tests/test_compiled.py), so a compiled job's numbers differ from an eager run's in the last bits, as
a GPU's do; the job's result says which path ran (``compiled``).

The mode comes from the ``compile`` argument of :func:`memcap.train.train_models`, else from the
environment variable ``MEMCAP_COMPILE`` (which ``python -m memcap sweep --compile MODE`` sets for its jobs,
so that its worker processes inherit it), else ``'auto'``.
"""
from __future__ import annotations

import os
import shutil
import threading
import warnings
from typing import Callable, Sequence

import torch

from memcap._checks import mode_from
from memcap.train.specs import AoTSpec, Spec

COMPILE_MODES = ("auto", "always", "never")
"""'auto': compile long jobs on the CPU where possible; 'always': compile every stack (an error where it
cannot be done); 'never': the eager step."""

COMPILE_MIN_STEPS = 10_000
"""Steps from which 'auto' compiles: the papers' profiles train 10,000 steps and more, the quick ones at
most 5,000. At ~7 ms an eager step (dana_fig1a's paper job), 10,000 steps take ~70 s, and a first
compilation of its two stacks ~26 s pays for itself through the ~30 % it saves a step."""

ENV = "MEMCAP_COMPILE"


class CompileWarning(RuntimeWarning):
    """``torch.compile`` failed for a stack under 'auto'; the stack trained with the eager step."""


def compile_mode(mode: str | None = None) -> str:
    """The mode in force: ``mode`` if given, else the environment variable ``MEMCAP_COMPILE``, else 'auto'."""
    return mode_from(mode, COMPILE_MODES, "compile", ENV, "auto")


def compile_blocker(device: torch.device) -> str | None:
    """Why a stack cannot be compiled on ``device`` here, or None when it can."""
    if device.type == "cuda":
        try:
            import triton  # noqa: F401  (Inductor's GPU kernels are Triton's)
        except ImportError:
            return "Inductor compiles for CUDA through Triton, which this environment lacks"
        return None
    if device.type != "cpu":
        return f"the compiled step runs on the CPU and CUDA only (not on {device.type})"
    try:
        import torch._inductor.config as inductor
    except ImportError:   # pragma: no cover - part of every torch 2 wheel
        return "this torch has no Inductor compiler"
    named = inductor.cpp.cxx[-1] if isinstance(inductor.cpp.cxx, tuple) else inductor.cpp.cxx
    candidates = [named] if named else ["g++", "c++", "clang++"]
    if os.environ.get("CXX"):
        candidates.insert(0, os.environ["CXX"])
    if not any(shutil.which(c) for c in candidates if c):
        return f"no C++ compiler found (looked for {', '.join(c for c in candidates if c)}), which Inductor needs"
    return None


def use_compile(mode: str | None, device: torch.device, steps: int) -> bool:
    """Whether a stack of a job of ``steps`` steps on ``device`` is compiled under ``mode`` (see :func:`compile_mode`).

    'always' where it cannot be done raises a RuntimeError that says why; 'auto' then uses the eager step.
    """
    mode = compile_mode(mode)
    if mode == "never":
        return False
    blocker = compile_blocker(device)
    if mode == "always":
        if blocker is not None:
            raise RuntimeError(f"compile='always' cannot be honoured: {blocker}; use 'auto' or 'never'")
        return True
    return blocker is None and steps >= COMPILE_MIN_STEPS and device.type == "cpu"   # a GPU: see the module


NARROW = 3
"""Model width d at or below which an AoT stack is compiled only while its step is mostly fixed cost (see
:func:`compiles_well`)."""


def compiles_well(specs: Sequence[Spec], batch: int | None) -> bool:
    """Whether a stack of ``specs`` is worth compiling (under 'auto', for a long job on a CPU).

    Measured on the reference machine, eager and compiled steps of the papers' stacks side by side: every
    MHA stack gained (1.1 to 1.5 times), and so did AoT stacks of width d >= 7 (dana_fig1a, fig1b and
    fig3: 1.16 to 1.54) and AoT stacks whose step is mostly the fixed cost of a step (dana_fig4, d = 2:
    about 1.3). AoT stacks of width d = 3 and more arithmetic (dana_fig2b's first job: 15 models up to
    H = 11, 1.10; 20 models up to H = 31, 0.85, slower) did not: Inductor's loops over rows of 3 numbers
    are slower than torch's own kernels. So an AoT stack of width d <= :data:`NARROW` is compiled only while
    its work per step, (models) x ``aot_work`` of its largest model, is at most one ``STACK_COST``.
    """
    from memcap.train.partition import STACK_COST, aot_work, padded_model

    if not isinstance(specs[0], AoTSpec) or max(s.dim for s in specs) > NARROW:
        return True
    return len(specs) * aot_work(padded_model(specs), batch) <= STACK_COST


def _stack_loss(stack, flat: torch.Tensor, idx: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """Per-model training loss (m,) of ``stack`` at weights ``flat`` (m, P) on examples ``idx`` (m, B)."""
    return stack.losses(stack.views(flat), idx, weight, count_correct=False)[0]


_COMPILED: dict[str, Callable] = {}
"""The compiled :func:`_stack_loss` per device type."""


def _thread_lock_for_tqdm() -> None:
    """Give tqdm a thread lock before the compiler's first (silent) progress bar makes it create a
    multiprocessing lock: a semaphore that a worker killed by Ctrl-C leaves behind, and that multiprocessing's
    resource tracker then reports as leaked on the user's terminal. Only progress bars drawn from several
    processes at once need tqdm's cross-process lock; the compiler's are never drawn."""
    try:
        from tqdm import tqdm
    except ImportError:   # torch does not need tqdm; without it there is no such lock
        return
    if getattr(tqdm, "_lock", None) is None:
        tqdm.set_lock(threading.RLock())


def compiled_stack_loss(device_type: str = "cpu") -> Callable:
    """:func:`_stack_loss` through ``torch.compile`` (static shapes: one graph per stack shape, reused by
    every later stack of the same shapes; the dynamic-shape graphs were slower than eager here). On CUDA
    (``device_type`` 'cuda') the graphs are replayed as CUDA graphs (``mode="reduce-overhead"``): one launch
    where the eager step makes hundreds."""
    if device_type not in _COMPILED:
        import torch._dynamo.config as dynamo

        # a sweep meets many stack shapes in one process: without this, dynamo would stop compiling
        # after 8 of them and quietly run the rest eagerly
        for name in ("cache_size_limit", "recompile_limit"):
            if hasattr(dynamo, name):
                setattr(dynamo, name, max(getattr(dynamo, name), 256))
        import torch._inductor.config as inductor

        # compile in this process: a pool of compiler processes would take the cores the sweep's workers
        # use, and when a sweep is stopped (Ctrl-C) its killed processes leave semaphores behind, which
        # multiprocessing's resource tracker then reports on the user's terminal
        inductor.compile_threads = 1
        _thread_lock_for_tqdm()
        options = {"mode": "reduce-overhead"} if device_type == "cuda" else {}
        with warnings.catch_warnings():   # importing the compiler touches parts of torch.jit it deprecates
            warnings.filterwarnings("ignore", category=DeprecationWarning, module="torch")
            _COMPILED[device_type] = torch.compile(_stack_loss, dynamic=False, **options)
    return _COMPILED[device_type]
