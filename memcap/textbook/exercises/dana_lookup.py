"""Checkers of the exercises of *Look-up tables* (``book/dana/lookup.md``)."""
from __future__ import annotations

import math
import numbers

from memcap import bounds, lookup
from memcap.textbook.exercises.checking import call, case, checker, close, expect, fail, numbers_by_key, whole_number

CHAPTER = "book/dana/lookup"
N_GPT2, D_GPT2 = 50257, 768


@checker("ex-dana-lk-3", CHAPTER)
def gpt2_widths(need, constants):
    """For GPT-2's N = 50257: the smallest widths d with the paper's constant C < 1/2 and C < 0.1 (a dict
    keyed by 0.5 and 0.1, or a list in that order; each is tested for minimality with bounds.jl_constant),
    and at d = 768 the paper's C and the lemma's sqrt(8 log(2 N^2)/d) (a list of two numbers)."""
    given = numbers_by_key(need, [0.5, 0.1], "need")
    for c0 in (0.5, 0.1):
        with case(f"the smallest d with C < {c0:g}"):
            value = whole_number(given[c0], "the width")
            expect(value >= 2, "a width is at least 2", got=value)
            hint = "C = sqrt(32 log(N + 1)/d): solve C < c0 for d"
            expect(bounds.jl_constant(N_GPT2, value) < c0, f"at that width C is not below {c0:g}",
                   got=value, hint=hint + "; the inequality is strict, so round up past the boundary")
            expect(bounds.jl_constant(N_GPT2, value - 1) >= c0, f"a smaller width already has C < {c0:g}",
                   got=value, hint=hint)
    values = numbers_by_key(constants, ["C", "gram"], "constants")
    with case("the paper's C at d = 768"):
        close(values["C"], bounds.jl_constant(N_GPT2, D_GPT2), "C", rtol=1e-3,
              hint="C = sqrt(32 log(N + 1)/d), with the natural logarithm")
    with case("the lemma's sqrt(8 log(2 N^2)/d) at d = 768"):
        close(values["gram"], lookup.gaussian_gram_constant(N_GPT2, D_GPT2), "sqrt(8 log(2 N^2)/d)", rtol=1e-3,
              hint="the natural logarithm of 2 N^2, times 8, over d, all under the square root")


def _bound(scale: float, vocab: int, jl: float, miss: float) -> float:
    """B(Lambda) + h_bar = psi(Lambda) + Lambda (1 + 2C) r_bar."""
    return math.log1p((vocab - 1) * math.exp(-scale * (1 - 2 * jl))) + scale * (1 + 2 * jl) * miss


def _best(vocab: int, jl: float, miss: float) -> float:
    """The minimiser of B, by ternary search on [0, 200] (B is convex)."""
    lo, hi = 0.0, 200.0
    for _ in range(300):
        a, b = lo + (hi - lo) / 3, hi - (hi - lo) / 3
        lo, hi = (lo, b) if _bound(a, vocab, jl, miss) <= _bound(b, vocab, jl, miss) else (a, hi)
    return (lo + hi) / 2


@checker("ex-dana-lk-4", CHAPTER)
def best_scale(minimiser):
    """A function (N, C, r_bar) -> the Lambda >= 0 minimising B(Lambda) = -h_bar + log(1 + (N - 1)
    exp(-Lambda (1 - 2C))) + Lambda (1 + 2C) r_bar: B at the returned Lambda within 1e-9 of its minimum
    over Lambda >= 0, on six (N, C, r_bar) of the checker's own, two of them with the minimum at 0."""
    for vocab, jl, miss in ((50, 0.1, 0.01), (1000, 0.2, 0.05), (20, 0.3, 0.001), (10, 0.05, 0.6),
                            (100, 0.25, 0.4), (2, 0.05, 0.5)):
        with case(f"N = {vocab}, C = {jl:g}, r_bar = {miss:g}"):
            value = call(minimiser, vocab, jl, miss,
                         hint="B is convex; where B' >= 0 on all of [0, inf), its minimum is at 0")
            if not isinstance(value, numbers.Real) or isinstance(value, bool):
                try:
                    value = float(value)
                except (TypeError, ValueError):
                    fail("your function should return the scale Lambda, a number", got=type(value).__name__)
            value = float(value)
            expect(math.isfinite(value) and value >= 0, "Lambda ranges over the numbers >= 0", got=value,
                   hint="where the stationary point is negative, B increases on [0, inf): its minimum is at 0")
            best = _best(vocab, jl, miss)
            excess = _bound(value, vocab, jl, miss) - _bound(best, vocab, jl, miss)
            kappa = (1 + 2 * jl) / (1 - 2 * jl) * miss
            hint = ("set B'(Lambda) = 0; with u = (N - 1) exp(-Lambda (1 - 2C)), B' = -(1 - 2C) u/(1 + u) + "
                    "(1 + 2C) r_bar")
            if kappa >= 1:
                hint = "here kappa = r_bar (1 + 2C)/(1 - 2C) >= 1: where does B' change sign?"
            expect(excess <= 1e-9, "B at your Lambda is above its minimum over Lambda >= 0",
                   expected="within 1e-9 of the minimum", got=f"{excess:.3g} above it", hint=hint)
