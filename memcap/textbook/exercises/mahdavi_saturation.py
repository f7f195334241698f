"""Checkers of the exercises of *Saturating the softmax* (``book/mahdavi/saturation.md``)."""
from __future__ import annotations

import math

import torch

from memcap.construct import mahdavi
from memcap.textbook.exercises.checking import call, case, checker, close, expect, fail, number, to_case_device

CHAPTER = "book/mahdavi/saturation"
CASES = (("g = 1e-3, delta = 1e-8", 1e-3, 1e-8), ("delta shrunk by 10^4", 1e-3, 1e-12),
         ("g shrunk by 10", 1e-4, 1e-8))


def _scale(gap: float, delta: float, log=math.log) -> float:
    return (5 + log(2 * (32 - 1) / delta)) / gap


@checker("ex-mahdavi-saturation-2", CHAPTER)
def scales_needed(base, small_delta, small_gap):
    """Lemma 4's scale c_delta for n = 32 and spread s = 5 in three cases: gap g = 1e-3 and
    delta = 1e-8; delta 10^4 times smaller; g ten times smaller (to five significant digits or better,
    rounded up to a whole number if you like)."""
    for (description, gap, delta), value, name in zip(CASES, (base, small_delta, small_gap),
                                                      ("base", "small_delta", "small_gap")):
        with case(description):
            hint = "c_delta = (s + log(2(n - 1)/delta))/g"
            given = number(value, name, hint=hint)
            if math.isclose(given, _scale(gap, delta, math.log10), rel_tol=1e-6):
                hint = "the bound 2(n - 1)exp(s - cg) uses the natural logarithm, not log10"
            elif math.isclose(given, (5 + math.log(2 * 32 / delta)) / gap, rel_tol=1e-6):
                hint = "the winner is not counted: n - 1 tokens lose, not n"
            # 1e-4 accepts c_delta rounded (up) to a whole number; the slips above are 2e-2 off or more
            close(value, _scale(gap, delta), "c_delta", rtol=1e-4, hint=hint)


def _pairs():
    """Three sets of logit pairs of the checker's own, on the CPU."""
    gen = torch.Generator().manual_seed(1414)
    for count, n, spread, delta in ((100, 16, 3.0, 1e-4), (60, 5, 1.0, 1e-2), (40, 32, 6.0, 1e-8)):
        a_star = spread * torch.randn(count, n, generator=gen, dtype=torch.float64, device="cpu")
        a_plus = torch.randn(count, n, generator=gen, dtype=torch.float64, device="cpu")
        yield f"{count} pairs, n = {n}, delta = {delta:g}", a_star, a_plus, delta


@checker("ex-mahdavi-saturation-3", CHAPTER)
def pessimism(slack):
    """A function (alpha_star, alpha_plus, delta) -> delta / ||theta_c - theta_+||_1 at Lemma 4's scale
    c_delta, for one pair of logit vectors: at least 1 (c_delta achieves delta) and equal to the value
    memcap computes, on random pairs of the checker's own (three sets, n = 5, 16, 32)."""
    for description, a_star, a_plus, delta in _pairs():
        with case(description):
            for t in range(a_star.shape[0]):
                got = call(slack, *to_case_device(a_star[t], a_plus[t]), delta)
                scale = mahdavi.saturation_scale(a_star[t], a_plus[t], delta)
                expected = delta / float(mahdavi.saturation_error(a_star[t], a_plus[t], scale))
                hint = ("compute c_delta with saturation_scale for this pair, then the distance with "
                        "saturation_error at that c: it adds up the mass off the winner, whereas the "
                        "distance written out (|theta - theta_+| summed, or 2(1 - theta_max)) cancels to "
                        "rounding noise at these scales")
                try:
                    value = float(got)
                except (TypeError, ValueError):
                    fail(f"pair {t}: your function should return one number", got=type(got).__name__)
                if value > 0 and math.isclose(1 / value, expected, rel_tol=1e-6):
                    hint = "the ratio is delta divided by the distance, not the other way round"
                expect(value >= 1, f"pair {t}: the ratio should be at least 1, since c_delta achieves "
                       "delta", got=f"{value:.4g}", hint=hint)
                close(value, expected, f"pair {t}: the ratio", rtol=1e-6, hint=hint)
