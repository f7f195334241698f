"""CUDA graphs for the training step (memcap/train/graphs.py): the step is ready to be recorded.

On a CPU, ``cuda_graphs='always'`` runs the step that CUDA would record, on its fixed buffers, without
recording it: it must give the eager loop's numbers bit for bit, change the stack's state only in place, and
read nothing back from the device (``tests/test_checkpoint.py`` counts those reads). ``tests/test_gpu.py``
records and replays it on CUDA.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from memcap.train import AoTSpec, MHASpec, TrainConfig, adam, graphs, train_models
from memcap.train.checkpoint import Checkpoint

SPECS = [MHASpec(heads=h, context_size=4, examples=12, dim=8, classes=3, seed=h) for h in (1, 2, 4)] + \
        [AoTSpec(heads=h, head_dim=4, dim=4, vocab=4, seed=h) for h in (1, 3)]


def _same(a, b) -> None:
    for name in ("loss", "memorized", "steps", "stop_step", "history_steps", "history_loss"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert all(np.array_equal(pa[k], pb[k]) for pa, pb in zip(a.params, b.params) for k in pa)


@pytest.mark.parametrize("config", [TrainConfig(steps=700, batch_size=8, lr=5e-3, eval_every=100),
                                    TrainConfig(steps=300, lr=5e-3, eval_every=100),
                                    TrainConfig(steps=300, batch_size=8, lr=5e-3, early_stop=False,
                                                schedule="warmup_cosine", eval_every=100)],
                         ids=["mini-batches, early stop", "full batch", "no early stop, warm-up"])
def test_the_recordable_step_gives_the_eager_numbers(config):
    eager = train_models(SPECS, config, keep_params=True, compile="never", cuda_graphs="never")
    static = train_models(SPECS, config, keep_params=True, compile="never", cuda_graphs="always")
    _same(static, eager)
    if config.early_stop:   # models froze mid-run: the masked Adam step ran too
        assert (eager.stop_step > 0).any() and (eager.stop_step < 0).any()


def test_the_recordable_step_goes_on_from_a_checkpoint(tmp_path):
    config = TrainConfig(steps=700, batch_size=8, lr=5e-3, eval_every=100)
    eager = train_models(SPECS, config, keep_params=True, compile="never")

    class Stop(Exception):
        pass
    real = Checkpoint.save_state

    def stop_after_first(self, key, state):
        real(self, key, state)
        raise Stop
    Checkpoint.save_state = stop_after_first
    try:
        with pytest.raises(Stop):
            train_models(SPECS, config, keep_params=True, compile="never", cuda_graphs="always",
                         checkpoint=Checkpoint(tmp_path, every=0))
    finally:
        Checkpoint.save_state = real
    kept = Checkpoint(tmp_path, every=0)
    _same(train_models(SPECS, config, keep_params=True, compile="never", cuda_graphs="always", checkpoint=kept), eager)
    assert kept.resumed


@pytest.mark.parametrize("all_active", [True, False])
def test_adam_changes_the_state_in_place(all_active):
    """A recorded graph reads and writes fixed addresses: a step that put new tensors in ``state`` would
    leave the replayed graph updating the old ones."""
    flat = torch.randn(3, 5)
    state = {"t": torch.zeros(3, dtype=torch.long), "m": torch.zeros(3, 5), "v": torch.zeros(3, 5)}
    before = {k: (v, v.data_ptr()) for k, v in state.items()}
    active = torch.tensor([True, True, all_active])
    adam.adam_update(flat, torch.randn(3, 5), state, torch.full((3,), 1e-2), active, (0.9, 0.999), 1e-8,
                     all_active=all_active)
    assert all(state[k] is t and state[k].data_ptr() == p for k, (t, p) in before.items())
    assert state["t"].tolist() == [1, 1, int(all_active)]


def test_the_mode_is_checked(monkeypatch):
    assert graphs.graph_mode(None) == "never"
    monkeypatch.setenv(graphs.ENV, "always")
    assert graphs.graph_mode(None) == "always"
    monkeypatch.setenv(graphs.ENV, "sometimes")
    with pytest.raises(ValueError, match="MEMCAP_CUDA_GRAPHS must be one of"):
        graphs.graph_mode(None)
    with pytest.raises(ValueError, match="cuda_graphs must be one of"):
        train_models(SPECS[:1], TrainConfig(steps=1), cuda_graphs="fast")


class Program(TorchDispatchMode):
    """What a CUDA graph keeps of one call of the step: every kernel, in order, with its arguments as a replay
    would see them. A number is kept as its value (recording bakes it in); a tensor made earlier in the same call
    by the kernel it came from; any other tensor (weights, moments, buffers, data: memory the graph reads from
    or writes to in place) by its address, dtype, shape and strides (a replay reads that memory, whatever
    tensor the host code later means)."""

    def __init__(self) -> None:
        super().__init__()
        self.kernels: list[tuple] = []
        self.made: dict[int, int] = {}     # address -> the kernel of this call that last wrote a new tensor there
        self.outside: set[int] = set()

    def _seen(self, t: torch.Tensor) -> tuple:
        address = t.untyped_storage().data_ptr()
        if address in self.made:
            return ("made by", self.made[address], t.dtype, tuple(t.shape), t.stride(), t.storage_offset())
        self.outside.add(address)
        return ("at", address, t.dtype, tuple(t.shape), t.stride(), t.storage_offset())

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        seen = tuple(self._seen(a) if isinstance(a, torch.Tensor) else a
                     for a in tree_flatten((args, kwargs))[0])
        out = func(*args, **kwargs)
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() not in self.outside:
                self.made[t.untyped_storage().data_ptr()] = len(self.kernels)
        self.kernels.append((str(func), seen))
        return out


@pytest.mark.parametrize("config", [TrainConfig(steps=700, batch_size=8, lr=5e-3, eval_every=100),
                                    TrainConfig(steps=300, lr=5e-3, eval_every=100, schedule="warmup_cosine")],
                         ids=["mini-batches, early stop", "full batch, warm-up"])
def test_every_call_of_the_recordable_step_runs_the_program_a_recording_would_replay(monkeypatch, config):
    """On CUDA the step is recorded once per stack and branch, then replayed: the replay runs the recorded
    kernels on the recorded memory with the recorded numbers. So every call of the step, at any step of training,
    must run that same program: a learning rate or bias correction computed on the host, a tensor made anew
    outside the step and read inside it, a branch on the step number would all train right on a CPU and
    wrong (silently, with stale values) from a replayed graph. Traced on the CPU, call by call."""
    monkeypatch.setattr(adam, "_sqrt", torch.sqrt)   # the CPU's square root through NumPy is a CPU's only
    programs: dict[tuple[int, bool], list[list]] = {}
    body_of = graphs.StaticStep.__init__

    def traced_init(self, body, *args):
        def traced(idx, lr, active, all_active):
            with Program() as program:
                body(idx, lr, active, all_active)
            programs.setdefault((id(self), all_active), []).append(program.kernels)
        body_of(self, traced, *args)
    monkeypatch.setattr(graphs.StaticStep, "__init__", traced_init)
    train_models(SPECS, config, compile="never", cuda_graphs="always")
    branches = {all_active for _, all_active in programs}
    assert branches == ({True, False} if config.batch_size else {True})   # early stop froze models mid-run
    for (_, all_active), calls in programs.items():
        first = calls[0]
        assert len(first) > 20 and any("addmm" in k or "bmm" in k or "matmul" in k for k, _ in first)
        for n, kernels in enumerate(calls[1:], 2):
            assert len(kernels) == len(first), f"call {n} ran {len(kernels)} kernels, the first {len(first)}"
            for j, (a, b) in enumerate(zip(first, kernels)):
                assert a == b, f"call {n} (all_active={all_active}), kernel {j}: {b} where the first call ran {a}"
    assert sum(len(calls) for calls in programs.values()) > 100
