"""Ranks, Kruskal ranks and the data assumptions of Mahdavi et al. (2024).

Mahdavi et al. replace the usual "general position" hypothesis by weaker linear-independence
assumptions on the training set :math:`\\{(E^{(t)}, e^{(t)}, y^{(t)})\\}_{t=1}^T`:

* Definition 1 (Kruskal rank): the largest :math:`k` such that *every* :math:`k`-subset of the vectors is
  linearly independent.
* Definition 2 (general position): the Kruskal rank is as large as possible, :math:`\\min(m, d)` for
  :math:`m` vectors in :math:`\\mathbb{R}^d`.
* Assumption 1: the queries :math:`e^{(t)}` have Kruskal rank :math:`\\ge n`.
* Assumption 2: every context :math:`E^{(t)} \\in \\mathbb{R}^{n \\times d}` has rank :math:`n`.
* Assumption 3: the shifted queries :math:`\\tilde e^{(t)} = e^{(t)} + \\frac1n \\sum_i e^{(t)}_i` have
  Kruskal rank :math:`\\ge n`.

Numerical rank needs a tolerance: every function here takes ``tol`` (an absolute threshold on singular
values) and otherwise uses the NumPy rule ``max(shape) * eps(dtype) * sigma_max`` of each matrix tested.
Vectors are rows: a set of :math:`m` vectors in :math:`\\mathbb{R}^d` is a ``(m, d)`` tensor, NumPy array
or nested list. All work happens on the input's device, in the input's floating dtype (integer input is
promoted to float64); non-finite, empty, complex and half-precision input is refused naming the argument.
Messages of the assumption checks start with the paper ("Mahdavi et al.'s Assumption 1 fails: ...").
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Iterable

import torch

from memcap import _resolve
from memcap._checks import check_bool, finite_real, listed, nonnegative_real, positive_int, real_tensor

__all__ = [
    "DEFAULT_RTOL", "ASSUMPTION_SEED", "DEFAULT_MAX_SUBSETS",
    "rank", "kruskal_rank", "randomized_kruskal_rank", "in_general_position",
    "assumption_1_method", "check_assumption_1", "check_assumption_2", "check_assumption_3",
    "satisfies_assumption_1", "satisfies_assumption_2", "satisfies_assumption_3",
    "context_ranks", "SubsetTest", "subset_test", "KruskalCurve", "kruskal_curve", "kruskal_search",
    "AssumptionReport", "assumption_report",
]

_MAHDAVI = "Mahdavi et al.'s"
"""How the assumption checks name the paper whose assumptions they are (Dana et al. number theirs too)."""

DEFAULT_RTOL: float | None = None
"""Default relative tolerance of :func:`rank`. ``None`` means NumPy's rule: singular values at most
``max(shape) * eps(dtype) * sigma_max`` count as zero, where ``eps`` is the machine epsilon of the
matrix's dtype (2.2e-16 in float64, 1.2e-7 in float32)."""

ASSUMPTION_SEED = _resolve.DEFAULT_SEED
"""Seed of the ``torch.Generator`` used by the randomized checks when none is passed (``generator=None``
means a fresh generator seeded with 0, as everywhere in memcap), so the same data always gives the same
verdict."""

DEFAULT_MAX_SUBSETS = 200_000
"""How many subsets an exact (enumerating) check may test before it refuses."""

_CHUNK_ELEMENTS = 1 << 22
"""Entries of the stacked subset matrices processed per batched SVD (32 MiB in float64)."""


# ---------------------------------------------------------------------------------------------------
# input handling


def _float_tensor(name: str, value: object, device: torch.device | None = None) -> torch.Tensor:
    """``value`` as a finite floating tensor (integer input promoted to float64); array-likes go to
    ``device`` (the device of the call's other tensors; the CPU when None)."""
    return real_tensor(name, value, device=device)


def _vectors(name: str, value: object, device: torch.device | None = None) -> torch.Tensor:
    """A non-empty set of row vectors, shape ``(m, d)`` (array-likes placed on ``device``)."""
    v = _float_tensor(name, value, device)
    if v.dim() != 2:
        raise ValueError(f"{name} must be a 2-D tensor of row vectors (m, d), got shape {tuple(v.shape)}")
    if v.shape[0] == 0 or v.shape[1] == 0:
        raise ValueError(f"{name} must hold at least one vector of dimension >= 1, got shape {tuple(v.shape)}")
    return v


def _contexts(value: object) -> tuple[torch.Tensor, bool]:
    """Contexts as ``(T, n, d)``; a shared ``(n, d)`` context becomes ``(1, n, d)``. Returns (E, shared)."""
    e = _float_tensor("contexts", value)
    if e.dim() == 2:
        e, shared = e.unsqueeze(0), True  # (1, n, d)
    elif e.dim() == 3:
        shared = False
    else:
        raise ValueError(
            f"contexts must have shape (T, n, d) or (n, d) (one shared context), got {tuple(e.shape)}")
    if 0 in e.shape:
        raise ValueError(f"contexts must have T, n, d >= 1, got shape {tuple(e.shape)}")
    return e, shared


def _tol(tol: object, name: str = "tol") -> float | None:
    """An absolute or relative rank tolerance: None (the default rule) or a finite real >= 0."""
    return None if tol is None else nonnegative_real(name, tol)


def _fraction(name: str, value: object) -> float:
    """A finite real in (0, 1] (the 99 % rule's threshold)."""
    x = finite_real(name, value)
    if not 0 < x <= 1:
        raise ValueError(f"{name} must be a real number in (0, 1], got {value!r}")
    return x


# ---------------------------------------------------------------------------------------------------
# ranks


def _batched_rank(stack: torch.Tensor, tol: float | None, rtol: float | None = None) -> torch.Tensor:
    """Numerical ranks of a stack of matrices ``(B, a, b) -> (B,)`` (int64), one tolerance per matrix."""
    a, b = stack.shape[-2:]
    s = torch.linalg.svdvals(stack)  # (B, min(a, b)), descending
    if tol is not None:
        threshold = torch.full_like(s[..., :1], tol)
    else:
        factor = max(a, b) * torch.finfo(s.dtype).eps if rtol is None else rtol
        threshold = factor * s[..., :1]  # (B, 1)
    return (s > threshold).sum(dim=-1)


def rank(matrix: object, *, tol: float | None = None, rtol: float | None = DEFAULT_RTOL) -> int:
    """Numerical rank of a 2-D matrix ``(a, b)``: the number of singular values above a threshold.

    The threshold is ``tol`` when given (absolute); otherwise ``rtol * sigma_max`` with the NumPy default
    ``rtol = max(a, b) * eps(dtype)`` (see :data:`DEFAULT_RTOL`). ``rtol`` must lie in [0, 1): at 1 or above
    not even sigma_max clears the threshold, and every matrix would have rank 0. Accepts torch tensors,
    NumPy arrays and nested lists.
    """
    mat = _float_tensor("matrix", matrix)
    if mat.dim() != 2:
        raise ValueError(f"matrix must be 2-D, got shape {tuple(mat.shape)}")
    tol, rtol = _tol(tol), _tol(rtol, "rtol")
    if rtol is not None and rtol >= 1:
        raise ValueError(f"rtol must lie in [0, 1) (a fraction of the largest singular value), got {rtol}: "
                         f"with rtol >= 1 every matrix has rank 0")
    if 0 in mat.shape:
        raise ValueError(f"matrix must not be empty: shape {tuple(mat.shape)} has an axis of length 0")
    return int(_batched_rank(mat.unsqueeze(0), tol, rtol)[0])


def _screened_rank(sub: torch.Tensor, tol: float | None) -> torch.Tensor:
    """Ranks of a stack ``(B, k, d)`` with ``k <= d``, equal to :func:`_batched_rank`'s but faster.

    A cheap screen first: the eigenvalues of the Gram matrices ``sub sub^T`` (float64) are the squared
    singular values up to an absolute error below ``4 k d eps sigma_max^2``. Subsets whose smallest
    eigenvalue clears the rank threshold by that margin are certainly full rank; only the others
    (dependent or nearly so) go through the exact SVD.
    """
    b, k, d = sub.shape
    s64 = sub.to(torch.float64)
    lam = torch.linalg.eigvalsh(s64 @ s64.mT)  # (B, k), ascending
    top = lam[:, -1].clamp_min(0)  # sigma_max^2
    if tol is None:
        threshold = max(k, d) * torch.finfo(sub.dtype).eps * top.sqrt()
    else:
        threshold = torch.full_like(top, tol)
    margin = 4 * k * d * torch.finfo(torch.float64).eps * top
    certain = lam[:, 0] > threshold ** 2 + margin  # (B,)
    ranks = torch.full((b,), k, dtype=torch.int64, device=sub.device)
    unsure = torch.nonzero(~certain).flatten()
    if unsure.numel():
        ranks[unsure] = _batched_rank(sub[unsure], tol)
    return ranks


def _subset_ranks(vectors: torch.Tensor, index: torch.Tensor, tol: float | None) -> torch.Tensor:
    """Ranks of the subsets ``vectors[index[b]]`` for ``index: (B, k)``, returned as ``(B,)``."""
    k, d = index.shape[1], vectors.shape[1]
    chunk = max(1, _CHUNK_ELEMENTS // (k * d))
    index = index.to(vectors.device)
    out = []
    for start in range(0, index.shape[0], chunk):
        sub = vectors[index[start:start + chunk]]  # (B, k, d)
        out.append(_screened_rank(sub, tol) if k <= d else _batched_rank(sub, tol))
    return torch.cat(out) if out else torch.zeros(0, dtype=torch.int64, device=vectors.device)


def _first_dependent_subset(vectors: torch.Tensor, k: int, tol: float | None) -> tuple[tuple[int, ...], int] | None:
    """Enumerate all k-subsets of the rows (lexicographically); return the first dependent one and its
    rank, or ``None`` when all are linearly independent."""
    m, d = vectors.shape
    combos = itertools.combinations(range(m), k)
    chunk = max(1, _CHUNK_ELEMENTS // (k * d))
    while True:
        block = list(itertools.islice(combos, chunk))
        if not block:
            return None
        index = torch.tensor(block, dtype=torch.int64, device=vectors.device)  # (B, k)
        ranks = _subset_ranks(vectors, index, tol)
        bad = torch.nonzero(ranks < k)
        if bad.numel():
            b = int(bad[0, 0])
            return tuple(block[b]), int(ranks[b])


def _random_subsets(m: int, k: int, count: int, generator: torch.Generator) -> torch.Tensor:
    """``count`` uniformly random k-subsets of ``range(m)`` (drawn independently), shape ``(count, k)``.

    The sort keys are float32 draws on the generator's device (a random order needs no more), with the
    dtype stated so that torch's default dtype cannot change which subsets a seed draws.
    """
    rows = max(1, _CHUNK_ELEMENTS // m)
    parts = []
    for start in range(0, count, rows):
        keys = torch.rand(min(rows, count - start), m, generator=generator, dtype=torch.float32,
                          device=generator.device)  # (rows, m)
        parts.append(keys.topk(k, dim=1).indices.cpu())  # k largest keys of a random order: a uniform k-subset
    return torch.cat(parts)


def kruskal_rank(vectors: object, *, tol: float | None = None, max_subsets: int = DEFAULT_MAX_SUBSETS) -> int:
    """Exact Kruskal rank of the rows of ``vectors: (m, d)`` (Mahdavi et al., Definition 1).

    The Kruskal rank is the largest :math:`k` such that every :math:`k`-subset is linearly independent.
    It is at most ``rank(vectors)``; when that rank is ``m`` every subset is independent and the answer
    is ``m`` at once. Otherwise sizes ``k = 1, 2, ...`` are checked in turn, enumerating all
    :math:`\\binom{m}{k}` subsets with batched SVDs, and the first size with a dependent subset stops the
    search. Computing the Kruskal rank is NP-hard, so the enumeration is capped: a ``ValueError`` naming
    ``max_subsets`` is raised before the total count of subsets tested would exceed it (use
    :func:`randomized_kruskal_rank` then). ``tol`` is as in :func:`rank`, per subset.
    """
    v = _vectors("vectors", vectors)
    tol = _tol(tol)
    max_subsets = positive_int("max_subsets", max_subsets)
    m = v.shape[0]
    r = rank(v, tol=tol)
    if r == m:
        return m
    used = 0
    for k in range(1, r + 1):
        count = math.comb(m, k)
        if used + count > max_subsets:
            raise ValueError(
                f"kruskal_rank must test all C({m}, {k}) = {count} subsets of size k = {k} "
                f"({used + count} subsets in total), more than max_subsets = {max_subsets}; "
                f"raise max_subsets or use randomized_kruskal_rank")
        if _first_dependent_subset(v, k, tol) is not None:
            return k - 1
        used += count
    return r


def randomized_kruskal_rank(vectors: object, *, candidates: Iterable[int], subsets: int = 5000,
                            threshold: float = 0.99, generator: torch.Generator | None = None,
                            tol: float | None = None) -> dict[str, object]:
    """Randomized Kruskal-rank test of Mahdavi et al. (Sec. 5.1, Fig. 1, Table 1).

    For each candidate size :math:`k`, draw ``subsets`` uniformly random :math:`k`-subsets of the rows of
    ``vectors: (m, d)`` and record the fraction that are linearly independent (rank :math:`k`). The
    estimate is the largest candidate whose fraction is ``>= threshold`` (the paper's 99 % rule), or 0
    when no candidate passes. The test can only miss dependent subsets, so it tends to overestimate the
    exact Kruskal rank; its verdict is the paper's, not Definition 1's.

    Returns a dict with ``estimate`` (int), ``candidates`` and ``fractions`` (lists, in the given order),
    ``subsets`` and ``threshold``. ``generator=None`` means a fresh generator seeded with 0.
    """
    v = _vectors("vectors", vectors)
    tol = _tol(tol)
    subsets = positive_int("subsets", subsets)
    threshold = _fraction("threshold", threshold)
    generator = _resolve.generator(generator)
    m, d = v.shape
    ks = [positive_int("candidates", k) for k in listed("candidates", candidates, "subset sizes k")]
    if not ks:
        raise ValueError("candidates must contain at least one subset size k")
    for k in ks:
        if k > m:
            raise ValueError(f"candidates must be <= m = {m} (the number of vectors), got k = {k}")
    fractions = []
    for k in ks:
        if k > d:  # more than d vectors in R^d are always dependent
            fractions.append(0.0)
            continue
        index = _random_subsets(m, k, subsets, generator)  # (subsets, k)
        ranks = _subset_ranks(v, index, tol)
        fractions.append(float((ranks == k).double().mean()))
    passing = [k for k, f in zip(ks, fractions) if f >= threshold]
    return {"estimate": max(passing, default=0), "candidates": ks, "fractions": fractions,
            "subsets": subsets, "threshold": threshold}


def in_general_position(vectors: object, *, tol: float | None = None,
                        max_subsets: int = DEFAULT_MAX_SUBSETS) -> bool:
    """Whether the rows of ``vectors: (m, d)`` are in general position (Mahdavi et al., Definition 2):
    Kruskal rank :math:`\\min(m, d)`.

    For ``m <= d`` this is ``rank == m``. For ``m > d`` every ``d``-subset must be independent (which
    implies it for smaller subsets); the :math:`\\binom{m}{d}` subsets are enumerated, and a
    ``ValueError`` naming ``max_subsets`` is raised when there are more.
    """
    v = _vectors("vectors", vectors)
    tol = _tol(tol)
    max_subsets = positive_int("max_subsets", max_subsets)
    m, d = v.shape
    if m <= d:
        return rank(v, tol=tol) == m
    count = math.comb(m, d)
    if count > max_subsets:
        raise ValueError(
            f"in_general_position must test all C({m}, {d}) = {count} subsets of size d = {d}, "
            f"more than max_subsets = {max_subsets}; raise max_subsets or use randomized_kruskal_rank")
    return _first_dependent_subset(v, d, tol) is None


# ---------------------------------------------------------------------------------------------------
# Mahdavi et al.'s assumptions


def _kruskal_at_least_failure(vectors: torch.Tensor, n: int, *, assumption: int, what: str,
                              tol: float | None, method: str | None, max_subsets: int, subsets: int,
                              threshold: float, generator: torch.Generator | None) -> str | None:
    """Why the rows of ``vectors`` fail "Kruskal rank >= n", or ``None`` when they pass.

    Kruskal rank >= n means: every n-subset is independent (subsets of independent sets are
    independent), so only size n is tested.
    """
    t_count, d = vectors.shape
    tol = _tol(tol)
    max_subsets = positive_int("max_subsets", max_subsets)
    subsets = positive_int("subsets", subsets)
    threshold = _fraction("threshold", threshold)
    if method not in (None, "exact", "randomized"):
        raise ValueError(f"method must be 'exact', 'randomized' or None (automatic), got {method!r}")
    gen = _resolve.generator(generator)
    prefix = f"{_MAHDAVI} Assumption {assumption} fails"
    if t_count < n:
        return (f"{prefix}: there are only T = {t_count} {what}, so their Kruskal rank is at most "
                f"{t_count} < n = {n}")
    if n > d:
        return (f"{prefix}: n = {n} > d = {d}, so no {n} {what} are linearly independent "
                f"(Kruskal rank <= d < n)")
    count = math.comb(t_count, n)
    if method is None:
        method = assumption_1_method(t_count, n, max_subsets=max_subsets)
    if method == "exact":
        if count > max_subsets:
            raise ValueError(
                f"the exact check of Assumption {assumption} must test all C({t_count}, {n}) = {count} "
                f"n-subsets, more than max_subsets = {max_subsets}; raise max_subsets or use "
                f"method='randomized'")
        found = _first_dependent_subset(vectors, n, tol)
        if found is None:
            return None
        subset, r = found
        return (f"{prefix}: {what} {list(subset)} are linearly dependent (rank {r} < n = {n}), "
                f"so the Kruskal rank of the {what} is < n = {n}")
    index = _random_subsets(t_count, n, subsets, gen)  # (subsets, n)
    ranks = _subset_ranks(vectors, index, tol)
    fraction = float((ranks == n).double().mean())
    if fraction >= threshold:
        return None
    b = int(torch.nonzero(ranks < n)[0, 0])
    subset = sorted(int(i) for i in index[b])
    return (f"{prefix} (randomized test): only {fraction:.1%} of {subsets} random {n}-subsets of the "
            f"{what} are linearly independent (< {threshold:.0%}); e.g. {what} {subset} have rank "
            f"{int(ranks[b])} < n = {n}")


def assumption_1_method(examples: int, context_size: int, *, max_subsets: int = DEFAULT_MAX_SUBSETS) -> str:
    """Which test decides :func:`check_assumption_1` with ``method=None`` for :math:`T` = ``examples``
    queries and :math:`n` = ``context_size``: ``"exact"`` when :math:`\\binom{T}{n} \\le` ``max_subsets``
    (every n-subset is enumerated, so the verdict is Definition 1's), else ``"randomized"`` (the paper's
    test on random n-subsets, by default the 99 % rule: a statistical verdict, under which a set with a
    few dependent n-subsets, of Kruskal rank below n, can pass). The same rule picks the test of
    :func:`check_assumption_3`, with the T shifted queries.
    """
    t_count = positive_int("examples", examples)
    n = positive_int("context_size", context_size)
    max_subsets = positive_int("max_subsets", max_subsets)
    return "exact" if math.comb(t_count, n) <= max_subsets else "randomized"


def _assumption_1_failure(queries: object, context_size: int, **kw: object) -> str | None:
    e = _vectors("queries", queries)  # (T, d)
    n = positive_int("context_size", context_size)
    return _kruskal_at_least_failure(e, n, assumption=1, what="queries", **kw)


def _assumption_2_failure(contexts: object, tol: float | None) -> str | None:
    e, shared = _contexts(contexts)  # (T, n, d)
    tol = _tol(tol)
    n, d = e.shape[1:]
    ranks = _batched_rank(e, tol)  # (T,)
    bad = torch.nonzero(ranks < n)
    if not bad.numel():
        return None
    t = int(bad[0, 0])
    which = "the shared context" if shared else f"context {t}"
    hint = f" (n > d = {d})" if n > d else ""
    return f"{_MAHDAVI} Assumption 2 fails: {which} has rank {int(ranks[t])} < n = {n}{hint}"


def _assumption_3_failure(contexts: object, queries: object, **kw: object) -> str | None:
    e, shared = _contexts(contexts)  # (T or 1, n, d)
    q = _vectors("queries", queries, e.device)  # (T, d)
    if e.shape[2] != q.shape[1]:
        raise ValueError(f"contexts and queries must share the dimension d, got {e.shape[2]} and {q.shape[1]}")
    if not shared and e.shape[0] != q.shape[0]:
        raise ValueError(f"contexts (T, n, d) and queries (T, d) must have the same T, "
                         f"got {e.shape[0]} and {q.shape[0]}")
    dtype = torch.promote_types(e.dtype, q.dtype)
    mean = e.to(dtype).mean(dim=1)  # (T or 1, d): (1/n) sum_i e_i^(t)
    shifted = q.to(dtype) + mean.expand(q.shape[0], -1)  # (T, d): e~(t) = e(t) + mean
    return _kruskal_at_least_failure(shifted, e.shape[1], assumption=3, what="shifted queries", **kw)




def check_assumption_1(queries: object, context_size: int, *, tol: float | None = None,
                       method: str | None = None, max_subsets: int = DEFAULT_MAX_SUBSETS,
                       subsets: int = 5000, threshold: float = 0.99,
                       generator: torch.Generator | None = None) -> None:
    """Raise ``ValueError`` unless the queries ``(T, d)`` have Kruskal rank :math:`\\ge n`
    (Mahdavi et al., Assumption 1), with :math:`n` = ``context_size``. The message names a dependent
    set of query indices.

    ``method``: ``"exact"`` enumerates all :math:`\\binom{T}{n}` n-subsets (a ``ValueError`` naming
    ``max_subsets`` if there are more); ``"randomized"`` is the paper's test (Sec. 5.1): ``subsets``
    random n-subsets, passing when a fraction ``>= threshold`` of them is independent, drawn with
    ``generator`` or, if ``None``, a fresh ``torch.Generator`` seeded with :data:`ASSUMPTION_SEED` (0).
    The default ``None`` picks ``"exact"`` when :math:`\\binom{T}{n} \\le` ``max_subsets``, else
    ``"randomized"`` (:func:`assumption_1_method` says which). Only the exact test is Definition 1's
    verdict: beyond ``max_subsets`` a pass is statistical, and queries with a few dependent n-subsets
    (Kruskal rank below n) can pass; a refusal by the randomized test says "(randomized test)". Pass
    ``method="exact"`` with a larger ``max_subsets`` to enumerate anyway.
    """
    failure = _assumption_1_failure(queries, context_size, tol=tol, method=method, max_subsets=max_subsets,
                                    subsets=subsets, threshold=threshold, generator=generator)
    if failure is not None:
        raise ValueError(failure)


def check_assumption_2(contexts: object, *, tol: float | None = None) -> None:
    """Raise ``ValueError`` unless every context ``(T, n, d)`` (or the shared context ``(n, d)``) has
    rank :math:`n` (Mahdavi et al., Assumption 2); this needs :math:`n \\le d`. The message names the
    first failing context, e.g. ``"Mahdavi et al.'s Assumption 2 fails: context 7 has rank 5 < n = 6"``.
    """
    failure = _assumption_2_failure(contexts, tol)
    if failure is not None:
        raise ValueError(failure)


def check_assumption_3(contexts: object, queries: object, *, tol: float | None = None,
                       method: str | None = None, max_subsets: int = DEFAULT_MAX_SUBSETS,
                       subsets: int = 5000, threshold: float = 0.99,
                       generator: torch.Generator | None = None) -> None:
    """Raise ``ValueError`` unless the shifted queries
    :math:`\\tilde e^{(t)} = e^{(t)} + \\frac1n\\sum_{i\\in[n]} e^{(t)}_i` have Kruskal rank :math:`\\ge n`
    (Mahdavi et al., Assumption 3: the query *plus* its context's mean, the output of the zero-key
    attention layer with skip of their Proposition 4). ``contexts``: ``(T, n, d)`` or shared ``(n, d)``;
    ``queries``: ``(T, d)``. ``method`` and the other options are as in :func:`check_assumption_1`.
    """
    failure = _assumption_3_failure(contexts, queries, tol=tol, method=method, max_subsets=max_subsets,
                                    subsets=subsets, threshold=threshold, generator=generator)
    if failure is not None:
        raise ValueError(failure)


def satisfies_assumption_1(queries: object, context_size: int, *, tol: float | None = None,
                           method: str | None = None, max_subsets: int = DEFAULT_MAX_SUBSETS,
                           subsets: int = 5000, threshold: float = 0.99,
                           generator: torch.Generator | None = None) -> bool:
    """Whether :func:`check_assumption_1` passes, same arguments (invalid inputs still raise). Exact only
    when :math:`\\binom{T}{n} \\le` ``max_subsets`` or ``method="exact"``; otherwise ``True`` is the
    paper's randomized verdict, which a few dependent n-subsets can pass (see :func:`assumption_1_method`).
    """
    return _assumption_1_failure(queries, context_size, tol=tol, method=method, max_subsets=max_subsets,
                                 subsets=subsets, threshold=threshold, generator=generator) is None


def satisfies_assumption_2(contexts: object, *, tol: float | None = None) -> bool:
    """Whether :func:`check_assumption_2` passes (invalid inputs still raise)."""
    return _assumption_2_failure(contexts, tol) is None


def satisfies_assumption_3(contexts: object, queries: object, *, tol: float | None = None,
                           method: str | None = None, max_subsets: int = DEFAULT_MAX_SUBSETS,
                           subsets: int = 5000, threshold: float = 0.99,
                           generator: torch.Generator | None = None) -> bool:
    """Whether :func:`check_assumption_3` passes, same arguments (invalid inputs still raise)."""
    return _assumption_3_failure(contexts, queries, tol=tol, method=method, max_subsets=max_subsets,
                                 subsets=subsets, threshold=threshold, generator=generator) is None



# ===================================================================================================
# Randomized tests on the features of real models (Mahdavi et al., Sec. 5.1, Fig. 1, Tables 1 and 3)
#
# The checks above answer yes or no for one assumption. The functions below return the numbers
# behind the paper's tables: the ranks of many contexts at once, the fraction of independent random
# k-subsets (and whether a dependent one was drawn, which *proves* Kruskal rank <= k - 1), the curve of
# Figure 1, a bisection for the 99 % rule's Kruskal-rank estimate, and one report per model and layer.
# Every subset is judged by the rule of :func:`rank` (NumPy's, per subset), as the paper did.
# ===================================================================================================


def _gram_subset_ranks(vectors: torch.Tensor, index: torch.Tensor, tol: float | None) -> torch.Tensor:
    """Ranks of the subsets ``vectors[index[b]]``, ``index: (B, k)`` with ``k <= d``, returned ``(B,)``.

    The rule is :func:`rank`'s (singular values above ``tol``, or above ``max(k, d) * eps * sigma_max``
    with ``eps`` of the input's dtype). The squared singular values are read off the eigenvalues of the
    Gram matrices in float64, which are exact up to ``4 k d eps64 sigma_max^2``; only subsets with an
    eigenvalue that close to the threshold go through an SVD. Much faster than SVDs of every subset
    when many subsets are rank-deficient.
    """
    k, d = index.shape[1], vectors.shape[1]
    eps = torch.finfo(vectors.dtype).eps
    v64 = vectors.to(torch.float64)
    index = index.to(vectors.device)
    chunk = max(1, _CHUNK_ELEMENTS // (k * d))
    out = []
    for start in range(0, index.shape[0], chunk):
        sub = v64[index[start:start + chunk]]  # (B, k, d)
        lam = torch.linalg.eigvalsh(sub @ sub.mT)  # (B, k) ascending, ~ squared singular values
        top = lam[:, -1].clamp_min(0)  # sigma_max^2
        thr = (torch.full_like(top, tol) ** 2 if tol is not None else (max(k, d) * eps) ** 2 * top)[:, None]
        margin = 4 * k * d * torch.finfo(torch.float64).eps * top[:, None]
        ranks = (lam > thr).sum(dim=1)
        unsure = torch.nonzero(((lam - thr).abs() <= margin).any(dim=1)).flatten()
        if unsure.numel():
            ranks[unsure] = _batched_rank(vectors[index[start:start + chunk][unsure]], tol)
        out.append(ranks)
    return torch.cat(out) if out else torch.zeros(0, dtype=torch.int64, device=vectors.device)


def context_ranks(contexts: object, *, tol: float | None = None) -> torch.Tensor:
    """Numerical rank of every context, ``(T, n, d) -> (T,)`` int64 (a shared ``(n, d)`` context gives
    ``(1,)``). Assumption 2 holds exactly when every entry equals n. Batched SVDs, in chunks."""
    e, _ = _contexts(contexts)  # (T, n, d)
    tol = _tol(tol)
    chunk = max(1, _CHUNK_ELEMENTS // (e.shape[1] * e.shape[2]))
    return torch.cat([_batched_rank(e[i:i + chunk], tol) for i in range(0, e.shape[0], chunk)])


@dataclass(frozen=True)
class SubsetTest:
    """Outcome of drawing ``subsets`` uniformly random ``size``-subsets of a set of vectors:
    ``independent`` of them had full rank. One dependent subset proves that the Kruskal rank is at most
    ``size - 1``; independent ones are only evidence that it is at least ``size``."""

    size: int
    subsets: int
    independent: int

    @property
    def fraction(self) -> float:
        """Fraction of the drawn subsets that are linearly independent."""
        return self.independent / self.subsets

    @property
    def found_dependent(self) -> bool:
        """Whether some drawn subset was dependent (a proof that the Kruskal rank is <= size - 1)."""
        return self.independent < self.subsets

    def passes(self, threshold: float = 0.99) -> bool:
        """The paper's rule: at least a fraction ``threshold`` of the subsets is independent."""
        return self.fraction >= _fraction("threshold", threshold)


def subset_test(vectors: object, size: int, *, subsets: int, generator: torch.Generator | None = None,
                tol: float | None = None) -> SubsetTest:
    """Draw ``subsets`` uniformly random ``size``-subsets of the rows of ``vectors: (m, d)`` with
    ``generator`` (None: a fresh one seeded with 0) and count the linearly independent ones
    (:func:`rank`'s rule per subset). A size above ``d`` or ``m`` is never independent: 0 of ``subsets``,
    nothing drawn."""
    v = _vectors("vectors", vectors)
    size, subsets = positive_int("size", size), positive_int("subsets", subsets)
    generator, tol = _resolve.generator(generator), _tol(tol)
    m, d = v.shape
    if size > d or size > m:
        return SubsetTest(size=size, subsets=subsets, independent=0)
    index = _random_subsets(m, size, subsets, generator)  # (subsets, size)
    ranks = _gram_subset_ranks(v, index, tol)
    return SubsetTest(size=size, subsets=subsets, independent=int((ranks == size).sum()))


@dataclass(frozen=True)
class KruskalCurve:
    """Fractions of independent random k-subsets of ``m`` vectors in R^d at several sizes k (Mahdavi et
    al., Fig. 1), with the paper's ``threshold`` (0.99).

    ``estimate`` is the paper's rule (the largest tested k whose fraction is ``>= threshold``);
    ``upper_bound`` is proved: ``k - 1`` for the smallest k at which a dependent subset was drawn (and
    ``min(m, d)`` if none was). The exact Kruskal rank is at most ``upper_bound``; the estimate may
    exceed it, because dependent subsets that are rare pass the 99 % rule.
    """

    tests: tuple[SubsetTest, ...]
    threshold: float
    limit: int

    @property
    def sizes(self) -> list[int]:
        """The tested sizes k, increasing."""
        return [t.size for t in self.tests]

    @property
    def fractions(self) -> list[float]:
        """Fraction of independent subsets at each tested size."""
        return [t.fraction for t in self.tests]

    @property
    def estimate(self) -> int:
        """The 99 % rule: the largest tested size with fraction ``>= threshold`` (0 if none)."""
        return max((t.size for t in self.tests if t.passes(self.threshold)), default=0)

    @property
    def upper_bound(self) -> int:
        """Proved: the Kruskal rank is at most this."""
        return min([self.limit] + [t.size - 1 for t in self.tests if t.found_dependent])


def kruskal_curve(vectors: object, sizes: Iterable[int], *, subsets: int, generator: torch.Generator | None = None,
                  threshold: float = 0.99, tol: float | None = None) -> KruskalCurve:
    """:func:`subset_test` at each size of ``sizes``: Figure 1 of Mahdavi et al., the fraction of
    independent random k-subsets of the rows of ``vectors: (m, d)`` against the candidate rank k. All
    draws come from ``generator`` (None: a fresh one seeded with 0), size after size."""
    v = _vectors("vectors", vectors)
    threshold, tol = _fraction("threshold", threshold), _tol(tol)
    subsets, generator = positive_int("subsets", subsets), _resolve.generator(generator)
    if isinstance(sizes, (str, bytes)) or not isinstance(sizes, Iterable):
        raise TypeError(f"sizes must be an iterable of subset sizes k, got {type(sizes).__name__}")
    ks = sorted({positive_int("sizes", k) for k in sizes})
    if not ks:
        raise ValueError("sizes must contain at least one subset size k")
    tests = tuple(subset_test(v, k, subsets=subsets, generator=generator, tol=tol) for k in ks)
    return KruskalCurve(tests=tests, threshold=threshold, limit=min(v.shape))


def kruskal_search(vectors: object, *, subsets: int, generator: torch.Generator | None = None,
                   threshold: float = 0.99, tol: float | None = None) -> KruskalCurve:
    """The 99 % rule's estimate of the Kruskal rank of the rows of ``vectors: (m, d)``, by bisection.

    The true fraction of independent k-subsets cannot grow with k (every k-subset of an independent
    (k+1)-subset is independent), so the largest passing k in ``1..min(m, d)`` is found with about
    :math:`\\log_2 \\min(m, d)` subset tests. Returns the :class:`KruskalCurve` of the tested sizes; its
    ``estimate`` is the answer, and the vectors are in general position by the same rule exactly when
    it equals ``min(m, d)``. All draws come from ``generator`` (None: a fresh one seeded with 0).
    """
    v = _vectors("vectors", vectors)
    threshold, tol = _fraction("threshold", threshold), _tol(tol)
    subsets, generator = positive_int("subsets", subsets), _resolve.generator(generator)
    tests: dict[int, SubsetTest] = {}
    low, high = 0, min(v.shape)  # invariant: `low` passes (0 trivially), sizes above `high` fail
    while low < high:
        mid = (low + high + 1) // 2
        tests[mid] = subset_test(v, mid, subsets=subsets, generator=generator, tol=tol)
        low, high = (mid, high) if tests[mid].passes(threshold) else (low, mid - 1)
    return KruskalCurve(tests=tuple(tests[k] for k in sorted(tests)), threshold=threshold, limit=min(v.shape))


@dataclass(frozen=True)
class AssumptionReport:
    """Mahdavi et al.'s assumptions measured on one layer of one model (a row of their Table 1, a column
    of their Table 3): T examples, contexts ``(T, n, d)``, queries ``(T, d)``.

    ``context_ranks``: the rank of every context (Assumption 2 holds when all equal n);
    ``assumption_1`` / ``assumption_3``: random n-subsets of the queries / of the shifted queries
    :math:`e^{(t)} + \\frac1n\\sum_i e_i^{(t)}`; ``kruskal``: the bisection of :func:`kruskal_search` on
    the queries, which also decides general position (Kruskal rank ``min(T, d)``) by the same rule;
    ``query_rank``: the rank of all T queries together, singular values counted above ``d * eps(dtype)`` times
    the largest (the rule of a ``d x d`` matrix, as for the subsets; NumPy's rule for the ``(T, d)`` matrix,
    ``max(T, d) * eps``, grows with T and drops small but real directions of a tall matrix), or above ``tol``.
    """

    examples: int
    context_size: int
    dim: int
    context_ranks: torch.Tensor
    assumption_1: SubsetTest
    assumption_3: SubsetTest | None
    kruskal: KruskalCurve
    query_rank: int
    threshold: float

    @property
    def holds_1(self) -> bool:
        """Assumption 1 by the 99 % rule."""
        return self.assumption_1.passes(self.threshold)

    @property
    def holds_2(self) -> bool:
        """Assumption 2, exactly: every context has rank n."""
        return bool((self.context_ranks == self.context_size).all())

    @property
    def holds_3(self) -> bool | None:
        """Assumption 3 by the 99 % rule (None when it was not measured)."""
        return None if self.assumption_3 is None else self.assumption_3.passes(self.threshold)

    @property
    def in_general_position(self) -> bool:
        """General position by the 99 % rule: the Kruskal-rank estimate reaches ``min(T, d)``."""
        return self.kruskal.estimate >= min(self.examples, self.dim)

    @property
    def full_rank_contexts(self) -> float:
        """Fraction of the T contexts that have rank n."""
        return float((self.context_ranks == self.context_size).double().mean())


def assumption_report(contexts: object, queries: object, *, subsets: int, generator: torch.Generator | None = None,
                      threshold: float = 0.99, tol: float | None = None,
                      kruskal_subsets: int | None = None, shifted: bool = True) -> AssumptionReport:
    """Measure Assumptions 1-3 and general position on ``contexts: (T, n, d)`` and ``queries: (T, d)``.

    ``subsets`` random n-subsets for Assumptions 1 and 3 and the ``threshold`` rule, as in the paper;
    the Kruskal-rank bisection (which decides general position) uses ``kruskal_subsets`` per tested
    size (default ``subsets``). All draws come from ``generator`` (None: a fresh one seeded with 0).
    ``shifted=False`` skips Assumption 3 (``assumption_3`` is then ``None``).
    """
    e, shared = _contexts(contexts)  # (T, n, d)
    q = _vectors("queries", queries, e.device)  # (T, d)
    if shared or e.shape[0] != q.shape[0]:
        raise ValueError(f"contexts (T, n, d) and queries (T, d) must have the same T, "
                         f"got contexts {tuple(e.shape)} and queries {tuple(q.shape)}")
    if e.shape[2] != q.shape[1]:
        raise ValueError(f"contexts and queries must share the dimension d, got {e.shape[2]} and {q.shape[1]}")
    threshold, tol, generator = _fraction("threshold", threshold), _tol(tol), _resolve.generator(generator)
    subsets = positive_int("subsets", subsets)
    kruskal_subsets = subsets if kruskal_subsets is None else positive_int("kruskal_subsets", kruskal_subsets)
    shifted = check_bool("shifted", shifted)
    t_count, n, d = e.shape
    return AssumptionReport(
        examples=t_count, context_size=n, dim=d, context_ranks=context_ranks(e, tol=tol),
        assumption_1=subset_test(q, n, subsets=subsets, generator=generator, tol=tol),
        assumption_3=(subset_test(q + e.to(q.dtype).mean(dim=1), n, subsets=subsets, generator=generator, tol=tol)
                      if shifted else None),  # e~(t) = e(t) + (1/n) sum_i e_i(t)
        kruskal=kruskal_search(q, subsets=kruskal_subsets, generator=generator, threshold=threshold, tol=tol),
        query_rank=rank(q, tol=tol, rtol=None if tol is not None else d * torch.finfo(q.dtype).eps),
        threshold=threshold)
