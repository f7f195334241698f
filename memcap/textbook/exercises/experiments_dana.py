"""Checkers of the exercises of *The experiments of Dana et al.* (``book/experiments/dana.md``)."""
from __future__ import annotations

import math

import numpy as np

from memcap import bounds
from memcap.experiments import dana_fig4
from memcap.fits import linear_fit
from memcap.textbook.exercises.checking import call, case, checker, close, expect, whole_number

CHAPTER = "book/experiments/dana"


@checker("ex-dana-exp-2", CHAPTER)
def heads_for_full_accuracy(H_cor2, H_paper):
    """The smallest H for which Corollary 2 guarantees accuracy 1 with N = 10, T_0 = 100, d = 2,
    d_h = 5, and the smallest H at which 1.7 H d_h + d associations cover the T_0 sequences (whole
    numbers, compared exactly)."""
    N, T0, d, dh = 10, 100, 2, 5
    with case("Corollary 2"):
        expected = next(H for H in range(1, 1000) if bounds.cor2_accuracy(H, dh, d, N, T0) >= 1)
        hint = "Corollary 2 reaches accuracy 1 once H d_h + d >= T_0"
        value = whole_number(H_cor2, "H_cor2", hint=hint)
        if value == expected - 1:
            hint = "round up: with one head fewer, H d_h + d is still below T_0"
        close(value, expected, "the number of heads", rtol=0.0, hint=hint)
    with case("the paper's 1.7 d_h per head"):
        expected = next(H for H in range(1, 1000) if dana_fig4.PAPER_PER_HEAD * H * dh + d >= T0)
        hint = "solve 1.7 H d_h + d >= T_0 for the smallest whole H"
        value = whole_number(H_paper, "H_paper", hint=hint)
        if value == expected - 1:
            hint = "round up: with one head fewer, 1.7 H d_h + d is still below T_0"
        close(value, expected, "the number of heads", rtol=0.0, hint=hint)


_CASES = (  # (description, heads, accuracies, N, T0, d_h)
    ("two models, N = 10, T_0 = 100, d_h = 2", (5, 13), (0.42, 0.71), 10, 100, 2),
    ("four models on a noisy line, N = 16, T_0 = 256, d_h = 4", (2, 4, 6, 8), (0.21, 0.33, 0.52, 0.6),
     16, 256, 4),
    ("three models, N = 4, T_0 = 16, d_h = 1", (1, 2, 3), (0.5, 0.6, 0.75), 4, 16, 1),
)


@checker("ex-dana-exp-3", CHAPTER)
def per_head_count(count_per_head):
    """A function (heads, accuracies, vocab, examples, head_dim) -> associations stored per extra head in
    units of d_h: the least-squares slope in H of X = T_0 (N acc - 1)/(N - 1), divided by d_h, as
    dana_common.summarize_heads computes it (three sets of accuracies, not saturated)."""
    for description, heads, acc, N, T0, dh in _CASES:
        with case(description):
            value = call(count_per_head, list(heads), list(acc), N, T0, dh)
            memorized = [bounds.cor2_capacity_from_accuracy(a, N, T0) for a in acc]
            expected = linear_fit(heads, memorized).slope / dh
            raw = linear_fit(heads, [a * T0 for a in acc]).slope / dh
            hint = ("convert each accuracy to a count X with Corollary 2's formula, fit a line in H "
                    "(least squares), and divide its slope by d_h")
            number = float(value) if isinstance(value, (int, float, np.floating)) else math.nan
            if math.isclose(number, raw, rel_tol=1e-6):
                hint = ("accuracy times T_0 also counts the sequences guessed right by chance (1/N): "
                        "use X = T_0 (N acc - 1)/(N - 1)")
            elif math.isclose(number, expected * dh, rel_tol=1e-6) and dh != 1:
                hint = "give the count in units of d_h: divide the slope by d_h"
            expect(not isinstance(value, (list, tuple, np.ndarray)),
                   "your function should return one number, the count per head", got=value)
            close(value, expected, "the count per head", rtol=1e-6, reveal=True, hint=hint)
