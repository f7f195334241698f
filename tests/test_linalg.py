"""Tests of memcap.linalg: ranks, Kruskal ranks (Mahdavi et al., Definitions 1-2), Assumptions 1-3."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from memcap import linalg

PROPERTY = settings(max_examples=20, deadline=None)


def gaussian(m: int, d: int, seed: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    return torch.randn(m, d, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def uniform(*shape: int, seed: int) -> torch.Tensor:
    return torch.rand(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


# --------------------------------------------------------------------------------------------- rank


def test_rank_hand_examples() -> None:
    assert linalg.rank(torch.eye(3, dtype=torch.float64)) == 3
    assert linalg.rank([[1, 2], [2, 4]]) == 1  # nested list of ints, promoted to float64
    assert linalg.rank(np.zeros((4, 2))) == 0
    assert linalg.rank(np.ones((2, 5), dtype=np.float32)) == 1


def test_rank_tolerance_default_and_explicit() -> None:
    m = torch.diag(torch.tensor([1.0, 1e-10], dtype=torch.float64))
    assert linalg.rank(m) == 2  # 1e-10 > 2 * eps * 1
    assert linalg.rank(m, tol=1e-8) == 1  # an explicit tol overrides the relative default
    assert linalg.rank(m, rtol=1e-9) == 1
    # in float32 the same gap is below max(shape) * eps(float32) * sigma_max
    assert linalg.rank(m.to(torch.float32)) == 1


def test_rank_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="matrix must be 2-D, got shape \\(2, 2, 2\\)"):
        linalg.rank(torch.zeros(2, 2, 2))
    with pytest.raises(ValueError, match="tol must be a finite real number >= 0"):
        linalg.rank(torch.eye(2), tol=-1.0)
    with pytest.raises(TypeError, match="matrix must be a tensor"):
        linalg.rank("not a matrix")


@PROPERTY
@given(a=st.integers(1, 8), b=st.integers(1, 8), r=st.integers(1, 8), seed=st.integers(0, 10_000))
def test_rank_of_product_is_inner_dimension(a: int, b: int, r: int, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    m = torch.randn(a, r, generator=g, dtype=torch.float64) @ torch.randn(r, b, generator=g, dtype=torch.float64)
    assert linalg.rank(m) == min(a, b, r) <= min(m.shape)


# ------------------------------------------------------------------------------------- Kruskal rank


def test_kruskal_rank_hand_examples() -> None:
    e1, e2, e3 = torch.eye(3, dtype=torch.float64)
    # every pair of {e1, e2, e1+e2} in R^2 is independent; all three are not
    assert linalg.kruskal_rank(torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])) == 2
    # rank 3, but {e1, e2, e1+e2} is dependent: Kruskal rank 2 < rank 3
    vecs = torch.stack([e1, e2, e3, e1 + e2])
    assert linalg.rank(vecs) == 3
    assert linalg.kruskal_rank(vecs) == 2
    assert linalg.kruskal_rank(torch.stack([e1, e2, torch.zeros(3, dtype=torch.float64)])) == 0
    assert linalg.kruskal_rank(e1[None]) == 1
    assert linalg.kruskal_rank(torch.eye(4)) == 4  # independent rows: every subset is independent


def test_kruskal_rank_refuses_large_enumeration() -> None:
    vecs = gaussian(40, 3, seed=0)  # rank 3 < m: must enumerate C(40, k) subsets
    with pytest.raises(ValueError, match="more than max_subsets = 100; .*randomized_kruskal_rank"):
        linalg.kruskal_rank(vecs, max_subsets=100)
    assert linalg.kruskal_rank(vecs, max_subsets=20_000) == 3


def test_kruskal_rank_rejects_bad_shapes() -> None:
    with pytest.raises(ValueError, match="vectors must be a 2-D tensor of row vectors \\(m, d\\)"):
        linalg.kruskal_rank(torch.zeros(3))
    with pytest.raises(ValueError, match="at least one vector"):
        linalg.kruskal_rank(torch.zeros(0, 3))


@PROPERTY
@given(m=st.integers(1, 9), d=st.integers(1, 5), seed=st.integers(0, 10_000))
def test_gaussian_vectors_are_in_general_position(m: int, d: int, seed: int) -> None:
    vecs = gaussian(m, d, seed)
    k = linalg.kruskal_rank(vecs)
    assert k == min(m, d) == linalg.rank(vecs)
    assert linalg.in_general_position(vecs)


@PROPERTY
@given(m=st.integers(2, 9), d=st.integers(1, 5), r=st.integers(1, 5), dup=st.data(), seed=st.integers(0, 10_000))
def test_kruskal_rank_at_most_rank_and_duplicate_drops_it_to_one(m: int, d: int, r: int, dup: st.DataObject,
                                                                  seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    vecs = torch.randn(m, r, generator=g, dtype=torch.float64) @ torch.randn(r, d, generator=g, dtype=torch.float64)
    assert linalg.kruskal_rank(vecs) <= linalg.rank(vecs)
    i = dup.draw(st.integers(0, m - 1))
    doubled = torch.cat([vecs, vecs[i:i + 1]])  # (m + 1, d): vector i twice
    assert linalg.kruskal_rank(doubled) == 1
    assert not linalg.in_general_position(doubled) or min(m + 1, d) == 1


def test_in_general_position_detects_a_dependent_d_subset() -> None:
    vecs = gaussian(6, 3, seed=1)
    assert linalg.in_general_position(vecs)
    vecs[5] = vecs[0] + 2 * vecs[1]  # {v0, v1, v5} lie in a plane of R^3
    assert not linalg.in_general_position(vecs)
    assert linalg.kruskal_rank(vecs) == 2


# --------------------------------------------------------------------------- randomized Kruskal rank


@PROPERTY
@given(m=st.integers(2, 12), d=st.integers(1, 6), seed=st.integers(0, 10_000))
def test_randomized_estimate_agrees_with_exact_on_gaussian_vectors(m: int, d: int, seed: int) -> None:
    vecs = gaussian(m, d, seed)
    out = linalg.randomized_kruskal_rank(vecs, candidates=range(1, m + 1), subsets=50,
                                         generator=torch.Generator().manual_seed(seed))
    assert out["estimate"] == linalg.kruskal_rank(vecs) == min(m, d)
    assert out["candidates"] == list(range(1, m + 1))
    assert len(out["fractions"]) == m
    assert all(f == (1.0 if k <= d else 0.0) for k, f in zip(out["candidates"], out["fractions"]))


def test_randomized_test_measures_the_fraction_of_dependent_subsets() -> None:
    vecs = gaussian(20, 5, seed=3)
    vecs[1] = vecs[0]  # a 2-subset is dependent with probability 1/C(20, 2) = 1/190
    out = linalg.randomized_kruskal_rank(vecs, candidates=[2, 5], subsets=4000,
                                         generator=torch.Generator().manual_seed(0))
    # k = 5 subsets contain both copies with probability C(18,3)/C(20,5) = 816/15504 ~ 5.3 %
    assert out["fractions"][1] == pytest.approx(1 - 816 / 15504, abs=0.015)
    assert out["estimate"] == 2  # the 99 % rule misses the rare dependent pair
    assert linalg.kruskal_rank(vecs) == 1


def test_randomized_kruskal_rank_rejects_bad_arguments() -> None:
    vecs = gaussian(5, 3, seed=0)
    gen = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="candidates must be <= m = 5"):
        linalg.randomized_kruskal_rank(vecs, candidates=[6], generator=gen)
    with pytest.raises(ValueError, match="threshold must be a real number in \\(0, 1\\]"):
        linalg.randomized_kruskal_rank(vecs, candidates=[2], threshold=1.5, generator=gen)
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        linalg.randomized_kruskal_rank(vecs, candidates=[2], generator=np.random.default_rng(0))
    with pytest.raises(ValueError, match="candidates must contain at least one"):
        linalg.randomized_kruskal_rank(vecs, candidates=[], generator=gen)


# ------------------------------------------------------------------------------------ Assumption 2


@PROPERTY
@given(t=st.integers(1, 6), n=st.integers(1, 6), extra=st.integers(1, 4), seed=st.integers(0, 10_000))
def test_assumption_2_holds_for_uniform_contexts_with_n_below_d(t: int, n: int, extra: int, seed: int) -> None:
    contexts = uniform(t, n, n + extra, seed=seed)  # (T, n, d), n < d
    linalg.check_assumption_2(contexts)
    assert linalg.satisfies_assumption_2(contexts)
    assert linalg.satisfies_assumption_2(contexts[0])  # shared (n, d) context


@PROPERTY
@given(t=st.integers(1, 6), d=st.integers(1, 5), extra=st.integers(1, 3), seed=st.integers(0, 10_000))
def test_assumption_2_fails_when_n_exceeds_d(t: int, d: int, extra: int, seed: int) -> None:
    n = d + extra
    contexts = uniform(t, n, d, seed=seed)
    with pytest.raises(ValueError, match=f"Assumption 2 fails: context 0 has rank {d} < n = {n} \\(n > d = {d}\\)"):
        linalg.check_assumption_2(contexts)
    assert not linalg.satisfies_assumption_2(contexts)


@PROPERTY
@given(t=st.integers(2, 8), n=st.integers(2, 5), data=st.data(), seed=st.integers(0, 10_000))
def test_assumption_2_error_names_the_context_with_a_repeated_row(t: int, n: int, data: st.DataObject,
                                                                  seed: int) -> None:
    contexts = uniform(t, n, n + 3, seed=seed)
    bad = data.draw(st.integers(0, t - 1))
    contexts[bad, 1] = contexts[bad, 0]  # repeated token: rank n - 1
    with pytest.raises(ValueError, match=f"Assumption 2 fails: context {bad} has rank {n - 1} < n = {n}"):
        linalg.check_assumption_2(contexts)


def test_assumption_2_shared_context_message_and_shapes() -> None:
    shared = uniform(4, 6, seed=0)
    shared[3] = shared[2]
    with pytest.raises(ValueError, match="Assumption 2 fails: the shared context has rank 3 < n = 4"):
        linalg.check_assumption_2(shared)
    with pytest.raises(ValueError, match="contexts must have shape \\(T, n, d\\) or \\(n, d\\)"):
        linalg.check_assumption_2(torch.zeros(2, 3, 4, 5))


# ------------------------------------------------------------------------------------ Assumption 1


def test_assumption_1_exact_passes_and_names_dependent_queries() -> None:
    queries = gaussian(8, 5, seed=2)
    linalg.check_assumption_1(queries, 4)  # Gaussian queries: Kruskal rank min(T, d) = 5 >= 4
    assert linalg.satisfies_assumption_1(queries, 5)
    assert not linalg.satisfies_assumption_1(queries, 6)  # Kruskal rank <= d = 5 < 6
    queries[6] = queries[2] - queries[4]  # {2, 4, 6} dependent: Kruskal rank 2
    with pytest.raises(ValueError, match="Assumption 1 fails: queries \\[2, 4, 6\\] are linearly dependent "
                                         "\\(rank 2 < n = 3\\)"):
        linalg.check_assumption_1(queries, 3)
    assert linalg.satisfies_assumption_1(queries, 2)


def test_assumption_1_needs_at_least_n_queries_and_n_at_most_d() -> None:
    with pytest.raises(ValueError, match="Assumption 1 fails: there are only T = 3 queries"):
        linalg.check_assumption_1(gaussian(3, 8, seed=0), 4)
    with pytest.raises(ValueError, match="Assumption 1 fails: n = 6 > d = 5"):
        linalg.check_assumption_1(gaussian(10, 5, seed=0), 6)


def test_assumption_1_switches_to_the_randomized_test() -> None:
    queries = gaussian(60, 8, seed=4)  # C(60, 6) = 5e7 n-subsets: too many to enumerate
    linalg.check_assumption_1(queries, 6, subsets=300)
    with pytest.raises(ValueError, match="exact check of Assumption 1 .* more than max_subsets = 200000"):
        linalg.check_assumption_1(queries, 6, method="exact")
    low_rank = queries[:, :3] @ gaussian(3, 8, seed=5)  # (60, 8) of rank 3: no 6 are independent
    with pytest.raises(ValueError, match="Assumption 1 fails \\(randomized test\\): only 0.0% of 300 random "
                                         "6-subsets of the queries"):
        linalg.check_assumption_1(low_rank, 6, subsets=300)
    with pytest.raises(ValueError, match="method must be 'exact', 'randomized' or None"):
        linalg.check_assumption_1(queries, 6, method="fast")


def test_assumption_1_method_says_when_a_pass_is_only_the_randomized_verdict() -> None:
    """One dependent 5-subset among C(60, 5) = 5.5e6: the automatic check is exact, and refuses, exactly
    while C(T, n) <= max_subsets; beyond, the paper's 99 % rule decides and passes the set."""
    T, n = 60, 5
    queries = gaussian(T, 10, seed=0)
    queries[4] = queries[:4].sum(0)  # queries 0..4 dependent: Kruskal rank 4 < n = 5
    count = math.comb(T, n)
    assert count > linalg.DEFAULT_MAX_SUBSETS
    assert linalg.assumption_1_method(T, n) == "randomized"
    assert linalg.satisfies_assumption_1(queries, n)  # statistical verdict: the one bad subset is not drawn
    assert linalg.assumption_1_method(T, n, max_subsets=count - 1) == "randomized"
    assert linalg.satisfies_assumption_1(queries, n, max_subsets=count - 1)
    assert linalg.assumption_1_method(T, n, max_subsets=count) == "exact"
    with pytest.raises(ValueError, match="Assumption 1 fails: queries \\[0, 1, 2, 3, 4\\] are linearly dependent"):
        linalg.check_assumption_1(queries, n, max_subsets=count)
    assert linalg.assumption_1_method(20, n) == "exact"  # C(20, 5) = 15504: Definition 1's verdict
    assert not linalg.satisfies_assumption_1(queries[:20], n)
    assert linalg.assumption_1_method(3, n) == "exact"  # T < n: refused without a subset test
    for bad, name in (({"examples": 0}, "examples"), ({"context_size": 2.5}, "context_size"),
                      ({"max_subsets": -1}, "max_subsets")):
        with pytest.raises((ValueError, TypeError), match=name):
            linalg.assumption_1_method(**{"examples": T, "context_size": n, **bad})


# ------------------------------------------------------------------------------------ Assumption 3


def test_assumption_3_shifts_queries_by_plus_the_context_mean() -> None:
    contexts = uniform(10, 3, 6, seed=6)  # (T, n, d)
    queries = -contexts.mean(dim=1)  # (T, d): e(t) = -mean, so e(t) + mean = 0 for every t
    with pytest.raises(ValueError, match="Assumption 3 fails: shifted queries \\[0, 1, 2\\] are linearly dependent"):
        linalg.check_assumption_3(contexts, queries)
    # with the opposite sign the shifted queries would be -2 * mean, which are in general position
    assert linalg.satisfies_assumption_1(-2 * contexts.mean(dim=1), 3)


def test_assumption_3_holds_for_random_data_and_shared_contexts() -> None:
    contexts = uniform(12, 4, 7, seed=7)
    queries = uniform(12, 7, seed=8)
    linalg.check_assumption_3(contexts, queries)
    assert linalg.satisfies_assumption_3(contexts[0], queries)  # shared (n, d) context
    # identical queries with a shared context: all shifted queries coincide
    assert not linalg.satisfies_assumption_3(contexts[0], queries[:1].expand(12, -1))


def test_assumption_3_rejects_mismatched_shapes() -> None:
    with pytest.raises(ValueError,
                       match="contexts \\(T, n, d\\) and queries \\(T, d\\) must have the same T, got 4 and 5"):
        linalg.check_assumption_3(uniform(4, 2, 3, seed=0), uniform(5, 3, seed=0))
    with pytest.raises(ValueError, match="must share the dimension d, got 3 and 4"):
        linalg.check_assumption_3(uniform(2, 3, seed=0), uniform(5, 4, seed=0))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_nearly_dependent_subsets_follow_the_tolerance(dtype: torch.dtype) -> None:
    vecs = gaussian(8, 4, seed=9, dtype=dtype)
    vecs[5] = vecs[0] + 1e-5 * vecs[1]  # {v0, v5} nearly parallel: sigma_min / sigma_max ~ 1e-5
    assert linalg.kruskal_rank(vecs, tol=1e-3) == 1  # an explicit tol declares the pair dependent
    out = linalg.randomized_kruskal_rank(vecs, candidates=[2], subsets=2000, threshold=1.0, tol=1e-3,
                                         generator=torch.Generator().manual_seed(0))
    assert out["fractions"][0] == pytest.approx(27 / 28, abs=0.015)  # 1 pair in C(8, 2) = 28 is dependent
    # the default max(shape) * eps * sigma_max (eps = 2e-16 or 1.2e-7) keeps the pair independent
    assert linalg.kruskal_rank(vecs) > 1


def test_non_finite_and_half_precision_input_is_refused_not_answered() -> None:
    """A matrix with an infinite entry used to have rank 0, and float16 leaked torch's NotImplementedError."""
    bad = torch.eye(3, dtype=torch.float64)
    bad[1, 2] = math.inf
    with pytest.raises(ValueError, match=r"matrix must be finite \(no NaN or inf\): it holds inf at index \(1, 2\)"):
        linalg.rank(bad)
    with pytest.raises(ValueError, match="vectors must be finite"):
        linalg.kruskal_rank(torch.full((3, 3), math.nan))
    with pytest.raises(TypeError, match="matrix has dtype torch.float16: memcap computes in float32 or float64"):
        linalg.rank(torch.eye(3).half())
    with pytest.raises(ValueError, match="rtol must be a finite real number"):
        linalg.rank(torch.eye(3), rtol=math.nan)
    with pytest.raises(ValueError, match="matrix must not be empty"):
        linalg.rank(torch.zeros(0, 3))


def test_arrays_lists_and_tensors_give_the_same_answers() -> None:
    v = torch.randn(6, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert linalg.kruskal_rank(v) == linalg.kruskal_rank(v.numpy()) == linalg.kruskal_rank(v.tolist()) == 4
    a = linalg.randomized_kruskal_rank(v, candidates=[2, 3], subsets=50)   # generator=None: seeded with 0
    b = linalg.randomized_kruskal_rank(v.numpy(), candidates=[2, 3], subsets=50,
                                       generator=torch.Generator().manual_seed(0))
    assert a == b
