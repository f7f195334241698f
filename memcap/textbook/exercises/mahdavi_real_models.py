"""Checkers of the exercises of *The assumptions in real models* (``book/mahdavi/real_models.md``)."""
from __future__ import annotations

import math

from memcap import linalg
from memcap.textbook.exercises.checking import case, checker, close, expect, fail, number, numbers_by_key

CHAPTER = "book/mahdavi/real_models"
SETTINGS = {64: 1000, 512: 2000}     # n -> T
DIGITS = 1797


@checker("ex-mahdavi-real-models-2", CHAPTER)
def duplicate_queries(both, noticed, pairs):
    """The fraction of random n-subsets of T queries that contain a given pair, for (T, n) = (1000, 64)
    and (2000, 512) (a dict keyed by n), whether the 99 % rule notices the duplicate in each case (a
    dict of bools keyed by n), and the expected number of pairs of T = 1000 random windows of a text of
    L = 465 000 characters that share their start."""
    fractions = numbers_by_key(both, tuple(SETTINGS), "both")
    verdicts = numbers_by_key(noticed, tuple(SETTINGS), "noticed")
    for n, T in SETTINGS.items():
        with case(f"T = {T}, n = {n}"):
            expected = n * (n - 1) / (T * (T - 1))
            hint = "count the n-subsets that contain both: C(T-2, n-2) out of C(T, n)"
            if math.isclose(number(fractions[n], f"both[{n}]"), (n / T) ** 2, rel_tol=1e-9):
                hint = "the two draws are without replacement: n(n-1)/(T(T-1)), not (n/T)^2"
            close(fractions[n], expected, "the fraction", rtol=1e-6, hint=hint)
            expect(isinstance(verdicts[n], bool) or type(verdicts[n]).__name__ == "bool_",
                   "whether the rule notices should be True or False", got=verdicts[n])
            expect(bool(verdicts[n]) == (1 - expected < 0.99), "the verdict of the 99 % rule is not right",
                   got=verdicts[n], hint="the rule notices when fewer than 99 % of the n-subsets are "
                                         "independent")
    with case("windows sharing their start"):
        hint = "each of the C(T, 2) pairs shares its start with probability 1/L"
        if math.isclose(number(pairs, "pairs"), 1000 ** 2 / 465_000, rel_tol=1e-9):
            hint = "count unordered pairs of distinct windows, C(T, 2)"
        close(pairs, math.comb(1000, 2) / 465_000, "the expected number of pairs", rtol=1e-6, hint=hint)


@checker("ex-mahdavi-real-models-3", CHAPTER)
def small_vit_report(report):
    """The assumption report at the embedding layer of the small ViT with 4 x 4 patches, on all 1797
    digits: contexts of n = 5 tokens of dimension 64, queries the [CLS] position; Assumption 1 fails and
    Assumption 3 holds."""
    if not isinstance(report, linalg.AssumptionReport):
        fail("report should be what linalg.assumption_report returns (a linalg.AssumptionReport)",
             got=type(report).__name__)
    with case("the data"):
        expect(report.context_size == 5, "the contexts should have n = 5 tokens", got=report.context_size,
               hint="an 8 x 8 digit has four 4 x 4 patches, plus the [CLS] token")
        expect(report.examples == DIGITS, "the report should cover all the digits",
               expected=DIGITS, got=report.examples)
        expect(report.dim == 64, "the tokens should have the model's dimension 64", got=report.dim)
    with case("the verdicts"):
        expect(report.assumption_3 is not None, "the report should test Assumption 3 too",
               hint="leave shifted=True")
        expect(not report.holds_1, "Assumption 1 should fail at the embedding layer",
               got="holds", hint="the queries are the [CLS] position of the embedded tokens, tokens[:, 0]")
        expect(report.holds_3, "Assumption 3 should hold at the embedding layer", got="fails",
               hint="embed the images with the model's embed, and test tokens and tokens[:, 0]")
