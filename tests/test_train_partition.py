"""Tests of memcap.train.partition: the cost model and the cheapest cut of AoTs into stacks on a CPU."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from memcap.train import AoTSpec, TrainConfig, partition, train_models
from memcap.train.loop import split_group
from memcap.train.partition import STACK_COST, aot_work, cheapest_cut

pytestmark = pytest.mark.usefixtures("one_thread")


def _cost(specs, stacks, batch):
    """Total cost of a cut, as cheapest_cut defines it."""
    total = 0.0
    for stack in stacks:
        run = [specs[i] for i in stack]
        total += STACK_COST + len(run) * aot_work(partition.padded_model(run), batch)
    return total


def test_cheapest_cut_is_the_least_cost_of_all_cuts_of_the_sorted_models():
    """Brute force over every cut of the size-sorted models into consecutive stacks: the dynamic programme
    finds one of least cost, and it is a partition of the models."""
    specs = [AoTSpec(heads=H, head_dim=13, dim=13, mlp_width=w, seed=s)
             for H, w in ((1, 0), (31, 0), (6, 0), (16, 0), (1, 400)) for s in range(3)]
    cut = cheapest_cut(specs, 1024)
    assert sorted(i for stack in cut for i in stack) == list(range(len(specs)))
    order = sorted(range(len(specs)), key=lambda i: (specs[i].mlp_width, specs[i].heads))
    best = min(_cost(specs, [order[a:b] for a, b in zip((0,) + bounds, bounds + (len(specs),))], 1024)
               for r in range(len(specs)) for bounds in itertools.combinations(range(1, len(specs)), r))
    assert _cost(specs, cut, 1024) == pytest.approx(best, rel=1e-12)
    assert len(cut) > 1 and _cost(specs, cut, 1024) < _cost(specs, [list(range(len(specs)))], 1024)


def test_work_counts_the_pair_grid_for_two_tokens_and_the_examples_otherwise():
    spec = AoTSpec(heads=3, head_dim=2, dim=4, vocab=5, mlp_width=6)
    assert aot_work(spec, 8) == 25 * 3 * (2 + 8) + 8 * 4 * (12 + 5)           # B = 8 < N^2 = 25 rows
    assert aot_work(spec, 100) == 25 * 3 * (2 + 8) + 25 * 4 * (12 + 5)       # B >= N^2: the 25 sequences
    long = AoTSpec(heads=3, head_dim=2, dim=4, vocab=5, seq_len=3)
    assert aot_work(long, 8) == 8 * (3 * 10 * 4 * 2 + 4 * 5)
    assert aot_work(long, None) == long.T0 * (3 * 10 * 4 * 2 + 4 * 5)


def test_big_aots_of_different_h_get_their_own_stacks_on_a_cpu_only():
    """dana_fig2b's paper models (N = 50, d = d_h = 13, batch 1024), five seeds of H = 1 and of H = 31: two
    stacks on a CPU (padding H = 1 to 31 costs more than a stack), one on a GPU; small models: one stack."""
    big = [AoTSpec(heads=H, head_dim=13, dim=13, seed=s) for H in (1, 31) for s in range(5)]
    assert split_group(big, 1024) == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    assert split_group(big, 1024, "cuda") == [list(range(10))]
    small = [AoTSpec(heads=H, head_dim=2, dim=3, vocab=5, seed=s) for H in (1, 4) for s in range(3)]
    assert split_group(small, 16) == [list(range(6))]


def test_a_cut_stack_trains_each_model_as_one_padded_stack_does(monkeypatch):
    """With no fixed cost every size gets its own stack: the numbers equal those of one padded stack."""
    cfg = TrainConfig(steps=25, batch_size=16, lr=1e-2, schedule="constant", early_stop=False, dtype="float64",
                      device="cpu")
    shapes = [(1, 2), (3, 3), (2, 2)]
    specs = [AoTSpec(heads=H, head_dim=dh, dim=3, vocab=5, seed=i) for i, (H, dh) in enumerate(shapes)]
    assert split_group(specs, 16) == [[0, 1, 2]]
    together = train_models(specs, cfg, keep_params=True)
    monkeypatch.setattr(partition, "STACK_COST", 0.0)
    assert len(split_group(specs, 16)) == 3
    apart = train_models(specs, cfg, keep_params=True)
    assert np.allclose(apart.loss, together.loss, atol=1e-9, rtol=0)
    for i in range(len(specs)):
        for name, w in apart.params[i].items():
            assert np.allclose(w, together.params[i][name], atol=1e-9, rtol=0), name
