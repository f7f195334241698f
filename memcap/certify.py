"""Rigorous rank certificates for the AoT's attention and feature matrices.

A rank computed in float64 is an estimate: a singular value of 1e-13 may be a rounding error or a true
value. This module turns "the matrix has full rank" into a proof, for one concrete choice of weights:

1. **Enclose.** Every entry of the matrix (the attention before output ``A`` of Dana et al.'s Lemma 2,
   or the features ``F = [x_S; W_V^1 A^1; ...; W_V^H A^H]`` of their Theorem 1) is computed in
   interval arithmetic (mpmath's ``iv`` context, outward rounding, exact float64 inputs), so the true
   value lies in ``[lo, hi] / 2^p`` for integers ``lo <= hi``.
2. **Round.** ``Z = floor((lo + hi) / 2)`` gives an exact integer matrix with ``F^ = Z / 2^p`` and
   ``|F - F^|`` at most ``r = hi - Z`` in every entry (units of 2^-p), hence
   ``||F - F^||_2 <= ||r||_F / 2^p =: delta``.
3. **Decide exactly.** For the smaller side of ``F^`` (columns if there are fewer columns than rows),
   the Gram matrix ``G = Z^T Z`` is an exact integer matrix. If ``G - (delta + s)^2 4^p I`` is positive
   definite (Sylvester's criterion, leading minors computed exactly by Bareiss' fraction-free
   elimination), then the smallest singular value of ``F^`` exceeds ``delta + s``, and by Weyl's
   inequality that of ``F`` exceeds ``s >= 0``: ``F`` has full rank, with margin ``s``.

Only step 1 relies on software beyond integer arithmetic: mpmath's directed rounding of ``exp``,
``+``, ``*`` and ``/``.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

import numpy as np
import torch
from mpmath import iv, libmp

from memcap._checks import check_shape, finite_real, id_tensor, nonnegative_int, positive_int
from memcap.models import AoTParams

__all__ = ["KINDS", "Enclosure", "RankCertificate", "enclose", "certify_full_rank", "positive_definite"]

KINDS = ("attention", "features")
"""The matrices :func:`enclose` can enclose: the attention before output A, the features F."""


@dataclass(frozen=True)
class Enclosure:
    """An exact enclosure of a real matrix M: ``|M * 2^bits - mid| <= radius`` entrywise.

    ``mid`` and ``radius``: tuples of rows of Python ints, shape (rows, columns); ``bits``: the fixed-point
    scale p. :meth:`approx` gives the midpoint as a float64 tensor.
    """

    mid: tuple[tuple[int, ...], ...]
    radius: tuple[tuple[int, ...], ...]
    bits: int

    def __post_init__(self) -> None:
        """Check a hand-made enclosure as :func:`enclose` makes them: integer rows of one shape, radii >= 0."""
        mid = _integer_rows("mid", self.mid)
        radius = _integer_rows("radius", self.radius)
        if (len(radius), len(radius[0])) != (len(mid), len(mid[0])):
            raise ValueError(f"radius must have mid's shape (rows, columns) = ({len(mid)}, {len(mid[0])}), got "
                             f"({len(radius)}, {len(radius[0])})")
        if any(r < 0 for row in radius for r in row):
            raise ValueError("radius must hold integers >= 0 (|M * 2^bits - mid| <= radius)")
        object.__setattr__(self, "mid", mid)
        object.__setattr__(self, "radius", radius)
        object.__setattr__(self, "bits", nonnegative_int("bits", self.bits))

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, columns)."""
        return len(self.mid), len(self.mid[0]) if self.mid else 0

    def approx(self) -> torch.Tensor:
        """The midpoint matrix as float64 (rows, columns) on the CPU, for plotting and comparison (an
        enclosure is exact Python integers, made on the CPU whatever the device of its weights)."""
        scale = 2.0 ** -self.bits
        return torch.tensor([[v * scale for v in row] for row in self.mid], dtype=torch.float64, device="cpu")

    def max_radius(self) -> float:
        """The largest entrywise radius, in the matrix's own units (not scaled)."""
        return max(max(row) for row in self.radius) * 2.0 ** -self.bits


@dataclass(frozen=True)
class RankCertificate:
    """The outcome of :func:`certify_full_rank`.

    ``certified``: True if the exact test proved full rank; ``rank``: min(rows, columns) when certified,
    else 0 (nothing proved); ``sigma_lower``: a proved lower bound on the smallest of the min(rows,
    columns) singular values (0.0 when not certified); ``error``: the proved bound delta on the spectral
    norm of the rounding and enclosure error; ``sigma_estimate``: the float64 estimate of that singular
    value (not proved).
    """

    certified: bool
    rank: int
    sigma_lower: float
    error: float
    sigma_estimate: float


def _to_fraction(mpf_value) -> Fraction:
    p, q = libmp.to_rational(mpf_value)
    return Fraction(p, q)


def _interval(x: float):
    return iv.mpf(float(x))


def _matvec(W: list[list[object]], x: list[object]) -> list[object]:
    return [sum((w * v for w, v in zip(row, x)), iv.mpf(0)) for row in W]


def enclose(params: AoTParams, tokens: torch.Tensor, kind: str = "features", *,
            precision: int = 100, bits: int = 64) -> Enclosure:
    """Enclose the attention matrix A (Hd, T) or the feature matrix F (d + H d_h, T) of ``tokens``.

    ``params``: AoT weights (any float dtype; their values are read exactly as float64 numbers);
    ``tokens``: (T, S) token ids (a tensor, array or nested list); ``kind``: ``"attention"`` (column t
    is [A^1(t); ...; A^H(t)], as :func:`memcap.construct.dana.head_input_matrix`) or ``"features"``
    (column t is [x_S(t); W_V^1 A^1(t); ...], as :func:`memcap.construct.dana.skip_feature_matrix`).
    ``precision``: mantissa bits of the interval arithmetic; ``bits``: the fixed-point scale p of the
    result. Returns an :class:`Enclosure` of the exact matrix at these weights (Python integers: the
    arithmetic runs on the CPU whatever the device of ``params``).
    """
    if not isinstance(params, AoTParams):
        raise TypeError(f"params must be AoTParams, got {type(params).__name__}")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    tokens = id_tensor("tokens", tokens, device=params.device)
    tokens = check_shape("tokens", tokens, (None, params.seq_len), "(T, S)")
    if int(tokens.min()) < 0 or int(tokens.max()) >= params.vocab:
        raise ValueError(f"tokens must be ids in [0, N) = [0, {params.vocab})")
    precision = positive_int("precision", precision)
    bits = positive_int("bits", bits)

    def rows(t: torch.Tensor):
        return t.detach().to("cpu", torch.float64).tolist()

    e, pos = rows(params.token_embedding), rows(params.positional_embedding)
    WQ, WK, WV = rows(params.W_Q), rows(params.W_K), rows(params.W_V)
    seqs = tokens.detach().to("cpu").tolist()
    H = params.heads
    old = iv.prec
    iv.prec = precision
    try:
        x = {}  # (token, position) -> x = e(token) + pos_position, as intervals

        def embed(q: int, s: int):
            if (q, s) not in x:
                x[q, s] = [_interval(a) + _interval(b) for a, b in zip(e[q], pos[s])]
            return x[q, s]

        WQi = [[[_interval(v) for v in row] for row in head] for head in WQ]
        WKi = [[[_interval(v) for v in row] for row in head] for head in WK]
        WVi = [[[_interval(v) for v in row] for row in head] for head in WV]
        keys = {}
        columns = []
        for seq in seqs:
            xs = [embed(q, s) for s, q in enumerate(seq)]
            column = list(xs[-1]) if kind == "features" else []
            for h in range(H):
                query = _matvec(WQi[h], xs[-1])
                weights = []
                for s, q in enumerate(seq):
                    if (h, q, s) not in keys:
                        keys[h, q, s] = _matvec(WKi[h], embed(q, s))
                    score = sum((a * b for a, b in zip(query, keys[h, q, s])), iv.mpf(0))
                    weights.append(iv.exp(score))
                total = sum(weights, iv.mpf(0))
                A = [sum((w * xs[s][i] for s, w in enumerate(weights)), iv.mpf(0)) / total
                     for i in range(params.dim)]
                column += _matvec(WVi[h], A) if kind == "features" else A
            columns.append(column)
    finally:
        iv.prec = old
    scale = 2 ** bits
    mid, radius = [], []
    for i in range(len(columns[0]) if columns else 0):
        mid_row, rad_row = [], []
        for column in columns:
            lo_mpf, hi_mpf = column[i]._mpi_
            lo = math.floor(_to_fraction(lo_mpf) * scale)
            hi = math.ceil(_to_fraction(hi_mpf) * scale)
            centre = (lo + hi) // 2
            mid_row.append(centre)
            rad_row.append(hi - centre)
        mid.append(tuple(mid_row))
        radius.append(tuple(rad_row))
    return Enclosure(tuple(mid), tuple(radius), bits)


def _integer_rows(name: str, value: object) -> tuple[tuple[int, ...], ...]:
    """A non-empty rectangular matrix of exact integers (nested sequences, Python ints of any size) as a
    tuple of rows; floats and bools are refused."""
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)) or not value:
        raise TypeError(f"{name} must be a non-empty sequence of rows of integers, got {value!r:.60}")
    rows = []
    for i, row in enumerate(value):
        if not isinstance(row, Sequence) or isinstance(row, (str, bytes)) or not row:
            raise TypeError(f"{name}[{i}] must be a non-empty row of integers, got {row!r:.60}")
        for v in row:
            if isinstance(v, bool) or not isinstance(v, (numbers.Integral, np.integer)):
                raise TypeError(f"{name} must hold integers (an enclosure is exact), got {v!r} of type "
                                f"{type(v).__name__} in row {i}")
        rows.append(tuple(int(v) for v in row))
    if len({len(row) for row in rows}) != 1:
        raise ValueError(f"{name} must be rectangular, got rows of lengths {sorted({len(r) for r in rows})}")
    return tuple(rows)


def _integer_matrix(name: str, value: object) -> list[list[int]]:
    """A non-empty square matrix of exact integers, as lists of Python ints.

    Integer tensors and arrays are read with ``tolist``; nested sequences may hold Python ints of any
    size (Gram matrices of :func:`certify_full_rank` exceed int64). Floats, bools and complex numbers
    are refused: the test is exact only on integers.
    """
    if isinstance(value, (torch.Tensor, np.ndarray)):
        value = id_tensor(name, value).tolist()
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be a square matrix of integers (nested sequences, an integer tensor or "
                        f"array), got {type(value).__name__}")
    rows = []
    for i, row in enumerate(value):
        if not isinstance(row, Sequence) or isinstance(row, (str, bytes)):
            raise TypeError(f"{name}[{i}] must be a row of integers, got {type(row).__name__}")
        for v in row:
            if isinstance(v, bool) or not isinstance(v, (numbers.Integral, np.integer)):
                raise TypeError(f"{name} must hold integers (the test is exact), got {v!r} of type "
                                f"{type(v).__name__} in row {i}")
        rows.append([int(v) for v in row])
    n = len(rows)
    if n == 0:
        raise ValueError(f"{name} must not be empty")
    if any(len(row) != n for row in rows):
        raise ValueError(f"{name} must be square, got {n} rows of lengths {sorted({len(r) for r in rows})}")
    if any(rows[i][j] != rows[j][i] for i in range(n) for j in range(i)):
        raise ValueError(f"{name} must be symmetric (Sylvester's criterion holds for symmetric matrices only)")
    return rows


def positive_definite(matrix: Sequence[Sequence[int]]) -> bool:
    """Exactly decide whether a symmetric integer matrix ``(n, n)`` is positive definite.

    Sylvester's criterion: all leading principal minors are positive. Bareiss' fraction-free
    elimination produces them as its successive pivots, in integer arithmetic (every division is exact).
    ``matrix``: nested sequences of Python ints (of any size), or an integer tensor or array.
    """
    a = _integer_matrix("matrix", matrix)
    n = len(a)
    previous = 1
    for k in range(n):
        if a[k][k] <= 0:
            return False
        pivot = a[k][k]
        for i in range(k + 1, n):
            aik = a[i][k]
            row_i, row_k = a[i], a[k]
            for j in range(k + 1, n):
                row_i[j] = (row_i[j] * pivot - aik * row_k[j]) // previous
        previous = pivot
    return True


def certify_full_rank(enclosure: Enclosure, columns: Sequence[int] | None = None, *,
                      margin: float = 0.5) -> RankCertificate:
    """Try to prove that the enclosed matrix (restricted to ``columns``, (k,) distinct column indices as a
    tensor, array or list; all columns when None) has full rank min(rows, cols).

    ``margin`` in [0, 1): the certificate first asks for a proved lower bound ``s`` on the smallest
    singular value equal to ``margin`` times the float64 estimate's distance to the error bound, and if
    that fails, for ``s = 0`` (full rank only). Returns a :class:`RankCertificate`; ``certified``
    False means the test could not decide (the matrix may still have full rank at a larger precision).
    """
    if not isinstance(enclosure, Enclosure):
        raise TypeError(f"enclosure must be an Enclosure, got {type(enclosure).__name__}")
    margin = finite_real("margin", margin)
    if not 0 <= margin < 1:
        raise ValueError(f"margin must lie in [0, 1), got {margin}")
    rows, cols = enclosure.shape
    if columns is None:
        picked = list(range(cols))
    else:
        picked = check_shape("columns", id_tensor("columns", columns), (None,), "(k,)").tolist()
    if any(not 0 <= c < cols for c in picked) or len(set(picked)) != len(picked):
        raise ValueError(f"columns must be distinct indices in [0, {cols}), got {picked}")
    Z = [[row[c] for c in picked] for row in enclosure.mid]
    R = [[row[c] for c in picked] for row in enclosure.radius]
    m, n = rows, len(picked)
    # ||F - F^||_2 <= ||R||_F / 2^p <= delta_int / 2^p
    delta_int = math.isqrt(sum(r * r for row in R for r in row)) + 1
    if n <= m:   # Gram of the columns
        gram = [[sum(Z[k][i] * Z[k][j] for k in range(m)) for j in range(n)] for i in range(n)]
    else:        # Gram of the rows
        gram = [[sum(Z[i][k] * Z[j][k] for k in range(n)) for j in range(m)] for i in range(m)]
    size = len(gram)
    scale = 2.0 ** -enclosure.bits
    approx = torch.tensor([[v * scale for v in row] for row in Z], dtype=torch.float64, device="cpu")
    sigma_estimate = float(torch.linalg.svdvals(approx)[-1])          # float64: a guide, not a proof
    error = delta_int * scale
    s_int = max(0, math.floor(margin * (sigma_estimate - error) / scale)) if sigma_estimate > error else 0
    for s in sorted({s_int, 0}, reverse=True):   # first with the margin, then without
        threshold = (delta_int + s) ** 2
        shifted = [[g - (threshold if i == j else 0) for j, g in enumerate(row)]
                   for i, row in enumerate(gram)]
        if positive_definite(shifted):
            return RankCertificate(True, size, s * scale, error, sigma_estimate)
    return RankCertificate(False, 0, 0.0, error, sigma_estimate)
