"""Checkers of the exercises of *Related work and parameter counts* (``book/dana/related_work.md``)."""
from __future__ import annotations

import math
import numbers

from memcap import bounds
from memcap.textbook.exercises.checking import case, checker, close, expect, fail, numbers_by_key, whole_number

CHAPTER = "book/dana/related_work"
N, S, T0 = 1000, 16, 10 ** 5
HEADS = [1, 11, 21, 31]


@checker("ex-dana-rw-2", CHAPTER)
def cheapest_width(width):
    """The width d (2 <= d < T0) minimising Dana et al.'s count d(S + 2N + 4(T0 - d)) for N = 1000, S = 16,
    T0 = 10^5: a whole number, whose count is the smallest over the whole range."""
    with case("the width that minimises the count"):
        width = whole_number(width, "the width")
        expect(2 <= width < T0, "the width ranges over 2 <= d < T0", got=width)
        count = bounds.dana_assoc_param_count(S, N, T0, int(width))
        smallest = min(bounds.dana_assoc_param_count(S, N, T0, d) for d in (2, T0 - 1))
        hint = ("the count is a quadratic in d with leading term -4 d^2: where does a concave function reach "
                "its minimum over an interval?")
        expect(count <= smallest, "a different width has a smaller count", got=width, hint=hint)


@checker("ex-dana-rw-3", CHAPTER)
def dana_closed_forms(names, accuracies):
    """The names of the closed forms of bounds.BOUNDS whose citation is Dana et al. (2024) itself (every one,
    no other; not those cited "via" or "as compared in" Dana et al.), and Corollary 2's accuracy as the
    paper states it (K = H d_h + d) for N = 50, T0 = 2500, d = d_h = 10 at H = 1, 11, 21, 31 (a dict
    keyed by H or a list in that order), to three significant digits."""
    expected = {name for name, entry in bounds.BOUNDS.items() if entry.citation.startswith(bounds.DANA)}
    with case("the closed forms from Dana et al."):
        if isinstance(names, (str, dict)) or not hasattr(names, "__iter__"):
            fail("names should be a list of the functions' names (strings)", got=type(names).__name__)
        listed = [str(n).strip("`") for n in names]
        given = set(listed)
        twice = sorted({n for n in listed if listed.count(n) > 1})
        expect(not twice, "names should list each closed form once",
               got=f"{len(listed)} entries, {len(given)} different ({', '.join(twice)[:40]} more than once)")
        unknown = sorted(given - set(bounds.BOUNDS))
        expect(not unknown, "these are not names of closed forms in bounds.BOUNDS", got=", ".join(unknown)[:60])
        others = sorted(given - expected)
        expect(not others, "these closed forms do not come from Dana et al.", got=", ".join(others)[:60],
               hint="each entry of bounds.BOUNDS has a citation; keep those from bounds.DANA")
        missing = len(expected - given)
        expect(not missing, f"{missing} closed form{'s' * (missing != 1)} from Dana et al. "
               f"{'are' if missing != 1 else 'is'} missing", got=f"{len(given)} entries",
               hint="go through every entry of bounds.BOUNDS and keep those whose citation is bounds.DANA")
    given = numbers_by_key(accuracies, HEADS, "accuracies")
    for heads in HEADS:
        with case(f"Corollary 2's accuracy at H = {heads}"):
            value = given[heads]
            right = bounds.cor2_accuracy(heads, 10, 10, 50, 2500)
            hint = "Corollary 2: accuracy min(1, 1/N + (1 - 1/N)(H d_h + d)/T0)"
            if isinstance(value, numbers.Real) and math.isclose(value, right - 1 / 50, rel_tol=1e-3):
                hint = "the chance term 1/N is missing"
            elif isinstance(value, numbers.Real) and math.isclose(
                    value, 1 / 50 + (1 - 1 / 50) * heads * 10 / 2500, rel_tol=1e-3):
                hint = "the skip connection's d = 10 associations are missing"
            elif isinstance(value, numbers.Real) and math.isclose(
                    value, 1 / 50 + (1 - 1 / 50) * (heads + 10) / 2500, rel_tol=1e-3):
                hint = ("that uses the proved count K = H + d; the exercise asks for Corollary 2 as Dana et al. "
                        "state it, with K = H d_h + d")
            close(value, right, "the accuracy", rtol=1e-4, digits=3, hint=hint)
