"""Inputs that are finite and well-shaped but break a hypothesis or a contract: refused by name, or made right.

tests/test_bad_inputs.py fuzzes NaN, inf, empty, dtype and shape into every public function; these are the
cases a review found beyond it (a zero query, d_h > d, a tie, weights of another width or dtype, uint8 ids,
non-integer step counts), one test each, each failing on the code before the fix.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from memcap import data, models
from memcap.construct import dana, mahdavi
from memcap.construct import dana_features as DF
from memcap.train import TrainConfig, aot_forward_stacked, lr_factor, mha_forward_stacked

F64 = torch.float64


def _task(T=4, n=2, d=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(T, n, d, generator=g, dtype=F64), torch.randn(T, d, generator=g, dtype=F64))


def test_a_zero_query_is_refused_even_when_no_query_must_vanish():
    """Lemma 3 needs u^T e^(s) != 0 on every other example; a zero query gives a tie at 0 whatever u is."""
    E, e = _task()
    mahdavi.rank_one_separator(E, e, [])                      # Gaussian queries: fine
    e[1] = 0
    with pytest.raises(ValueError, match="Assumption 1 fails.*examples \\[1\\]"):
        mahdavi.rank_one_separator(E, e, [])


def test_weights_and_queries_of_different_widths_are_refused_by_name():
    E, e = _task()
    separator = mahdavi.rank_one_separator(E, e, [0])
    with pytest.raises(ValueError, match="queries must have d = 5, the dimension of the separator"):
        separator.logits(E[..., :4], e[:, :4])
    theta = torch.full((1, 2), 0.5, dtype=F64)
    head = mahdavi.claim1_head(E, e, [0], theta, head_dim=2)
    with pytest.raises(ValueError, match="queries must have d = 5, the dimension of the head"):
        head.attention(E[..., :4], e[:, :4])


def test_lemma4_bound_refuses_a_tie_and_a_negative_scale():
    a_star = torch.tensor([[0.0, 1.0, 0.0]], dtype=F64)
    with pytest.raises(ValueError, match="unique largest logit"):
        mahdavi.saturation_bound(a_star, torch.tensor([[1.0, 1.0, 0.0]], dtype=F64), 5.0)
    with pytest.raises(ValueError, match="c must be"):
        mahdavi.saturation_bound(a_star, torch.tensor([[2.0, 1.0, 0.0]], dtype=F64), -1.0)


def test_remark1_count_needs_n_below_d_like_its_construction():
    e = torch.randn(6, 3, generator=torch.Generator().manual_seed(1), dtype=F64)
    with pytest.raises(ValueError, match="n >= d"):
        mahdavi.remark1_capacity(e, context_size=5, heads=2, head_dim=4)


def test_feature_count_sets_refuse_head_dim_above_dim():
    """kappa bounds the rank only for d_h <= d: above it, 'unproved' sets would be impossible ones."""
    tokens = data.all_sequences(2, 2, device="cpu")
    with pytest.raises(ValueError, match="d_h > d"):
        DF.tight_sets(tokens, 1, 1, 3)
    with pytest.raises(ValueError, match="d_h > d"):
        DF.certify_all_sets(2, 2, 1, 1, 3)


def test_sequence_encoder_and_head_inputs_refuse_mixed_or_wrong_inputs():
    with pytest.raises(ValueError, match="dtype"):
        dana.SequenceEncoder(torch.zeros(4, 2, dtype=F64), torch.zeros(3, 2, dtype=torch.float32))
    with pytest.raises(TypeError, match="params must be AoTParams"):
        dana.head_input_matrix({"a": 1}, torch.tensor([[0, 1]]))


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16, torch.int32])
def test_ids_of_any_integer_dtype_index_as_ids(dtype):
    """torch indexes with uint8 as with a mask; ids are converted to int64 at the boundary."""
    params = models.init_aot(5, 3, 4, 2, 2, generator=torch.Generator().manual_seed(0), device="cpu")
    tokens = torch.tensor([[1, 2, 3], [4, 0, 1]])
    assert torch.equal(models.aot_forward(params, tokens.to(dtype)), models.aot_forward(params, tokens))
    stacked = {name: getattr(params, name)[None] for name in models.aot_parameter_names}
    assert torch.equal(aot_forward_stacked(stacked, tokens[None].to(dtype)), aot_forward_stacked(stacked, tokens[None]))


def test_stacked_forwards_refuse_a_mix_of_dtypes_by_name():
    gen = torch.Generator().manual_seed(2)
    mha = models.init_mha(2, 6, 3, 2, 4, generator=gen, dtype=torch.float32, device="cpu")
    stacked = {name: getattr(mha, name)[None] for name in models.mha_parameter_names}
    contexts, queries = torch.rand(1, 5, 6, generator=gen), torch.rand(1, 7, 6, generator=gen)
    with pytest.raises(ValueError, match="queries has dtype torch.float64"):
        mha_forward_stacked(stacked, contexts, queries.double())
    with pytest.raises(ValueError, match="params\\['W_Q'\\] has dtype torch.float64"):
        mha_forward_stacked({**stacked, "W_Q": stacked["W_Q"].double()}, contexts, queries)
    aot = models.init_aot(6, 3, 4, 2, 2, generator=gen, dtype=torch.float32, device="cpu")
    stacked = {name: getattr(aot, name)[None] for name in models.aot_parameter_names}
    with pytest.raises(ValueError, match="params\\['W_U'\\] has dtype torch.float64"):
        aot_forward_stacked({**stacked, "W_U": stacked["W_U"].double()}, torch.zeros(1, 2, 3, dtype=torch.long))


def test_lr_factor_takes_whole_step_counts_and_names_shapes_that_do_not_broadcast():
    with pytest.raises(ValueError, match="step must be whole numbers"):
        lr_factor(2.5, 10)
    with pytest.raises(ValueError, match="total_steps must be whole numbers"):
        lr_factor(2, 10.5)
    with pytest.raises(ValueError, match="do not broadcast"):
        lr_factor(torch.zeros(3), torch.full((2,), 5.0))
    table = lr_factor(torch.arange(4.0)[:, None], torch.tensor([10.0, 20.0]))   # the engine's (k, m) table
    assert table.shape == (4, 2)


def test_array_like_logits_take_the_dtype_of_p():
    p = torch.tensor([[0.5, 0.5]], dtype=torch.float32)
    kl = data.kl_divergence(p, [[1.0, 2.0]])
    assert kl.dtype == torch.float32 and torch.allclose(kl, data.kl_divergence(p, torch.tensor([[1.0, 2.0]])))


def test_records_keep_json_types():
    config = TrainConfig(device=torch.device("cpu"))
    assert config.device == "cpu" and json.loads(json.dumps(config.to_dict()))["device"] == "cpu"
    task = data.MemorizationTask(torch.zeros(2, 3, dtype=F64), torch.zeros(2, 3, dtype=F64),
                                 torch.tensor([0, 2]), classes=np.int64(3))
    assert type(task.classes) is int


def test_hand_made_enclosures_are_checked():
    from memcap.certify import Enclosure, certify_full_rank

    good = Enclosure([[4, 0], [0, 4]], [[1, 0], [0, 1]], 2)   # lists become tuples of ints
    assert good.mid == ((4, 0), (0, 4)) and good.shape == (2, 2) and certify_full_rank(good).certified
    with pytest.raises(ValueError, match=r"radius must have mid's shape \(rows, columns\) = \(2, 2\), got \(1, 2\)"):
        Enclosure(((4, 0), (0, 4)), ((1, 0),), 2)          # certify_full_rank leaked IndexError on it
    with pytest.raises(ValueError, match="mid must be rectangular, got rows of lengths \\[1, 2\\]"):
        Enclosure(((4, 0), (4,)), ((1, 0), (1,)), 2)
    with pytest.raises(ValueError, match="radius must hold integers >= 0"):
        Enclosure(((4, 0), (0, 4)), ((1, 0), (0, -1)), 2)
    with pytest.raises(TypeError, match="mid must hold integers \\(an enclosure is exact\\), got 0.5"):
        Enclosure(((4, 0.5), (0, 4)), ((1, 0), (0, 1)), 2)
    with pytest.raises(TypeError, match="mid must be a non-empty sequence of rows"):
        Enclosure((), (), 2)
    with pytest.raises(ValueError, match="bits must be a non-negative integer, got -1"):
        Enclosure(((4,),), ((1,),), -1)


def test_relu_labels_are_numbers_or_rows_not_both():
    from fractions import Fraction

    from memcap.construct.relu_exact import exact_relu_residual_bound

    points = [[0], [1], [3], [4]]                   # T = 4 > k + 1 distinct reals
    with pytest.raises(ValueError, match="labels must be T numbers \\(d_out = 1\\) or T rows, not both: "
                                         "labels\\[1\\] is a row and labels\\[0\\] a number"):
        exact_relu_residual_bound(points, [1, [0], 1, 0], hidden=1)   # was read as four one-entry rows
    scalar = exact_relu_residual_bound(points, [1, 0, 1, 0], hidden=1)
    assert scalar.bound == exact_relu_residual_bound(points, [[1], [0], [Fraction(1)], [0]], hidden=1).bound > 0
