"""Tests of memcap.construct.mahdavi: Mahdavi et al.'s Theorem 1 as a program (Lemmas 3-4, B.2,
Claims 1-2, Proposition 1, Remarks 1-2), on random instances, edge cases and error cases."""
from __future__ import annotations

import math
import time

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from memcap import bounds, linalg
from memcap.construct import mahdavi as M
from memcap.models import MHAParams, mha_attention, mha_features, mha_forward

F64 = torch.float64


def _data(T: int, n: int, d: int, *, shared: bool, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    E = torch.rand((n, d) if shared else (T, n, d), generator=g, dtype=F64)
    e = torch.rand(T, d, generator=g, dtype=F64)
    return E, e, g


def _labels(T: int, d_out: int, g: torch.Generator) -> torch.Tensor:
    y = torch.randn(T, d_out, generator=g, dtype=F64) * 3
    return y[:, 0] if d_out == 1 else y


# ---------------------------------------------------------------------------------------------------
# Theorem 1: exact memorization at capacity


GRID = [
    # (n, d, H, d_h, shared, d_out, skip)
    (4, 8, 4, 4, True, 1, False),     # d_h = n
    (5, 8, 3, 3, True, 1, False),     # d_h < n
    (4, 8, 3, 8, False, 1, False),    # d_h > n, non-shared
    (5, 9, 4, 2, False, 3, False),    # d_h < n, vector outputs
    (4, 8, 5, 6, True, 2, True),      # skip connection (Remark 2), vector outputs
    (6, 10, 3, 6, False, 1, True),    # skip, non-shared
    (3, 5, 1, 3, True, 1, False),     # H = 1
    (4, 7, 5, 1, True, 1, False),     # d_h = 1 (r = 1, capacity 1)
    (1, 3, 4, 4, False, 1, False),    # n = 1 (r = 1)
]


@pytest.mark.parametrize("n, d, H, d_h, shared, d_out, skip", GRID)
def test_memorizes_arbitrary_labels_at_capacity(n, d, H, d_h, shared, d_out, skip):
    T = bounds.mha_capacity(H, n, d_h)
    E, e, g = _data(T, n, d, shared=shared, seed=T + n)
    y = _labels(T, d_out, g)
    params = M.memorize(E, e, y, heads=H, head_dim=d_h, skip=skip, generator=g)
    assert isinstance(params, MHAParams) and params.skip is skip
    assert params.W_K.shape == (H, d, d_h) and params.out_dim == d_out
    y_hat = mha_forward(params, E, e)
    assert float((y_hat - y.reshape(T, d_out)).abs().max()) <= 1e-6
    # the construction uses at most d_h dimensions per head
    for h in range(H):
        assert linalg.rank(params.W_K[h] @ params.W_Q[h].T) <= d_h


@pytest.mark.parametrize("T", [1, 2, 6])
def test_memorizes_below_capacity(T):
    E, e, g = _data(T, 4, 8, shared=False, seed=T)
    con = M.theorem1_construction(E, e, _labels(T, 1, g), heads=3, head_dim=4, generator=g)
    assert con.capacity == 10 and con.max_error <= 1e-6
    assert sum(len(grp) for grp in con.key_query.groups) == T


def test_value_dim_larger_than_out_dim():
    E, e, g = _data(7, 4, 8, shared=True)
    y = _labels(7, 2, g)
    params = M.memorize(E, e, y, heads=2, head_dim=4, value_dim=5, generator=g)
    assert params.value_dim == 5
    assert float((mha_forward(params, E, e) - y).abs().max()) <= 1e-6


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 5), extra=st.integers(1, 4), H=st.integers(1, 4), d_h=st.integers(1, 7),
       shared=st.booleans(), skip=st.booleans(), seed=st.integers(0, 10_000))
def test_property_exact_memorization_and_rank(n, extra, H, d_h, shared, skip, seed):
    d = n + extra
    T = bounds.mha_capacity(H, n, d_h)
    E, e, g = _data(T, n, d, shared=shared, seed=seed)
    con = M.theorem1_construction(E, e, _labels(T, 1, g), heads=H, head_dim=d_h, skip=skip, generator=g)
    assert con.max_error <= 1e-6
    kq = con.key_query
    assert linalg.rank(kq.features) >= min(bounds.mha_capacity(H, n, d_h), T) == kq.target
    # Z is the model's own feature matrix
    assert torch.allclose(kq.features, mha_features(kq.W_K, kq.W_Q, E, e), atol=1e-12)
    for step in kq.steps[1:]:
        assert step.saturation_error < step.delta
        assert step.sigma_min >= 0.5 * step.sigma_min_limit * (1 - 1e-9)


# ---------------------------------------------------------------------------------------------------
# Proposition 1


def test_key_query_for_rank_reaches_the_bound_and_steps_nest():
    n, d, H, d_h = 5, 9, 4, 5
    T = bounds.mha_capacity(H, n, d_h)
    E, e, g = _data(T, n, d, shared=True)
    W_K, W_Q = M.key_query_for_rank(E, e, heads=H, head_dim=d_h, generator=g)
    assert W_K.shape == W_Q.shape == (H, d, d_h)
    assert linalg.rank(mha_features(W_K, W_Q, E, e)) == T
    kq = M.key_query_construction(E, e, heads=H, head_dim=d_h, generator=torch.Generator().manual_seed(1))
    for h in range(1, H + 1):
        Zh = kq.step_features(h)
        assert Zh.shape == (bounds.mha_capacity(h, n, d_h), h * d)
        assert linalg.rank(Zh) == Zh.shape[0]   # rank grows by r - 1 per head
    with pytest.raises(ValueError, match="heads must be <= H"):
        kq.step_features(H + 1)


def test_rank_target_when_T_below_capacity():
    E, e, g = _data(5, 4, 8, shared=True)
    kq = M.key_query_construction(E, e, heads=3, head_dim=4, generator=g)
    assert kq.target == 5 and linalg.rank(kq.features) == 5
    assert kq.groups[2] == ()


# ---------------------------------------------------------------------------------------------------
# Lemma 3


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 6), extra=st.integers(1, 4), T=st.integers(2, 12), seed=st.integers(0, 10_000),
       data=st.data())
def test_property_lemma3(n, extra, T, seed, data):
    d = n + extra
    E, e, g = _data(T, n, d, shared=False, seed=seed)
    m = data.draw(st.integers(0, min(n - 1, T - 1)))
    chosen = sorted(data.draw(st.permutations(range(T)))[:m])
    sep = M.rank_one_separator(E, e, chosen, generator=g)
    assert linalg.rank(sep.matrix) == 1
    logits = sep.logits(E, e)  # (T, n)
    assert torch.allclose(logits[chosen], torch.zeros(m, n, dtype=F64), atol=1e-12)
    others = [t for t in range(T) if t not in chosen]
    srt = logits[others].sort(dim=1).values
    assert float((srt[:, 1:] - srt[:, :-1]).min()) > 0   # pairwise distinct logits


# ---------------------------------------------------------------------------------------------------
# Lemma 4 and Appendix B.2


@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 12), rows=st.integers(1, 6), delta=st.floats(1e-9, 1.5), seed=st.integers(0, 10_000))
def test_property_saturation_scale_meets_delta(n, rows, delta, seed):
    g = torch.Generator().manual_seed(seed)
    a_star = 4 * torch.randn(rows, n, generator=g, dtype=F64)
    a_plus = torch.randn(rows, n, generator=g, dtype=F64)
    c = M.saturation_scale(a_star, a_plus, delta)
    for scale in (c, 2 * c + 1):
        err = M.saturation_error(a_star, a_plus, scale)
        assert bool((err < delta).all())
        assert bool((err <= M.saturation_bound(a_star, a_plus, scale) + 1e-15).all())


def test_softmax_limit_is_one_hot_at_argmax():
    a = torch.tensor([[0.1, 2.0, -1.0], [3.0, 0.0, 2.9]], dtype=F64)
    assert torch.equal(M.softmax_limit(a), torch.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]], dtype=F64))
    assert torch.allclose(M.top_gap(a), torch.tensor([1.9, 0.1], dtype=F64))
    with pytest.raises(ValueError, match="unique largest logit"):
        M.softmax_limit(torch.tensor([[1.0, 1.0, 0.0]], dtype=F64))


def test_saturation_scale_edge_cases_and_errors():
    one = torch.zeros(3, 1, dtype=F64)
    assert M.saturation_scale(one, one, 0.1) == 0.0
    with pytest.raises(ValueError, match="unique largest logit"):
        M.saturation_scale(torch.zeros(1, 3, dtype=F64), torch.tensor([[2.0, 2.0, 0.0]], dtype=F64), 0.1)
    with pytest.raises(ValueError, match="delta must be a finite positive"):
        M.saturation_scale(torch.zeros(1, 3, dtype=F64), torch.ones(1, 3, dtype=F64), 0.0)
    with pytest.raises(ValueError, match="same shape"):
        M.saturation_scale(torch.zeros(1, 3, dtype=F64), torch.ones(1, 4, dtype=F64), 0.1)


def test_finite_delta_formula():
    assert M.finite_delta(2.0, 4.0, 0.5, 16, margin=1.0) == pytest.approx(2.0 / (4 * 0.5 * 4.0))
    assert M.finite_delta(1.0, 0.0, 1.0, 5) == math.inf
    with pytest.raises(ValueError, match="margin must lie in"):
        M.finite_delta(1.0, 1.0, 1.0, 1, margin=2.0)


# ---------------------------------------------------------------------------------------------------
# Claims 1 and 2


def test_claim1_realizes_any_interior_pattern():
    E, e, g = _data(9, 4, 7, shared=False)
    theta = torch.softmax(3 * torch.randn(4, 4, generator=g, dtype=F64), dim=-1)
    head = M.claim1_head(E, e, [1, 3, 5, 8], theta, head_dim=4)
    att = mha_attention(head.W_K[None], head.W_Q[None], E, e)[:, 0]
    assert float((att[[1, 3, 5, 8]] - theta).abs().max()) <= 1e-10
    with pytest.raises(ValueError, match="open simplex"):
        M.claim1_head(E, e, [0], torch.tensor([[1.0, 0.0, 0.0, 0.0]], dtype=F64), head_dim=4)
    with pytest.raises(ValueError, match="at most r = min"):
        M.claim1_head(E, e, [0, 1, 2], theta[:3], head_dim=2)


def test_claim2_keeps_the_others_close_to_one_hot():
    E, e, g = _data(10, 4, 7, shared=True)
    theta = torch.softmax(torch.randn(3, 4, generator=g, dtype=F64), dim=-1)
    for delta in (1e-2, 1e-6):
        head = M.claim2_head(E, e, [2, 6, 7], theta, head_dim=4, delta=delta, generator=torch.Generator())
        att = head.attention(E, e)
        assert float((att[[2, 6, 7]] - theta).abs().max()) <= 1e-9
        assert float((att[list(head.saturated)] - head.theta_plus).abs().sum(-1).max()) < delta
        assert linalg.rank(head.W_K @ head.W_Q.T) <= 4
    with pytest.raises(ValueError, match="at most r - 1"):
        M.claim2_head(E, e, [0, 1, 2, 3], torch.full((4, 4), 0.25, dtype=F64), head_dim=4, delta=0.1)


# ---------------------------------------------------------------------------------------------------
# Remark 1 and the error cases


def test_remark1_low_kruskal_rank_queries():
    n, d, H = 5, 8, 3
    g = torch.Generator().manual_seed(4)
    basis = torch.randn(3, d, generator=g, dtype=F64)
    T = bounds.mha_capacity_remark1(H, 3, 5)  # queries in a 3-dim subspace: Q = 3
    e = torch.rand(T, 3, generator=g, dtype=F64) @ basis
    E = torch.rand(T, n, d, generator=g, dtype=F64)
    assert M.remark1_capacity(e, context_size=n, heads=H, head_dim=5) == T == 7
    # the refusal names the paper's assumption and says what to do: Remark 1's query_kruskal_rank
    with pytest.raises(ValueError, match=r"Mahdavi et al.'s Assumption 1 fails: .*Remark 1 .* "
                                         r"memcap.linalg.kruskal_rank\(queries\) and pass query_kruskal_rank=Q, "
                                         r"or pass query_kruskal_rank='auto'"):
        M.memorize(E, e, torch.ones(T, dtype=F64), heads=H, head_dim=5)
    y = _labels(T, 1, g)
    state = g.get_state()
    params = M.memorize(E, e, y, heads=H, head_dim=5, query_kruskal_rank=3, generator=g)
    assert float((mha_forward(params, E, e)[:, 0] - y).abs().max()) <= 1e-6
    # 'auto' computes Q = 3 itself: the same construction, the same certificate
    auto = M.theorem1_construction(E, e, y, heads=H, head_dim=5, query_kruskal_rank="auto",
                                   generator=torch.Generator().set_state(state))
    assert auto.capacity == T and all(torch.equal(a, b) for a, b in zip(auto.params.parameters(), params.parameters()))
    with pytest.raises(ValueError, match="query_kruskal_rank must be a positive integer Q < n, 'auto' or None"):
        M.memorize(E, e, y, heads=H, head_dim=5, query_kruskal_rank="guess")
    with pytest.raises(ValueError, match=r"T=8 exceeds the capacity H\(min\(Q,d_h\)-1\)\+1"):
        M.memorize(E[:1].expand(8, n, d), torch.cat([e, e[:1] + e[1:2]]), torch.ones(8, dtype=F64), heads=H,
                   head_dim=5, query_kruskal_rank=3)


def test_error_n_not_below_d():
    E, e, _ = _data(3, 4, 4, shared=True)
    with pytest.raises(ValueError, match=r"n >= d: Theorem 1 needs n < d \(n=4, d=4\)"):
        M.memorize(E, e, torch.ones(3, dtype=F64), heads=2, head_dim=4)


def test_error_assumption_2():
    E, e, _ = _data(3, 3, 6, shared=False)
    E[1, 2] = E[1, 0] + E[1, 1]
    with pytest.raises(ValueError, match="Assumption 2 fails: context 1 has rank 2 < n = 3"):
        M.memorize(E, e, torch.ones(3, dtype=F64), heads=2, head_dim=3)


def test_error_assumption_1_dependent_queries():
    E, e, _ = _data(5, 3, 6, shared=True)
    e[2] = e[0] - 2 * e[1]
    with pytest.raises(ValueError, match="Assumption 1 fails: queries"):
        M.memorize(E, e, torch.ones(5, dtype=F64), heads=2, head_dim=3)
    with pytest.raises(ValueError, match="Assumption 1 fails: queries have Kruskal rank Q < n"):
        M.rank_one_separator(E, e, [0, 1], generator=torch.Generator())


def test_error_T_above_capacity():
    E, e, _ = _data(12, 4, 8, shared=True)
    with pytest.raises(ValueError, match=r"T=12 exceeds the capacity H\(min\(n,d_h\)-1\)\+1 = .* = 10"):
        M.memorize(E, e, torch.ones(12, dtype=F64), heads=3, head_dim=6)


def test_error_shapes_and_types():
    E, e, _ = _data(4, 3, 6, shared=True)
    with pytest.raises(ValueError, match="labels must have shape"):
        M.memorize(E, e, torch.ones(5, dtype=F64), heads=2, head_dim=3)
    with pytest.raises(ValueError, match="contexts must have shape"):
        M.memorize(E[:, :5], e, torch.ones(4, dtype=F64), heads=2, head_dim=3)
    with pytest.raises(ValueError, match="heads must be a positive integer"):
        M.memorize(E, e, torch.ones(4, dtype=F64), heads=0, head_dim=3)
    with pytest.raises(TypeError, match="skip must be a bool"):
        M.memorize(E, e, torch.ones(4, dtype=F64), heads=2, head_dim=3, skip=1)
    with pytest.raises(ValueError, match="d_v >= d_out"):
        M.memorize(E, e, torch.ones(4, 2, dtype=F64), heads=2, head_dim=3, value_dim=1)
    # array-likes are converted at the boundary: the same weights as from tensors
    from_lists = M.memorize(E.numpy(), e.tolist(), [1.0] * 4, heads=2, head_dim=3)
    from_tensors = M.memorize(E, e, torch.ones(4, dtype=F64), heads=2, head_dim=3)
    assert all(torch.equal(a, b) for a, b in zip(from_lists.parameters(), from_tensors.parameters()))
    with pytest.raises(TypeError, match="queries must be a tensor"):
        M.memorize(E, "queries", torch.ones(4, dtype=F64), heads=2, head_dim=3)
    with pytest.raises(ValueError, match="vanish_on holds index 9"):
        M.rank_one_separator(E, e, [9])


def test_auto_kruskal_rank_is_theorem_1_when_assumption_1_holds():
    E, e, g = _data(7, 3, 6, shared=True)
    y = _labels(7, 1, g)
    auto = M.theorem1_construction(E, e, y, heads=3, head_dim=3, query_kruskal_rank="auto")
    plain = M.theorem1_construction(E, e, y, heads=3, head_dim=3)
    assert auto.capacity == plain.capacity == 7
    assert all(torch.equal(a, b) for a, b in zip(auto.params.parameters(), plain.params.parameters()))


def test_identical_calls_give_bit_identical_weights_whatever_the_thread_count():
    """Repeated calls used to differ at 1e-15 relative (MKL's lstsq depends on memory alignment); the
    construction now uses QR and triangular solves on one CPU thread."""
    E, e, g = _data(31, 6, 12, shared=False)
    y = _labels(31, 1, g)
    before = torch.get_num_threads()
    runs = []
    try:
        for threads in (2, 2, 1):
            torch.set_num_threads(threads)
            runs.append(M.memorize(E, e, y, heads=6, head_dim=6, generator=torch.Generator().manual_seed(1)))
    finally:
        torch.set_num_threads(before)
    assert torch.get_num_threads() == before
    for other in runs[1:]:
        assert all(torch.equal(a, b) for a, b in zip(runs[0].parameters(), other.parameters()))


def _near_plane_queries(eps, seed=0):
    """Queries within eps of a plane (n = 4, d = 8, H = 6 at capacity): Assumption 1 holds numerically."""
    g = torch.Generator().manual_seed(seed)
    n, d, H = 4, 8, 6
    T = bounds.mha_capacity(H, n, n)
    basis = torch.randn(2, d, generator=g, dtype=torch.float64)
    queries = (torch.rand(T, 2, generator=g, dtype=torch.float64) @ basis
               + eps * torch.randn(T, d, generator=g, dtype=torch.float64))
    contexts = torch.rand(T, n, d, generator=g, dtype=torch.float64)
    return contexts, queries, torch.randn(T, generator=g, dtype=torch.float64), H, n


def test_construction_refuses_to_return_weights_that_do_not_memorize():
    # the review's case: queries 1e-13 from a plane pass Assumption 1's numerical check, but the scales c
    # (about 1e17) multiply rounding residues, and the weights missed labels by 0.16, returned silently
    contexts, queries, y, H, n = _near_plane_queries(1e-13)
    assert linalg.satisfies_assumption_1(queries, n) and linalg.satisfies_assumption_2(contexts)
    with pytest.raises(ValueError, match="does not memorize these labels in torch.float64.*Assumptions 1-2"):
        M.memorize(contexts, queries, y, heads=H, head_dim=n)
    # further from the plane the same construction fits, and the certificate says how well
    contexts, queries, y, H, n = _near_plane_queries(1e-6)
    con = M.theorem1_construction(contexts, queries, y, heads=H, head_dim=n)
    assert con.max_error <= M.memorize_tolerance(torch.float64) * max(1.0, float(y.abs().max()))


def test_nearly_equal_tokens_meet_assumption_2_and_are_memorized():
    # tokens 1e-8 apart: E^(t) has condition number about 1e8, its Gram matrix 1e16, where torch's solver
    # raised a raw "input matrix is singular"; the targets now come from a QR factor of E^(t)^T
    g = torch.Generator().manual_seed(0)
    n, d, H = 4, 8, 6
    T = bounds.mha_capacity(H, n, n)
    contexts = (torch.rand(T, 1, d, generator=g, dtype=torch.float64)
                + 1e-8 * torch.rand(T, n, d, generator=g, dtype=torch.float64))
    queries = torch.rand(T, d, generator=g, dtype=torch.float64)
    y = torch.randn(T, generator=g, dtype=torch.float64)
    assert linalg.satisfies_assumption_2(contexts)
    con = M.theorem1_construction(contexts, queries, y, heads=H, head_dim=n)
    assert con.max_error <= 1e-6


def test_memorize_tolerance_by_dtype():
    assert M.memorize_tolerance(torch.float64) == 1e-6 and M.memorize_tolerance(torch.float32) == 1e-3
    with pytest.raises(ValueError, match="dtype must be torch.float64 or torch.float32"):
        M.memorize_tolerance(torch.float16)


def test_readout_rejects_rank_deficient_features():
    Z = torch.ones(3, 8, dtype=F64)
    with pytest.raises(ValueError, match="full row rank"):
        M.readout_weights(Z, torch.ones(3, dtype=F64), heads=2)


# ---------------------------------------------------------------------------------------------------
# the paper-scale construction (Section 5.2 sizes)


@pytest.mark.slow
@pytest.mark.parametrize("shared", [True, False])
def test_paper_scale_construction(shared, record_property):
    """Section 5.2's sizes memorize to 1e-6; the time is reported (record_property, printed), not asserted."""
    n, d, H, d_h = 32, 64, 40, 64
    T = bounds.mha_capacity(H, n, d_h)
    assert T == 1241
    E, e, g = _data(T, n, d, shared=shared)
    y = _labels(T, 1, g)
    start = time.perf_counter()
    con = M.theorem1_construction(E, e, y, heads=H, head_dim=d_h, generator=g)
    seconds = time.perf_counter() - start
    record_property("construction_seconds", round(seconds, 2))
    print(f"\npaper-scale construction (T = {T}, shared={shared}): {seconds:.1f} s")
    assert con.max_error <= 1e-6
