"""Tests of memcap.construct.dana: the constructions of Dana et al. (2024), their claims and their refusals."""
from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from memcap import bounds
from memcap.construct import dana as D
from memcap.construct.dana_features import feature_count
from memcap.data import all_sequences, association_task, next_token_distribution
from memcap.models import aot_forward, aot_param_count, init_aot

F64 = torch.float64


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# ---------------------------------------------------------------------------------------------------
# assumptions and sequence encoders


def test_association_targets_and_full_support():
    probs = torch.eye(3, dtype=F64)[[2, 0, 1, 1]]
    assert D.association_targets(probs).tolist() == [2, 0, 1, 1]
    with pytest.raises(ValueError, match="Assumption 2 fails"):
        D.check_full_support(probs)
    noisy = next_token_distribution(3, 1, entropy=0.3, generator=gen())
    assert D.check_full_support(noisy) is None
    with pytest.raises(ValueError, match="Assumption 1 fails: sequence 0"):
        D.association_targets(noisy)


def test_sequence_encoder_shapes_and_errors():
    enc = D.SequenceEncoder(torch.zeros(5, 2, dtype=F64), torch.ones(7, 2, dtype=F64))
    assert (enc.vocab, enc.dim, tuple(enc.logits.shape)) == (5, 2, (7, 5))
    with pytest.raises(ValueError, match=r"embedding must have shape \(T, d\)"):
        D.SequenceEncoder(torch.zeros(5, 2), torch.ones(7, 3))


def test_expected_kl_zero_at_log_probs_and_prior_checked():
    probs = next_token_distribution(4, 1, entropy=0.7, generator=gen())
    assert D.expected_kl(probs, torch.log(probs)) == pytest.approx(0, abs=1e-12)
    assert D.expected_kl(probs, torch.zeros_like(probs)) > 0
    with pytest.raises(ValueError, match="prior must be a probability vector"):
        D.expected_kl(probs, torch.log(probs), torch.full((4,), 0.5, dtype=F64))


def test_minimize_kl_decreases_and_validates():
    probs = next_token_distribution(3, 2, entropy=0.5, generator=gen())
    init = {"L": torch.zeros_like(probs)}
    fit = D.minimize_kl(lambda p: p["L"], init, probs, steps=200, lr=0.1)
    assert fit.kl < float(fit.history[0]) / 5
    assert fit.history.shape == (200,)
    with pytest.raises(ValueError, match="steps must be a positive integer"):
        D.minimize_kl(lambda p: p["L"], init, probs, steps=0)
    with pytest.raises(ValueError, match="init must hold"):
        D.minimize_kl(lambda p: p["L"], {}, probs)


def test_proposition_1_trained_aot_not_below_best_encoder():
    probs = next_token_distribution(3, 2, entropy=0.6, generator=gen(1))
    tokens = all_sequences(3, 2, device="cpu")
    _, best = D.best_sequence_encoder(probs, 1, steps=300)
    _, trained = D.fit_aot(tokens, probs, dim=1, heads=1, head_dim=1, generator=gen(), steps=150)
    assert trained.kl >= best.kl - 1e-9


def test_best_encoder_exact_when_dim_at_least_n_minus_1():
    probs = next_token_distribution(3, 2, entropy=0.8, generator=gen(2))
    _, fit = D.best_sequence_encoder(probs, 2, steps=5)
    assert fit.kl < 1e-10


# ---------------------------------------------------------------------------------------------------
# Propositions 2 and 3


@settings(max_examples=20, deadline=None, derandomize=True)
@given(vocab=st.integers(2, 6), rows=st.integers(1, 8), seed=st.integers(0, 10_000))
def test_proposition_2_exact_encoder_has_zero_divergence(vocab, rows, seed):
    logits = torch.randn(rows, vocab, generator=gen(seed), dtype=F64) * 3
    probs = torch.softmax(logits, 1)
    enc = D.exact_sequence_encoder(probs)
    assert enc.dim == vocab - 1
    assert D.expected_kl(probs, enc.logits) == pytest.approx(0, abs=1e-10)


def test_proposition_2_refuses_zero_probabilities():
    with pytest.raises(ValueError, match="Assumption 2 fails"):
        D.exact_sequence_encoder(torch.tensor([[1.0, 0.0]], dtype=F64))


@settings(max_examples=20, deadline=None, derandomize=True)
@given(vocab=st.integers(2, 12), seed=st.integers(0, 10_000))
def test_proposition_3_circle_divergence_decreases_to_zero(vocab, seed):
    targets = torch.randint(vocab, (9,), generator=gen(seed))
    probs = torch.eye(vocab, dtype=F64)[targets]
    kls = [D.expected_kl(probs, D.circle_sequence_encoder(targets, vocab, scale=lam).logits)
           for lam in (1.0, 10.0, 100.0 * vocab ** 2)]
    assert kls[0] > kls[1] > kls[2] >= 0
    assert kls[2] < 1e-6


def test_circle_encoder_errors():
    with pytest.raises(ValueError, match="needs d >= 2"):
        D.circle_sequence_encoder(torch.tensor([0]), 3, scale=1.0, dim=1)
    with pytest.raises(ValueError, match="scale must be a finite positive"):
        D.circle_sequence_encoder(torch.tensor([0]), 3, scale=0.0)
    with pytest.raises(ValueError, match=r"targets must be ids in \[0, N\)"):
        D.circle_sequence_encoder(torch.tensor([3]), 3, scale=1.0)


# ---------------------------------------------------------------------------------------------------
# Lemma 2


@pytest.mark.parametrize("vocab,seq_len,dim,heads", [(4, 2, 2, 3), (3, 3, 3, 2), (5, 2, 3, 4)])
def test_lemma_2_rank_for_construction_and_generic(vocab, seq_len, dim, heads):
    tokens = all_sequences(vocab, seq_len, device="cpu")
    want = min(tokens.shape[0], heads * dim)
    built = D.lemma2_params(vocab, seq_len, dim, heads, 1, generator=gen())
    generic = init_aot(vocab, seq_len, dim, heads, 1, generator=gen(), dtype=F64, device="cpu")
    for params in (built, generic):
        A = D.head_input_matrix(params, tokens)
        assert A.shape == (heads * dim, tokens.shape[0])
        assert int(torch.linalg.matrix_rank(A)) >= want


def test_skip_features_rank_reaches_capacity():
    tokens = all_sequences(5, 2, device="cpu")
    params = init_aot(5, 2, 3, 4, 2, generator=gen(), dtype=F64, device="cpu")
    F = D.skip_feature_matrix(params, tokens)
    assert F.shape == (3 + 4 * 2, 25)
    assert int(torch.linalg.matrix_rank(F)) == bounds.aot_capacity(4, 2, 3)


def test_lemma2_params_errors():
    with pytest.raises(ValueError, match="d_h > d"):
        D.lemma2_params(3, 2, 2, 2, 3, generator=gen())
    with pytest.raises(ValueError, match="distinct positive"):
        D.lemma2_params(3, 2, 2, 2, 1, generator=gen(), scales=torch.tensor([1.0, 1.0]))
    # with S = 1 every head attends to its one position: A^h(t) = x_1(t), no new rank from the heads
    with pytest.raises(ValueError, match=r"S >= 2 is needed .*got seq_len = 1"):
        D.lemma2_params(4, 1, 3, 2, 2, generator=gen())


# ---------------------------------------------------------------------------------------------------
# Theorem 1 and Corollary 1


def _random_encoder(vocab, dim, count, seed=0):
    g = gen(seed)
    return D.SequenceEncoder(torch.randn(vocab, dim, generator=g, dtype=F64),
                             torch.randn(count, dim, generator=g, dtype=F64))


@settings(max_examples=12, deadline=None, derandomize=True)
@given(heads=st.integers(1, 4), head_dim=st.integers(1, 3), dim=st.integers(3, 4), seed=st.integers(0, 1000))
def test_theorem_1_exact_at_capacity(heads, head_dim, dim, seed):
    T0 = heads * head_dim + dim
    tokens = torch.tensor([[k // 6, k % 6] for k in range(T0)])      # last tokens cover min(6, T0) >= d
    enc = _random_encoder(6, dim, T0, seed)
    built = D.theorem1_aot(enc, tokens, heads=heads, head_dim=head_dim, generator=gen(seed))
    assert torch.allclose(aot_forward(built.params, tokens), enc.logits, atol=1e-6)
    assert built.constant == 1.0


def test_theorem_1_fake_head_error_vanishes():
    tokens, _ = association_task(5, 2, count=10, generator=gen(), device="cpu")
    enc = _random_encoder(5, 3, 10)
    errors = []
    for lam in (1.0, 4.0, 64.0):
        built = D.theorem1_aot(enc, tokens, heads=4, head_dim=2, generator=gen(1), fake_head_scale=lam)
        errors.append(float((aot_forward(built.params, tokens) - enc.logits).abs().max()))
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 1e-6


def test_theorem_1_epsilon_bound_holds():
    probs = next_token_distribution(4, 2, entropy=0.5, generator=gen())
    tokens = all_sequences(4, 2, device="cpu")
    prior = torch.rand(16, generator=gen(3), dtype=F64) ** 3
    prior = prior / prior.sum()
    enc, fit = D.best_sequence_encoder(probs, 2, prior=prior, steps=200)
    built = D.theorem1_aot(enc, tokens, heads=3, head_dim=2, generator=gen(), prior=prior, epsilon=0.3)
    missed = 1 - float(prior[built.kept].sum())
    assert missed <= 0.3 + 1e-12 and built.kept.numel() <= 8
    kl = D.expected_kl(probs, aot_forward(built.params, tokens), prior)
    norm = float(torch.linalg.matrix_norm(enc.logits.T, ord=2))
    assert kl <= fit.kl + bounds.thm1_excess_divergence(built.constant, missed, norm) + 1e-9


def test_theorem_1_refusals():
    tokens, _ = association_task(5, 2, count=11, generator=gen(), device="cpu")
    enc = _random_encoder(5, 3, 11)
    with pytest.raises(ValueError, match=r"T0 > H d_h \+ d: 11 sequences"):
        D.theorem1_aot(enc, tokens, heads=3, head_dim=2, generator=gen())
    with pytest.raises(ValueError, match="d_h > d"):
        D.theorem1_aot(enc, tokens, heads=1, head_dim=4, generator=gen())
    with pytest.raises(ValueError, match="pairwise distinct"):
        D.theorem1_aot(enc, torch.zeros(11, 2, dtype=torch.int64), heads=4, head_dim=2, generator=gen())
    flat = D.SequenceEncoder(enc.unembedding, torch.zeros(11, 3, dtype=F64))
    with pytest.raises(ValueError, match="M_0 of the solved output map is singular"):
        D.theorem1_aot(flat, tokens, heads=4, head_dim=2, generator=gen())


def test_theorem_1_refuses_s_1_and_sets_beyond_the_feature_count():
    # S = 1: the features have rank <= min(d, L) = 2 < 3 for every draw; the refusal names S, not the draw
    circle = D.circle_sequence_encoder(torch.tensor([0, 1, 2]), 4, scale=1.0)
    with pytest.raises(ValueError, match=r"tokens must have S >= 2 columns.*got S = 1"):
        D.theorem1_aot(circle, torch.tensor([[0], [1], [2]]), heads=1, head_dim=1, generator=gen())
    # 6 sequences of [2]^3: H d_h + min(d, L) = 4 + 2 = 6, but kappa = min(4, 2) + min(4, 2 + 3 - 2) = 5
    tokens = torch.tensor([[i, j, k] for i in range(2) for j in range(2) for k in range(2)])[:6]
    enc = _random_encoder(2, 4, 6)
    with pytest.raises(ValueError, match=r"T0 = 6 exceeds the feature count kappa .* = 5"):
        D.theorem1_aot(enc, tokens, heads=1, head_dim=4, generator=gen())
    assert feature_count(tokens, 4, 1, 4) == 5
    built = D.theorem1_aot(_random_encoder(2, 4, 5), tokens[1:], heads=1, head_dim=4, generator=gen())
    assert torch.allclose(aot_forward(built.params, tokens[1:]), _random_encoder(2, 4, 5).logits, atol=1e-6)


def test_theorem_1_skip_sees_only_the_last_token():
    tokens = torch.tensor([[i, j, 0] for i in range(3) for j in range(3)])[:6]      # all end in token 0
    enc = _random_encoder(3, 2, 6)
    with pytest.raises(ValueError, match=r"H d_h \+ min\(d, L\).*L = 1 distinct"):
        D.theorem1_aot(enc, tokens, heads=2, head_dim=2, generator=gen())
    built = D.theorem1_aot(_random_encoder(3, 2, 5), tokens[:5], heads=2, head_dim=2, generator=gen())
    assert torch.allclose(aot_forward(built.params, tokens[:5]), _random_encoder(3, 2, 5).logits, atol=1e-6)


def test_theorem_1_refuses_a_singular_skip_block_when_sequences_lie_outside_s1():
    # all six sequences end in token 0, so the skip rows of F are one direction and M_0 = E^T F_1^+[:, :d]
    # is singular; with every sequence kept the free part R (I - F_1 F_1^+) repairs it (test above), but
    # with a sequence outside S_1 it would change that sequence's logits, so the construction refuses
    tokens = torch.tensor([[i, j, 0] for i in range(3) for j in range(3)])[:6]
    prior = torch.tensor([0.2, 0.2, 0.2, 0.2, 0.15, 0.05], dtype=F64)
    with pytest.raises(ValueError, match="M_0 of the solved output map is singular"):
        D.theorem1_aot(_random_encoder(3, 2, 6), tokens, heads=2, head_dim=2, generator=gen(),
                       prior=prior, epsilon=0.05)


def test_most_likely_sequences():
    prior = torch.tensor([0.1, 0.5, 0.0, 0.4], dtype=F64)
    assert D.most_likely_sequences(prior, 0.0).tolist() == [1, 3, 0]
    assert D.most_likely_sequences(prior, 0.1).tolist() == [1, 3]
    with pytest.raises(ValueError, match="epsilon must lie in"):
        D.most_likely_sequences(prior, 1.0)


@settings(max_examples=12, deadline=None, derandomize=True)
@given(vocab=st.integers(3, 9), seq_len=st.integers(2, 3), heads=st.integers(1, 6),
       head_dim=st.integers(1, 2), seed=st.integers(0, 1000))
def test_corollary_1_memorizes_every_association(vocab, seq_len, heads, head_dim, seed):
    T0 = min(heads * head_dim + 2, vocab ** seq_len)
    tokens, targets = association_task(vocab, seq_len, count=T0, generator=gen(seed), device="cpu")
    if torch.unique(tokens[:, -1]).numel() == 1:                     # skip adds 1 dimension, not 2
        tokens, targets = tokens[:-1], targets[:-1]
    built = D.corollary1_aot(tokens, targets, vocab, heads=heads, head_dim=head_dim, generator=gen(seed))
    assert torch.equal(aot_forward(built.params, tokens).argmax(1), targets)
    count = aot_param_count(vocab, seq_len, 2, heads, head_dim)
    assert count == 2 * (seq_len + 2 * vocab + 4 * heads * head_dim)
    if T0 == heads * head_dim + 2:
        assert count == bounds.aot_cor1_param_count(seq_len, vocab, T0)


def test_corollary_1_same_target_everywhere():
    tokens = all_sequences(3, 2, device="cpu")[:6]
    targets = torch.full((6,), 2)
    built = D.corollary1_aot(tokens, targets, 3, heads=2, head_dim=2, generator=gen())
    assert torch.equal(aot_forward(built.params, tokens).argmax(1), targets)


def test_corollary_1_refusals():
    tokens, targets = association_task(4, 2, count=7, generator=gen(), device="cpu")
    with pytest.raises(ValueError, match=r"T0 > H d_h \+ d"):
        D.corollary1_aot(tokens, targets, 4, heads=2, head_dim=2, generator=gen())
    with pytest.raises(ValueError, match="d_h > d"):
        D.corollary1_aot(tokens, targets, 4, heads=2, head_dim=3, generator=gen())


# ---------------------------------------------------------------------------------------------------
# Theorem 2


def test_identity_hadamard_gram_deviation():
    W = D.identity_hadamard_unembedding(8, device="cpu")
    assert W.shape == (16, 8)
    assert D.gram_deviation(W) == pytest.approx(1 / math.sqrt(8))
    with pytest.raises(ValueError, match="power of 2"):
        D.identity_hadamard_unembedding(6)


@settings(max_examples=15, deadline=None, derandomize=True)
@given(entropy=st.floats(0.05, 2.0), seed=st.integers(0, 1000))
def test_theorem_2_encoder_solves_eq6_and_meets_bound(entropy, seed):
    W = D.identity_hadamard_unembedding(8, device="cpu")            # N = 16, C = 0.354
    N = W.shape[0]
    entropy = min(entropy, math.log(N) - 1e-3)
    table = torch.randint(N, (N,), generator=gen(seed))
    probs = next_token_distribution(N, 1, entropy=entropy, table=table)
    enc, lam = D.lookup_sequence_encoder(probs, table, W)
    f = enc.logits
    lse = torch.logsumexp(f, 1) - f[torch.arange(N), table]
    assert torch.allclose(lse, torch.full((N,), entropy, dtype=F64), atol=1e-9)   # Eq. (6)
    C = D.gram_deviation(W)
    err = 1 - float(probs[0, table[0]])
    kl = D.expected_kl(probs, f)
    assert kl <= lam.max() * err * (1 + C) + 1e-9                                  # our sharper step
    assert kl <= bounds.thm2_kl_term_with_constant(N, C, err, entropy, 0.0) + 1e-9      # the paper's term


def test_theorem_2_refusals():
    W = D.identity_hadamard_unembedding(2, device="cpu")
    probs = torch.eye(4, dtype=F64)
    with pytest.raises(ValueError, match="entropy 0"):
        D.lookup_sequence_encoder(probs, torch.arange(4), W)
    with pytest.raises(ValueError, match="unit norm"):
        D.lookup_sequence_encoder(torch.full((4, 4), 0.25, dtype=F64), torch.arange(4), 2 * W)
    with pytest.raises(ValueError, match="C < 1/2"):
        bounds.thm2_kl_term_with_constant(4, 0.6, 0.1, 0.5, 0.0)


# ---------------------------------------------------------------------------------------------------
# the library's rules: determinism, device, generator


def test_corollary_1_is_bit_identical_whatever_the_thread_count():
    """The construction runs on one CPU thread: with 1 and 2 threads the weights used to differ (2e-11 here,
    12 for H = 150 heads); now repeated calls agree bit for bit."""
    tokens, targets = association_task(10, 2, count=60, generator=gen(0), device="cpu")
    before, runs = torch.get_num_threads(), []
    try:
        for threads in (2, 2, 1):
            torch.set_num_threads(threads)
            runs.append(D.corollary1_aot(tokens, targets, 10, heads=29, head_dim=2, generator=gen(3)).params)
    finally:
        torch.set_num_threads(before)
    for other in runs[1:]:
        assert all(torch.equal(a, b) for a, b in zip(runs[0].parameters(), other.parameters()))


def test_constructions_take_array_likes_and_default_generator():
    tokens, targets = association_task(5, 2, count=8, generator=gen(1), device="cpu")
    from_lists = D.corollary1_aot(tokens.tolist(), targets.numpy(), 5, heads=3, head_dim=2)
    seeded = D.corollary1_aot(tokens, targets, 5, heads=3, head_dim=2, generator=gen(0))
    assert all(torch.equal(a, b) for a, b in zip(from_lists.params.parameters(), seeded.params.parameters()))
    params = D.lemma2_params(5, 2, 3, 2, 2, device="cpu")
    assert params.device == torch.device("cpu") and params.dtype == F64
    with pytest.raises(ValueError, match="Dana et al.'s Assumption 2 fails"):
        D.check_full_support([[1.0, 0.0], [0.5, 0.5]])
