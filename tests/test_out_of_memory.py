"""Tests of memcap/train/loop.py's ``_train_fitting``: a stack that runs out of device memory trains as
smaller stacks, with the numbers of smaller stacks. Out of memory is simulated (a CPU does not run out)."""
from __future__ import annotations

import numpy as np
import pytest

import memcap.train.loop as loop
from memcap.train import AoTSpec, TrainConfig, train_models
from memcap.train.compiled import CompileWarning

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
            raise loop.OUT_OF_MEMORY("CUDA out of memory. Tried to allocate 20.00 GiB (simulated)")
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
    with pytest.raises(loop.OUT_OF_MEMORY, match="simulated"), pytest.warns(loop.MemorySplitWarning):
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
                raise loop.OUT_OF_MEMORY("CUDA out of memory (simulated, while compiling)")
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
