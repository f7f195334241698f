"""CUDA graphs for the training step (memcap/train/graphs.py): the step is ready to be recorded.

On a CPU, ``cuda_graphs='always'`` runs the step that CUDA would record, on its fixed buffers, without
recording it: it must give the eager loop's numbers bit for bit, change the stack's state only in place, and
read nothing back from the device (``tests/test_checkpoint.py`` counts those reads). ``tests/test_gpu.py``
records and replays it on CUDA.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from memcap.train import AoTSpec, MHASpec, TrainConfig, adam, graphs, group_by_shape, train_models
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


class _SimulatedGraph:
    """What a replay does, on the CPU: the recorded step on the recording's buffers (read at replay time)."""

    def __init__(self, step: graphs.StaticStep, all_active: bool) -> None:
        self.step, self.all_active = step, all_active
        self.replays = 0

    def replay(self) -> None:
        self.replays += 1
        s = self.step
        s.body(s.idx, s.lr, s.active, self.all_active)


def _recording_on_the_cpu(monkeypatch, fails, made: list) -> None:
    """StaticStep takes its CUDA path on the CPU's tensors: the warm-up runs the step WARMUP times (state put
    back by ``kept_state``, as on CUDA), and the capture either raises ``fails(all_active)`` or makes a
    :class:`_SimulatedGraph` (kept in ``made``)."""
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: False)
    real_init = graphs.StaticStep.__init__

    def init(self, *args):
        real_init(self, *args)
        self.device = torch.device("cuda")

    def warm_up(self, all_active):
        with graphs.kept_state(self.state):
            for _ in range(graphs.WARMUP):
                self.body(self.idx, self.lr, self.active, all_active)

    def capture(self, all_active):
        error = fails(all_active)
        if error is not None:
            raise error
        made.append(_SimulatedGraph(self, all_active))
        return made[-1]
    monkeypatch.setattr(graphs.StaticStep, "__init__", init)
    monkeypatch.setattr(graphs.StaticStep, "_warm_up", warm_up)
    monkeypatch.setattr(graphs.StaticStep, "_capture", capture)


EARLY_STOP = TrainConfig(steps=700, batch_size=8, lr=5e-3, eval_every=100)   # both branches: models freeze mid-run


def test_the_recording_path_replays_what_it_recorded_with_the_eager_numbers(monkeypatch):
    """The control for the tests below: with captures that succeed, every stack records each branch once,
    replays it from then on, and its warm-ups leave no trace in the numbers."""
    eager = train_models(SPECS, EARLY_STOP, keep_params=True, compile="never")
    made: list[_SimulatedGraph] = []
    _recording_on_the_cpu(monkeypatch, lambda all_active: None, made)
    with warnings.catch_warnings():
        warnings.simplefilter("error", graphs.GraphWarning)
        replayed = train_models(SPECS, EARLY_STOP, keep_params=True, compile="never", cuda_graphs="always")
    _same(replayed, eager)
    assert {g.all_active for g in made} == {True, False}
    assert len({(id(g.step), g.all_active) for g in made}) == len(made)   # recorded once per stack and branch
    assert sum(g.replays for g in made) > 100


@pytest.mark.parametrize("failing", ["first branch", "second branch"])
@pytest.mark.parametrize("error", [RuntimeError("operation failed due to a previous error during capture"),
                                   torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")],
                         ids=["refused", "pool could not grow"])
def test_a_capture_that_fails_leaves_the_stack_to_the_eager_step_with_the_same_numbers(monkeypatch, failing, error):
    """A capture that fails after its warm-up (which fitted): a GraphWarning per stack, the eager step from then
    on, bit for bit the eager run's numbers; a failure of the second branch's capture, mid-run, drops the first
    branch's graph too."""
    eager = train_models(SPECS, EARLY_STOP, keep_params=True, compile="never")
    made: list[_SimulatedGraph] = []
    _recording_on_the_cpu(monkeypatch, lambda all_active: error if all_active == (failing == "first branch") else None,
                          made)
    with pytest.warns(graphs.GraphWarning) as caught:
        fallen = train_models(SPECS, EARLY_STOP, keep_params=True, compile="never", cuda_graphs="always")
    _same(fallen, eager)
    said = [str(w.message) for w in caught if issubclass(w.category, graphs.GraphWarning)]
    assert len(said) == len(group_by_shape(SPECS))   # one per stack
    start = f"recording the step as a CUDA graph failed ({type(error).__name__}: {error}"
    assert all(s.startswith(start) for s in said)
    if failing == "first branch":
        assert not made
    else:
        assert made and all(g.all_active for g in made)


def test_kept_state_puts_the_state_back_even_when_the_block_raises():
    state = [torch.arange(6.0).reshape(2, 3), torch.zeros(2, dtype=torch.long)]
    before = [t.clone() for t in state]
    addresses = [t.data_ptr() for t in state]
    with graphs.kept_state(state):
        state[0].mul_(3)
        state[1].add_(1)
    assert all(torch.equal(t, b) for t, b in zip(state, before))
    with pytest.raises(KeyError), graphs.kept_state(state):
        state[0].add_(1)
        raise KeyError("a warm-up step failed")
    assert all(torch.equal(t, b) for t, b in zip(state, before))
    assert [t.data_ptr() for t in state] == addresses   # in place: a recorded graph keeps these addresses


def test_a_failed_capture_says_when_the_device_ran_out_of_memory_behind_the_error_torch_raised(monkeypatch):
    """torch may report out of memory inside a capture as the capture's failed end: the warning says both."""
    _recording_on_the_cpu(monkeypatch, lambda all_active: None, [])

    def capture(self, all_active):
        try:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.00 PiB")
        finally:
            raise RuntimeError("CUDA error: operation failed due to a previous error during capture")
    monkeypatch.setattr(graphs.StaticStep, "_capture", capture)
    with pytest.warns(graphs.GraphWarning, match=r"\(RuntimeError: CUDA error: operation failed due to a previous "
                      r"error during capture, after the device ran out of memory\); this stack trains with the eager"):
        train_models(SPECS[:1], TrainConfig(steps=20, batch_size=8), compile="never", cuda_graphs="always")


def test_out_of_memory_in_the_warm_up_splits_the_stack_instead_of_falling_back(monkeypatch):
    """The warm-up is the eager step: if it does not fit, neither does the eager step, so the error goes to the
    loop, which trains the stack as smaller ones (each recorded), with the numbers of models trained alone."""
    from memcap.train.loop import MemorySplitWarning

    alone = train_models(SPECS, EARLY_STOP, keep_params=True, compile="never", max_stack=1)
    made: list[_SimulatedGraph] = []
    _recording_on_the_cpu(monkeypatch, lambda all_active: None, made)
    real_warm_up = graphs.StaticStep._warm_up

    def warm_up(self, all_active):
        if self.idx.shape[0] > 1:
            with graphs.kept_state(self.state):
                self.body(self.idx, self.lr, self.active, all_active)
                raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 9.00 GiB (simulated)")
        real_warm_up(self, all_active)
    monkeypatch.setattr(graphs.StaticStep, "_warm_up", warm_up)
    with warnings.catch_warnings():
        warnings.simplefilter("error", graphs.GraphWarning)
        with pytest.warns(MemorySplitWarning, match="ran out of cpu memory .CUDA out of memory. Tried to allocate 9"):
            split = train_models(SPECS, EARLY_STOP, keep_params=True, compile="never", cuda_graphs="always")
    for name in ("loss", "memorized", "steps", "stop_step", "history_steps", "history_loss"):   # NaN: stopped
        np.testing.assert_array_equal(getattr(split, name), getattr(alone, name), err_msg=name)
    assert made and all(g.step.idx.shape[0] == 1 for g in made)   # split down to one model a stack
