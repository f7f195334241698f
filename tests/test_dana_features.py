"""Tests of memcap.construct.dana_features: the feature counts (upper bounds that no weights beat), the
rank-one witness of the book's proof, and Theorem 1's construction with the skip shift."""
from __future__ import annotations

import math

import pytest
import torch

from memcap.construct import dana
from memcap.construct import dana_features as DF
from memcap.data import all_sequences, association_task
from memcap.models import aot_forward, init_aot

F64 = torch.float64


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _rank(M: torch.Tensor) -> int:
    return int(torch.linalg.matrix_rank(M, rtol=1e-10))


@pytest.mark.parametrize("N,S,d,d_h,H", [(2, 2, 4, 2, 1), (2, 3, 4, 4, 2), (3, 3, 5, 5, 1),
                                         (4, 2, 3, 2, 3), (3, 2, 2, 1, 4)])
def test_counts_bound_the_rank_for_random_weights(N, S, d, d_h, H, one_thread):
    tokens = all_sequences(N, S)
    for seed in range(3):
        params = init_aot(N, S, d, H, d_h, generator=gen(seed), dtype=F64)
        assert _rank(dana.skip_feature_matrix(params, tokens)) <= min(len(tokens), DF.feature_count(tokens, d, H, d_h))
        assert _rank(dana.head_input_matrix(params, tokens)) <= DF.attention_count(tokens, d, H)


def test_counts_formulas():
    tokens = all_sequences(2, 2)                              # L = 2, n = 2, S = 2
    assert DF.feature_count(tokens, 4, 3, 4) == 2 + 3 * 2     # min(d_h, n + S - 2) = 2 < d_h
    assert DF.feature_count(tokens, 2, 3, 1) == 2 + 3
    assert DF.attention_count(tokens, 4, 1) == 3              # Dana et al.'s Lemma 2 claims min(4, 4) = 4
    ending0 = all_sequences(3, 3)[all_sequences(3, 3)[:, -1] == 0]
    assert DF.feature_count(ending0, 3, 2, 2) == 1 + 2 * 2
    with pytest.raises(ValueError, match="d_h > d"):
        DF.feature_count(tokens, 2, 1, 3)


@pytest.mark.parametrize("N,S,d,H,keep_last", [(3, 3, 3, 24, None), (3, 3, 3, 8, 0), (4, 2, 2, 5, None),
                                               (2, 4, 3, 9, 1)])
def test_rank_one_witness_adds_one_dimension_per_head(N, S, d, H, keep_last, one_thread):
    tokens = all_sequences(N, S)
    if keep_last is not None:
        tokens = tokens[tokens[:, -1] == keep_last]
    L = int(torch.unique(tokens[:, -1]).numel())
    for h in (1, H // 2, H):
        params = DF.rank_one_witness(tokens, N, d, h, generator=gen(h))
        assert params.head_dim == 1
        assert _rank(dana.skip_feature_matrix(params, tokens)) == min(len(tokens), min(d, L) + h)


def test_rank_one_witness_refuses_single_tokens():
    with pytest.raises(ValueError, match="S >= 2"):
        DF.rank_one_witness(all_sequences(3, 1), 3, 2, 2, generator=gen())


def _task(T0, N, S, d, seed=0):
    tokens = all_sequences(N, S)[torch.randperm(N ** S, generator=gen(seed))[:T0]]
    probs = torch.softmax(2 * torch.randn(T0, N, generator=gen(seed + 1), dtype=F64), 1)
    encoder, _ = dana.best_sequence_encoder(probs, d, steps=200)
    return tokens, probs, encoder


def test_theorem1_build_reproduces_the_encoder_at_capacity(one_thread):
    tokens, _, encoder = _task(11, 6, 3, 3)
    built = DF.theorem1_build(encoder, tokens, heads=4, head_dim=2, generator=gen(2))
    assert built.shift == 0.0 and built.constant == 1.0 and built.paper_constant is None
    assert float((aot_forward(built.params, tokens) - encoder.logits).abs().max()) < 1e-8


def test_theorem1_build_shifts_a_singular_skip_block(one_thread):
    tokens, _, encoder = _task(11, 6, 3, 3)
    flat = dana.SequenceEncoder(encoder.unembedding, encoder.embedding * torch.tensor([1.0, 0.0, 0.0], dtype=F64))
    built = DF.theorem1_build(flat, tokens, heads=4, head_dim=2, generator=gen(2))
    assert built.shift > 0
    x_last = built.params.token_embedding[tokens[:, -1]] + built.params.positional_embedding[-1]
    shifted = flat.logits + built.shift * x_last @ flat.unembedding.T
    assert float((aot_forward(built.params, tokens) - shifted).abs().max()) < 1e-8


def test_theorem1_build_epsilon_bound_holds(one_thread):
    N, S, d, H, d_h = 4, 2, 2, 3, 2
    tokens = all_sequences(N, S)
    probs = torch.softmax(1.5 * torch.randn(16, N, generator=gen(3), dtype=F64), 1)
    prior = (1.0 / torch.arange(1, 17, dtype=F64) ** 1.5)[torch.randperm(16, generator=gen(4))]
    prior = prior / prior.sum()
    encoder, best = dana.best_sequence_encoder(probs, d, prior=prior, steps=300)
    norm = float(torch.linalg.matrix_norm(encoder.logits.T, ord=2))
    for eps in (0.5, 0.2, 0.1):
        built = DF.theorem1_build(encoder, tokens, heads=H, head_dim=d_h, generator=gen(5), prior=prior, epsilon=eps)
        left_out = 1 - float(prior[built.kept].sum())
        assert left_out <= eps + 1e-12
        gap = dana.expected_kl(probs, aot_forward(built.params, tokens), prior) - best.kl
        assert gap <= 2 * built.constant * left_out * norm + 1e-9
    assert built.kept.numel() == 8 and built.paper_constant is not None
    assert built.constant <= built.paper_constant + 1e-9


def test_theorem1_build_refusals():
    tokens, _, encoder = _task(11, 6, 3, 3)
    with pytest.raises(ValueError, match="feature count"):
        DF.theorem1_build(encoder, tokens, heads=3, head_dim=2, generator=gen())
    with pytest.raises(ValueError, match="d_h > d"):
        DF.theorem1_build(encoder, tokens, heads=4, head_dim=4, generator=gen())
    same_last = all_sequences(4, 3)[all_sequences(4, 3)[:, -1] == 0][:7]
    enc7 = dana.SequenceEncoder(encoder.unembedding, encoder.embedding[:7])
    with pytest.raises(ValueError, match="L distinct last tokens"):
        DF.theorem1_build(enc7, same_last, heads=2, head_dim=2, generator=gen())  # kappa = 1 + 4 < 7


@pytest.mark.parametrize("N,S,H,d_h,seed", [(5, 2, 3, 2, 0), (10, 3, 8, 2, 1), (50, 4, 16, 1, 2)])
def test_corollary1_build_memorizes_every_association(N, S, H, d_h, seed, one_thread):
    T0 = H * d_h + 2
    seqs, targets = association_task(N, S, count=T0, generator=gen(seed))
    built = DF.corollary1_build(seqs, targets, N, heads=H, head_dim=d_h, generator=gen(seed + 10))
    logits = aot_forward(built.params, seqs)
    assert torch.equal(logits.argmax(1), targets)
    top = logits.gather(1, targets[:, None]).squeeze(1)
    others = logits.scatter(1, targets[:, None], -math.inf).max(1).values
    x_last = built.params.token_embedding[seqs[:, -1]] + built.params.positional_embedding[-1]
    mu = 1 - math.cos(2 * math.pi / N)
    assert float((top - others).min()) >= mu - 2 * built.shift * float(x_last.norm(dim=1).max()) - 1e-9


def test_tight_sets_cover_every_admissible_set():
    tokens = all_sequences(3, 2)
    d, H, d_h = 2, 2, 2
    tight = [set(s) for s in DF.tight_sets(tokens, d, H, d_h)]
    for mask in range(1, 2 ** 9):
        picked = {i for i in range(9) if mask >> i & 1}
        if len(picked) <= DF.feature_count(tokens[sorted(picked)], d, H, d_h):
            assert any(picked <= s for s in tight), sorted(picked)
    assert all(len(s) == DF.feature_count(tokens[sorted(s)], d, H, d_h) or len(s) == 9 for s in tight)


def test_certify_all_sets_proves_small_cases_and_fails_on_a_grid(one_thread):
    check = DF.certify_all_sets(3, 2, 2, 2, 2, generator=gen(2))
    assert check.sets > 0 and check.certified == check.sets and check.smallest_margin > 0
    # H = 1, d = d_h = 3, [2]^3: a 2 x 2 grid ending in one token has rank <= 1 + 2 < 4 = kappa
    grid = DF.certify_all_sets(2, 3, 3, 1, 3, generator=gen(1))
    assert grid.certified < grid.sets and grid.smallest_margin == 0.0
    everything = all_sequences(2, 3)
    assert grid.unproved and all(DF.contains_grid(everything[list(s)], 2) for s in grid.unproved)


def test_contains_grid():
    square = torch.tensor([[0, 0, 5], [0, 1, 5], [1, 0, 5], [1, 1, 5]])
    assert DF.contains_grid(square, 2)
    assert not DF.contains_grid(square[:3], 2)
    assert not DF.contains_grid(torch.tensor([[0, 0, 5], [0, 1, 5], [1, 0, 5], [1, 1, 6]]), 2)
    assert DF.contains_grid(torch.tensor([[a, b, 0] for a in range(3) for b in range(3)]), 3)
    assert not DF.contains_grid(all_sequences(3, 2), 2)       # S = 2: one position before the last


def test_grid_bound_holds_for_random_weights(one_thread):
    """k x k grid over positions 1, 2 ending in one token: rank F <= 1 + H min(d_h, k)."""
    k = 3
    grid = torch.tensor([[a, b, 0] for a in range(k) for b in range(k)])
    for H, d_h in ((1, 3), (2, 4), (2, 2)):
        params = init_aot(4, 3, 4, H, d_h, generator=gen(H), dtype=F64)
        assert _rank(dana.skip_feature_matrix(params, grid)) == 1 + H * min(d_h, k)


def test_array_like_inputs_and_validated_options():
    """Token ids as lists or arrays give the same weights as tensors; scales, prior and targets are
    checked under their own names."""
    tokens = all_sequences(3, 2)
    from_tensor = DF.rank_one_witness(tokens, 3, 3, 2, generator=gen(3))
    from_list = DF.rank_one_witness(tokens.tolist(), 3, 3, 2, generator=gen(3))
    assert all(torch.equal(a, b) for a, b in zip(from_tensor.parameters(), from_list.parameters()))
    assert DF.feature_count(tokens.numpy(), 3, 2, 2) == DF.feature_count(tokens, 3, 2, 2)
    with pytest.raises(ValueError, match="scales must be finite"):
        DF.rank_one_witness(tokens, 3, 3, 2, scales=torch.tensor([1.0, math.nan]))
    with pytest.raises(ValueError, match="scales must be positive"):
        DF.rank_one_witness(tokens, 3, 3, 2, scales=[1.0, -2.0])
    with pytest.raises(ValueError, match=r"scales must have shape \(k,\)"):
        DF.rank_one_witness(tokens, 3, 3, 2, scales=torch.ones(2, 2))
    seqs, targets = association_task(5, 2, count=8, generator=gen(4))
    with pytest.raises(TypeError, match="targets must have an integer dtype"):
        DF.corollary1_build(seqs, targets.double(), 5, heads=3, head_dim=2)
    tokens, _, encoder = _task(8, 4, 3, 3)
    with pytest.raises(ValueError, match=r"prior must have shape \(T,\)"):
        DF.theorem1_build(encoder, tokens, heads=4, head_dim=2, prior=torch.full((3,), 1 / 3, dtype=F64))
