"""Tests of memcap/train/loop.py's ``_train_fitting``: a stack that runs out of device memory trains as
smaller stacks, with the numbers of smaller stacks; and of what counts as out of memory
(memcap/train/memory.py's ``out_of_memory``). Out of memory is simulated (a CPU does not run out)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import memcap.train.loop as loop
from memcap.train import AoTSpec, TrainConfig, train_models
from memcap.train.compiled import CompileWarning
from memcap.train.memory import OUT_OF_MEMORY, out_of_memory

pytestmark = pytest.mark.usefixtures("one_thread")

CONFIG = TrainConfig(steps=80, batch_size=8, lr=5e-2, schedule="constant", device="cpu", eval_every=20,
                     dtype="float64")
SPECS = [AoTSpec(heads=2, head_dim=3, dim=3, vocab=4, seed=i) for i in range(5)]   # one shape: one stack


def _fits_at_most(limit: int, stacks: list[int]):
    """A ``_train_stack`` that raises torch's out-of-memory error for stacks of more than ``limit`` models
    (recording every stack size it was asked for in ``stacks``)."""
    real = loop._train_stack

    def train_stack(specs, *args, **kwargs):
        stacks.append(len(specs))
        if len(specs) > limit:
            raise OUT_OF_MEMORY("CUDA out of memory. Tried to allocate 20.00 GiB (simulated)")
        return real(specs, *args, **kwargs)
    return train_stack


def _same(a, b) -> None:
    np.testing.assert_allclose(a.loss, b.loss, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(a.accuracy, b.accuracy)
    np.testing.assert_array_equal(a.steps, b.steps)
    np.testing.assert_array_equal(a.stop_step, b.stop_step)
    np.testing.assert_array_equal(a.history_steps, b.history_steps)
    both = ~np.isnan(a.history_loss) & ~np.isnan(b.history_loss)   # a model stopped early has no later rows
    assert both[0].all()                                             # alone, while its stack-mates train
    np.testing.assert_allclose(a.history_loss[both], b.history_loss[both], rtol=1e-9, atol=1e-12)
    for pa, pb in zip(a.params, b.params):
        for name in pa:
            np.testing.assert_allclose(pa[name], pb[name], rtol=1e-9, atol=1e-12)


def test_a_stack_that_does_not_fit_trains_as_halves_with_the_numbers_of_models_trained_alone(monkeypatch):
    alone = train_models(SPECS, CONFIG, keep_params=True, max_stack=1)
    stacks: list[int] = []
    monkeypatch.setattr(loop, "_train_stack", _fits_at_most(2, stacks))
    with pytest.warns(loop.MemorySplitWarning) as caught:
        split = train_models(SPECS, CONFIG, keep_params=True)
    said = [str(w.message) for w in caught]
    assert len(said) == 2
    assert said[0].startswith("a stack of 5 models ran out of cpu memory (CUDA out of memory. Tried")
    assert said[0].endswith("training it as two stacks of 2 and 3") and "stacks of 1 and 2" in said[1]
    assert stacks == [5, 2, 3, 1, 2]   # 5 -> 2 + 3; the 3 -> 1 + 2
    _same(split, alone)
    assert [r["seed"] for r in split.records()] == [s.seed for s in SPECS]   # results in the order of specs


def test_one_model_that_does_not_fit_raises_the_out_of_memory_error(monkeypatch):
    monkeypatch.setattr(loop, "_train_stack", _fits_at_most(0, []))
    with pytest.raises(OUT_OF_MEMORY, match="simulated"), pytest.warns(loop.MemorySplitWarning):
        train_models(SPECS[:2], CONFIG)


def test_out_of_memory_while_compiling_splits_the_stack_instead_of_dropping_to_the_eager_step(monkeypatch):
    """The compile fallback (any error of the first compiled call: train eagerly) lets an out-of-memory error
    through, so the smaller stacks still compile."""
    alone = train_models(SPECS[:4], CONFIG, keep_params=True, max_stack=1, compile="never")
    sizes: list[int] = []

    def compiled_loss(device_type):
        def loss_of(stack, flat, idx, weight):
            sizes.append(len(stack.specs))
            if len(stack.specs) > 2:
                raise OUT_OF_MEMORY("CUDA out of memory (simulated, while compiling)")
            return stack.losses(stack.views(flat), idx, weight, count_correct=False)[0]
        return loss_of

    monkeypatch.setattr(loop, "use_compile", lambda mode, device, steps: True)
    monkeypatch.setattr(loop, "compiles_well", lambda specs, batch: True)
    monkeypatch.setattr(loop, "compiled_stack_loss", compiled_loss)
    with pytest.warns(loop.MemorySplitWarning) as caught:
        split = train_models(SPECS[:4], CONFIG, keep_params=True)
    assert not [w for w in caught if issubclass(w.category, CompileWarning)]
    assert sizes[0] == 4 and set(sizes[1:]) == {2}
    assert split.compiled.all()
    _same(split, alone)


def _raised(make):
    try:
        make()
    except Exception as err:   # noqa: BLE001 - the error as Python leaves it, with its context
        return err
    raise AssertionError("nothing was raised")


def _capture_end_after(error):
    """What torch raises when a CUDA graph's capture ends after an error inside it: a RuntimeError of its own,
    the first error as its context."""
    def make():
        try:
            raise error
        finally:
            raise RuntimeError("CUDA error: operation failed due to a previous error during capture")
    return _raised(make)


def test_out_of_memory_is_recognised_where_torch_raised_it_and_nothing_else_is():
    assert out_of_memory(OUT_OF_MEMORY("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert out_of_memory(_capture_end_after(OUT_OF_MEMORY("CUDA out of memory (simulated)")))
    assert out_of_memory(RuntimeError("CUDA error: out of memory"))
    assert out_of_memory(RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`"))
    wrapped = ValueError("a checkpoint could not be taken")
    wrapped.__cause__ = OUT_OF_MEMORY("CUDA out of memory (simulated)")   # raise ... from the allocator's error
    assert out_of_memory(wrapped)
    assert not out_of_memory(_capture_end_after(ValueError("a bad shape")))
    assert not out_of_memory(RuntimeError("mat1 and mat2 shapes cannot be multiplied (4x3 and 4x3)"))
    looped = RuntimeError("a")
    looped.__context__ = KeyError("b")
    looped.__context__.__context__ = looped   # a cycle ends the walk
    assert not out_of_memory(looped)
    with pytest.raises(TypeError, match="error must be an exception, got str"):
        out_of_memory("CUDA out of memory")


def test_a_stack_whose_capture_ended_in_an_out_of_memory_error_is_split(monkeypatch):
    """The error torch reports is the capture's end, its context the allocator's: the stack is split."""
    alone = train_models(SPECS[:2], CONFIG, keep_params=True, max_stack=1)
    real = loop._train_stack

    def train_stack(specs, *args, **kwargs):
        if len(specs) > 1:
            raise _capture_end_after(OUT_OF_MEMORY("CUDA out of memory (simulated)"))
        return real(specs, *args, **kwargs)
    monkeypatch.setattr(loop, "_train_stack", train_stack)
    with pytest.warns(loop.MemorySplitWarning, match="ran out of cpu memory .CUDA error: operation failed due"):
        split = train_models(SPECS[:2], CONFIG, keep_params=True)
    _same(split, alone)


def test_any_other_error_of_a_stack_is_raised_as_it_is_without_splitting(monkeypatch):
    def train_stack(specs, *args, **kwargs):
        raise _capture_end_after(ValueError("a bad shape"))
    monkeypatch.setattr(loop, "_train_stack", train_stack)
    with warnings.catch_warnings():
        warnings.simplefilter("error", loop.MemorySplitWarning)
        with pytest.raises(RuntimeError, match="previous error during capture") as raised:
            train_models(SPECS[:2], CONFIG)
    assert isinstance(raised.value.__context__, ValueError)
