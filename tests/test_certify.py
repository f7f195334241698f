"""Tests of memcap.certify: interval enclosures of A and F, the exact positive-definiteness test, and
rank certificates that can only succeed when the rank is really full."""
from __future__ import annotations

import pytest
import torch

from memcap import certify
from memcap.construct import dana
from memcap.data import all_sequences
from memcap.models import init_aot

F64 = torch.float64


def _params(N, S, d, H, d_h, seed=0):
    return init_aot(N, S, d, H, d_h, generator=torch.Generator().manual_seed(seed), dtype=F64)


def test_positive_definite_matches_eigenvalues():
    assert certify.positive_definite([[2, 1], [1, 2]])
    assert not certify.positive_definite([[1, 2], [2, 1]])        # eigenvalues 3, -1
    assert not certify.positive_definite([[1, 1], [1, 1]])        # singular
    assert not certify.positive_definite([[0, 0], [0, 1]])
    gen = torch.Generator().manual_seed(0)
    for n in (1, 3, 6):
        for _ in range(10):
            B = torch.randint(-5, 6, (n, n), generator=gen)
            M = (B @ B.T - 3 * torch.eye(n, dtype=torch.int64))
            expected = bool(torch.linalg.eigvalsh(M.double()).min() > 1e-9)
            assert certify.positive_definite(M.tolist()) == expected
    with pytest.raises(ValueError, match="square"):
        certify.positive_definite([[1, 2]])


@pytest.mark.parametrize("kind", ["attention", "features"])
def test_enclosure_contains_the_float64_matrix(kind):
    tokens = all_sequences(3, 2)
    params = _params(3, 2, 3, 2, 2)
    enc = certify.enclose(params, tokens, kind)
    exact = (dana.head_input_matrix(params, tokens) if kind == "attention"
             else dana.skip_feature_matrix(params, tokens))
    assert enc.shape == tuple(exact.shape)
    assert float((enc.approx() - exact).abs().max()) < 1e-12
    assert enc.max_radius() < 1e-15


def test_full_rank_is_certified_with_a_margin():
    tokens = all_sequences(3, 2)                              # T = 9 <= d + H d_h = 3 + 3 * 2
    params = _params(3, 2, 3, 3, 2, seed=1)
    cert = certify.certify_full_rank(certify.enclose(params, tokens))
    assert cert.certified and cert.rank == 9
    assert 0 < cert.sigma_lower < cert.sigma_estimate
    smallest = float(torch.linalg.svdvals(dana.skip_feature_matrix(params, tokens))[-1])
    assert cert.sigma_lower <= smallest                       # the bound is a lower bound
    sub = certify.certify_full_rank(certify.enclose(params, tokens), columns=[0, 4, 8])
    assert sub.certified and sub.rank == 3


def test_a_rank_deficient_matrix_is_never_certified():
    """N = 2, S = 2, d = 4: every A^h(t) lies in an affine plane, so rank A <= 3 < 4 = min(T, Hd)."""
    tokens = all_sequences(2, 2)
    for seed in range(3):
        enc = certify.enclose(_params(2, 2, 4, 1, 2, seed), tokens, "attention")
        cert = certify.certify_full_rank(enc, margin=0.0)
        assert not cert.certified and cert.rank == 0 and cert.sigma_lower == 0.0


def test_rows_are_used_when_there_are_fewer_rows():
    tokens = all_sequences(3, 3)                              # A is (Hd, T) = (6, 27)
    cert = certify.certify_full_rank(certify.enclose(_params(3, 3, 3, 2, 3), tokens, "attention"))
    assert cert.certified and cert.rank == 6


def test_errors():
    tokens = all_sequences(2, 2)
    params = _params(2, 2, 2, 1, 1)
    with pytest.raises(ValueError, match="kind"):
        certify.enclose(params, tokens, "values")
    with pytest.raises(ValueError, match="ids in"):
        certify.enclose(params, tokens + 5)
    with pytest.raises(TypeError, match="AoTParams"):
        certify.enclose("params", tokens)
    enc = certify.enclose(params, tokens)
    with pytest.raises(ValueError, match="columns"):
        certify.certify_full_rank(enc, columns=[0, 0])
    with pytest.raises(ValueError, match="margin"):
        certify.certify_full_rank(enc, margin=1.5)


def test_positive_definite_is_exact_on_integers_only():
    big = 2 ** 130                                          # beyond int64: Gram matrices of 64-bit fixed point
    assert certify.positive_definite([[big, 1], [1, big]])
    assert certify.positive_definite(torch.tensor([[2, 1], [1, 2]]))
    with pytest.raises(TypeError, match="matrix must hold integers"):
        certify.positive_definite([[2.5, 1], [1, 2]])       # int() would have truncated it to 2
    with pytest.raises(TypeError, match="matrix must have an integer dtype"):
        certify.positive_definite(torch.tensor([[2.0, 1.0], [1.0, 2.0]]))
    with pytest.raises(ValueError, match="matrix must be symmetric"):
        certify.positive_definite([[2, 1], [0, 2]])
    with pytest.raises(ValueError, match="matrix must not be empty"):
        certify.positive_definite([])


def test_columns_and_tokens_accept_array_likes_and_refuse_floats():
    tokens = all_sequences(2, 2)
    params = _params(2, 2, 2, 1, 1)
    enc = certify.enclose(params, tokens.tolist())
    assert enc == certify.enclose(params, tokens.numpy())
    assert certify.certify_full_rank(enc, columns=torch.tensor([0, 3])) == certify.certify_full_rank(enc, [0, 3])
    with pytest.raises(TypeError, match="columns must have an integer dtype"):
        certify.certify_full_rank(enc, columns=[0.5, 1.0])
    with pytest.raises(ValueError, match="margin must be a finite real"):
        certify.certify_full_rank(enc, margin=float("nan"))
    with pytest.raises(ValueError, match="tokens must not be empty"):
        certify.enclose(params, tokens[:0])
