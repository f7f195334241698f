"""Tests of the randomized assumption tests appended to memcap.linalg (Mahdavi et al., Sec. 5.1, Fig. 1,
Tables 1 and 3), on constructed sets whose ranks and Kruskal ranks are known."""
from __future__ import annotations

import math

import pytest
import torch

from memcap import linalg


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def planted(T: int = 20, d: int = 8, seed: int = 0) -> torch.Tensor:
    """Generic vectors except v_3 = v_0 + v_1 + v_2: exact Kruskal rank 3, rank d."""
    v = torch.randn(T, d, generator=gen(seed), dtype=torch.float64)
    v[3] = v[:3].sum(0)
    return v


def test_context_ranks_known_values() -> None:
    g = gen(1)
    contexts = torch.randn(5, 4, 6, generator=g, dtype=torch.float64)
    contexts[2, 3] = contexts[2, 0] - 2 * contexts[2, 1]  # context 2 has rank 3
    contexts[4] = 0.0                                     # context 4 has rank 0
    assert linalg.context_ranks(contexts).tolist() == [4, 4, 3, 4, 0]
    assert linalg.context_ranks(contexts[0]).tolist() == [4]  # shared (n, d) context
    with pytest.raises(ValueError, match="contexts must have shape"):
        linalg.context_ranks(torch.zeros(2, 2, 2, 2))


def test_subset_test_counts_exact_fraction_of_planted_set() -> None:
    v = planted()
    # a k-subset is dependent iff it contains the 4 planted vectors: C(16, k-4) / C(20, k)
    k = 8
    exact = 1 - math.comb(16, k - 4) / math.comb(20, k)
    test = linalg.subset_test(v, k, subsets=20_000, generator=gen(2))
    assert test.size == k and test.subsets == 20_000
    assert abs(test.fraction - exact) < 0.01
    assert test.found_dependent and test.passes(0.9) and not test.passes(0.999)


def test_subset_test_sizes_beyond_d_or_m_are_dependent() -> None:
    v = torch.randn(10, 4, generator=gen(3), dtype=torch.float64)
    assert linalg.subset_test(v, 5, subsets=7, generator=gen(0)).independent == 0
    assert linalg.subset_test(v[:3], 4, subsets=7, generator=gen(0)).independent == 0
    assert linalg.subset_test(v, 4, subsets=50, generator=gen(0)).fraction == 1.0


def test_subset_test_float32_rule_matches_svd_rank() -> None:
    """The Gram-eigenvalue shortcut gives the same verdicts as rank() on each subset."""
    g = gen(4)
    basis = torch.randn(6, 12, generator=g)
    v = torch.cat([torch.randn(30, 6, generator=g) @ basis, torch.randn(10, 12, generator=g)])  # float32
    index = linalg._random_subsets(40, 7, 300, gen(5))
    fast = linalg._gram_subset_ranks(v, index, None)
    slow = torch.tensor([linalg.rank(v[i]) for i in index])
    assert torch.equal(fast, slow)


def test_kruskal_curve_estimate_and_proved_upper_bound() -> None:
    curve = linalg.kruskal_curve(planted(), range(1, 9), subsets=5000, generator=gen(6))
    assert curve.sizes == list(range(1, 9))
    assert curve.fractions[:3] == [1.0, 1.0, 1.0]
    # proved bounds are never below the exact Kruskal rank 3; dependent 5-subsets are common enough to be drawn
    assert 3 <= curve.upper_bound <= 4
    assert curve.estimate > curve.upper_bound  # the 99 % rule overestimates (Definition 1 gives 3)


def test_kruskal_search_on_subspace_is_exact() -> None:
    g = gen(7)
    v = torch.randn(40, 5, generator=g, dtype=torch.float64) @ torch.randn(5, 12, generator=g, dtype=torch.float64)
    result = linalg.kruskal_search(v, subsets=500, generator=gen(8))
    assert result.estimate == 5 == result.upper_bound
    assert len(result.sizes) <= math.ceil(math.log2(12)) + 1  # bisection, not a sweep


def test_kruskal_search_general_position() -> None:
    v = torch.randn(30, 6, generator=gen(9), dtype=torch.float64)
    assert linalg.kruskal_search(v, subsets=300, generator=gen(10)).estimate == 6


def test_assumption_report_cls_data() -> None:
    """ViT-like data: every query equal (Assumption 1 fails), contexts full rank, shifted queries fine."""
    g = gen(11)
    T, n, d = 40, 4, 10
    contexts = torch.randn(T, n, d, generator=g, dtype=torch.float64)
    contexts[:, 0] = contexts[0, 0]                       # the same [CLS] row everywhere
    report = linalg.assumption_report(contexts, contexts[:, 0], subsets=500, generator=gen(12))
    assert (report.examples, report.context_size, report.dim) == (T, n, d)
    assert report.holds_2 and report.full_rank_contexts == 1.0
    assert not report.holds_1 and report.assumption_1.fraction == 0.0 and report.kruskal.estimate == 1
    assert report.holds_3 and not report.in_general_position
    assert report.query_rank == 1
    skipped = linalg.assumption_report(contexts, contexts[:, 0], subsets=50, generator=gen(12), shifted=False)
    assert skipped.assumption_3 is None and skipped.holds_3 is None


def test_assumption_report_detects_rank_deficient_context_and_general_position() -> None:
    g = gen(13)
    contexts = torch.randn(20, 3, 5, generator=g, dtype=torch.float64)
    contexts[7, 2] = contexts[7, 1]
    queries = torch.randn(20, 5, generator=g, dtype=torch.float64)
    report = linalg.assumption_report(contexts, queries, subsets=300, generator=gen(14))
    assert not report.holds_2 and report.full_rank_contexts == pytest.approx(19 / 20)
    assert int(report.context_ranks.min()) == 2
    assert report.holds_1 and report.in_general_position


def test_assumption_report_errors_name_the_argument() -> None:
    e = torch.zeros(4, 2, 3)
    with pytest.raises(ValueError, match="must have the same T"):
        linalg.assumption_report(e, torch.zeros(5, 3), subsets=10, generator=gen())
    with pytest.raises(ValueError, match="share the dimension d"):
        linalg.assumption_report(e, torch.zeros(4, 2), subsets=10, generator=gen())
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        linalg.assumption_report(e, torch.zeros(4, 3), subsets=10, generator=0)
    with pytest.raises(ValueError, match="subsets must be a positive integer"):
        linalg.subset_test(torch.eye(3), 2, subsets=0, generator=gen())
    with pytest.raises(ValueError, match="threshold must be a real number in"):
        linalg.kruskal_search(torch.eye(3), subsets=10, generator=gen(), threshold=1.5)
    with pytest.raises(ValueError, match="sizes must contain"):
        linalg.kruskal_curve(torch.eye(3), [], subsets=10, generator=gen())


def test_assumption_report_takes_arrays_and_names_its_options() -> None:
    """Array-likes are converted at the boundary (queries onto the contexts' device); every option is
    validated under its own name."""
    contexts = torch.randn(12, 2, 4, generator=gen(15), dtype=torch.float64)
    from_tensor = linalg.assumption_report(contexts, contexts[:, 0], subsets=50, generator=gen(16))
    from_array = linalg.assumption_report(contexts.numpy(), contexts[:, 0].tolist(), subsets=50, generator=gen(16))
    assert from_array.assumption_1 == from_tensor.assumption_1 and from_array.kruskal == from_tensor.kruskal
    with pytest.raises(ValueError, match="kruskal_subsets must be a positive integer"):
        linalg.assumption_report(contexts, contexts[:, 0], subsets=50, kruskal_subsets=0)
    with pytest.raises(TypeError, match="shifted must be a bool"):
        linalg.assumption_report(contexts, contexts[:, 0], subsets=50, shifted=1)
    with pytest.raises(TypeError, match="sizes must be an iterable"):
        linalg.kruskal_curve(contexts[:, 0], 3, subsets=10)


def test_the_rank_of_many_queries_keeps_a_small_real_direction() -> None:
    """2,000 float32 queries in d = 8 whose eighth singular value is 1e-4 of the first: real (far above
    float32 rounding, and above the d * eps rule of the subsets), but below NumPy's max(T, d) * eps = 2.4e-4
    for the tall matrix. The report counts it."""
    g = gen(13)
    basis, _ = torch.linalg.qr(torch.randn(2000, 8, generator=g, dtype=torch.float64))
    scales = torch.tensor([1.0, 0.5, 0.3, 0.2, 0.1, 0.05, 0.02, 1e-4], dtype=torch.float64)
    rotation, _ = torch.linalg.qr(torch.randn(8, 8, generator=g, dtype=torch.float64))
    queries = (basis * scales @ rotation).float()                     # (T, d), singular values = scales
    contexts = queries[:, None, :].repeat(1, 2, 1) + torch.randn(2000, 2, 8, generator=g)
    assert linalg.rank(queries) == 7                                  # NumPy's rule for the (T, d) matrix
    report = linalg.assumption_report(contexts, queries, subsets=20, generator=gen(14))
    assert report.query_rank == 8
