"""memcap.lookup: the Gram-matrix constant, the common-scale encoder and the simplified form of Theorem 2."""
import math

import pytest
import sympy as sp
import torch

from memcap import bounds, lookup
from memcap.construct import dana
from memcap.data import entropy


def test_union_bound_at_the_papers_constant_is_below_one():
    at_c = sp.simplify(lookup.GRAM_UNION_BOUND_EXPR.subs(lookup.t, bounds.JL_CONSTANT_EXPR))
    assert sp.simplify(at_c - 2 * bounds.N ** 2 / (bounds.N + 1) ** 4) == 0
    for vocab in (1, 2, 16, 50257):
        assert 2 * vocab ** 2 < (vocab + 1) ** 4


@pytest.mark.parametrize("vocab,dim", [(2, 1), (16, 8), (16, 400), (1000, 768), (50257, 12288)])
def test_gaussian_constant_is_at_most_the_jl_constant(vocab, dim):
    assert lookup.gaussian_gram_constant(vocab, dim) <= bounds.jl_constant(vocab, dim)
    t = lookup.gaussian_gram_constant(vocab, dim)
    if t < 1:
        assert lookup.gram_union_bound(vocab, dim, t) == pytest.approx(1.0)


def test_gaussian_unembedding_meets_the_constant():
    gen = torch.Generator().manual_seed(0)
    for dim in (400, 1000):
        W = lookup.gaussian_unembedding(16, dim, generator=gen)
        assert W.shape == (16, dim) and W.dtype == torch.float64
        assert dana.gram_deviation(W) < lookup.gaussian_gram_constant(16, dim) < bounds.jl_constant(16, dim)


def test_common_scale_solves_the_envelope_equation():
    for vocab, c, hbar in [(16, 0.354, 0.3), (16, 0.1, 2.0), (1000, 0.25, 1.0)]:
        scale = lookup.common_scale(vocab, c, hbar)
        assert math.log(1 + (vocab - 1) * math.exp(-scale * (1 - 2 * c))) == pytest.approx(hbar)
    assert lookup.common_scale(16, 0.2, math.log(16)) == pytest.approx(0.0, abs=1e-12)


def test_envelope_at_the_common_scale_is_the_simplified_bound():
    value = lookup.ENVELOPE_EXPR.subs(lookup.lam, lookup.COMMON_SCALE_EXPR)
    assert sp.simplify(value - lookup.SIMPLIFIED_KL_BOUND_EXPR) == 0


def _mixed_task(seed):
    gen = torch.Generator().manual_seed(seed)
    W = dana.identity_hadamard_unembedding(8, device="cpu")
    vocab, count = W.shape[0], 200
    targets = torch.randint(vocab, (count,), generator=gen)
    logits = 3 * torch.rand(count, 1, generator=gen, dtype=torch.float64) * torch.randn(
        count, vocab, generator=gen, dtype=torch.float64)
    logits[torch.arange(count), targets] += 6 * torch.rand(count, generator=gen, dtype=torch.float64)
    probs = torch.softmax(logits, 1)
    uniform = torch.rand(count, generator=gen) < 0.3
    probs[uniform] = 1.0 / vocab
    return W, targets, probs


@pytest.mark.parametrize("seed", range(6))
def test_common_scale_encoder_meets_the_simplified_bound(seed):
    W, targets, probs = _mixed_task(seed)
    vocab, c = W.shape[0], dana.gram_deviation(W)
    miss = float(lookup.miss_probability(probs, targets).mean())
    hbar = float(entropy(probs).mean())
    encoder = lookup.common_scale_encoder(targets, W, lookup.common_scale(vocab, c, hbar))
    kl = dana.expected_kl(probs, encoder.logits)
    book = lookup.simplified_kl_bound(vocab, c, miss, hbar)
    paper = bounds.thm2_kl_term_with_constant(vocab, c, miss, hbar, 2.0)      # the paper's 1 + 4C
    assert 0 <= kl <= book <= paper


def test_miss_probability_and_noisy_rows():
    targets = torch.tensor([0, 3, 3, 1])
    levels = torch.tensor([0.0, 0.5, 1.0, math.log(4)], dtype=torch.float64)
    probs = lookup.noisy_lookup_rows(targets, 4, levels)
    assert probs.shape == (4, 4)
    assert torch.allclose(probs.sum(1), torch.ones(4, dtype=torch.float64))
    assert torch.allclose(entropy(probs), levels, atol=1e-9)
    assert torch.allclose(probs.argmax(1)[:3], targets[:3])
    miss = lookup.miss_probability(probs, targets)
    assert miss[0] == 0 and miss[3] == pytest.approx(0.75)


def test_common_scale_encoder_logits():
    W = dana.identity_hadamard_unembedding(4, device="cpu")
    targets = torch.tensor([0, 5])
    encoder = lookup.common_scale_encoder(targets, W, 2.0)
    assert torch.allclose(encoder.logits, 2.0 * W[targets] @ W.T)


def test_refusals():
    with pytest.raises(ValueError, match="Theorem 2"):
        lookup.common_scale(16, 0.5, 1.0)
    with pytest.raises(ValueError, match="mean_entropy"):
        lookup.simplified_kl_bound(16, 0.2, 0.1, 0.0)
    with pytest.raises(ValueError, match="mean_entropy"):
        lookup.common_scale(16, 0.2, 3.0)
    with pytest.raises(ValueError, match="error_prob"):
        lookup.simplified_kl_bound(16, 0.2, 1.5, 1.0)
    with pytest.raises(ValueError, match="threshold"):
        lookup.gram_union_bound(16, 8, 1.0)
    with pytest.raises(ValueError, match="vocab"):
        lookup.common_scale(1, 0.2, 0.1)
    with pytest.raises(TypeError, match="generator"):
        lookup.gaussian_unembedding(4, 2, generator=0)
    W = dana.identity_hadamard_unembedding(2, device="cpu")
    with pytest.raises(ValueError, match="token ids"):
        lookup.common_scale_encoder(torch.tensor([4]), W, 1.0)
    with pytest.raises(ValueError, match="scale"):
        lookup.common_scale_encoder(torch.tensor([1]), W, -1.0)
    with pytest.raises(ValueError, match="shape"):
        lookup.noisy_lookup_rows(torch.tensor([0, 1]), 4, torch.tensor([0.1]))


def test_inputs_are_converted_once_and_named_when_bad():
    W = dana.identity_hadamard_unembedding(2, device="cpu")
    targets = torch.tensor([0, 1, 1])
    assert torch.equal(lookup.common_scale_encoder([0, 1, 1], W.numpy(), 2.0).embedding,
                       lookup.common_scale_encoder(targets, W, 2.0).embedding)
    probs = lookup.noisy_lookup_rows([0, 1, 1], 2, [0.1, 0.2, 0.3])
    assert torch.allclose(lookup.miss_probability(probs.tolist(), targets),
                          lookup.miss_probability(probs, targets))
    with pytest.raises(ValueError, match="targets must be token ids"):
        lookup.miss_probability(probs, torch.tensor([0, 1, 2]))      # gather would fail on id 2
    with pytest.raises(ValueError, match="entropies must be finite"):
        lookup.noisy_lookup_rows(targets, 2, torch.tensor([0.1, float("nan"), 0.3]))
    with pytest.raises(ValueError, match=r"entropies must lie in \[0, log N\]"):
        lookup.noisy_lookup_rows(targets, 2, torch.tensor([0.1, 0.2, 0.9]))
    with pytest.raises(ValueError, match="unembedding must not be empty"):
        lookup.common_scale_encoder(targets, torch.zeros(0, 2), 1.0)
    with pytest.raises(ValueError, match="scale must be a finite real"):
        lookup.common_scale_encoder(targets, W, float("inf"))
    assert torch.equal(lookup.gaussian_unembedding(3, 2, device="cpu"),
                       lookup.gaussian_unembedding(3, 2, generator=torch.Generator().manual_seed(0), device="cpu"))


def test_simplified_bound_refuses_means_that_no_task_has():
    """By Fano's inequality mean_entropy <= H_b(error_prob) + error_prob log(N - 1): a pair above it is
    refused naming both (it gave 0 or a negative 'bound' on a divergence); on the curve the bound is >= 0."""
    for error_prob, mean_entropy in ((0.0, 1.0), (0.01, math.log(10)), (0.1, 0.6)):
        with pytest.raises(ValueError, match=r"mean_entropy = .* Fano's inequality allows with error_prob"):
            lookup.simplified_kl_bound(10, 0.1, error_prob, mean_entropy)
    for vocab in (2, 10, 16, 1000):
        for error_prob in (0.001, 0.1, 0.5, (vocab - 1) / vocab, 0.999, 1.0):
            fano = min(bounds._fano_entropy(vocab, error_prob), math.log(vocab))   # the largest mean_entropy
            if fano > 0:
                assert lookup.simplified_kl_bound(vocab, 0.1, error_prob, fano) >= 0.0
        uniform = lookup.simplified_kl_bound(vocab, 0.1, (vocab - 1) / vocab, math.log(vocab))
        assert 0.0 <= uniform < 1e-12
    # a real task meets Fano's inequality: its two means are accepted (the book's task A, say)
    probs = lookup.noisy_lookup_rows(torch.arange(8) % 4, 4, torch.tensor([0.1, 1.3] * 4, dtype=torch.float64))
    miss, hbar = float(lookup.miss_probability(probs, torch.arange(8) % 4).mean()), float(entropy(probs).mean())
    assert lookup.simplified_kl_bound(4, 0.1, miss, hbar) > 0


def test_tiny_mean_entropies_do_not_divide_by_zero():
    """e^h - 1 rounds to 0 for h = 1e-17: the formulas use expm1 (and a difference of logarithms, finite
    even for the smallest float), not a ZeroDivisionError."""
    assert lookup.common_scale(10, 0.1, 1e-17) == pytest.approx(math.log(9 / 1e-17) / 0.8, rel=1e-12)
    assert lookup.simplified_kl_bound(10, 0.1, 0.5, 1e-17) == pytest.approx(1.2 / 0.8 * 0.5 * math.log(9e17),
                                                                            rel=1e-12)
    tiniest = 5e-324
    assert lookup.common_scale(10, 0.1, tiniest) == pytest.approx((math.log(9) - math.log(tiniest)) / 0.8)
    assert lookup.common_scale(16, 0.2, 1.0) == pytest.approx(math.log(15 / (math.e - 1)) / 0.6, rel=1e-12)


def test_noisy_rows_take_log_n_written_in_float32():
    """log 3 in float32 is just above log 3 in float64: the rows are the uniform ones, not an error about
    another function's argument; values above log N by more than rounding are refused naming entropies."""
    probs = lookup.noisy_lookup_rows([0], 3, torch.tensor([math.log(3)], dtype=torch.float32))
    assert torch.allclose(probs, torch.full((1, 3), 1 / 3, dtype=torch.float64))
    for dtype in (torch.float32, torch.float64):
        with pytest.raises(ValueError, match=r"entropies must lie in \[0, log N\]"):
            lookup.noisy_lookup_rows([0], 3, torch.tensor([1.1], dtype=dtype))


def test_gram_union_bound_of_a_huge_vocabulary():
    """2 N^2 overflows a float for N = 1e200 (a bare OverflowError): computed in log space, the bound is
    given where it is a float and refused naming vocab where it is not."""
    assert lookup.gram_union_bound(10**100, 1, 0.5) == pytest.approx(2e200 * math.exp(-1 / 32), rel=1e-12)
    assert lookup.gram_union_bound(10**200, 10**7, 0.5) == 0.0
    with pytest.raises(ValueError, match=r"vocab N = 10\^200 .* beyond a float"):
        lookup.gram_union_bound(10**200, 1, 0.5)
