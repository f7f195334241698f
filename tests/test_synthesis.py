"""Tests of memcap/synthesis.py: the map between the two settings, the bounds with their hypotheses, the
constructions in the argmax currency, the label-aware head, the feature-rank survey and the helpers for
trained models."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from memcap import bounds, synthesis
from memcap.data import association_task, mahdavi_task, sinusoidal_positions
from memcap.models import aot_forward, init_aot, init_mha, mha_features, mha_forward
from memcap.train import AoTSpec, MHASpec, TrainConfig, mha_forward_stacked, train_models

F64 = torch.float64


def _distinct_last(N: int, S: int, T: int, gen: torch.Generator) -> torch.Tensor:
    last = torch.randperm(N, generator=gen)[:T]
    return torch.cat([torch.randint(N, (T, S - 1), generator=gen), last[:, None]], dim=1)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), heads=st.integers(1, 3), head_dim=st.integers(1, 4),
       value_dim=st.integers(1, 4), seq_len=st.integers(2, 4))
def test_aot_from_mha_reproduces_the_mha_logits(seed, heads, head_dim, value_dim, seq_len):
    """The AoT built from Mahdavi et al.'s layer with skip gives readout @ y_hat on every sequence."""
    value_dim = min(value_dim, head_dim)
    gen = torch.Generator().manual_seed(seed)
    N, d, d_out = 7, 6, 2
    mha = init_mha(heads, d, head_dim, value_dim, d_out, skip=True, generator=gen, dtype=F64, device="cpu")
    e, pos = torch.randn(N, d, generator=gen, dtype=F64), torch.randn(seq_len, d, generator=gen, dtype=F64)
    readout = torch.randn(N, d_out, generator=gen, dtype=F64)
    tokens = torch.randint(N, (9, seq_len), generator=gen)
    contexts, queries = synthesis.token_inputs(e, pos, tokens)
    assert torch.equal(queries, contexts[:, -1])
    aot = synthesis.aot_from_mha(mha, e, pos, readout)
    expected = mha_forward(mha, contexts, queries) @ readout.T
    assert torch.allclose(aot_forward(aot, tokens), expected, atol=1e-10)


def test_aot_from_mha_refuses_what_an_aot_cannot_hold():
    gen = torch.Generator().manual_seed(0)
    e, pos, readout = torch.randn(5, 4, dtype=F64), torch.randn(2, 4, dtype=F64), torch.randn(5, 1, dtype=F64)
    no_skip = init_mha(2, 4, 2, 1, 1, generator=gen, dtype=F64, device="cpu")
    with pytest.raises(ValueError, match="skip"):
        synthesis.aot_from_mha(no_skip, e, pos, readout)
    wide = init_mha(2, 4, 1, 2, 1, skip=True, generator=gen, dtype=F64, device="cpu")
    with pytest.raises(ValueError, match="d_v = 2 > d_h = 1"):
        synthesis.aot_from_mha(wide, e, pos, readout)


def test_mahdavi_hypotheses_on_token_sequences():
    gen = torch.Generator().manual_seed(1)
    aot = init_aot(12, 3, 8, 1, 1, generator=gen, dtype=F64, device="cpu")
    distinct = _distinct_last(12, 3, 7, gen)
    ok = synthesis.mahdavi_hypotheses(*synthesis.token_inputs(aot.token_embedding, aot.positional_embedding,
                                                              distinct))
    assert [h.holds for h in ok] == [True, True, True]
    shared = distinct.clone()
    shared[4, -1] = shared[1, -1]
    ctx, qry = synthesis.token_inputs(aot.token_embedding, aot.positional_embedding, shared)
    hyp = {h.name: h for h in synthesis.mahdavi_hypotheses(ctx, qry)}
    assert not hyp["Assumption 1"].holds and "queries 1 and 4 coincide" in hyp["Assumption 1"].why
    bound = synthesis.mahdavi_bound(3, 3, ctx, qry)
    assert (bound.value, bound.applies, bound.guarantee) == (7, False, 1)   # Remark 1 with Q = 1
    long_context = torch.randn(9, 8, 8, dtype=F64)
    bound = synthesis.mahdavi_bound(2, 4, long_context, torch.randn(9, 8, dtype=F64))
    assert not bound.applies and bound.why.startswith("n < d fails") and bound.guarantee == 0


def test_dana_bound_counts_last_tokens_and_refuses_shared_contexts():
    tokens = torch.tensor([[0, 1], [2, 1], [3, 1], [1, 0]])
    b = synthesis.dana_bound(3, 2, 4, tokens)
    assert b.applies and b.value == 3 * 2 + min(4, 2) == b.guarantee
    assert synthesis.dana_bound(3, 2, 4).value == bounds.aot_capacity(3, 2, 4)
    assert not synthesis.dana_bound(3, 5, 4, tokens).applies
    real = synthesis.dana_bound(2, 8, 16, token_sequences=False, context_size=8)
    assert not real.applies and "H(n-1)+1+d = 31$ (Prop. 2), below" in real.why and real.value == 32
    level = synthesis.dana_bound(1, 8, 16, token_sequences=False, context_size=8)   # 7 + 1 + 16 = 24 = count
    assert not level.applies and "= 24$ (Prop. 2), not below" in level.why and level.value == 24


@pytest.mark.parametrize("vocab,seq_len,dim,heads,head_dim", [(16, 2, 8, 2, 2), (16, 3, 4, 3, 4), (9, 2, 16, 4, 3)])
def test_dana_association_aot_memorizes_at_its_count(vocab, seq_len, dim, heads, head_dim):
    gen = torch.Generator().manual_seed(2)
    T = heads * head_dim + dim
    tokens, targets = synthesis.dana_table(vocab, seq_len, dim=dim, heads=heads, head_dim=head_dim,
                                           generator=gen)
    assert tokens.shape[0] <= synthesis.dana_bound(heads, head_dim, dim, tokens).value <= T
    built = synthesis.dana_association_aot(tokens, targets, vocab, dim=dim, heads=heads, head_dim=head_dim,
                                           generator=gen)
    assert torch.equal(aot_forward(built.params, tokens).argmax(1), targets)
    extra, _ = association_task(vocab, seq_len, count=min(vocab ** seq_len, T + 5), generator=gen)
    with pytest.raises(ValueError, match="H d_h"):
        synthesis.dana_association_aot(extra, torch.zeros(extra.shape[0], dtype=torch.long), vocab, dim=dim,
                                       heads=heads, head_dim=head_dim, generator=gen)


def test_mahdavi_association_aot_memorizes_and_refuses_shared_last_tokens():
    gen = torch.Generator().manual_seed(3)
    N, S, d, H, d_h = 12, 3, 8, 3, 3
    aot = init_aot(N, S, d, 1, 1, generator=gen, dtype=F64, device="cpu")
    T = bounds.mha_capacity(H, S, d_h)
    tokens, targets = _distinct_last(N, S, T, gen), torch.randint(N, (T,), generator=gen)
    built = synthesis.mahdavi_association_aot(tokens, targets, token_embedding=aot.token_embedding,
                                              positional_embedding=aot.positional_embedding, heads=H,
                                              head_dim=d_h, generator=gen)
    assert torch.equal(aot_forward(built, tokens).argmax(1), targets)
    tokens[1, -1] = tokens[0, -1]
    with pytest.raises(ValueError, match="Assumption 1"):
        synthesis.mahdavi_association_aot(tokens, targets, token_embedding=aot.token_embedding,
                                          positional_embedding=aot.positional_embedding, heads=H, head_dim=d_h)
    with pytest.raises(ValueError, match="d_h >= 2"):
        synthesis.mahdavi_association_aot(tokens, targets, token_embedding=aot.token_embedding,
                                          positional_embedding=aot.positional_embedding, heads=H, head_dim=1)


@pytest.mark.parametrize("heads,head_dim", [(1, 8), (2, 4), (3, 16)])
def test_mahdavi_classifier_is_the_engines_model_and_classifies_everything(heads, head_dim):
    gen = torch.Generator().manual_seed(4)
    n, d, C = 8, 16, 100
    T = bounds.mha_capacity(heads, n, head_dim)
    task = mahdavi_task(T, n, d, shared=True, classes=C, generator=gen, dtype=F64)
    w = synthesis.mahdavi_classifier(task.contexts, task.queries, task.labels, classes=C, heads=heads,
                                     head_dim=head_dim, generator=gen)
    spec = MHASpec(heads=heads, context_size=n, examples=T, dim=d, head_dim=head_dim, classes=C)
    trained = train_models([spec], TrainConfig(steps=1), keep_params=True).params[0]
    assert {k: v.shape for k, v in trained.items()} == {k: tuple(v.shape) for k, v in w.items()}
    pos = sinusoidal_positions(n + 1, d, dtype=F64)
    logits = mha_forward_stacked({k: v[None] for k, v in w.items()}, task.contexts[None], task.queries[None],
                                 pos)[0]
    assert torch.equal(logits.argmax(1), task.labels)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), d=st.integers(2, 12), spread=st.floats(0.01, 100.0))
def test_label_aware_head_fits_d_labels_with_rank_two_features(seed, d, spread):
    """Proposition book-prop-label-aware: T = d arbitrary labels, rank(Z) <= H(n - 1) + 1 = 2."""
    gen = torch.Generator().manual_seed(seed)
    E, q = torch.rand(2, d, generator=gen, dtype=F64), torch.rand(d, d, generator=gen, dtype=F64)
    y = spread * torch.randn(d, generator=gen, dtype=F64)
    p = synthesis.label_aware_head(E, q, y)
    assert (mha_forward(p, E, q)[:, 0] - y).abs().max() <= 1e-8 * (1 + spread)
    assert int(torch.linalg.matrix_rank(mha_features(p.W_K, p.W_Q, E, q))) <= bounds.mha_shared_rank_bound(1, 2)


def test_label_aware_head_refusals():
    E, q = torch.rand(2, 4, dtype=F64), torch.rand(5, 4, dtype=F64)
    with pytest.raises(ValueError, match="linearly independent"):
        synthesis.label_aware_head(E, q, torch.zeros(5, dtype=F64))
    with pytest.raises(ValueError, match="n = 2"):
        synthesis.label_aware_head(torch.rand(3, 4, dtype=F64), q[:4], torch.zeros(4, dtype=F64))
    with pytest.raises(ValueError, match="Assumption 2"):
        synthesis.label_aware_head(torch.ones(2, 4, dtype=F64), q[:4], torch.zeros(4, dtype=F64))


def test_feature_rank_survey_matches_the_counts_on_small_grids():
    grid = [dict(vocab=4, seq_len=3, dim=3, heads=H, head_dim=2, table=t, count=20)
            for H in (1, 4, 12) for t in synthesis.TABLES]
    for r in synthesis.feature_rank_survey(grid, draws=2):
        assert r["rank_F"] == r["expected_F"] and r["margin_F"] > synthesis.RANK_MARGIN
        assert r["expected_F"] == min(r["T"], r["heads"] * r["head_dim"] + min(r["dim"], r["L"]))
        assert r["kappa_F"] >= r["expected_F"] and r["draws"] == 2
    one = synthesis.feature_rank_survey([dict(vocab=4, seq_len=3, dim=3, heads=2, head_dim=2,
                                              table="one_last_token", count=9)])[0]
    assert one["L"] == 1 and one["expected_F"] == min(one["T"], 2 * 2 + 1)
    with pytest.raises(ValueError, match=r"grid\[0\]\['table'\] must be one of"):
        synthesis.feature_rank_survey([dict(vocab=4, seq_len=2, dim=3, heads=1, head_dim=1, table="x")])


def test_feature_rank_reaches_the_limit_when_few_tokens_are_used():
    """Two tokens, S = 3, d = d_h = 6: a head adds at most n + S - 2 = 3 dimensions, not d_h."""
    r = synthesis.feature_rank_survey([dict(vocab=2, seq_len=3, dim=6, heads=1, head_dim=6, table="all")])[0]
    assert (r["T"], r["L"], r["n"]) == (8, 2, 2)
    assert r["expected_F"] == 8 and r["kappa_F"] == 2 + 3 == r["rank_F"]
    assert r["margin_F"] > synthesis.RANK_MARGIN


def test_feature_rank_detects_a_deficient_model():
    """Identical heads cannot add rank: the record shows the deficit and a margin below the threshold."""
    gen = torch.Generator().manual_seed(5)
    one = init_aot(4, 3, 3, 1, 2, generator=gen, dtype=F64, device="cpu")
    same = type(one)(one.token_embedding, one.positional_embedding, one.W_Q.expand(4, -1, -1),
                     one.W_K.expand(4, -1, -1), one.W_V.expand(4, -1, -1), one.W_O.expand(4, -1, -1), one.W_U)
    r = synthesis.feature_rank(same, association_task(4, 3, generator=gen)[0])
    assert r["rank_F"] <= 3 + 2 < r["expected_F"] and r["margin_F"] < synthesis.RANK_MARGIN


def test_trained_aot_attention_redraws_the_engines_training_set():
    spec = AoTSpec(heads=2, head_dim=2, dim=4, vocab=6, seq_len=3, examples=20, seed=1, data_seed=3)
    out = train_models([spec], TrainConfig(steps=60, batch_size=8, lr=1e-2, eval_every=30), keep_params=True)
    theta, accuracy = synthesis.trained_aot_attention(spec, out.params[0])
    assert theta.shape == (20, 2, 3) and np.allclose(theta.sum(-1), 1.0)
    assert accuracy == pytest.approx(float(out.accuracy[0]), abs=1e-9)
    with pytest.raises(ValueError, match="plain AoT"):
        synthesis.trained_aot_attention(AoTSpec(heads=1, head_dim=2, dim=4, vocab=6, mlp_width=3), out.params[0])


@pytest.mark.parametrize("spec", [
    MHASpec(heads=3, context_size=5, examples=4, dim=8, head_dim=4, value_dim=2),
    MHASpec(heads=2, context_size=5, examples=4, dim=8, classes=None, out_dim=3, embedding=False),
    AoTSpec(heads=3, head_dim=2, dim=6, vocab=9, seq_len=3),
    AoTSpec(heads=3, head_dim=2, dim=6, vocab=9, shared_compression=True),
    AoTSpec(heads=1, head_dim=2, dim=6, vocab=9, mlp_width=7)])
def test_engine_param_count_counts_the_engines_weights(spec):
    kept = train_models([spec], TrainConfig(steps=1), keep_params=True).params[0]
    assert synthesis.engine_param_count(spec) == sum(v.size for v in kept.values())
    if isinstance(spec, AoTSpec) and not spec.shared_compression and not spec.mlp_width:
        assert synthesis.engine_param_count(spec) == bounds.aot_param_count(9, spec.seq_len, 6, 3, 2)


@pytest.mark.parametrize("spec", [
    MHASpec(heads=3, context_size=5, examples=4, dim=8, head_dim=4, value_dim=2),
    MHASpec(heads=2, context_size=5, examples=4, dim=8, classes=None, out_dim=3, embedding=False)])
def test_readout_weights_are_the_engines_readout(spec):
    kept = train_models([spec], TrainConfig(steps=1), keep_params=True).params[0]
    assert synthesis.readout_weights(spec) == sum(kept[k].size for k in ("W_D", "b_D") if k in kept)
    with pytest.raises(TypeError, match="spec must be an MHASpec"):
        synthesis.readout_weights(AoTSpec(heads=3, head_dim=2, dim=6, vocab=9))


def test_certified_fit_uses_both_sides_of_the_mean():
    assert synthesis.certified_fit(1e-8, 16, 1e-2) is True         # sqrt(T mse) = 4e-4
    assert synthesis.certified_fit(1e-3, 16, 1e-2) is False        # sqrt(mse) = 0.03 > tol
    assert synthesis.certified_fit(2e-5, 16, 1e-2) is None         # 4.5e-3 < tol < 1.8e-2
    with pytest.raises(ValueError, match="mse"):
        synthesis.certified_fit(math.nan, 4, 1e-2)


def test_careless_calls_are_refused_or_read_as_documented():
    """Arrays and lists where tensors are documented, generator=None meaning seed 0, one grid point where a
    list is expected, labels out of range, NaN embeddings: each answered as the library's rules say."""
    seeded = synthesis.dana_table(3, 2, dim=2, heads=1, head_dim=2, generator=torch.Generator().manual_seed(0))
    default = synthesis.dana_table(3, 2, dim=2, heads=1, head_dim=2)
    assert all(torch.equal(a, b) for a, b in zip(seeded, default))
    e = np.random.default_rng(0).normal(size=(7, 6))
    pos = np.random.default_rng(1).normal(size=(3, 6))
    tokens = [[0, 1, 2], [3, 1, 4]]
    contexts, queries = synthesis.token_inputs(e, pos.tolist(), tokens)
    assert contexts.shape == (2, 3, 6) and contexts.dtype == F64
    with pytest.raises(ValueError, match="token_embedding must be finite"):
        synthesis.token_inputs(np.where(np.arange(42).reshape(7, 6) == 5, np.nan, e), pos, tokens)
    with pytest.raises(ValueError, match="contexts must be finite"):
        synthesis.mahdavi_hypotheses(contexts.masked_fill(contexts > 1, math.inf), queries)
    with pytest.raises(ValueError, match=r"labels must be integer ids in \[0, 3\), got ids from 1 to 3"):
        synthesis.mahdavi_classifier(contexts[0], queries, torch.tensor([1, 3]), classes=3, heads=1, head_dim=3)
    point = dict(vocab=4, seq_len=2, dim=3, heads=1, head_dim=1)
    with pytest.raises(TypeError, match=r"grid must be a list of grid points \(dicts\), got one dict: put it in"):
        synthesis.feature_rank_survey(point)
    with pytest.raises(ValueError, match=r"mse must be a finite real number"):
        synthesis.certified_fit(math.inf, 4, 1e-2)
    with pytest.raises(TypeError, match="mse must be a real number, got '1e-3'"):
        synthesis.certified_fit("1e-3", 4, 1e-2)


def test_feature_rank_survey_takes_any_64_bit_seed_and_names_a_larger_one():
    """A seed of 2**51 made 10_000 * seed + i overflow torch's manual_seed ("Overflow when unpacking long
    long"); derived seeds now wrap modulo 2**64 and a seed beyond 64 bits is refused naming ``seed``."""
    point = dict(vocab=2, seq_len=2, dim=2, heads=1, head_dim=1)
    assert synthesis.feature_rank_survey([point], seed=2**51)[0]["T"] == 4
    with pytest.raises(ValueError, match=r"seed must be a seed in \[0, 2\*\*63 - 1\]"):
        synthesis.feature_rank_survey([point], seed=2**63)


@pytest.mark.parametrize("table,count", [("random", 100), ("repeated_token", 5)])
def test_feature_rank_survey_refuses_a_count_above_n_to_the_s_before_any_work(monkeypatch, table, count):
    """count > N^S = 4 is refused naming grid[1]['count'] before the first (valid) point is computed."""
    def no_work(*args, **kwargs):
        raise AssertionError("a point was computed before the grid was checked")

    monkeypatch.setattr(synthesis, "feature_rank", no_work)
    point = dict(vocab=2, seq_len=2, dim=2, heads=1, head_dim=1)
    with pytest.raises(ValueError, match=rf"grid\[1\]\['count'\] must be at most N\^S = 4 distinct sequences for "
                                         rf"the table kind '{table}', got {count}"):
        synthesis.feature_rank_survey([point, dict(point, table=table, count=count)])


def test_one_last_token_draws_all_the_sequences_there_are_beyond_its_count():
    """'one_last_token' draws min(count, N^(S-1)) sequences (the book's survey relies on it): not refused."""
    r = synthesis.feature_rank_survey([dict(vocab=2, seq_len=2, dim=2, heads=1, head_dim=1,
                                            table="one_last_token", count=100)])[0]
    assert (r["T"], r["L"]) == (2, 1)


def test_mahdavi_bound_names_the_failing_hypothesis_once_and_falls_back_on_remark_1():
    """Queries e1, e2, e1 + e2, e3, e4 (Kruskal rank Q = 2 < n = 3): the reason reads "Assumption 1 fails:
    queries ..." (not "... fails: Mahdavi et al.'s Assumption 1 fails: ...") and the guarantee is Remark 1's
    H(min(Q, d_h) - 1) + 1, not 0. A zero query (Q = 0) guarantees nothing."""
    from memcap import linalg

    e = torch.eye(6, dtype=F64)
    queries = torch.stack([e[0], e[1], e[0] + e[1], e[2], e[3]])
    context = torch.randn(3, 6, generator=torch.Generator().manual_seed(0), dtype=F64)
    hyp = {h.name: h for h in synthesis.mahdavi_hypotheses(context, queries)}
    assert hyp["Assumption 1"].why.startswith("queries [0, 1, 2] are linearly dependent")
    bound = synthesis.mahdavi_bound(2, 3, context, queries)
    assert bound.why.startswith("Assumption 1 fails: queries [0, 1, 2]") and "Mahdavi" not in bound.why
    assert linalg.kruskal_rank(queries) == 2
    assert (bound.value, bound.applies, bound.guarantee) == (5, False, bounds.mha_capacity_remark1(2, 2, 3)) == \
        (5, False, 3)
    zero = torch.cat([queries[:2], torch.zeros(1, 6, dtype=F64), queries[3:]])
    assert synthesis.mahdavi_bound(2, 3, context, zero).guarantee == 0


def test_mahdavi_association_aot_refuses_shared_last_tokens_as_documented():
    """The refusal names ``tokens`` and the shared last token, not the inner construction's parameter
    query_kruskal_rank, which this function does not have."""
    gen = torch.Generator().manual_seed(0)
    aot = init_aot(8, 3, 6, 1, 1, generator=gen, dtype=F64, device="cpu")
    tokens = torch.tensor([[0, 1, 2], [3, 4, 2], [5, 6, 7]])
    with pytest.raises(ValueError, match=r"tokens: sequences share a last token \(rows 0 and 1 both end in 2\).*"
                                         r"Assumption 1") as err:
        synthesis.mahdavi_association_aot(tokens, torch.tensor([0, 1, 2]), token_embedding=aot.token_embedding,
                                          positional_embedding=aot.positional_embedding, heads=2, head_dim=2)
    assert "query_kruskal_rank" not in str(err.value)
