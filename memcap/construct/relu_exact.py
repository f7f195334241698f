"""Proposition 3's lower bound for one dataset, in exact rational arithmetic.

Mahdavi et al.'s Proposition 3 says that on T > (n+1)m/d_out + m + 1 suitable examples, for almost
every label vector, no two-layer ReLU network with m hidden units fits the labels. For one given dataset
the chapter decides the question by a lower bound on the residual of *every* network: for fixed
activation patterns D_1, ..., D_m of the hidden units (D_j = {t : w_j.x_t + b_j > 0}), the outputs on
the training set lie, column by column, in the subspace::

    W(D_1, ..., D_m) = span{1}
                       + sum_j {((u.x_t + v) 1[t in D_j])_t : u in R^k, v in R},

so min over weights of ‖f(X) − Y‖² >= min over pattern tuples of dist(Y, W)^2. The patterns an
affine function can cut out of points in affine general position are enumerated exactly (each is fixed
by k of the points, see the chapter), and the distances are computed by Gram-Schmidt over the rationals.
Nothing is rounded: for integer or rational data the bound is an exact rational number, a certificate
in the strict sense. :func:`memcap.construct.mahdavi_limits.relu_residual_lower_bound` computes the
same quantity in floating point, for larger or real-valued data.

Inputs are exact numbers: nested sequences of ints and ``fractions.Fraction`` values, or integer tensors
and NumPy arrays (read exactly with ``tolist``). Floats are refused, NaN and inf with them: a float is
not an exact number, and rounding it would void the certificate.
"""
from __future__ import annotations

import itertools
import math
import numbers
import random
from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

import numpy as np
import torch

from memcap._checks import holds_values, positive_int

__all__ = ["DEFAULT_MAX_TUPLES", "ExactReLUBound", "exact_activation_patterns", "exact_relu_residual_bound",
           "integer_points_in_general_position"]

DEFAULT_MAX_TUPLES = 200_000
"""How many m-tuples of activation patterns :func:`exact_relu_residual_bound` may examine."""


def _rational(name: str, value: object) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, Fraction)):
        raise TypeError(f"{name} must hold integers or fractions.Fraction values (exact numbers), "
                        f"got {type(value).__name__} {value!r}")
    return Fraction(value)


def _exact_input(name: str, value: object, shape: str, ndims: tuple[int, ...]) -> object:
    """An integer tensor or array as nested lists of Python ints (exact); other values unchanged.

    ``shape`` names the accepted shapes with the paper's symbols, ``ndims`` their numbers of axes.
    """
    if isinstance(value, torch.Tensor):
        holds_values(name, value)   # read exactly on the CPU (Python numbers): any device will do
        exact = not (value.is_floating_point() or value.is_complex() or value.dtype == torch.bool)
    elif isinstance(value, np.ndarray):
        exact = value.dtype.kind in "iu"
    else:
        return value
    if not exact:
        raise TypeError(f"{name} must hold integers or fractions.Fraction values (exact numbers), got an array "
                        f"of dtype {value.dtype}; a float is not exact")
    if value.ndim not in ndims:
        raise ValueError(f"{name} must have shape {shape}, got {tuple(value.shape)}")
    return value.tolist()


def _points(points: object) -> list[tuple[Fraction, ...]]:
    """Validate ``points`` (T rows of k exact numbers) with T > k + 1."""
    points = _exact_input("points", points, "(T, k)", (2,))
    if not isinstance(points, Sequence) or isinstance(points, (str, bytes)) or not points:
        raise TypeError("points must be a non-empty sequence of rows of integers or Fractions")
    rows = []
    for t, row in enumerate(points):
        if not isinstance(row, Sequence) or isinstance(row, str) or not row:
            raise TypeError(f"points[{t}] must be a non-empty sequence of integers or Fractions")
        rows.append(tuple(_rational(f"points[{t}]", v) for v in row))
    k = len(rows[0])
    if any(len(r) != k for r in rows):
        raise ValueError("all points must have the same number k of coordinates")
    if len(rows) <= k + 1:
        raise ValueError(f"need more than k + 1 = {k + 1} points, got T = {len(rows)}")
    return rows


def _kernel_vector(rows: list[list[Fraction]]) -> list[Fraction] | None:
    """A nonzero vector orthogonal to the k given rows of length k + 1, or None if their rank is < k."""
    k = len(rows)
    a = [list(r) for r in rows]
    pivots = []
    r = 0
    for c in range(k + 1):
        p = next((i for i in range(r, k) if a[i][c] != 0), None)
        if p is None:
            continue
        a[r], a[p] = a[p], a[r]
        inv = 1 / a[r][c]
        a[r] = [v * inv for v in a[r]]
        for i in range(k):
            if i != r and a[i][c] != 0:
                f = a[i][c]
                a[i] = [vi - f * vr for vi, vr in zip(a[i], a[r])]
        pivots.append(c)
        r += 1
        if r == k:
            break
    if r < k:
        return None
    free = next(c for c in range(k + 1) if c not in pivots)
    x = [Fraction(0)] * (k + 1)
    x[free] = Fraction(1)
    for i, c in enumerate(pivots):
        x[c] = -a[i][free]
    return x


def exact_activation_patterns(points: Sequence[Sequence[int | Fraction]]) -> list[frozenset[int]]:
    """Every set {t : w.x_t + b > 0} that one ReLU unit cuts out of ``points``, computed exactly.

    ``points``: T rows of k integers or Fractions (or a (T, k) integer tensor or array), T > k + 1, in
    affine general position (no k + 1 of
    them on one affine hyperplane; checked exactly, a ``ValueError`` otherwise). Each pattern other than
    the empty and the full set equals {t not in P : s h(x_t) > 0} union S for some k points P, the
    hyperplane h through them, a sign s and a subset S of P. Their number is Cover's
    2 sum_{i <= k} C(T-1, i). Returns the distinct patterns, sorted by size then content.
    """
    x = _points(points)
    T, k = len(x), len(x[0])
    lifted = [list(p) + [Fraction(1)] for p in x]
    found = {frozenset(), frozenset(range(T))}
    for P in itertools.combinations(range(T), k):
        normal = _kernel_vector([lifted[t] for t in P])
        if normal is None:
            raise ValueError(f"the points are not in affine general position: points {list(P)} are "
                             "affinely dependent")
        values = [sum(a * b for a, b in zip(lifted[t], normal)) for t in range(T)]
        off = [t for t in range(T) if t not in P]
        on_plane = [t for t in off if values[t] == 0]
        if on_plane:
            raise ValueError(f"the points are not in affine general position: points "
                             f"{sorted(list(P) + on_plane[:1])} lie on one affine hyperplane")
        for sign in (1, -1):
            base = {t for t in off if sign * values[t] > 0}
            for r in range(k + 1):
                for S in itertools.combinations(P, r):
                    found.add(frozenset(base | set(S)))
    return sorted(found, key=lambda D: (len(D), sorted(D)))


@dataclass(frozen=True)
class ExactReLUBound:
    """Result of :func:`exact_relu_residual_bound`.

    ``squared``: the exact minimum over pattern tuples of dist(Y, W(D_1, ..., D_m))^2, a lower bound on
    ‖f(X) − Y‖² for every two-layer ReLU network with m units; ``patterns``: how many activation
    patterns one unit has on the points; ``tuples``: how many m-tuples of them were examined.
    """

    squared: Fraction
    patterns: int
    tuples: int

    @property
    def bound(self) -> float:
        """sqrt(``squared``) as a float (the only rounding: one square root)."""
        return math.sqrt(self.squared)


def _dot(u: list[Fraction], v: list[Fraction]) -> Fraction:
    return sum((a * b for a, b in zip(u, v)), Fraction(0))


def _extend(basis: list[tuple[list[Fraction], Fraction]],
            vectors: list[list[Fraction]]) -> list[tuple[list[Fraction], Fraction]]:
    """Gram-Schmidt (exact): the orthogonal basis ``basis`` extended by ``vectors``; zero ones dropped."""
    out = list(basis)
    for c in vectors:
        v = c
        for b, bb in out:
            coef = _dot(c, b) / bb
            if coef:
                v = [vi - coef * bi for vi, bi in zip(v, b)]
        vv = _dot(v, v)
        if vv:
            out.append((v, vv))
    return out


def exact_relu_residual_bound(points: Sequence[Sequence[int | Fraction]],
                              labels: Sequence[int | Fraction] | Sequence[Sequence[int | Fraction]],
                              hidden: int, *, max_tuples: int = DEFAULT_MAX_TUPLES) -> ExactReLUBound:
    """A lower bound on min over weights of ‖f(X) − Y‖² for two-layer ReLU nets, exactly.

    ``points`` X: T rows of k exact numbers in affine general position (the reduced inputs x^(t) of
    Proposition 3), ``labels`` Y: T exact numbers (d_out = 1) or T rows of d_out of them, ``hidden`` m;
    integer tensors and arrays of shapes (T, k) and (T,) or (T, d_out) are accepted.
    All m-multisets of activation patterns (:func:`exact_activation_patterns`) are examined, a
    ``ValueError`` naming ``max_tuples`` if there are more. Returns an :class:`ExactReLUBound`.
    """
    x = _points(points)
    T, k = len(x), len(x[0])
    m = positive_int("hidden", hidden)
    max_tuples = positive_int("max_tuples", max_tuples)
    labels = _exact_input("labels", labels, "(T,) or (T, d_out)", (1, 2))
    if not isinstance(labels, Sequence) or isinstance(labels, (str, bytes)):
        raise TypeError(f"labels must be a sequence of T = {T} exact numbers or rows, got {type(labels).__name__}")
    if len(labels) != T:
        raise ValueError(f"labels must be a sequence of T = {T} numbers or rows, got {len(labels)}")
    is_row = [isinstance(lab, Sequence) and not isinstance(lab, (str, bytes)) for lab in labels]
    if any(is_row) and not all(is_row):
        raise ValueError(f"labels must be T numbers (d_out = 1) or T rows, not both: labels[{is_row.index(True)}] "
                         f"is a row and labels[{is_row.index(False)}] a number")
    rows = [list(lab) if row else [lab] for lab, row in zip(labels, is_row)]
    if len({len(r) for r in rows}) != 1 or not rows[0]:
        raise ValueError("all label rows must have the same length d_out >= 1")
    y = [[_rational(f"labels[{t}]", r[j]) for t, r in enumerate(rows)]
         for j in range(len(rows[0]))]                                  # d_out columns of length T
    patterns = exact_activation_patterns(x)
    K = len(patterns)
    count = math.comb(K + m - 1, m)
    if count > max_tuples:
        raise ValueError(f"exact_relu_residual_bound must examine C({K} + {m} - 1, {m}) = {count} "
                         f"tuples of activation patterns, more than max_tuples = {max_tuples}")
    lifted = [list(p) + [Fraction(1)] for p in x]
    zero = Fraction(0)
    blocks = [[[lifted[t][j] if t in D else zero for t in range(T)] for j in range(k + 1)]
              for D in patterns]                                       # columns (x_t, 1) 1[t in D]
    y_norm2 = sum((_dot(col, col) for col in y), Fraction(0))
    best = [y_norm2]

    def walk(start: int, depth: int, basis: list[tuple[list[Fraction], Fraction]]) -> None:
        if depth == m:
            captured = sum((_dot(col, b) ** 2 / bb for col in y for b, bb in basis), Fraction(0))
            best[0] = min(best[0], y_norm2 - captured)
            return
        for i in range(start, K):
            walk(i, depth + 1, _extend(basis, blocks[i]))

    walk(0, 0, _extend([], [[Fraction(1)] * T]))
    return ExactReLUBound(squared=best[0], patterns=K, tuples=count)


def _det(rows: list[list[Fraction]]) -> Fraction:
    """Exact determinant by Gaussian elimination."""
    a = [list(r) for r in rows]
    size, det = len(a), Fraction(1)
    for c in range(size):
        p = next((i for i in range(c, size) if a[i][c] != 0), None)
        if p is None:
            return Fraction(0)
        if p != c:
            a[c], a[p] = a[p], a[c]
            det = -det
        det *= a[c][c]
        for i in range(c + 1, size):
            f = a[i][c] / a[c][c]
            a[i] = [vi - f * vc for vi, vc in zip(a[i], a[c])]
    return det


def integer_points_in_general_position(count: int, dim: int, *, seed: int,
                                       magnitude: int = 20) -> list[tuple[int, ...]]:
    """``count`` random integer points of [-magnitude, magnitude]^dim, redrawn until they are in
    affine general position (no dim + 1 on one affine hyperplane) and every ``dim`` of them are
    linearly independent (Kruskal rank ``dim``), both checked exactly.

    These are the reduced inputs x^(t) of Proposition 3's dataset: queries [0; x^(t)] then satisfy
    Mahdavi et al.'s Assumption 1 with n = ``dim``, and :func:`exact_relu_residual_bound` applies.
    ``seed`` seeds a private :class:`random.Random`; ``count`` must exceed ``dim + 1``.
    """
    T = positive_int("count", count)
    k = positive_int("dim", dim)
    M = positive_int("magnitude", magnitude)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an integer, got {seed!r}")
    if T <= k + 1:
        raise ValueError(f"count must exceed dim + 1 = {k + 1}, got {T}")
    rng = random.Random(int(seed))
    for _ in range(10_000):
        points = [tuple(rng.randint(-M, M) for _ in range(k)) for _ in range(T)]
        independent = all(_det([[Fraction(v) for v in points[t]] for t in S]) != 0
                          for S in itertools.combinations(range(T), k))
        if not independent:
            continue
        try:
            exact_activation_patterns(points)
        except ValueError:
            continue
        return points
    raise ValueError(f"found no {T} points in general position in [-{M}, {M}]^{k}: raise magnitude")
