"""Tests for memcap.construct.mahdavi_limits: Propositions 2-5 of Mahdavi et al. (2024) as programs."""
from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from memcap import bounds
from memcap.construct import mahdavi_limits as ml
from memcap.linalg import rank, satisfies_assumption_1, satisfies_assumption_2
from memcap.models import init_mha, mha_features

F64 = torch.float64


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# ---------------------------------------------------------------------------------------------------
# Propositions 2 and 5


@settings(max_examples=25, deadline=None)
@given(H=st.integers(1, 4), n=st.integers(1, 5), extra=st.integers(1, 3), d_h=st.integers(1, 6),
       T=st.integers(1, 30), seed=st.integers(0, 10_000))
def test_random_weights_respect_proposition_2(H, n, extra, d_h, T, seed):
    d = n + extra
    g = gen(seed)
    contexts = torch.rand(n, d, generator=g, dtype=F64)       # one shared context
    queries = torch.randn(T, d, generator=g, dtype=F64)
    p = init_mha(H, d, d_h, 1, 1, generator=g, dtype=F64, device="cpu")
    ranks = ml.rank_by_heads(p.W_K, p.W_Q, contexts, queries)
    assert len(ranks) == H
    for h, r in enumerate(ranks, start=1):
        assert r <= bounds.mha_shared_rank_bound(h, n)
    assert ranks == sorted(ranks)  # adding heads never lowers the rank


@settings(max_examples=20, deadline=None)
@given(H=st.integers(1, 4), n=st.integers(1, 4), d=st.integers(2, 6), T=st.integers(1, 40),
       C=st.floats(0.5, 3.0), seed=st.integers(0, 10_000))
def test_random_weights_respect_proposition_5_on_simplex_data(H, n, d, T, C, seed):
    g = gen(seed)
    contexts, queries = ml.simplex_data(T, n, d, coordinate_sum=C, generator=g, device="cpu")
    assert torch.allclose(contexts.sum(-1), torch.full((T, n), C, dtype=F64))
    p = init_mha(H, d, d, 1, 1, generator=g, dtype=F64, device="cpu")
    Z = mha_features(p.W_K, p.W_Q, contexts, queries)
    assert rank(Z) <= bounds.mha_simplex_rank_bound(H, d)
    assert ml.rank_by_heads(p.W_K, p.W_Q, contexts, queries)[-1] == rank(Z)


def test_simplex_bound_is_reached_and_generic_data_exceed_it():
    H, n, d, T = 3, 3, 5, 60
    contexts, queries = ml.simplex_data(T, n, d, generator=gen(1), device="cpu")
    p = init_mha(H, d, d, 1, 1, generator=gen(2), dtype=F64, device="cpu")
    assert rank(mha_features(p.W_K, p.W_Q, contexts, queries)) == bounds.mha_simplex_rank_bound(H, d)
    generic = torch.rand(T, n, d, generator=gen(3), dtype=F64)
    assert rank(mha_features(p.W_K, p.W_Q, generic, queries)) == H * d


def test_attention_matrix_is_stochastic_and_factors_Z():
    H, n, d, T = 3, 4, 6, 9
    g = gen(4)
    E = torch.rand(n, d, generator=g, dtype=F64)
    q = torch.randn(T, d, generator=g, dtype=F64)
    p = init_mha(H, d, 2, 1, 1, generator=g, dtype=F64, device="cpu")
    Theta = ml.attention_matrix(p.W_K, p.W_Q, E, q)
    assert Theta.shape == (T, H * n)
    assert torch.allclose(Theta.reshape(T, H, n).sum(-1), torch.ones(T, H, dtype=F64))
    Z = mha_features(p.W_K, p.W_Q, E, q)
    assert torch.allclose(Z.T, torch.kron(torch.eye(H, dtype=F64), E.T.contiguous()) @ Theta.T)
    # the row-sum step of the proof: (Theta_h - Theta_1) 1 = 0
    blocks = Theta.reshape(T, H, n)
    assert torch.allclose((blocks - blocks[:, :1]).sum(-1), torch.zeros(T, H, dtype=F64))


def test_simplex_data_errors():
    with pytest.raises(ValueError, match="coordinate_sum"):
        ml.simplex_data(3, 2, 4, coordinate_sum=-1.0, generator=gen(0))
    with pytest.raises(TypeError, match="generator"):
        ml.simplex_data(3, 2, 4, generator=0)
    with pytest.raises(ValueError, match="examples"):
        ml.simplex_data(0, 2, 4, generator=gen(0))


# ---------------------------------------------------------------------------------------------------
# Proposition 3


def test_hard_dataset_has_the_papers_form_and_satisfies_assumptions():
    n, d, m = 2, 4, 3
    task = ml.relu_hard_dataset(n, d, m, generator=gen(0), device="cpu")
    T = math.floor(bounds.relu_capacity(n, m, 1)) + 1
    assert T == (n + 1) * m + m + 2
    assert task.queries.shape == (T, d) and task.labels.shape == (T, 1)
    assert torch.equal(task.contexts, torch.eye(n, d, dtype=F64))
    assert torch.all(task.queries[:, : d - n] == 0)
    assert satisfies_assumption_1(task.queries, n)
    assert satisfies_assumption_2(task.contexts)
    X = ml.fcn_inputs(task.contexts, task.queries)
    assert X.shape == (T, (n + 1) * d)
    assert torch.equal(X[:, -d:], task.queries)


def test_hard_dataset_size_for_vector_outputs():
    task = ml.relu_hard_dataset(3, 5, 2, out_dim=4, generator=gen(0), device="cpu")
    assert task.examples == math.floor((3 + 1) * 2 / 4 + 2 + 1) + 1
    assert task.labels.shape == (task.examples, 4)


def test_hard_dataset_refuses_n_at_least_d():
    with pytest.raises(ValueError, match="n < d"):
        ml.relu_hard_dataset(4, 4, 1, generator=gen(0))


@pytest.mark.parametrize("T,k", [(10, 2), (9, 3), (7, 1)])
def test_activation_patterns_match_covers_count(T, k):
    # Cover (1965): T points in general position in R^k admit 2 sum_{i<=k} C(T-1, i) affine dichotomies.
    x = torch.randn(T, k, generator=gen(T + k), dtype=F64)
    patterns = ml.activation_patterns(x)
    assert patterns.shape[0] == 2 * sum(math.comb(T - 1, i) for i in range(k + 1))


def test_activation_patterns_contain_every_random_unit():
    x = torch.randn(10, 2, generator=gen(5), dtype=F64)
    codes = {tuple(row.tolist()) for row in ml.activation_patterns(x)}
    g = gen(6)
    for _ in range(300):
        w = torch.randn(2, generator=g, dtype=F64)
        b = torch.randn((), generator=g, dtype=F64)
        assert tuple((x @ w + b > 0).tolist()) in codes


@settings(max_examples=20, deadline=None)
@given(m=st.integers(1, 2), seed=st.integers(0, 10_000))
def test_lower_bound_vanishes_on_labels_a_network_produces(m, seed):
    g = gen(seed)
    x = torch.randn(10, 2, generator=g, dtype=F64)
    net = ml.ReLUParams(torch.randn(2, m, generator=g, dtype=F64), torch.randn(m, generator=g, dtype=F64),
                        torch.randn(m, 1, generator=g, dtype=F64), torch.randn(1, generator=g, dtype=F64))
    y = ml.relu_forward(net, x)
    assert ml.relu_residual_lower_bound(x, y, m)["bound"] < 1e-6


def test_relu_net_fails_on_the_hard_dataset():
    n, d, m = 2, 3, 2
    task = ml.relu_hard_dataset(n, d, m, generator=gen(0), device="cpu")
    certificate = ml.relu_residual_lower_bound(task.queries[:, d - n:], task.labels, m)
    assert certificate["patterns"] == 92 and certificate["bound"] > 0.1
    X = ml.fcn_inputs(task.contexts, task.queries)
    fit = ml.fit_relu(X, task.labels, m, restarts=4, steps=1500, lr=1e-2, generator=gen(1))
    assert fit.residuals.shape == (4,)
    assert fit.best_residual >= certificate["bound"] - 1e-9
    assert fit.history.shape == (len(fit.steps), 4)
    best = ml.relu_forward(fit.best, X)
    assert math.isclose(float((best - task.labels).norm()), fit.best_residual, rel_tol=1e-6)


def test_fit_relu_fits_a_small_dataset():
    g = gen(2)
    x = torch.randn(4, 3, generator=g, dtype=F64)
    y = torch.randn(4, 1, generator=g, dtype=F64)
    fit = ml.fit_relu(x, y, 8, restarts=2, steps=2000, lr=1e-2, generator=gen(3))
    assert fit.best_residual < 1e-3


def test_lower_bound_errors():
    x = torch.randn(8, 2, generator=gen(0), dtype=F64)
    y = torch.randn(8, 1, generator=gen(1), dtype=F64)
    collinear = torch.stack([torch.arange(8, dtype=F64), 2 * torch.arange(8, dtype=F64)], dim=1)
    with pytest.raises(ValueError, match="affine general position"):
        ml.relu_residual_lower_bound(collinear, y, 1)
    with pytest.raises(ValueError, match="max_tuples"):
        ml.relu_residual_lower_bound(x, y, 2, max_tuples=10)
    with pytest.raises(ValueError, match="labels must have shape"):
        ml.relu_residual_lower_bound(x, y[:5], 1)
    with pytest.raises(ValueError, match="affine general position"):
        ml.activation_patterns(collinear)
    with pytest.raises(ValueError, match="more than k \\+ 1"):
        ml.relu_residual_lower_bound(x[:3], y[:3], 1)
    with pytest.raises(ValueError, match="hidden"):
        ml.fit_relu(x, y, 0, generator=gen(0))
    with pytest.raises(TypeError, match="generator must be a torch.Generator or None"):
        ml.fit_relu(x, y, 1, generator=1)
    with pytest.raises(ValueError, match="W_2 must have shape"):
        ml.ReLUParams(torch.zeros(2, 3), torch.zeros(3), torch.zeros(2, 1), torch.zeros(1))
    with pytest.raises(ValueError, match="inputs must have shape"):
        ml.relu_forward(ml.ReLUParams(torch.zeros(2, 3), torch.zeros(3), torch.zeros(3, 1), torch.zeros(1)),
                        torch.zeros(4, 5))


def test_fcn_inputs_shapes_and_errors():
    E = torch.randn(5, 3, 4, dtype=F64)
    e = torch.randn(5, 4, dtype=F64)
    X = ml.fcn_inputs(E, e)
    assert torch.equal(X[2], torch.cat([E[2, 0], E[2, 1], E[2, 2], e[2]]))
    with pytest.raises(ValueError, match="contexts must have shape"):
        ml.fcn_inputs(torch.randn(4, 3, 4, dtype=F64), e)


# ---------------------------------------------------------------------------------------------------
# Proposition 4 and Remark 2's layer


def test_mean_mixing_layer_adds_the_context_mean():
    contexts, queries = ml.cls_token_data(6, 3, 5, generator=gen(0), device="cpu")
    layer = ml.mean_mixing_layer(5, device="cpu")
    assert layer.heads == 1 and layer.skip and layer.value_dim == 5 and layer.out_dim == 5
    assert torch.all(layer.W_K == 0) and torch.all(layer.W_Q == 0)
    new_contexts, new_queries = ml.apply_self_attention(layer, contexts, queries)
    mean = contexts.mean(dim=1, keepdim=True)                       # (T, 1, d)
    assert torch.allclose(new_queries, queries + mean[:, 0])
    assert torch.allclose(new_contexts, contexts + mean)


def test_apply_self_attention_on_a_shared_context():
    E = torch.randn(3, 5, generator=gen(1), dtype=F64)
    q = torch.randn(4, 5, generator=gen(2), dtype=F64)
    new_E, new_q = ml.apply_self_attention(ml.mean_mixing_layer(5, device="cpu"), E, q)
    assert torch.allclose(new_E, E + E.mean(0)) and torch.allclose(new_q, q + E.mean(0))


@settings(max_examples=20, deadline=None)
@given(n=st.integers(2, 4), extra=st.integers(1, 3), T=st.integers(5, 12), seed=st.integers(0, 10_000))
def test_proposition_4_turns_cls_data_into_assumptions_1_and_2(n, extra, T, seed):
    d = n + extra
    contexts, queries = ml.cls_token_data(T, n, d, generator=gen(seed), device="cpu")
    assert not satisfies_assumption_1(queries, n)           # one [CLS] query for every example
    assert satisfies_assumption_2(contexts)
    new_contexts, new_queries = ml.apply_self_attention(ml.mean_mixing_layer(d, device="cpu"), contexts, queries)
    assert satisfies_assumption_1(new_queries, n)
    assert satisfies_assumption_2(new_contexts)


def test_apply_self_attention_refuses_a_layer_that_changes_dimension():
    layer = init_mha(1, 4, 2, 3, 2, generator=gen(0), dtype=F64, device="cpu")
    with pytest.raises(ValueError, match="R\\^d to R\\^d"):
        ml.apply_self_attention(layer, torch.zeros(3, 4, dtype=F64), torch.zeros(2, 4, dtype=F64))
    with pytest.raises(TypeError, match="MHAParams"):
        ml.apply_self_attention("layer", torch.zeros(3, 4, dtype=F64), torch.zeros(2, 4, dtype=F64))
    with pytest.raises(ValueError, match="dim"):
        ml.mean_mixing_layer(0)


# ---------------------------------------------------------------------------------------------------
# with the constructions of memcap.construct.mahdavi


def test_constructed_weights_reach_proposition_2_bound_head_by_head():
    from memcap.construct.mahdavi import key_query_for_rank

    H, n, d = 3, 3, 6
    g = gen(8)
    E = torch.rand(n, d, generator=g, dtype=F64)
    q = torch.rand(bounds.mha_capacity(H, n, d), d, generator=g, dtype=F64)
    W_K, W_Q = key_query_for_rank(E, q, heads=H, head_dim=d, generator=g)
    assert ml.rank_by_heads(W_K, W_Q, E, q) == [bounds.mha_shared_rank_bound(h, n) for h in range(1, H + 1)]


def test_theorem_1_memorizes_after_the_mean_mixing_layer():
    from memcap.construct.mahdavi import memorize
    from memcap.models import mha_forward

    H, n, d = 3, 3, 7
    T = bounds.mha_capacity(H, n, n)
    contexts, queries = ml.cls_token_data(T, n, d, generator=gen(9), device="cpu")
    labels = torch.randn(T, 1, generator=gen(10), dtype=F64)
    with pytest.raises(ValueError, match="Assumption 1"):
        memorize(contexts, queries, labels, heads=H, head_dim=n)
    new_contexts, new_queries = ml.apply_self_attention(ml.mean_mixing_layer(d, device="cpu"), contexts, queries)
    params = memorize(new_contexts, new_queries, labels, heads=H, head_dim=n, skip=True, generator=gen(11))
    assert float((mha_forward(params, new_contexts, new_queries) - labels).abs().max()) <= 1e-6
