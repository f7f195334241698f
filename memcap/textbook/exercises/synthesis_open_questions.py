"""Checkers of the exercises of *Open questions* (``book/synthesis/open_questions.md``)."""
from __future__ import annotations

import math

from memcap import bounds
from memcap.textbook.exercises.checking import case, checker, close, expect, number, numbers_by_key

CHAPTER = "book/synthesis/open_questions"


@checker("ex-syn-open-2", CHAPTER)
def heads_for_all_sequences(heads_dim3, heads_dim1):
    """The smallest number of heads for which the count H d_h + d reaches all 4^3 = 64 sequences with
    d = 3, for heads of dimension d_h = 3 and d_h = 1."""
    T, d = 4 ** 3, 3
    for given, dh, name in ((heads_dim3, 3, "heads_dim3"), (heads_dim1, 1, "heads_dim1")):
        with case(f"d_h = {dh}"):
            expected = -(-(T - d) // dh)
            value = number(given, name)
            hint = "the rank asked for is min(T, H d_h + d): solve H d_h + d >= T"
            if value == -(-T // dh):
                hint = "the skip connection contributes d = 3 to the count: H d_h + d >= T"
            elif value == expected - 1:
                hint = "round up: with one head fewer, H d_h + d is still below T"
            close(value, expected, "the number of heads", hint=hint)


@checker("ex-syn-open-3", CHAPTER)
def saturation_shares(shares):
    """The share of saturated head-example pairs of Mahdavi et al.'s construction with d = d_h = 16,
    n = 8, T = H(n-1)+1, for H = 1, ..., 6 (a dict keyed by H, or a list in that order): each a count
    of pairs over H T, none at H = 1, and from 12 pairs below (H-1)(T-n+1)/(HT) to 3 above. A later
    head's scale is chosen for the rank, not for the 0.99 threshold, so it can stay below 0.99 on a few
    examples outside its group; the first head rarely saturates by chance.

    Why the band (measured once, when it was set; not shown to students): over 30 data seeds and
    H = 1, ..., 6 the counts ranged from 8 pairs below the formula to 1 above, and computing the
    attention without the keys' 1/sqrt(d) put them 8 or more above."""
    given = numbers_by_key(shares, range(1, 7), "shares")
    n = 8
    for H in range(1, 7):
        with case(f"H = {H}"):
            T = bounds.mha_capacity(H, n, 16)
            value = number(given[H], f"shares[{H}]")
            expect(math.isfinite(value) and 0 <= value <= 1, "a share of pairs lies between 0 and 1",
                   got=given[H], hint="divide the number of saturated pairs by the H T pairs")
            pairs = value * H * T
            expect(abs(pairs - round(pairs)) <= 1e-6, f"the share should be a count of pairs over the "
                   f"H T = {H * T} head-example pairs", got=given[H],
                   hint="count the (head, example) pairs whose attention is saturated")
            formula = (H - 1) * (T - n + 1) / (H * T)
            low, high = formula - 12 / (H * T), formula + 3 / (H * T)
            expect(low <= value + 1e-12 and value <= high + 1e-12,
                   "the share is far from what the construction gives",
                   expected=f"close to (H-1)(T-n+1)/(HT) = {formula:.3f}", got=value,
                   hint="measure the attention of the model the classifier builds: keys scaled by "
                        "1/sqrt(d), positions added, and count the saturated (not unsaturated) pairs")
