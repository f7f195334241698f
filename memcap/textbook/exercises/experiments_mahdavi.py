"""Checkers of the exercises of *The experiments of Mahdavi et al.* (``book/experiments/mahdavi.md``)."""
from __future__ import annotations

import math

from memcap import bounds
from memcap.experiments import mahdavi_common, mahdavi_fig3
from memcap.textbook.exercises.checking import (
    case,
    checker,
    close,
    entries,
    expect,
    fail,
    number,
    numbers_by_key,
    tensor_answer,
    whole_number,
)
from memcap.train import MHASpec

CHAPTER = "book/experiments/mahdavi"
SIZES = (10_000, 40_000)


@checker("ex-mahdavi-experiments-2", CHAPTER)
def guarantee_at_paper_size(guaranteed, heads_needed):
    """The accuracy Theorem 1 guarantees (f + (1 - f)/C) for H = 60, n = 32, d = d_h = 64, C = 100 at
    T = 10 000 and 40 000 (a dict keyed by T, or a list in that order, as fractions), and the smallest
    number of heads that guarantees all T = 10 000 examples (a whole number, compared exactly)."""
    given = numbers_by_key(guaranteed, SIZES, "guaranteed")
    capacity = bounds.mha_capacity(60, 32, 64)
    for T in SIZES:
        with case(f"accuracy guaranteed at T = {T}"):
            expected = mahdavi_common.theory_accuracy(60, 32, 64, T, 100)
            value = number(given[T], f"guaranteed[{T}]")
            hint = ("K = H(r-1)+1 examples are memorized; each other example is right with "
                    "probability 1/C")
            if math.isclose(value, capacity / T, rel_tol=1e-6):
                hint = ("the examples the construction does not memorize still count: each is right "
                        "with probability 1/C (the chance term (1 - f)/C)")
            elif math.isclose(value, 100 * expected, rel_tol=1e-3):
                hint = "give the accuracy as a fraction between 0 and 1, not a percentage"
            elif math.isclose(value, mahdavi_common.theory_accuracy(60, 32, 64, T, 100) - (1 - 1 / 100) / T,
                              rel_tol=1e-9):
                hint = "the first head memorizes r examples, each further head r - 1: K = H(r-1) + 1"
            # the formula is exact: 1e-5 still tells K from K - 1 (5e-4 apart at T = 10 000)
            close(value, expected, "the guaranteed accuracy", rtol=1e-5, hint=hint)
    with case("heads needed for all T = 10 000 examples"):
        needed = next(H for H in range(1, 10_000) if bounds.mha_capacity(H, 32, 64) >= 10_000)
        hint = "each head adds r - 1 = min(n, d_h) - 1 examples to the one of the first"
        value = whole_number(heads_needed, "heads_needed", hint=hint)
        if value == needed - 1:
            hint = "round up: with one head fewer, H(r-1)+1 is still below T"
        elif value == math.ceil(10_000 / 32):
            hint = "each head adds r - 1 = 31 examples, not n = 32"
        close(value, needed, "the number of heads", rtol=0.0, hint=hint)


@checker("ex-mahdavi-experiments-3", CHAPTER)
def memorized_counts(specs, counts):
    """The training setup and the unit of the answer: three MHASpec with H = 1, 2, 4 on the same
    T = 150 examples (n = 8, d = 16, shared context, 100 classes, the same data seed), and the counts
    of memorized examples, one per spec, each a whole number between 0 and T (accuracy times T)."""
    specs = entries(specs, 3, "specs", hint="train one model for each of H = 1, 2, 4")
    for spec, H in zip(specs, (1, 2, 4)):
        with case(f"the spec for H = {H}"):
            if not isinstance(spec, MHASpec):
                fail("each spec should be a memcap.train.MHASpec", got=type(spec).__name__)
            wanted = {"heads": H, "context_size": 8, "examples": 150, "dim": 16, "classes": 100,
                      "shared": True, "data_seed": specs[0].data_seed}
            for field, value in wanted.items():
                expect(getattr(spec, field) == value, f"the spec's {field} should be {value}",
                       got=getattr(spec, field),
                       hint="the models must see the same examples: same T, n, d, classes and data "
                            "seed, only H changes")
    counts = entries(counts, 3, "counts", hint="give one count per model")
    values = [number(c, f"counts[{k}]") for k, c in enumerate(counts)]
    expect(not all(v <= 1 for v in values), "these look like accuracies, not counts",
           got=counts, hint="multiply each accuracy by the number of examples T")
    for spec, count, value in zip(specs, counts, values):
        with case(f"the count for H = {spec.heads}"):
            expect(math.isfinite(value) and 0 <= value <= spec.examples,
                   f"a count of memorized examples lies between 0 and T = {spec.examples}",
                   got=count, hint="the accuracy is a fraction of the T examples")
            expect(abs(value - round(value)) <= 1e-6 * spec.examples,
                   "a count of memorized examples is a whole number", got=count,
                   hint="count examples: multiply the training accuracy by T")


EDGE = (140, 180)
"""The two training-set sizes of ex-mahdavi-experiments-4 (H = 4): Fig. 11.4's T and the capacity search's."""


@checker("ex-mahdavi-experiments-4", CHAPTER)
def saturation_at_two_sizes(top, shares):
    """From the largest attention weight of each of the 4 heads on each example (``top``: a dict keyed by
    T = 140 and 180 of arrays (T, 4)), the two shares of the paper's observations at each T (``shares``: a
    dict keyed by T of pairs): the share of examples with more than half of their heads saturated (largest
    weight above 0.99) and the share of examples with at least one unsaturated head. Checks the arrays'
    shapes and ranges and the shares against the arrays."""
    tops = numbers_by_key(top, EDGE, "top")
    pairs = numbers_by_key(shares, EDGE, "shares")
    threshold = mahdavi_fig3.SATURATION_THRESHOLD
    for T in EDGE:
        with case(f"the largest weights at T = {T}"):
            weights = tensor_answer(tops[T], (T, 4), f"top[{T}]",
                                    hint="trained_attention gives (T, H, n): take the largest weight over the "
                                         "last axis (n)")                 # float64, on the CPU
            low, high = float(weights.min()), float(weights.max())
            expect(low > 0 and high <= 1 + 1e-6, f"top[{T}] should hold largest softmax weights, in (0, 1]",
                   got=f"values from {low:.3g} to {high:.3g}",
                   hint="take the maximum of the attention weights, not of the scores before the softmax")
            expect(low >= 1 / 8 - 1e-6, f"the largest of n = 8 softmax weights is at least 1/8, but top[{T}] "
                   "goes lower", got=f"{low:.3g}", hint="take the maximum over the context axis (n), not the minimum")
        with case(f"the two shares at T = {T}"):
            given = entries(pairs[T], 2, f"shares[{T}]",
                            hint="give a pair: (share with more than half of the heads saturated, "
                                 "share with an unsaturated head)")
            majority, unsaturated = (number(v, f"shares[{T}][{k}]") for k, v in enumerate(given))
            stats = mahdavi_fig3.saturation_of_max_weights(weights, threshold)
            want_majority = mahdavi_fig3.majority_saturated({**stats, "heads": 4})
            want_unsaturated = stats["fraction_with_unsaturated"]
            expect(not (majority > 1 or unsaturated > 1), "shares are fractions between 0 and 1",
                   got=(majority, unsaturated), hint="give shares as fractions, not percentages")
            at_least_half = float((stats["count"] >= 2).mean())
            hint = f"count an example when more than 2 of its 4 heads have a largest weight above {threshold}"
            if math.isclose(majority, at_least_half) and not math.isclose(at_least_half, want_majority):
                hint = "more than half of 4 heads is 3 or 4: 2 saturated heads are only half"
            elif math.isclose(majority, stats["fraction_saturated"]) and \
                    not math.isclose(stats["fraction_saturated"], want_majority):
                hint = "that is the share of saturated head-example pairs; count examples instead"
            close(majority, want_majority, "the share of examples with more than half of their heads saturated",
                  rtol=1e-9, atol=1e-9, hint=hint)
            hint = f"an example counts when at least one of its heads has a largest weight of at most {threshold}"
            if math.isclose(unsaturated, 1 - want_unsaturated) and not math.isclose(want_unsaturated, 0.5):
                hint = "that is the share with every head saturated; the observation is about the others"
            close(unsaturated, want_unsaturated, "the share of examples with at least one unsaturated head",
                  rtol=1e-9, atol=1e-9, hint=hint)
