"""The training loop: group specs into stacks, train each stack, gather the results in order."""
from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch

from memcap._checks import check_allocation, check_bool, listed, positive_int
from memcap._resolve import randint, seeded
from memcap.device import pick_device
from memcap.train.adam import adam_update
from memcap.train.checkpoint import Checkpoint
from memcap.train.checkpoint import active as active_checkpoint
from memcap.train.compiled import CompileWarning, compile_mode, compiled_stack_loss, compiles_well, use_compile
from memcap.train.config import TrainConfig
from memcap.train.graphs import StaticStep, graph_mode
from memcap.train.memory import keep_freed_memory, out_of_memory
from memcap.train.partition import cheapest_cut
from memcap.train.prepare import check_fits
from memcap.train.schedule import lr_factor
from memcap.train.specs import AoTSpec, MHASpec, Spec
from memcap.train.stack import Stack


@dataclass(frozen=True)
class TrainResult:
    """What training a list of models produced, in the order of ``specs``.

    ``accuracy`` (k,): full-training-set accuracy (NaN for regression); ``loss`` (k,): mean training loss
    (cross-entropy, or mean squared error per output for regression); ``memorized`` (k,): accuracy = 100 %;
    ``steps`` (k,): updates applied; ``stop_step`` (k,): the update after which early stop froze the model
    (-1: never); ``history_steps`` (e,) and ``history_accuracy``/``history_loss`` (e, k): the periodic
    evaluations; ``params``: per-model weights as NumPy arrays when ``keep_params`` was set; ``compiled`` (k,):
    whether the model's steps ran through ``torch.compile`` (``memcap.train.compiled``).
    """

    specs: tuple[Spec, ...]
    accuracy: np.ndarray
    loss: np.ndarray
    memorized: np.ndarray
    steps: np.ndarray
    stop_step: np.ndarray
    history_steps: np.ndarray
    history_accuracy: np.ndarray
    history_loss: np.ndarray
    seconds: float
    device: str
    params: tuple[dict[str, np.ndarray], ...] | None = field(default=None)
    compiled: np.ndarray | None = None

    def records(self) -> list[dict]:
        """One JSON-able dict per model: its spec's fields plus accuracy, loss, memorized, steps, stop_step."""
        out = []
        for i, spec in enumerate(self.specs):
            acc = float(self.accuracy[i])
            out.append({**spec.to_dict(), "accuracy": None if math.isnan(acc) else acc,
                        "loss": float(self.loss[i]), "memorized": bool(self.memorized[i]),
                        "steps": int(self.steps[i]), "stop_step": int(self.stop_step[i])})
        return out


def _batch_indices(gens: list[torch.Generator], counts: list[int], chunk: int, batch: int) -> torch.Tensor:
    """(chunk, m, B) indices, row i drawn with replacement from [0, T_i) by model i's own generator."""
    return torch.stack([randint(T, (chunk, batch), g, g.device) for g, T in zip(gens, counts)], dim=1)


def _eager_gradient(stack: Stack, flat: torch.Tensor, idx: torch.Tensor, weight: torch.Tensor,
                    out: torch.Tensor) -> torch.Tensor:
    """d (sum of the models' losses on examples ``idx`` (m, B)) / d ``flat`` (m, P), written into ``out``."""
    views = stack.views(flat)
    loss, _ = stack.losses(views, idx, weight, count_correct=False)
    return stack.gradient(loss.sum(), views, out)


CHUNK = 256
"""Steps whose learning rates and batch indices are drawn at once; a checkpoint is taken where a chunk begins."""

def _train_stack(specs: Sequence[Spec], config: TrainConfig, device: torch.device, dtype: torch.dtype,
                 keep_params: bool, compiled: bool = False, strict: bool = False,
                 checkpoint: Checkpoint | None = None, graphs: bool = False) -> dict:
    """Train one stack (models of one :meth:`shape_key`); returns per-model arrays (see :class:`TrainResult`).

    ``compiled``: the loss through ``memcap.train.compiled.compiled_stack_loss`` where the stack
    ``compiles_well`` (every stack with ``strict``); if its first call fails
    (compiling is done then), the stack trains eagerly with a ``CompileWarning``, or with ``strict`` the
    error is raised. ``out['compiled']`` says which path ran. ``checkpoint``: where the stack's result, and
    its state every ``checkpoint.every`` seconds, are kept, and whence a stopped run goes on
    (``memcap.train.checkpoint``). ``graphs``: the eager step through ``memcap.train.graphs.StaticStep``
    (recorded as CUDA graphs on CUDA; not with ``compiled``).

    A step reads nothing back from the device: which models are still training is known on the host
    (each model's step count, and the early-stop flags read at each evaluation), so on a GPU the steps
    between two evaluations are queued without waiting.
    """
    began = time.perf_counter()
    stack = Stack(specs, dtype, device)
    loss_of = compiled_stack_loss(device.type) if compiled and (strict or compiles_well(specs, config.batch_size)) else None
    m = len(specs)
    key = None
    if checkpoint is not None:
        key = checkpoint.key(specs, config, dtype, device, loss_of is not None, keep_params)
        done = checkpoint.finished(key)
        if done is not None:
            return done
    counts = [int(c) for c in stack.counts.cpu()]
    totals = [config.steps_for(c) for c in counts]                             # steps per model, on the host
    total = torch.tensor(totals, device=device)                               # (m,)
    max_steps, min_steps = max(totals), min(totals)
    gens = [seeded(10_007 * s.seed + 1) for s in specs]   # batches: own stream (mod 2**64, torch's seed range)
    flat = stack.flat
    state = {"t": torch.zeros(m, dtype=torch.long, device=device),
             "m": torch.zeros_like(flat), "v": torch.zeros_like(flat)}
    grad_buffer = torch.empty_like(flat, requires_grad=False)                 # (m, P) d loss / d flat, each step
    stopped = torch.zeros(m, dtype=torch.bool, device=device)
    stop_step = torch.full((m,), -1, dtype=torch.long, device=device)
    full = config.batch_size is None
    T_max = max(counts)
    history_steps, history_acc, history_loss = [], [], []
    first = 0
    saved = checkpoint.state(key, tuple(flat.shape)) if checkpoint is not None else None
    if saved is not None:   # go on from a stopped run: the same state, the same numbers from here on
        with torch.no_grad():
            flat.copy_(saved["flat"].to(device))
        for name in ("t", "m", "v"):
            state[name] = saved[name].to(device)
        stopped, stop_step = saved["stopped"].to(device), saved["stop_step"].to(device)
        history_steps, history_acc, history_loss = saved["history_steps"], saved["history_acc"], saved["history_loss"]
        for g, g_state in zip(gens, saved["generators"]):
            g.set_state(g_state)
        first = int(saved["step"])
        began -= float(saved.get("seconds", 0.0))   # the stack's training time counts its earlier runs
        if not saved["compiled"]:
            loss_of = None
    any_stopped = bool(stopped.any())                                         # on the host from here on
    total_cpu = total.cpu().to(torch.float64)
    if full:
        idx = torch.arange(T_max, device=device).expand(m, -1)
        weight = (idx < stack.counts[:, None]).to(dtype)
    else:
        ones = torch.ones((m, config.batch_size), dtype=dtype, device=device)
    compiling = loss_of is not None   # the first compiled call compiles, and may fail
    static_step = None
    if graphs and loss_of is None:
        def body(idx_s: torch.Tensor, lr_s: torch.Tensor, active_s: torch.Tensor, all_active: bool) -> None:
            grad = _eager_gradient(stack, flat, idx_s, weight, grad_buffer)
            with torch.no_grad():
                adam_update(flat, grad, state, lr_s, active_s, config.betas, config.eps, all_active=all_active)
        if not full:
            weight = ones
        static_step = StaticStep(body, idx if full else torch.zeros((m, config.batch_size), dtype=torch.long,
                                                                     device=device),
                                 torch.zeros(m, dtype=dtype, device=device), torch.zeros(m, dtype=torch.bool, device=device),
                                 [flat, state["t"], state["m"], state["v"], grad_buffer])
    for step in range(first, max_steps):
        active = ~stopped & (step < total)
        if not full:
            weight = ones
        if step % CHUNK == 0:   # learning rates and batch indices for the next CHUNK steps
            if checkpoint is not None and step > first and checkpoint.due():
                checkpoint.save_state(key, {
                    "step": step, "flat": flat, "t": state["t"], "m": state["m"], "v": state["v"],
                    "stopped": stopped, "stop_step": stop_step, "history_steps": history_steps,
                    "history_acc": history_acc, "history_loss": history_loss,
                    "generators": [g.get_state() for g in gens], "compiled": loss_of is not None,
                    "seconds": time.perf_counter() - began})
            steps_ahead = torch.arange(step, step + CHUNK, dtype=torch.float64, device="cpu")[:, None]   # (CHUNK, 1)
            lr_chunk = (config.lr * lr_factor(steps_ahead, total_cpu, schedule=config.schedule,
                                              warmup_fraction=config.warmup_fraction,
                                              start_factor=config.warmup_start_factor)).to(device, dtype)
            if not full:
                idx_chunk = _batch_indices(gens, counts, CHUNK, config.batch_size).to(device)
        if not full:
            idx = idx_chunk[step % CHUNK]
        if static_step is not None:
            static_step(idx, lr_chunk[step % CHUNK], active, not any_stopped and step < min_steps)
        elif loss_of is None:
            grad = _eager_gradient(stack, flat, idx, weight, grad_buffer)
        elif not compiling:
            if device.type == "cuda":   # a new step: the CUDA graphs' outputs of the last one may be reused
                torch.compiler.cudagraph_mark_step_begin()
            grad = torch.autograd.grad(loss_of(stack, flat, idx, weight).sum(), [flat])[0]
        else:   # the first call compiles (torch's compiler warns that parts of torch.jit it imports are deprecated)
            compiling = False
            try:
                with warnings.catch_warnings():
                    warnings.filterwarnings("ignore", category=DeprecationWarning, module="torch")
                    grad = torch.autograd.grad(loss_of(stack, flat, idx, weight).sum(), [flat])[0]
            except Exception as err:   # noqa: BLE001 - whatever failed, the eager step computes the same
                if strict or out_of_memory(err):   # no memory: a smaller stack, see _train_fitting
                    raise
                first_line = str(err).splitlines()[0] if str(err) else ""
                warnings.warn(f"torch.compile failed ({type(err).__name__}: {first_line}); this stack trains with the "
                              "eager step (MEMCAP_COMPILE=never skips compiling)", CompileWarning, stacklevel=3)
                loss_of = None
                grad = _eager_gradient(stack, flat, idx, weight, grad_buffer)
        if static_step is None:
            with torch.no_grad():
                adam_update(flat, grad, state, lr_chunk[step % CHUNK], active, config.betas, config.eps,
                            all_active=not any_stopped and step < min_steps)
        if (step + 1) % config.eval_every == 0:
            eval_loss, correct = stack.evaluate(stack.views(flat))
            history_steps.append(step + 1)
            history_acc.append((correct.double() / stack.counts).cpu().numpy())
            history_loss.append(eval_loss.cpu().numpy())
            if config.early_stop and stack.classification:
                newly = active & (correct == stack.counts)
                stop_step[newly] = step + 1
                stopped |= newly
                any_stopped = bool(stopped.any())
                if not any(not s and step + 1 < T for s, T in zip(stopped.tolist(), totals)):
                    break   # every model stopped or done
    eval_loss, correct = stack.evaluate(stack.views(flat))
    accuracy = (correct.double() / stack.counts).cpu().numpy() if stack.classification else np.full(m, np.nan)
    result = {
        "accuracy": accuracy, "loss": eval_loss.cpu().numpy(),
        "memorized": (correct == stack.counts).cpu().numpy() if stack.classification else np.zeros(m, bool),
        "steps": state["t"].cpu().numpy(), "stop_step": stop_step.cpu().numpy(),
        "history_steps": np.asarray(history_steps, dtype=np.int64),
        "history_accuracy": np.stack(history_acc) if history_acc else np.zeros((0, m)),
        "history_loss": np.stack(history_loss) if history_loss else np.zeros((0, m)),
        "params": None, "compiled": loss_of is not None,
    }
    if keep_params:
        result["params"] = [stack.unpadded(flat.detach(), i) for i in range(m)]
    if checkpoint is not None:
        checkpoint.save_finished(key, {**result, "seconds": time.perf_counter() - began})
    return result


def group_by_shape(specs: Sequence[Spec]) -> list[list[int]]:
    """Indices of ``specs`` grouped by :meth:`MHASpec.shape_key` / :meth:`AoTSpec.shape_key`, in order of first
    appearance (one stack each)."""
    groups: dict[tuple, list[int]] = {}
    for i, spec in enumerate(listed("specs", specs, "specs (MHASpec or AoTSpec)")):
        if not isinstance(spec, (MHASpec, AoTSpec)):
            raise TypeError(f"specs[{i}] must be an MHASpec or AoTSpec, got {type(spec).__name__}")
        groups.setdefault(spec.shape_key(), []).append(i)
    return list(groups.values())


PAD_WASTE = 1.5
"""Largest ratio of padded to unpadded work at which MHA models of different H still share one stack."""

BIG_MODEL = 2e7
"""Head work per model-step (multiply-adds, see :func:`split_group`) above which one model already keeps
a CPU core busy, so that stacking it with others buys nothing and padding it costs in full."""


def split_group(specs: Sequence[Spec], batch: int | None, device_type: str = "cpu") -> list[list[int]]:
    """Indices of one shape group split into stacks where padding them to one shape would waste much work.

    AoTs: those with an MLP (w > 0) and those without go to separate stacks (padded together, every AoT
    would compute the widest MLP and every MLP model the most heads); on a CPU each part is then cut
    where padding costs more than another stack (:func:`memcap.train.partition.cheapest_cut`: on
    dana_fig2b's paper job, per-H stacks of H = 1..31 took 0.58 of the time of one padded stack). MHA models: split into stacks of
    equal H when they are big and H varies much, on a CPU only (``device_type`` ``"cpu"``): a GPU is far
    from full with one such model, and one stacked program saves the kernel launches that bound it (on an
    H200 the split left ``mahdavi_fig2a``'s stack no faster than one model at a time). A model's head work
    per step is
    B H (d d_h + n (d_h + d_v)) multiply-adds; the group is split when the mean is at least
    :data:`BIG_MODEL` and padding to the largest H would do more than :data:`PAD_WASTE` times the
    unpadded work (small models gain more from stacking than padding costs). Otherwise one stack:
    ``[[0, 1, ..., k-1]]``.
    """
    whole = [list(range(len(specs)))]
    if isinstance(specs[0], AoTSpec):
        parts = [[i for i, s in enumerate(specs) if (s.mlp_width > 0) == mlp] for mlp in (False, True)]
        parts = [p for p in parts if p]
        if device_type != "cpu":
            return parts
        return [[p[j] for j in cut] for p in parts for cut in cheapest_cut([specs[i] for i in p], batch)]
    if device_type != "cpu" or len({s.heads for s in specs}) == 1:
        return whole

    def work(s: MHASpec, heads: int) -> float:
        B = batch if batch is not None else s.examples
        return B * heads * (s.dim * s.d_h + s.context_size * (s.d_h + s.value_dim))

    true = [work(s, s.heads) for s in specs]
    H_max = max(s.heads for s in specs)
    padded = sum(work(s, H_max) for s in specs)
    if sum(true) / len(specs) < BIG_MODEL or padded <= PAD_WASTE * sum(true):
        return whole
    groups: dict[int, list[int]] = {}
    for i, s in enumerate(specs):
        groups.setdefault(s.heads, []).append(i)
    return list(groups.values())


class MemorySplitWarning(UserWarning):
    """A stack did not fit in the device's memory and was trained as two smaller stacks."""


def _train_fitting(part: list[int], specs: Sequence[Spec], config: TrainConfig, device: torch.device,
                   dtype: torch.dtype, keep_params: bool, compiled: bool, strict: bool,
                   checkpoint: Checkpoint | None, graphs: bool) -> list[tuple[list[int], dict]]:
    """Train the models ``part`` (indices into ``specs``) as one stack, or, where the device runs out of
    memory, as two halves (each split again while it does not fit): ``[(indices, stack result), ...]``.

    Splitting changes only how many models share a kernel, so the numbers are those of smaller stacks
    (equal up to float rounding, as with ``max_stack``). One model that does not fit raises the error.
    """
    try:
        return [(part, _train_stack([specs[i] for i in part], config, device, dtype, keep_params, compiled,
                                    strict=strict, checkpoint=checkpoint, graphs=graphs))]
    except Exception as error:   # noqa: BLE001 - only running out of memory is handled, see memory.out_of_memory
        if len(part) == 1 or not out_of_memory(error):
            raise
        said = (str(error).splitlines() or [type(error).__name__])[0]
        message = (f"a stack of {len(part)} models ran out of {device.type} memory ({said}); "
                   f"training it as two stacks of {len(part) // 2} and {len(part) - len(part) // 2}")
    # out of the except block: the error's frames (and the tensors they hold) are freed before retrying
    if device.type == "cuda":
        torch.cuda.empty_cache()
    warnings.warn(message, MemorySplitWarning, stacklevel=3)
    half = len(part) // 2
    return [done for sub in (part[:half], part[half:])
            for done in _train_fitting(sub, specs, config, device, dtype, keep_params, compiled, strict,
                                       checkpoint, graphs)]


def train_models(specs: Sequence[Spec], config: TrainConfig | None = None, *, keep_params: bool = False,
                 max_stack: int | None = None, compile: str | None = None,
                 checkpoint: Checkpoint | None = None, cuda_graphs: str | None = None) -> TrainResult:
    """Train every model of ``specs`` and evaluate it on its full training set.

    Models are grouped by ``shape_key``; each group (zero-padded exactly, split where padding would
    waste much work, see ``split_group`` in ``memcap.train.loop``, and into stacks of at most ``max_stack``
    models, None: no limit) trains as one stacked tensor program. ``config`` defaults to :class:`TrainConfig` (). ``compile``:
    'auto', 'always' or 'never' (None: the environment variable ``MEMCAP_COMPILE``, else 'auto'), whether the
    steps go through ``torch.compile``, see ``memcap.train.compiled``. ``checkpoint``: where finished stacks and
    the running one's state are kept, so that a stopped run goes on where it was with the same numbers
    (None: the one :func:`checkpointing` made active, if any). ``cuda_graphs``:
    'always' or 'never' (None: the environment variable ``MEMCAP_CUDA_GRAPHS``, else 'never'), whether the eager
    steps are recorded as CUDA graphs on CUDA, see ``memcap.train.graphs``. A stack that runs out of device
    memory trains as two halves, halved again while they do not fit (a ``MemorySplitWarning``; see
    ``_train_fitting``). Returns a :class:`TrainResult` in the order of ``specs``.
    """
    mode = compile_mode(compile)
    graphs = graph_mode(cuda_graphs) == "always"
    specs = listed("specs", specs, "specs (MHASpec or AoTSpec)")
    if not specs:
        raise ValueError("specs must hold at least one model, got an empty list")
    config = TrainConfig() if config is None else config
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")
    check_bool("keep_params", keep_params)
    if max_stack is not None:
        positive_int("max_stack", max_stack)
    checkpoint = active_checkpoint() if checkpoint is None else checkpoint
    if not isinstance(checkpoint, (Checkpoint, type(None))):
        raise TypeError(f"checkpoint must be a memcap.train.checkpoint.Checkpoint or None, got {type(checkpoint).__name__}")
    device = pick_device(config.device)
    for i, spec in enumerate(specs):
        if not isinstance(spec, (MHASpec, AoTSpec)):
            raise TypeError(f"specs[{i}] must be an MHASpec or AoTSpec, got {type(spec).__name__}")
        check_fits(spec, device, f"specs[{i}]")
    if config.batch_size is not None:
        check_allocation(f"the batch indices of {CHUNK} steps of a model", CHUNK * config.batch_size, device,
                         batch_size=config.batch_size)
    dtype = torch.float64 if config.dtype == "float64" else torch.float32
    compiled = use_compile(mode, device, config.steps)
    if device.type == "cpu":
        keep_freed_memory()   # no page faults per step for activations freed and allocated again
    k = len(specs)
    keys = ("accuracy", "loss", "memorized", "steps", "stop_step", "compiled")
    merged = {"accuracy": np.full(k, np.nan), "loss": np.zeros(k), "memorized": np.zeros(k, bool),
              "steps": np.zeros(k, np.int64), "stop_step": np.full(k, -1, np.int64), "compiled": np.zeros(k, bool)}
    params: list = [None] * k
    hist_steps: list[int] = []
    hist: dict[int, tuple[dict[int, float], dict[int, float]]] = {}
    start = time.perf_counter()
    parts = [[group[j] for j in sub] for group in group_by_shape(specs)
             for sub in split_group([specs[i] for i in group], config.batch_size, device.type)]
    for group in parts:
        size = len(group) if max_stack is None else max_stack
        trained = [done for lo in range(0, len(group), size)
                   for done in _train_fitting(group[lo:lo + size], specs, config, device, dtype, keep_params,
                                              compiled, mode == "always", checkpoint, graphs)]
        for part, out in trained:
            for key in keys:
                merged[key][part] = out[key]
            for e, s in enumerate(out["history_steps"]):
                accs, losses = hist.setdefault(int(s), ({}, {}))
                for j, i in enumerate(part):
                    accs[i], losses[i] = out["history_accuracy"][e, j], out["history_loss"][e, j]
            if keep_params:
                for j, i in enumerate(part):
                    params[i] = out["params"][j]
    hist_steps = sorted(hist)
    h_acc = np.full((len(hist_steps), k), np.nan)
    h_loss = np.full((len(hist_steps), k), np.nan)
    for e, s in enumerate(hist_steps):
        for i, v in hist[s][0].items():
            h_acc[e, i] = v
        for i, v in hist[s][1].items():
            h_loss[e, i] = v
    return TrainResult(specs=specs, history_steps=np.asarray(hist_steps, np.int64), history_accuracy=h_acc,
                       history_loss=h_loss, seconds=time.perf_counter() - start, device=str(device),
                       params=tuple(params) if keep_params else None, **merged)
