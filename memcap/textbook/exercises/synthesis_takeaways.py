"""Checkers of the exercises of *Take-aways* (``book/synthesis/takeaways.md``)."""
from __future__ import annotations

from memcap import bounds, synthesis
from memcap.experiments.syn_efficiency import Row
from memcap.textbook.exercises.checking import call, case, checker, close, entries, expect, fail, number
from memcap.train import AoTSpec

CHAPTER = "book/synthesis/takeaways"

_ROWS = (
    Row("AoT", heads=8, head_dim=2, parameters=448, capacity=37.5, censored=False, bits=4.0, guarantee=20),
    Row("one head + MLP", heads=8, head_dim=4, parameters=460, capacity=12.0, censored=False, bits=4.0,
        guarantee=None),
    Row("MHA", heads=4, head_dim=16, parameters=3300, capacity=210.0, censored=True, bits=6.64,
        guarantee=61),
)


@checker("ex-syn-take-2", CHAPTER)
def parameters_needed_at_rate(parameters_needed):
    """A function (row, examples) -> (parameters at the measured rate, parameters at the guaranteed rate
    or None) for rows of syn_efficiency.summarize (memcap.experiments.syn_efficiency.Row), rates held
    constant; three rows of the checker's own, one without a theorem, for 10 000 and 500 examples."""
    for row in _ROWS:
        for examples in (10_000, 500):
            with case(f"{row.architecture}, {row.parameters} weights, capacity {row.capacity:g}, "
                      f"guarantee {row.guarantee}, {examples} examples"):
                answer = call(parameters_needed, row, examples, name="parameters_needed")
                expect(isinstance(answer, (tuple, list)) and len(answer) == 2,
                       "your function should give a pair (measured-rate parameters, guaranteed-rate "
                       "parameters)", got=answer)
                measured, guaranteed = answer
                # atol=1: a count of parameters rounded (up) to a whole number is right too
                close(measured, examples * row.per_example, "the parameters at the measured rate",
                      rtol=1e-6, atol=1, reveal=True,
                      hint="parameters per memorized example (row.per_example) times the examples")
                if row.guarantee is None:
                    expect(guaranteed is None, "a model without a theorem has no guaranteed rate",
                           expected=None, got=guaranteed)
                    continue
                if guaranteed is None:
                    fail("this model has a theorem, so a guaranteed rate", got=None,
                         hint="row.per_guaranteed is None only where no theorem applies")
                close(guaranteed, examples * row.per_guaranteed, "the parameters at the guaranteed rate",
                      rtol=1e-6, atol=1, reveal=True,
                      hint="parameters per guaranteed example (row.per_guaranteed) times the examples")


def _budget_fits():
    fits = []
    for d in (4, 8):
        for dh in range(1, d + 1):
            for H in range(1, 1000):
                if synthesis.engine_param_count(AoTSpec(heads=H, head_dim=dh, dim=d, vocab=16)) > 1000:
                    break
                fits.append((H, dh, d))
    return fits


def _shape(answer, what):
    values = entries(answer, 3, f"{what}, a triple of whole numbers (H, d_h, d),")
    values = [number(v, f"{what}[{k}]") for k, v in enumerate(values)]
    if not all(v.is_integer() for v in values):
        fail(f"{what} should be a triple of whole numbers (H, d_h, d)", got=answer)
    H, dh, d = (int(v) for v in values)
    expect(d in (4, 8), f"{what}: d should be 4 or 8", got=d)
    expect(1 <= dh <= d, f"{what}: d_h should be between 1 and d", got=dh)
    expect(H >= 1, f"{what}: H should be at least 1", got=H)
    weights = synthesis.engine_param_count(AoTSpec(heads=H, head_dim=dh, dim=d, vocab=16))
    expect(weights <= 1000, f"{what}: the AoT should have at most 1000 trainable weights",
           got=f"{weights} weights for (H, d_h, d) = {(H, dh, d)}",
           hint="count with synthesis.engine_param_count(AoTSpec(..., vocab=16))")
    return H, dh, d


@checker("ex-syn-take-3", CHAPTER)
def budget_shapes(largest, most_heads):
    """Two AoTs (H, d_h, d) with N = 16, S = 2, d in {4, 8}, d_h <= d within 1000 trainable weights
    (synthesis.engine_param_count): one whose guarantee H d_h + d is the largest of all such shapes (any
    of the tied ones), and one with the most heads of all such shapes."""
    fits = _budget_fits()
    with case("the largest guaranteed count"):
        H, dh, d = _shape(largest, "largest")
        best = max(bounds.aot_capacity(*f) for f in fits)
        expect(bounds.aot_capacity(H, dh, d) == best, "another shape within the budget has a larger "
               "count H d_h + d", got=f"H d_h + d = {bounds.aot_capacity(H, dh, d)}",
               hint="try every d in {4, 8}, every d_h <= d and every H that fits the budget")
    with case("the most heads"):
        H, dh, d = _shape(most_heads, "most_heads")
        most = max(f[0] for f in fits)
        expect(H == most, "another shape within the budget has more heads", got=f"H = {H}",
               hint="the smallest heads are the cheapest")
