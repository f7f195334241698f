"""Mahdavi et al. (2024), Theorem 1 as a program: weights of an H-head attention layer that memorize.

The proof (their Section 4.1 and Appendices B-D) is constructive; every step is a function here:

* :func:`rank_one_separator` -- Lemma 3: a rank-one W+ = v u^T with W+ e^(t) = 0 on chosen queries and a
  unique largest logit [E^(t) W+ e^(t)]_i on the others.
* :func:`softmax_limit`, :func:`saturation_scale`, :func:`saturation_error`, :func:`saturation_bound` --
  Lemma 4: Softmax(E (W* + c W+) e) tends to a one-hot theta_+ as c -> infinity, with the finite c the
  proof gives: ||theta_c - theta_+||_1 <= 2 (n - 1) exp(s - c g) (s: spread of the W* logits, g: gap
  of the W+ logits), so c >= (s + log(2 (n - 1) / delta)) / g gives an error below delta.
* :func:`finite_delta` -- Appendix B.2: how close to one-hot the old examples must be (delta) for the
  rank gained by a new head to survive, delta = sigma_min(Z''_b,+ + A_+) / (sqrt(T') e_max ||C||_2).
* :func:`claim1_head`, :func:`claim2_head` -- Claims 1 and 2: one head with prescribed attention on
  m <= r (resp. m <= r - 1) examples, the others delta-close to one-hot.
* :func:`key_query_construction` / :func:`key_query_for_rank` -- Proposition 1: the head-by-head
  induction; rank(Z) >= min{H(r - 1) + 1, T}.
* :func:`readout_weights` -- Step 2 of the proof: the linear solve for W_V, W_O, W_D.
* :func:`theorem1_construction` / :func:`memorize` -- Theorem 1 (and Remark 2 / Appendix C with
  ``skip=True``); :func:`remark1_capacity` -- Remark 1 (queries of Kruskal rank Q < n).

Shapes: ``contexts`` E is ``(T, n, d)`` or one shared ``(n, d)``; ``queries`` e is ``(T, d)``; tensors,
NumPy arrays or nested lists (finite, float32/float64 or integer). All computations run in float64
(:func:`memcap.device.exact_dtype`: float32 on Apple's MPS, which lacks float64) on the inputs' device,
with one CPU thread, so two identical calls give bit-identical weights. ``generator=None`` means a fresh
generator seeded with 0.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import torch

from memcap import _resolve, bounds, linalg
from memcap._checks import (
    check_allocation,
    check_bool,
    check_shape,
    finite_real,
    listed,
    nonnegative_int,
    nonnegative_real,
    positive_int,
    positive_real,
    real_tensor,
)
from memcap.device import exact_dtype
from memcap.models import MHAParams, mha_features, mha_forward

__all__ = [
    "VERTEX_MARGIN", "WEYL_MARGIN",
    "RankOneSeparator", "rank_one_separator", "top_gap", "softmax_limit", "saturation_bound", "saturation_scale",
    "saturation_error", "finite_delta", "OneHead", "claim1_head", "claim2_head", "InductionStep",
    "KeyQueryConstruction", "key_query_construction", "key_query_for_rank", "readout_weights",
    "Theorem1Construction", "theorem1_construction", "memorize_tolerance", "memorize", "remark1_capacity",
]

_MAHDAVI = linalg._MAHDAVI
"""How refusals name the paper whose hypotheses failed (Dana et al. number their assumptions too)."""

VERTEX_MARGIN = 2.0
"""Attention patterns chosen by the induction put logit log(n - 1) + VERTEX_MARGIN on one token and 0 on
the others, i.e. weight e^2 / (e^2 + 1) ~ 0.88 there: close to a vertex of the simplex (rows of Z far
apart, so Z is well conditioned) yet strictly inside it, as a softmax output must be."""

WEYL_MARGIN = 0.5
"""Fraction of sigma_min(Z''_b,+ + A_+) that the Appendix B.2 perturbation may use up; the proof needs any
value in (0, 1]; 1/2 keeps half of the smallest singular value, so the final Z stays well conditioned."""


# ---------------------------------------------------------------------------------------------------
# input handling


def _randn(shape: tuple[int, ...], generator: torch.Generator, like: torch.Tensor) -> torch.Tensor:
    """Standard Gaussian draws in float64 on the generator's device, moved next to ``like``."""
    return _resolve.randn(shape, generator, like.dtype, like.device)


def _real_tensor(name: str, value: object, device: torch.device | None = None) -> torch.Tensor:
    """``value`` as a finite real tensor in the exact dtype of its device (array-likes placed on ``device``)."""
    t = real_tensor(name, value, device=device)
    return t.to(exact_dtype(t.device))


def _check_width(queries: torch.Tensor, d: int, what: str) -> None:
    """Raise naming ``queries`` unless its width is the d of the weights of ``what``."""
    if queries.shape[1] != d:
        raise ValueError(f"queries must have d = {d}, the dimension of {what}, got shape {tuple(queries.shape)}")


def _data(contexts: object, queries: object) -> tuple[torch.Tensor, torch.Tensor]:
    """Validate E and e; return ``(contexts (T, n, d) float64, queries (T, d) float64)``.

    A shared context ``(n, d)`` is expanded as a view (no copy); :func:`_as_given` undoes it.
    """
    e = _real_tensor("queries", queries)
    if e.ndim != 2 or min(e.shape) == 0:
        raise ValueError(f"queries must have shape (T, d) with T, d >= 1, got {tuple(e.shape)}")
    T, d = e.shape
    E = _real_tensor("contexts", contexts, e.device)
    if E.ndim == 2:
        if E.shape[1] != d or E.shape[0] == 0:
            raise ValueError(f"contexts must have shape (T, n, d) = ({T}, *, {d}) or shared (n, d) = (*, {d}), "
                             f"got {tuple(E.shape)}")
        E = E.unsqueeze(0).expand(T, -1, -1)  # (T, n, d), a view of the shared context
    elif E.ndim == 3:
        if E.shape[0] != T or E.shape[2] != d or E.shape[1] == 0:
            raise ValueError(f"contexts must have shape (T, n, d) = ({T}, *, {d}) or shared (n, d) = (*, {d}), "
                             f"got {tuple(E.shape)}")
    else:
        raise ValueError(f"contexts must have shape (T, n, d) = ({T}, *, {d}) or shared (n, d) = (*, {d}), "
                         f"got {tuple(E.shape)}")
    return E, e


def _as_given(E: torch.Tensor) -> torch.Tensor:
    """The contexts as the caller gave them: the shared (n, d) context back from its (T, n, d) view."""
    return E[0] if E.ndim == 3 and E.shape[0] and E.stride(0) == 0 else E


def _examples(name: str, examples: object, T: int) -> tuple[int, ...]:
    """A tuple of distinct example indices in [0, T)."""
    if isinstance(examples, torch.Tensor):
        examples = examples.tolist()
    try:
        items = tuple(examples)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{name} must be a sequence of example indices, got {type(examples).__name__}") from None
    out = []
    for i in items:
        if isinstance(i, bool) or not isinstance(i, numbers.Integral):
            raise TypeError(f"{name} must hold integer example indices, got {i!r}")
        if not 0 <= int(i) < T:
            raise ValueError(f"{name} holds index {int(i)} outside [0, T) = [0, {T})")
        out.append(int(i))
    if len(set(out)) != len(out):
        raise ValueError(f"{name} must hold distinct example indices, got {list(out)}")
    return tuple(out)


def _check_assumption_2(E: torch.Tensor) -> None:
    """Assumption 2 via :func:`memcap.linalg.check_assumption_2`; a shared context is checked once."""
    linalg.check_assumption_2(_as_given(E))


def _check_n_below_d(n: int, d: int) -> None:
    if n >= d:
        raise ValueError(f"n >= d: Theorem 1 needs n < d (n={n}, d={d})")


def _check_logits(name: str, logits: object, device: torch.device | None = None) -> torch.Tensor:
    """Logits (..., n) with every axis non-empty, in the exact dtype (array-likes placed on ``device``)."""
    x = _real_tensor(name, logits, device)
    if x.ndim == 0 or 0 in x.shape:
        raise ValueError(f"{name} must have shape (..., n) with n >= 1 and no empty axis, got {tuple(x.shape)}")
    return x


# ---------------------------------------------------------------------------------------------------
# Assumption 1 as the construction uses it


def _dependent_query_set(queries: torch.Tensor, chosen: tuple[int, ...],
                         others: tuple[int, ...]) -> tuple[int, ...] | None:
    """A witness that the queries are not as independent as the proof needs, or ``None``.

    The proof uses two consequences of "Kruskal rank >= r" for a group ``chosen`` of at most r queries:
    the chosen queries are linearly independent (Claim 1 solves W [e^(t)]_t = [beta^(t)]_t), and no
    other query of ``others`` lies in their span (Lemma 3 needs u^T e^(s) != 0). A dependent set of at
    most r queries is returned, which proves that the Kruskal rank is below r. Tolerance: the NumPy rule
    of :func:`memcap.linalg.rank`, max(shape) * eps * sigma_max.
    """
    if not chosen:   # the span of no query is {0}: only a zero query lies in it (a dependent set of one)
        zero = [s for s in others if not bool(queries[s].abs().max() > 0)]
        return (zero[0],) if zero else None
    Q = queries[list(chosen)]  # (m, d)
    if linalg.rank(Q) < len(chosen):
        return chosen
    if not others:
        return None
    basis, _ = torch.linalg.qr(Q.T)  # (d, m) orthonormal basis of span{e^(t): t in chosen}
    rest = queries[list(others)]  # (k, d)
    resid = rest - (rest @ basis) @ basis.T
    resid = resid - (resid @ basis) @ basis.T  # re-orthogonalize
    eps = torch.finfo(queries.dtype).eps
    scale = torch.maximum(rest.norm(dim=1), torch.linalg.matrix_norm(Q, ord=2))
    bad = torch.nonzero(resid.norm(dim=1) <= max(queries.shape[1], len(chosen) + 1) * eps * scale)
    if bad.numel():
        return tuple(sorted(chosen + (others[int(bad[0, 0])],)))
    return None


def _raise_assumption_1(witness: tuple[int, ...], n: int) -> None:
    k = len(witness)
    raise ValueError(
        f"{_MAHDAVI} Assumption 1 fails: queries have Kruskal rank Q < n = {n}: the {k} queries of examples "
        f"{list(witness)} are linearly dependent, so Q <= {k - 1}; Remark 1: pass query_kruskal_rank=Q "
        f"to memorize up to H(min(Q, d_h) - 1) + 1 examples")


_REMARK1_HINT = ("Remark 1 still memorizes H(min(Q, d_h) - 1) + 1 examples with queries of Kruskal rank Q < n: "
                "compute Q with memcap.linalg.kruskal_rank(queries) and pass query_kruskal_rank=Q, or pass "
                "query_kruskal_rank='auto' to let the construction compute it")
"""What a refusal for queries of low Kruskal rank tells the caller to do (Mahdavi et al., Remark 1)."""


def _declared_kruskal_rank(queries: torch.Tensor, n: int, value: object) -> int | None:
    """The Q of Remark 1 the caller asked for: None (Theorem 1), an int, or ``'auto'`` resolved here.

    ``'auto'`` computes Q exactly with :func:`memcap.linalg.kruskal_rank` (small query sets; the search
    is capped and refuses naming ``max_subsets``) and returns None when Q >= n (Theorem 1 applies).
    """
    if value is None:
        return None
    if isinstance(value, str):
        if value != "auto":
            raise ValueError(f"query_kruskal_rank must be a positive integer Q < n, 'auto' or None, got {value!r}")
        Q = linalg.kruskal_rank(queries)
        if Q == 0:
            raise ValueError("queries have Kruskal rank 0 (a zero query): no example can be memorized this way")
        return None if Q >= n else Q
    return positive_int("query_kruskal_rank", value)


# ---------------------------------------------------------------------------------------------------
# Lemma 3


@dataclass(frozen=True)
class RankOneSeparator:
    """Lemma 3's rank-one matrix W+ = v u^T (d x d), stored by its factors.

    ``u``: (d,) unit vector orthogonal to the queries e^(t), t in ``vanish_on``, so W+ e^(t) = 0 there;
    ``v``: (d,) Gaussian direction; on any other example s the logits E^(s) W+ e^(s) = (u^T e^(s)) E^(s) v
    have a unique largest entry (almost surely). ``vanish_on``: the example indices.
    """

    u: torch.Tensor
    v: torch.Tensor
    vanish_on: tuple[int, ...]

    def __post_init__(self) -> None:
        for name in ("u", "v"):
            t = getattr(self, name)
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
            real_tensor(name, t, device=self.u.device if name == "v" else None)   # v where u is
            check_shape(name, t, (None,), "(d,)")
        check_shape("v", self.v, tuple(self.u.shape), "(d,)")
        object.__setattr__(self, "vanish_on", tuple(nonnegative_int("vanish_on[i]", t) for t in
                                                    listed("vanish_on", self.vanish_on, "example indices")))

    @property
    def matrix(self) -> torch.Tensor:
        """W+ = v u^T, shape (d, d)."""
        return torch.outer(self.v, self.u)

    def logits(self, contexts: torch.Tensor, queries: torch.Tensor) -> torch.Tensor:
        """alpha+ = E^(t) W+ e^(t) for all examples: (T, n)."""
        E, e = _data(contexts, queries)
        _check_width(e, self.u.shape[0], "the separator")
        return (E @ self.v) * (e @ self.u).unsqueeze(1)  # (T, n)


def rank_one_separator(contexts: torch.Tensor, queries: torch.Tensor, vanish_on: object, *,
                       generator: torch.Generator | None = None) -> RankOneSeparator:
    """Lemma 3 (Mahdavi et al., Appendix D): a rank-one W+ with W+ e^(t) = 0 for t in ``vanish_on`` and a
    unique largest logit of E^(s) W+ e^(s) for every other example s.

    ``contexts`` E: (T, n, d) or shared (n, d); ``queries`` e: (T, d); ``vanish_on``: m <= n - 1 example
    indices. Needs Assumption 2 (rows of each E^(s) distinct) and that no other query lies in the span of
    the chosen ones (a consequence of Assumption 1); raises ``ValueError`` naming the failing hypothesis.
    The paper writes W+ in a basis extending the chosen queries; W+ = v u^T with u orthogonal to them is
    the same matrix in coordinates (u collects its coefficients u_{m+1..d} against the dual basis).
    """
    E, e = _data(contexts, queries)
    T, n, d = E.shape
    chosen = _examples("vanish_on", vanish_on, T)
    if len(chosen) > n - 1:
        raise ValueError(f"Lemma 3 needs m <= n - 1 queries to vanish on, got m = {len(chosen)} with n = {n}")
    _check_assumption_2(E)
    skip = set(chosen)
    others = tuple(t for t in range(T) if t not in skip)
    witness = _dependent_query_set(e, chosen, others)
    if witness is not None:
        _raise_assumption_1(witness, n)
    return _separator_direction(e, chosen, _resolve.generator(generator))


# ---------------------------------------------------------------------------------------------------
# Lemma 4 and Appendix B.2


def top_gap(logits: object) -> torch.Tensor:
    """Gap g between the largest and the second largest logit, per row: (..., n) -> (...).

    Lemma 4 needs g > 0 (a unique maximum; the paper asks all logits to be distinct, more than needed).
    For n = 1 the gap is +inf (softmax is constant 1).
    """
    x = _check_logits("logits", logits)
    if x.shape[-1] == 1:
        return torch.full(x.shape[:-1], math.inf, dtype=x.dtype, device=x.device)
    top2 = torch.topk(x, 2, dim=-1).values
    return top2[..., 0] - top2[..., 1]


def softmax_limit(logits_plus: object) -> torch.Tensor:
    """theta_+ = lim_{c -> inf} Softmax(alpha* + c alpha+): the one-hot vector at argmax alpha+ (Lemma 4).

    ``logits_plus`` alpha+: (..., n) with a unique maximum per row; returns (..., n).
    """
    x = _check_logits("logits_plus", logits_plus)
    if bool((top_gap(x) <= 0).any()):
        raise ValueError("Lemma 4 needs a unique largest logit of W+ (alpha+ has a tie at its maximum)")
    return torch.nn.functional.one_hot(x.argmax(dim=-1), x.shape[-1]).to(x.dtype)


def saturation_bound(logits_star: object, logits_plus: object, c: float) -> torch.Tensor:
    """The proof's bound 2 (n - 1) exp(s - c g) on ||theta_c - theta_+||_1, per row (Lemma 4).

    ``logits_star`` alpha* = E W* e and ``logits_plus`` alpha+ = E W+ e: (..., n); s = max(alpha*) -
    min(alpha*) (spread), g = :func:`top_gap` of alpha+. Returns (...).
    """
    a_star, a_plus = _pair(logits_star, logits_plus)
    c = nonnegative_real("c", c)   # Lemma 4's scale c >= 0
    n = a_star.shape[-1]
    spread = a_star.amax(dim=-1) - a_star.amin(dim=-1)
    gap = top_gap(a_plus)
    if n == 1:
        return torch.zeros_like(spread)
    if bool((gap <= 0).any()):   # theta_+ is undefined: as softmax_limit and saturation_scale refuse
        raise ValueError("Lemma 4 needs a unique largest logit of W+ (alpha+ has a tie at its maximum)")
    return 2 * (n - 1) * torch.exp(spread - c * gap)


def saturation_scale(logits_star: object, logits_plus: object, delta: float) -> float:
    """The finite c of Lemma 4: c = max_rows (s + log(2 (n - 1) / delta)) / g, clipped at 0.

    Then ||Softmax(alpha* + c' alpha+) - theta_+||_1 < delta for every row and every c' >= c.
    ``logits_star``, ``logits_plus``: (..., n) (one row per example); ``delta`` > 0.
    """
    a_star, a_plus = _pair(logits_star, logits_plus)
    delta = positive_real("delta", delta)
    n = a_star.shape[-1]
    if n == 1:
        return 0.0
    gap = top_gap(a_plus)
    if bool((gap <= 0).any()):
        raise ValueError("Lemma 4 needs a unique largest logit of W+ (alpha+ has a tie at its maximum)")
    spread = a_star.amax(dim=-1) - a_star.amin(dim=-1)
    c = (spread + math.log(2 * (n - 1) / delta)) / gap
    return max(0.0, float(c.max()))


def saturation_error(logits_star: object, logits_plus: object, c: float) -> torch.Tensor:
    """||theta_c - theta_+||_1 with theta_c = Softmax(alpha* + c alpha+), per row: (..., n) -> (...)."""
    a_star, a_plus = _pair(logits_star, logits_plus)
    theta_c = torch.softmax(a_star + finite_real("c", c) * a_plus, dim=-1)
    # theta_+ is one-hot, so the distance is 2 * (mass off its support): summed without cancellation
    off = theta_c * (1 - softmax_limit(a_plus))
    return 2 * off.sum(dim=-1)


def _pair(logits_star: object, logits_plus: object) -> tuple[torch.Tensor, torch.Tensor]:
    a_star = _check_logits("logits_star", logits_star)
    a_plus = _check_logits("logits_plus", logits_plus, a_star.device)
    if a_star.shape != a_plus.shape:
        raise ValueError(f"logits_star and logits_plus must have the same shape (..., n), "
                         f"got {tuple(a_star.shape)} and {tuple(a_plus.shape)}")
    return a_star, a_plus


def finite_delta(sigma_min: float, coefficient_norm: float, token_norm: float, previous: int, *,
                 margin: float = WEYL_MARGIN) -> float:
    """Appendix B.2: a delta that keeps rank(Z''_b,delta + A_delta) >= rank(Z''_b,+ + A_+).

    delta = margin * sigma_min / (sqrt(T') e_max ||C||_2), where ``sigma_min`` is the smallest singular
    value of the limit block Z''_b,+ + A_+, ``coefficient_norm`` = ||C||_2 of the row operations,
    ``token_norm`` = e_max the largest context-token norm and ``previous`` = T' the number of old
    examples. Then ||Delta||_2 <= ||C||_2 sqrt(T') e_max max_t ||theta_delta - theta_+||_1 < margin *
    sigma_min, and Lemma 5 (Weyl) keeps the rank; ``margin`` in (0, 1]. Returns +inf when ||C|| = 0 or
    there are no old examples (any delta works).
    """
    sigma_min = positive_real("sigma_min", sigma_min)
    margin = positive_real("margin", margin)
    if margin > 1:
        raise ValueError(f"margin must lie in (0, 1], got {margin}")
    previous = nonnegative_int("previous", previous)
    coefficient_norm = nonnegative_real("coefficient_norm", coefficient_norm)
    token_norm = nonnegative_real("token_norm", token_norm)
    denominator = math.sqrt(previous) * token_norm * coefficient_norm
    return math.inf if denominator == 0 else margin * sigma_min / denominator


# ---------------------------------------------------------------------------------------------------
# Claims 1 and 2: one head


def _factor(B: torch.Tensor, queries_m: torch.Tensor, head_dim: int, extra: tuple[torch.Tensor, torch.Tensor] | None
            ) -> tuple[torch.Tensor, torch.Tensor]:
    """Factor W = B Q^+ (+ c v u^T) as W_K W_Q^T with W_K, W_Q: (d, d_h), rank <= m (+1) <= d_h.

    ``B``: (d, m) targets beta^(t); ``queries_m``: (m, d) the chosen queries (rows independent);
    Q^+ = (Q^T Q)^{-1} Q^T is the left inverse of Q = queries_m^T (d x m), so W e^(t) = beta^(t).
    """
    d = B.shape[0]
    W_K = torch.zeros(d, head_dim, dtype=B.dtype, device=B.device)
    W_Q = torch.zeros_like(W_K)
    m = B.shape[1]
    if m:
        # rows of Q^+ (m x d): the dual vectors q_i with q_i^T e^(t_j) = [i == j]. With Q = q rr (reduced QR),
        # Q^+ = rr^{-1} q^T; unlike lstsq (MKL's gelsy), QR and a triangular solve are bit-reproducible.
        q, rr = torch.linalg.qr(queries_m.T)  # (d, m), (m, m)
        dual = torch.linalg.solve_triangular(rr, q.T, upper=True)  # (m, d)
        W_K[:, :m] = B
        W_Q[:, :m] = dual.T
    if extra is not None:
        W_K[:, m] = extra[0]
        W_Q[:, m] = extra[1]
    return W_K, W_Q


def _targets(E_m: torch.Tensor, logits_m: torch.Tensor) -> torch.Tensor:
    """beta^(t) = E^(t)+ alpha*^(t) (minimum-norm right inverse of the full-rank E^(t)): (d, m)."""
    # E^+ alpha = E^T (E E^T)^{-1} alpha = q rr^{-T} alpha with E^T = q rr (reduced QR), batched over the m
    # examples; the Gram matrix E E^T would square E's condition number (and fail where E is still full rank)
    q, rr = torch.linalg.qr(E_m.transpose(1, 2))  # (m, d, n), (m, n, n)
    # (Assumption 2, checked before, makes rr invertible; theorem1_construction measures the fit at the end)
    coeff = torch.linalg.solve_triangular(rr.transpose(1, 2), logits_m.unsqueeze(-1), upper=False)  # (m, n, 1)
    return (q @ coeff).squeeze(-1).T  # (d, m)


def _attention_logits(name: str, theta: object, m: int, n: int, device: torch.device) -> torch.Tensor:
    """Logits alpha* = log theta (one choice among the shifts alpha* + const) for prescribed theta: (m, n),
    on ``device`` (the other inputs')."""
    given = real_tensor(name, theta, device=device)
    th = given.to(exact_dtype(given.device))
    if th.shape != (m, n):
        raise ValueError(f"{name} must have shape (m, n) = ({m}, {n}), got {tuple(th.shape)}")
    if bool((th <= 0).any()):
        raise ValueError(f"{name} must lie in the open simplex: softmax outputs are > 0 (got an entry <= 0)")
    tol = max(1e-12, 10 * n * torch.finfo(given.dtype).eps)   # the rounding of the dtype theta comes in
    if not torch.allclose(th.sum(dim=-1), torch.ones(m, dtype=th.dtype, device=th.device), atol=tol, rtol=0):
        raise ValueError(f"{name} rows must sum to 1 within {tol:.3g} (attention patterns on the simplex)")
    if th.dtype != given.dtype:   # a float32 softmax, renormalized in the exact dtype: log theta is exact there
        th = th / th.sum(dim=-1, keepdim=True)
    return th.log()


@dataclass(frozen=True)
class OneHead:
    """One attention head built by Claim 1 or Claim 2.

    ``W_K``, ``W_Q``: (d, d_h) with W_K W_Q^T = W* + c W+ (rank <= d_h); ``examples``: where the attention
    is prescribed exactly; ``separator``: Lemma 3's W+ (None for Claim 1); ``scale``: c (0 for Claim 1);
    ``saturated``: the examples kept delta-close to one-hot; ``theta_plus``: their limits (k, n).
    """

    W_K: torch.Tensor
    W_Q: torch.Tensor
    examples: tuple[int, ...]
    separator: RankOneSeparator | None = None
    scale: float = 0.0
    saturated: tuple[int, ...] = ()
    theta_plus: torch.Tensor | None = None

    def attention(self, contexts: torch.Tensor, queries: torch.Tensor) -> torch.Tensor:
        """theta^(t) = Softmax(E^(t) W_K W_Q^T e^(t)) for all examples: (T, n)."""
        E, e = _data(contexts, queries)
        _check_width(e, self.W_K.shape[0], "the head")
        return _head_attention(self.W_K, self.W_Q, E, e)


def _head_dim_and_r(head_dim: object, n: int) -> tuple[int, int]:
    d_h = positive_int("head_dim", head_dim)
    return d_h, min(n, d_h)


def claim1_head(contexts: torch.Tensor, queries: torch.Tensor, examples: object, theta: object, *,
                head_dim: int) -> OneHead:
    """Claim 1 (Mahdavi et al., Appendix B): a head whose attention on m <= r = min(n, d_h) chosen examples
    is exactly the prescribed ``theta`` (m, n) (rows in the open simplex).

    Solves E^(t) W e^(t) = log theta^(t) through W e^(t) = beta^(t) = E^(t)+ log theta^(t), i.e.
    W* = [beta] Q^+, of rank <= m <= d_h, factored as W_K W_Q^T. Needs Assumption 2 and independent
    chosen queries (Assumption 1).
    """
    E, e = _data(contexts, queries)
    T, n, d = E.shape
    d_h, r = _head_dim_and_r(head_dim, n)
    chosen = _examples("examples", examples, T)
    if len(chosen) > r:
        raise ValueError(f"Claim 1 fits at most r = min(n, d_h) = {r} examples in one head, got {len(chosen)}")
    _check_assumption_2(E[list(chosen)] if chosen else E)
    witness = _dependent_query_set(e, chosen, ())
    if witness is not None:
        _raise_assumption_1(witness, n)
    logits = _attention_logits("theta", theta, len(chosen), n, e.device)
    B = _targets(E[list(chosen)], logits) if chosen else torch.zeros(d, 0, dtype=e.dtype, device=e.device)
    W_K, W_Q = _factor(B, e[list(chosen)], d_h, None)
    return OneHead(W_K=W_K, W_Q=W_Q, examples=chosen)


def claim2_head(contexts: torch.Tensor, queries: torch.Tensor, examples: object, theta: object, *,
                head_dim: int, delta: float, saturate: object = None,
                generator: torch.Generator | None = None) -> OneHead:
    """Claim 2 (Mahdavi et al., Appendix B): exact attention ``theta`` (m, n) on m <= r - 1 chosen examples
    while every example of ``saturate`` (default: all others) stays delta-close in l1 to a one-hot
    theta_+ that depends only on Lemma 3's W+ (not on ``theta``).

    W = W* + c W+ with W* from Claim 1, W+ from :func:`rank_one_separator` (W+ e^(t) = 0 on the chosen
    examples, so their attention is untouched) and c from :func:`saturation_scale`; rank <= m + 1 <= d_h.
    """
    E, e = _data(contexts, queries)
    T, n, d = E.shape
    d_h, r = _head_dim_and_r(head_dim, n)
    chosen = _examples("examples", examples, T)
    if len(chosen) > r - 1:
        raise ValueError(f"Claim 2 fits at most r - 1 = {r - 1} examples in one head (r = min(n, d_h)), "
                         f"got {len(chosen)}")
    delta = positive_real("delta", delta)
    skip = set(chosen)
    others = tuple(t for t in range(T) if t not in skip)
    kept = others if saturate is None else _examples("saturate", saturate, T)
    if set(kept) & set(chosen):
        raise ValueError("saturate and examples must be disjoint")
    sep = rank_one_separator(E, e, chosen, generator=generator)
    logits = _attention_logits("theta", theta, len(chosen), n, e.device)
    B = _targets(E[list(chosen)], logits) if chosen else torch.zeros(d, 0, dtype=e.dtype, device=e.device)
    W_K, W_Q = _factor(B, e[list(chosen)], d_h, None)
    idx = list(kept)
    a_plus = sep.logits(E[idx], e[idx])  # (k, n)
    a_star = torch.einsum("tnd,td->tn", E[idx], (W_K @ (W_Q.T @ e[idx].T)).T)  # (k, n) logits of W*
    c = saturation_scale(a_star, a_plus, min(delta, 2.0)) if idx else 0.0
    W_K, W_Q = _factor(B, e[list(chosen)], d_h, (c * sep.v, sep.u))
    theta_plus = softmax_limit(a_plus) if idx else None
    return OneHead(W_K=W_K, W_Q=W_Q, examples=chosen, separator=sep, scale=c, saturated=kept,
                   theta_plus=theta_plus)


# ---------------------------------------------------------------------------------------------------
# Proposition 1: the induction over heads


@dataclass(frozen=True)
class InductionStep:
    """What head h (1-based) of the induction did.

    ``examples``: its fresh group G_h; ``previous``: T', the number of examples in G_1, ..., G_{h-1}; ``scale``: c;
    ``delta``: the B.2 tolerance; ``gap``: smallest top-logit gap of W+ on old examples;
    ``saturation_error``: max_t ||theta_h^(t) - theta_+^(t)||_1 over old examples (< delta);
    ``sigma_min_limit``: sigma_min(Z''_b,+ + A_+); ``sigma_min``: the same for the finite weights.
    """

    head: int
    examples: tuple[int, ...]
    previous: int
    scale: float
    delta: float
    gap: float
    saturation_error: float
    sigma_min_limit: float
    sigma_min: float


@dataclass(frozen=True)
class KeyQueryConstruction:
    """Proposition 1's key/query weights and the feature matrix they produce.

    ``W_K``, ``W_Q``: (H, d, d_h); ``features``: Z (T, H*d) computed by :func:`memcap.models.mha_features`;
    ``groups``: G_1, ..., G_H (example indices, contiguous, in order; empty for unused heads);
    ``r``: min(n, d_h) (or min(Q, d_h) under Remark 1); ``target``: min{H(r-1)+1, T};
    ``steps``: one :class:`InductionStep` per head that received examples.
    """

    W_K: torch.Tensor
    W_Q: torch.Tensor
    features: torch.Tensor
    groups: tuple[tuple[int, ...], ...]
    r: int
    target: int
    steps: tuple[InductionStep, ...]

    def step_features(self, heads: int) -> torch.Tensor:
        """Z after ``heads`` induction steps: rows G_1..G_h, columns of heads 1..h: (R_h, h*d), R_h examples."""
        H = self.W_K.shape[0]
        h = positive_int("heads", heads)
        if h > H:
            raise ValueError(f"heads must be <= H = {H}, got {h}")
        rows = sum(len(g) for g in self.groups[:h])
        return self.features[:rows, : h * self.W_K.shape[1]]


def _groups(T: int, H: int, r: int) -> tuple[tuple[int, ...], ...]:
    """G_1 = the first min(r, T) examples, then blocks of r - 1 (the last may be shorter), then empty."""
    groups, start = [], 0
    for h in range(H):
        size = min(r if h == 0 else r - 1, T - start)
        groups.append(tuple(range(start, start + size)))
        start += size
    return tuple(groups)


def _choose_patterns(E_b: torch.Tensor, offset: torch.Tensor) -> torch.Tensor:
    """Sub-step 1.A: logits alpha*^(t) for the new group such that the rows E^(t)T theta^(t) + a_t are
    linearly independent; greedily, each row is the candidate farthest from the span of those before.

    ``E_b``: (m, n, d) contexts of the group; ``offset``: (m, d) the rows a_t of A_+. Candidates: the n
    near-vertex patterns (logit log(n-1) + VERTEX_MARGIN on one token, 0 elsewhere). Returns (m, n).
    """
    m, n, d = E_b.shape
    lift = math.log(max(n - 1, 1)) + VERTEX_MARGIN
    cand_logits = lift * torch.eye(n, dtype=E_b.dtype, device=E_b.device)  # (n, n)
    resid = torch.einsum("cn,tnd->tcd", torch.softmax(cand_logits, dim=-1), E_b) + offset.unsqueeze(1)  # (m, n, d)
    best = torch.empty(m, dtype=torch.long, device=E_b.device)
    for t in range(m):
        best[t] = resid[t].norm(dim=1).argmax()
        b = resid[t, best[t]]
        b = b / b.norm()
        resid = resid - torch.einsum("tcd,d->tc", resid, b).unsqueeze(-1) * b  # project out the new direction
    return cand_logits[best]


def _head_features(W_K: torch.Tensor, W_Q: torch.Tensor, E: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    """z_h = E^T Softmax(E W_K W_Q^T e) for one head, via :func:`memcap.models.mha_features`: (T, d)."""
    return mha_features(W_K.unsqueeze(0), W_Q.unsqueeze(0), E, e)


def _head_attention(W_K: torch.Tensor, W_Q: torch.Tensor, E: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    """theta^(t) = Softmax(E^(t) W_K W_Q^T e^(t)) for one head: (T, n)."""
    u = (W_K @ (W_Q.T @ e.T)).T  # (T, d)
    return torch.softmax(torch.einsum("tnd,td->tn", E, u), dim=-1)


def _resolve_r(E: torch.Tensor, e: torch.Tensor, H: int, d_h: int, query_kruskal_rank: int | None
               ) -> tuple[int, int]:
    """Check the hypotheses of Theorem 1 (or of Remark 1 when Q is declared); return (r, capacity)."""
    T, n, d = E.shape
    _check_n_below_d(n, d)
    _check_assumption_2(E)
    if query_kruskal_rank is None:
        r = min(n, d_h)
        capacity = bounds.mha_capacity(H, n, d_h)
        formula = f"H(min(n,d_h)-1)+1 = {H}*(min({n},{d_h})-1)+1 = {capacity}"
    else:
        Q = positive_int("query_kruskal_rank", query_kruskal_rank)
        if Q >= n:
            raise ValueError(f"query_kruskal_rank Q = {Q} must be < n = {n} (Remark 1); leave it out when "
                             f"Assumption 1 holds")
        r = min(Q, d_h)
        capacity = bounds.mha_capacity_remark1(H, Q, d_h)
        formula = f"H(min(Q,d_h)-1)+1 = {H}*(min({Q},{d_h})-1)+1 = {capacity}"
    if T > capacity:
        raise ValueError(f"T={T} exceeds the capacity {formula}")
    if query_kruskal_rank is None:
        # Theorem 1's hypothesis; with T < n the best possible is Kruskal rank T (all queries independent)
        try:
            linalg.check_assumption_1(e, min(n, T))
        except ValueError as err:
            raise ValueError(f"{err}. {_REMARK1_HINT}") from None
    return r, capacity


class _ReducedForm:
    """The row operations of the induction, kept incrementally: U = L Z with L unit lower triangular.

    Rows of group G_j of U are Z's rows minus combinations of earlier rows. In the columns of head j they
    hold M_j = Z''_b + A of step j (full row rank); in the columns of an earlier head i < j they hold a
    residual orthogonal to the rows of M_i. These two facts make all rows of U, hence of Z, independent
    (see :func:`key_query_construction`). With P_j = M_j^+ (d, m_j), the matrix K with blocks
    K_ij = U_ij P_j is block upper triangular with identity diagonal blocks (residuals vanish against
    P_j), so the coefficients of a new group solve one triangular system y K = [z_j P_j]_j.
    ``L``, ``K``: (T, T); ``U``: (T, H d); ``P``: (H, d, r) zero-padded pseudo-inverses.
    """

    def __init__(self, T: int, H: int, d: int, r: int, like: torch.Tensor) -> None:
        self.d = d
        opts = {"dtype": like.dtype, "device": like.device}
        self.L = torch.zeros(T, T, **opts)
        self.K = torch.zeros(T, T, **opts)
        self.U = torch.zeros(T, H * d, **opts)
        self.P = torch.zeros(H, d, r, **opts)
        self.columns: list[int] = []  # position of each old row inside the flattened (head, r) grid

    def coefficients(self, Z_b: torch.Tensor) -> torch.Tensor:
        """C (m, T') such that Z_b - C Z_a has, in each earlier head's columns, rows orthogonal to M_j."""
        m, width = Z_b.shape
        h, k = width // self.d, len(self.columns)
        zP = torch.einsum("mhd,hdr->mhr", Z_b.reshape(m, h, self.d), self.P[:h])  # (m, h, r)
        zP = zP.reshape(m, -1)[:, self.columns]  # (m, T'): [z_j P_j]_j
        y = torch.linalg.solve_triangular(self.K[:k, :k], zP, upper=True, left=False, unitriangular=True)
        return y @ self.L[:k, :k]  # in terms of the original rows of Z

    def add(self, group: tuple[int, ...], C: torch.Tensor, Z: torch.Tensor, head: int) -> torch.Tensor:
        """Record head ``head``'s group and row operations; return its block M = U[G_h, head columns]."""
        k, end = group[0], group[-1] + 1
        cols = slice(head * self.d, (head + 1) * self.d)
        eye = torch.eye(end - k, dtype=Z.dtype, device=Z.device)
        self.L[k:end, :k] = -C
        self.L[k:end, k:end] = eye
        # the new rows, reduced against the older ones in every column built so far
        self.U[k:end, :cols.stop] = Z[k:end, :cols.stop] - C @ Z[:k, :cols.stop]
        # the older rows in the new head's columns
        self.U[:k, cols] = self.L[:k, :k] @ Z[:k, cols]
        M = self.U[k:end, cols]
        q, rr = torch.linalg.qr(M.T)  # M^T = q rr, so M^+ = q rr^{-T}
        pinv = torch.linalg.solve_triangular(rr, q.T, upper=True).T  # (d, m)
        self.P[head, :, :end - k] = pinv
        self.K[:k, k:end] = self.U[:k, cols] @ pinv
        self.K[k:end, k:end] = eye
        self.columns.extend(head * self.P.shape[2] + i for i in range(end - k))
        return M


@dataclass(frozen=True)
class _StepPlan:
    """Internal record of one induction step before its finite weights are measured."""

    C: torch.Tensor            # (m, T') coefficients of the row operations Z'_b - C Z'_a
    theta_plus: torch.Tensor   # (T', n) one-hot limits on the old examples
    scale: float
    delta: float
    gap: float
    sigma_min_limit: float


def _separator_direction(e: torch.Tensor, group: tuple[int, ...], gen: torch.Generator) -> RankOneSeparator:
    """Lemma 3's factors u (orthogonal to the group's queries) and v (Gaussian), both unit vectors."""
    d = e.shape[1]
    g = _randn((d,), gen, e)
    if group:
        basis, _ = torch.linalg.qr(e[list(group)].T)  # (d, m)
        g = g - basis @ (basis.T @ g)
        g = g - basis @ (basis.T @ g)  # re-orthogonalize
    v = _randn((d,), gen, e)
    return RankOneSeparator(u=g / g.norm(), v=v / v.norm(), vanish_on=group)


def _plan_step(E: torch.Tensor, e: torch.Tensor, C: torch.Tensor, group: tuple[int, ...], d_h: int,
               gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, _StepPlan]:
    """One induction step (Appendix B, Step 2): the new head's W* + c W+, as (W_K, W_Q, plan).

    ``C``: (m, T') row operations for the group (old examples are 0..T'-1).
    """
    g, o = list(group), list(range(group[0]))
    sep = _separator_direction(e, group, gen)  # Lemma 3
    a_plus = (E[o] @ sep.v) * (e[o] @ sep.u).unsqueeze(1)  # (T', n) logits of W+ on old examples
    gap = float(top_gap(a_plus).min())
    theta_plus = softmax_limit(a_plus)  # (T', n), Lemma 4's limit
    A_plus = -C @ torch.einsum("tn,tnd->td", theta_plus, E[o])  # (m, d) = -C Z''_a,+
    logits = _choose_patterns(E[g], A_plus)  # sub-step 1.A
    B = _targets(E[g], logits)
    W_K, W_Q = _factor(B, e[g], d_h, None)  # W* (Claim 1 on the group)
    M_plus = torch.einsum("tn,tnd->td", torch.softmax(logits, dim=-1), E[g]) + A_plus
    sigma_min_limit = float(torch.linalg.svdvals(M_plus)[-1])
    e_max = float(E[o].norm(dim=-1).max())
    delta = finite_delta(sigma_min_limit, float(torch.linalg.svdvals(C)[0]), e_max, len(o))  # B.2
    a_star = torch.einsum("tnd,td->tn", E[o], (W_K @ (W_Q.T @ e[o].T)).T)  # (T', n) logits of W*
    c = saturation_scale(a_star, a_plus, min(delta, 2.0))  # Lemma 4; an l1 distance of distributions is < 2
    W_K, W_Q = _factor(B, e[g], d_h, (c * sep.v, sep.u))  # W* + c W+
    return W_K, W_Q, _StepPlan(C, theta_plus, c, delta, gap, sigma_min_limit)


def key_query_construction(contexts: torch.Tensor, queries: torch.Tensor, *, heads: int, head_dim: int,
                           query_kruskal_rank: int | str | None = None,
                           generator: torch.Generator | None = None) -> KeyQueryConstruction:
    """Proposition 1 (Mahdavi et al., Appendix B): key/query weights with rank(Z) >= min{H(r-1)+1, T}.

    Head 1 takes the first r examples (Claim 1, patterns chosen so that their r rows of Z are
    independent); head h >= 2 takes the next r - 1 (Claim 2): its W+ vanishes on them, its W* gives them
    patterns for which Z''_b,+ + A_+ has full row rank (sub-step 1.A), and c is Lemma 4's finite scale
    for the delta of Appendix B.2, so the old rows move too little to lose rank.

    The row operations are kept in a reduced form U = L Z (block least squares against the earlier
    diagonal blocks M_j) instead of the paper's "zero out Z'_b": a new row need not depend on the old
    ones, and its residual, orthogonal to every earlier M_j, never spoils independence.
    ``contexts``: (T, n, d) or shared (n, d); ``queries``: (T, d). Requires n < d, Assumptions 1-2 and
    T <= H(r-1)+1; errors name the failing hypothesis. ``query_kruskal_rank`` = Q < n switches to
    Remark 1 (r = min(Q, d_h)); ``'auto'`` computes Q (exactly, small query sets) and uses Remark 1 only
    when Q < n.
    """
    E, e = _data(contexts, queries)
    T, n, d = E.shape
    H = positive_int("heads", heads)
    d_h = positive_int("head_dim", head_dim)
    gen = _resolve.generator(generator)
    check_allocation(f"W_K, W_Q (H, d, d_h) and Z (T, H d) with T = {T}, d = {d}", H * d * (2 * d_h + T), e.device,
                     heads=H, head_dim=d_h)
    with _resolve.one_cpu_thread(e.device):
        r, _ = _resolve_r(E, e, H, d_h, _declared_kruskal_rank(e, n, query_kruskal_rank))
        groups = _groups(T, H, r)
        W_K = torch.zeros(H, d, d_h, dtype=e.dtype, device=e.device)
        W_Q = torch.zeros_like(W_K)
        Z = torch.empty(T, H * d, dtype=e.dtype, device=e.device)
        steps = _induction(E, e, groups, d_h, gen, W_K, W_Q, Z, _ReducedForm(T, H, d, r, e))
    return KeyQueryConstruction(W_K=W_K, W_Q=W_Q, features=Z, groups=groups, r=r,
                                target=min(bounds.mha_capacity(H, r, d_h), T), steps=tuple(steps))


def _induction(E: torch.Tensor, e: torch.Tensor, groups: tuple[tuple[int, ...], ...], d_h: int,
               gen: torch.Generator, W_K: torch.Tensor, W_Q: torch.Tensor, Z: torch.Tensor,
               reduced: _ReducedForm) -> list[InductionStep]:
    """The head-by-head loop of Proposition 1; fills ``W_K``, ``W_Q`` (H, d, d_h) and ``Z`` (T, H d)."""
    n, d = E.shape[1], E.shape[2]
    steps: list[InductionStep] = []
    for h, group in enumerate(groups):
        cols = slice(h * d, (h + 1) * d)
        if not group:
            # an unused head keeps W = 0 (uniform attention): extra columns never lower rank(Z)
            Z[:, cols] = _head_features(W_K[h], W_Q[h], E, e)
            continue
        old = tuple(range(group[0]))
        witness = _dependent_query_set(e, group, old)
        if witness is not None:
            _raise_assumption_1(witness, n)
        g = list(group)
        if h == 0:  # base of the induction: Claim 1 on the first r examples
            logits = _choose_patterns(E[g], torch.zeros(len(g), d, dtype=e.dtype, device=e.device))
            W_K[0], W_Q[0] = _factor(_targets(E[g], logits), e[g], d_h, None)
            Z[:, cols] = _head_features(W_K[0], W_Q[0], E, e)
            C = torch.zeros(len(g), 0, dtype=e.dtype, device=e.device)
            s = float(torch.linalg.svdvals(reduced.add(group, C, Z, 0))[-1])
            steps.append(InductionStep(1, group, 0, 0.0, math.inf, math.inf, 0.0, s, s))
            continue
        C = reduced.coefficients(Z[g, :h * d])
        W_K[h], W_Q[h], plan = _plan_step(E, e, C, group, d_h, gen)
        Z[:, cols] = _head_features(W_K[h], W_Q[h], E, e)
        theta = _head_attention(W_K[h], W_Q[h], E[list(old)], e[list(old)])  # (T', n)
        error = float((theta - plan.theta_plus).abs().sum(dim=-1).max())
        M = reduced.add(group, C, Z, h)  # Z''_b,delta + A_delta
        steps.append(InductionStep(h + 1, group, len(old), plan.scale, plan.delta, plan.gap, error,
                                   plan.sigma_min_limit, float(torch.linalg.svdvals(M)[-1])))
    return steps


def key_query_for_rank(contexts: torch.Tensor, queries: torch.Tensor, *, heads: int, head_dim: int,
                       generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Proposition 1: key/query weights ``(W_K, W_Q)``, each (H, d, d_h), with
    rank(Z) >= min{H(r - 1) + 1, T}, r = min(n, d_h). See :func:`key_query_construction`."""
    kq = key_query_construction(contexts, queries, heads=heads, head_dim=head_dim, generator=generator)
    return kq.W_K, kq.W_Q


# ---------------------------------------------------------------------------------------------------
# Step 2 and Theorem 1


def _labels(labels: object, T: int, device: torch.device) -> torch.Tensor:
    """Labels as (T, d_out) in the exact dtype on ``device``; a (T,) vector means d_out = 1."""
    y = _real_tensor("labels", labels, device)
    shape = tuple(y.shape)
    if y.ndim == 1:
        y = y.unsqueeze(1)
    if y.ndim != 2 or y.shape[0] != T or y.shape[1] == 0:
        raise ValueError(f"labels must have shape (T,) or (T, d_out) with T = {T}, got {shape}")
    return y


def readout_weights(features: torch.Tensor, labels: torch.Tensor, *, heads: int, value_dim: int | None = None
                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Step 2 of the proof of Theorem 1: ``(W_V (H, d, d_v), W_O (H d_v, d), W_D (d, d_out))`` with
    Z diag(W_V,1..H) W_O W_D = Y.

    Solves Z X = Y for X (H d, d_out) with minimum norm through a QR factorization of Z^T (Z: (T, H d)
    with full row rank), puts X in the first d_out columns of W_V, and takes W_O = [I_{d_v x d}; ...]
    (H copies) and W_D = I_{d x d_out}, so that y_hat = Z X. Needs d_out <= d_v and d_out <= d.
    """
    Z = _real_tensor("features", features)
    if Z.ndim != 2:
        raise ValueError(f"features must have shape (T, H*d), got {tuple(Z.shape)}")
    check_shape("features", Z, (None, None), "(T, H*d)")
    T = Z.shape[0]
    Y = _labels(labels, T, Z.device)
    H = positive_int("heads", heads)
    if Z.shape[1] % H:
        raise ValueError(f"features must have H*d columns with H = {H}, got {Z.shape[1]}")
    d, d_out = Z.shape[1] // H, Y.shape[1]
    d_v = d_out if value_dim is None else positive_int("value_dim", value_dim)
    if d_v < d_out:
        raise ValueError(f"Theorem 1 needs d_v >= d_out, got value_dim d_v = {d_v} < d_out = {d_out}")
    if d_out > d:
        raise ValueError(f"d_out = {d_out} > d = {d}: the layer output o has only d coordinates")
    if T > Z.shape[1]:
        raise ValueError(f"features Z (T, H*d) must have full row rank T = {T}, impossible with H*d = {Z.shape[1]}")
    check_allocation(f"W_V (H, d, d_v), W_O (H d_v, d) and I (d_v, d) with d = {d}", (2 * H + 1) * d * d_v, Z.device,
                     heads=H, value_dim=d_v)
    q, rr = torch.linalg.qr(Z.T)  # Z^T = q rr, q: (H d, T)
    diag = rr.diagonal().abs()
    if bool((diag <= Z.shape[1] * torch.finfo(Z.dtype).eps * diag.max()).any()):
        # sigma_min(Z) <= min |rr_ii|: a negligible pivot means Z is numerically rank deficient
        raise ValueError(f"features Z must have full row rank T = {T} to fit arbitrary labels; "
                         f"its QR factor has a negligible pivot")
    X = q @ torch.linalg.solve_triangular(rr.T, Y, upper=False)  # (H d, d_out), minimum norm
    W_V = torch.zeros(H, d, d_v, dtype=Z.dtype, device=Z.device)
    W_V[:, :, :d_out] = X.reshape(H, d, d_out)  # (H, d, d_out): block h of X acts on z_h
    eye = torch.eye(d_v, d, dtype=Z.dtype, device=Z.device)  # I_{d_v x d}
    W_O = eye.repeat(H, 1)  # (H d_v, d)
    W_D = torch.eye(d, d_out, dtype=Z.dtype, device=Z.device)  # I_{d x d_out}
    return W_V, W_O, W_D


def memorize_tolerance(dtype: torch.dtype) -> float:
    """How exactly :func:`theorem1_construction` must fit its labels, relative to max(1, max abs(y)): 1e-6 in
    float64, 1e-3 in float32 (MPS, which lacks float64); it raises beyond that."""
    if dtype not in (torch.float64, torch.float32):
        raise ValueError(f"dtype must be torch.float64 or torch.float32, got {dtype}")
    return 1e-6 if dtype == torch.float64 else 1e-3


@dataclass(frozen=True)
class Theorem1Construction:
    """Theorem 1's memorizing weights with their certificate.

    ``params``: the MHA weights; ``key_query``: Proposition 1's construction (Z, groups, steps);
    ``capacity``: H(min(n, d_h) - 1) + 1 (or Remark 1's bound); ``max_error``: the largest abs(y_hat - y) measured
    with :func:`memcap.models.mha_forward` (at most :func:`memorize_tolerance` times max(1, max abs(y))).
    """

    params: MHAParams
    key_query: KeyQueryConstruction
    capacity: int
    max_error: float


def theorem1_construction(contexts: torch.Tensor, queries: torch.Tensor, labels: torch.Tensor, *, heads: int,
                          head_dim: int, value_dim: int | None = None, skip: bool = False,
                          query_kruskal_rank: int | str | None = None,
                          generator: torch.Generator | None = None) -> Theorem1Construction:
    """Theorem 1 (Mahdavi et al.): MHA weights that memorize any T <= H(min(n, d_h) - 1) + 1 labels.

    Proposition 1 gives W_K, W_Q with rank(Z) = T; :func:`readout_weights` solves for W_V, W_O, W_D.
    With ``skip=True`` (Remark 2, Appendix C: o = W_O^T [p_1; ...; p_H] + e) the labels are first shifted
    to y - e[:d_out]. ``labels``: (T,) or (T, d_out) real; ``value_dim`` d_v defaults to d_out.
    ``query_kruskal_rank``: None (Theorem 1, queries of Kruskal rank >= n), Q < n (Remark 1), or
    ``'auto'`` (Q computed exactly; Remark 1 only when Q < n). Assumption 1 is tested by
    :func:`memcap.linalg.check_assumption_1` on the T queries: exactly when C(T, n) is at most
    ``memcap.linalg.DEFAULT_MAX_SUBSETS``, and then queries of low Kruskal rank are refused with a
    message that says how to use Remark 1. On larger sets it is the paper's randomized test
    (:func:`memcap.linalg.assumption_1_method` says which), and queries with a dependent n-subset can
    pass it (the construction still refuses a dependency among the queries one of its steps uses).
    Inputs that meet the assumptions only up to rounding can give weights that do not fit the labels in
    floating point: then a ValueError says so (the fit is measured, see :func:`memorize_tolerance`).
    """
    E, e = _data(contexts, queries)
    T, n, d = E.shape
    H = positive_int("heads", heads)
    check_bool("skip", skip)
    Y = _labels(labels, T, e.device)
    if Y.shape[1] > d:
        raise ValueError(f"d_out = {Y.shape[1]} > d = {d}: the layer output o has only d coordinates")
    with _resolve.one_cpu_thread(e.device):
        Q = _declared_kruskal_rank(e, n, query_kruskal_rank)
        kq = key_query_construction(_as_given(E), e, heads=H, head_dim=head_dim, query_kruskal_rank=Q,
                                    generator=generator)
        target = Y - e[:, :Y.shape[1]] if skip else Y  # Appendix C: fit y - I_{d_out x d} e
        W_V, W_O, W_D = readout_weights(kq.features, target, heads=H, value_dim=value_dim)
        params = MHAParams(W_K=kq.W_K, W_Q=kq.W_Q, W_V=W_V, W_O=W_O, W_D=W_D, skip=skip)
        y_hat = mha_forward(params, _as_given(E), e)
    capacity = (bounds.mha_capacity(H, n, kq.W_K.shape[2]) if Q is None
                else bounds.mha_capacity_remark1(H, Q, kq.W_K.shape[2]))
    max_error = float((y_hat - Y).abs().max())
    tolerance = memorize_tolerance(y_hat.dtype) * max(1.0, float(Y.abs().max()))
    if not max_error <= tolerance:
        # exact arithmetic memorizes; in floating point the scales c multiply rounding residues (W+ e = 0 holds
        # to about eps on a head's fresh examples), so inputs that satisfy the assumptions only to rounding
        # (nearly dependent queries, a logit gap g near eps) give weights that do not memorize
        raise ValueError(
            f"Theorem 1's construction does not memorize these labels in {y_hat.dtype}: max |y_hat - y| = "
            f"{max_error:.3g} > {tolerance:.3g}. The queries and contexts meet Assumptions 1-2 only up to "
            f"rounding (largest saturation scale c = {max(st.scale for st in kq.steps):.3g}); move them "
            "further from dependence")
    return Theorem1Construction(params=params, key_query=kq, capacity=capacity, max_error=max_error)


def memorize(contexts: torch.Tensor, queries: torch.Tensor, labels: torch.Tensor, *, heads: int, head_dim: int,
             value_dim: int | None = None, skip: bool = False, query_kruskal_rank: int | str | None = None,
             generator: torch.Generator | None = None) -> MHAParams:
    """Theorem 1: weights of an H-head attention layer with y_hat^(t) = y^(t) for all T examples.

    ``contexts``: (T, n, d) or shared (n, d); ``queries``: (T, d); ``labels``: (T,) or (T, d_out).
    ``query_kruskal_rank``: None, Q < n (Remark 1) or ``'auto'``. Queries of low Kruskal rank are refused
    for certain only when C(T, n) is at most ``memcap.linalg.DEFAULT_MAX_SUBSETS`` (the exact test of
    Assumption 1); on larger sets a dependent n-subset can pass the paper's randomized test. See
    :func:`theorem1_construction` (which also returns the certificate).
    """
    return theorem1_construction(contexts, queries, labels, heads=heads, head_dim=head_dim, value_dim=value_dim,
                                 skip=skip, query_kruskal_rank=query_kruskal_rank, generator=generator).params


def remark1_capacity(queries: torch.Tensor, *, context_size: int, heads: int, head_dim: int,
                     max_subsets: int = linalg.DEFAULT_MAX_SUBSETS) -> int:
    """Remark 1: with queries of Kruskal rank Q, the construction memorizes H(min(Q, n, d_h) - 1) + 1.

    Q is computed exactly by :func:`memcap.linalg.kruskal_rank` (small sets only). For Q >= n this is
    Theorem 1's bound H(min(n, d_h) - 1) + 1.
    """
    n = positive_int("context_size", context_size)
    e = _real_tensor("queries", queries)
    if e.ndim != 2:
        raise ValueError(f"queries must have shape (T, d), got {tuple(e.shape)}")
    check_shape("queries", e, (None, None), "(T, d)")
    _check_n_below_d(n, e.shape[1])   # the construction behind the count needs n < d too
    with _resolve.one_cpu_thread(e.device):
        Q = linalg.kruskal_rank(e, max_subsets=max_subsets)
    if Q == 0:
        raise ValueError("queries have Kruskal rank 0 (a zero query): no example can be memorized this way")
    if Q >= n:
        return bounds.mha_capacity(heads, n, head_dim)
    return bounds.mha_capacity_remark1(heads, Q, head_dim)
