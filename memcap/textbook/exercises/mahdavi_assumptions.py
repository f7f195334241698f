"""Checkers of the exercises of *The assumptions* (``book/mahdavi/assumptions.md``)."""
from __future__ import annotations

import math

import torch

from memcap import linalg
from memcap.textbook.exercises.checking import (
    call,
    case,
    checker,
    close,
    expect,
    number,
    numbers_by_key,
    tensor_answer,
    to_case_device,
)

CHAPTER = "book/mahdavi/assumptions"
SIZES = (4, 5, 6, 7, 8)


def _fraction(k: int) -> float:
    return 1 - math.comb(16, k - 4) / math.comb(20, k)


@checker("ex-mahdavi-assumptions-2", CHAPTER)
def planted_fractions(fractions, rule_99, rule_999):
    """The exact fraction of independent k-subsets for k = 4, ..., 8 (T = 20, one planted dependent
    4-subset; a dict keyed by k or a list), to five decimal places or better, and the Kruskal rank that
    the 99 % and the 99.9 % rules report from these exact fractions."""
    given = numbers_by_key(fractions, SIZES, "fractions")
    for k in SIZES:
        with case(f"k = {k}"):
            value = given[k]
            hint = ("a k-subset is dependent exactly when it contains the four planted vectors: count "
                    "the subsets that do")
            # five decimal places: the rounding the solution prints, and still 6e-5 from the likeliest
            # miscount (C(17, k - 4) subsets with the planted four at k = 5)
            close(value, _fraction(k), "the fraction of independent k-subsets", rtol=0, atol=6e-6, hint=hint)
    for threshold, value, name in ((0.99, rule_99, "rule_99"), (0.999, rule_999, "rule_999")):
        with case(f"the {threshold * 100:g} % rule"):
            expected = max(k for k in SIZES if _fraction(k) >= threshold)
            number(value, f"{name}, a Kruskal rank,")
            expect(value in SIZES, f"the rule reports one of k = {list(SIZES)}", got=value)
            expect(value == expected, "that is not the Kruskal rank the rule reports", got=value,
                   hint="the rule reports the largest k whose fraction of independent k-subsets "
                        "reaches the threshold")


def _curve(s: torch.Tensor, dim: int) -> torch.Tensor:
    return torch.stack([s ** j for j in range(dim)], dim=1)


@checker("ex-mahdavi-assumptions-3", CHAPTER)
def moment_curve_ranks(moment_curve, curve_krank, big_rank):
    """A function (s, dim) -> the points (1, s, ..., s^(dim-1)), one row per value of s, tried on values
    of its own; the Kruskal rank of the ten points in R^4, and the float64 rank of the ten points in
    R^10, as memcap.linalg computes them."""
    for s, dim in (((0.5, 2.0, 3.0), 4), ((1.0, 2.0, 3.0, 4.0, 5.0, 6.0), 5), ((-1.0, 0.0, 2.5, 4.0), 4)):
        with case(f"s = {list(s)}, dim = {dim}"):
            values = torch.tensor(s, dtype=torch.float64, device="cpu")
            points = call(moment_curve, to_case_device(values), dim)
            want = _curve(values, dim)
            points = tensor_answer(points, want.shape, "moment_curve's points, one row (1, s, ..., "
                                   "s^(dim-1)) per s,", device=want.device,
                                   hint="stack the powers s**0, ..., s**(dim-1) as columns")
            row = int(((points - want).abs() > 1e-9 * (1 + want.abs())).any(dim=1).int().argmax())
            expect(torch.allclose(points, want, rtol=1e-9, atol=1e-12),
                   f"the point for s = {s[row]} is wrong", expected=want[row], got=points[row],
                   hint="row i is (1, s_i, s_i^2, ..., s_i^(dim-1)), starting with the power 0")
    s_vals = torch.arange(1, 11, dtype=torch.float64, device="cpu")
    with case("Kruskal rank of the ten points in R^4"):
        close(curve_krank, linalg.kruskal_rank(_curve(s_vals, 4)), "the Kruskal rank",
              hint="use linalg.kruskal_rank on the 10 x 4 matrix of points")
    with case("rank of the ten points in R^10"):
        close(big_rank, linalg.rank(_curve(s_vals, 10)), "the rank",
              hint="use linalg.rank on the 10 x 10 matrix of points (float64, default tolerance)")
