"""Part III's generated clauses: the sentences that state what a sweep found, decided from its numbers.

A clause glued into a chapter must stay true whatever the results are (quick profile, cached paper results,
a failed run). Each function here takes the numbers a sentence rests on and returns the sentence for every
case that can occur: no point, one point, all points, some points, equal values, opposite outcomes. The
chapters of Part III paste them with ``{glue:md}`` (math in ``$...$``); ``tests/test_syn_prose.py``
checks each case.
"""
from __future__ import annotations

import math
import numbers
from typing import Mapping, Sequence

__all__ = ["count_noun", "number", "exceeds_clause", "proof_gap_clause", "exact_reading", "beyond_clause",
           "ratio_phrase", "RATIO_KINDS", "ratio_kind", "per_size_clause", "gains_clause", "assumption1_reading",
           "head_dim_verdict", "majority_saturated_clause", "comparable_clause", "saturation_reading",
           "robust_clause", "closer_clause", "short_points_clause", "growth_word", "shape_clause", "QUADRATIC",
           "start_clause", "steeper_clause", "cost_clause", "quadratic_verdict", "bracket_clause",
           "curvature_clause"]

QUADRATIC = 1.7
"""A fitted exponent at least this large reads as 'about quadratic' (1.3 to 1.7: between linear and
quadratic; 0.7 to 1.3: about linear)."""


def _nonnegative_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, (int,)) and not (
            isinstance(value, float) and value.is_integer()):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return int(value)


def _reals(name: str, values: Sequence[float], *, positive: bool = False) -> list[float]:
    try:
        out = [float(v) for v in values]
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a sequence of real numbers, got {values!r}") from None
    if not out:
        raise ValueError(f"{name} must not be empty")
    for v in out:
        if not math.isfinite(v) or v < 0 or (positive and v == 0):
            raise ValueError(f"{name} must hold finite numbers {'> 0' if positive else '>= 0'}, got {v}")
    return out


def _share(name: str, value: float) -> float:
    value = float(value)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be a share in [0, 1], got {value}")
    return value


def count_noun(count: int, singular: str, plural: str | None = None) -> str:
    """``(1, 'point') -> '1 point'``, ``(3, 'point') -> '3 points'``: a count with its noun agreeing."""
    count = _nonnegative_int("count", count)
    if not isinstance(singular, str) or not singular:
        raise ValueError("singular must be a non-empty string")
    return f"{count} {singular if count == 1 else (plural or singular + 's')}"


def number(value: float) -> str:
    """A measured count for prose: ``12.0 -> '12'``, ``12.5 -> '12.5'`` (a mean over seeds)."""
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"value must be finite, got {value}")
    return f"{value:.0f}" if value == round(value) else f"{value:.1f}"


def _factor(ratios: list[float]) -> str:
    low, high = f"{min(ratios):.1f}", f"{max(ratios):.1f}"
    return f"by a factor of {low}" if low == high else f"by a factor between {low} and {high}"


def exceeds_clause(measured: Sequence[float], counts: Sequence[int], names: Sequence[str],
                   count_name: str) -> str:
    """How a measured capacity compares with a theorem's count over the points of a sweep.

    ``measured`` (P,) capacities, ``counts`` (P,) the counts that apply (> 0), ``names`` (P,) each point in
    Markdown (``'$H = 1$'``), ``count_name`` e.g. ``"Dana et al.'s count"``. The clause follows "the measured
    capacity": the factor range is over the points that exceed the count only, the largest factor says
    whether it comes from the smallest count, and every point that does not exceed is named with its
    numbers (a point where nothing was memorized says so).
    """
    m = _reals("measured", measured)
    c = _reals("counts", counts, positive=True)
    if not isinstance(names, Sequence) or isinstance(names, str) or not all(isinstance(s, str) for s in names):
        raise TypeError("names must be a sequence of strings")
    if not len(m) == len(c) == len(names):
        raise ValueError(f"measured, counts and names must have one entry per point, got {len(m)}, {len(c)} "
                         f"and {len(names)}")
    if not isinstance(count_name, str) or not count_name:
        raise ValueError("count_name must be a non-empty string")
    ratio = [a / b for a, b in zip(m, c)]
    above = [i for i, r in enumerate(ratio) if r > 1]
    rest = [i for i, r in enumerate(ratio) if r <= 1]
    P = len(m)
    if len(above) == P:
        where = ("at the one point measured" if P == 1 else "at both points" if P == 2 else
                 f"at every one of the {P} points")
    elif above:
        where = f"at {len(above)} of the {count_noun(P, 'point')}"
    else:
        where = ("at the one point measured" if P == 1 else "at either point" if P == 2 else
                 f"at any of the {P} points")
    parts = [("exceeds " if above else "does not exceed ") + f"{count_name} {where}"]
    if above:
        parts[0] += ", " + _factor([ratio[i] for i in above]) + (" there" if rest else "")
    if len(above) > 1:
        top = max(above, key=lambda i: ratio[i])
        smallest = min(c[i] for i in above)
        parts.append(f"the largest factor, {ratio[top]:.1f}, is at {names[top]}, "
                     + (f"where the count is the smallest, {number(c[top])}" if c[top] == smallest
                        else f"where the count is {number(c[top])}"))
    if rest:
        def fate(i: int) -> str:
            if m[i] == 0:
                return f"at {names[i]} training memorized nothing (count {number(c[i])})"
            if m[i] == c[i]:
                return f"at {names[i]} it equals the count, {number(c[i])}"
            return f"at {names[i]} it stays below the count ({number(m[i])} against {number(c[i])})"
        parts.append("; ".join(fate(i) for i in rest))
    return "; ".join(parts)


def proof_gap_clause(beyond: Sequence[bool], context_size: int) -> str:
    """What the exact-regression runs show about who owns the gap between counts and measurements.

    ``beyond`` (K,): for each number of heads tried, whether training fitted more real labels exactly than
    Mahdavi et al.'s count; ``context_size``: the one n of these runs. The runs show that *some* of the gap
    is the proofs' (at this size), never how much.
    """
    flags = _flags("beyond", beyond)
    n = _nonnegative_int("context_size", context_size)
    k, K = sum(flags), len(flags)
    size = f"at one size, $n = {n}$"
    if k == 0:
        return (f"{size}, exact fits of real labels do not go beyond Mahdavi et al.'s count for any number of "
                "heads tried, so these runs do not show that any of the gap belongs to the proofs")
    which = ("for the one number of heads tried" if K == 1 else
             "for every number of heads tried" if k == K else
             f"for {k} of the {K} numbers of heads tried")
    return (f"{size}, exact fits of real labels go beyond Mahdavi et al.'s count {which}, so some of the gap "
            "belongs to the proofs, which fix the attention before looking at the labels; how much, one size "
            "does not say")


def exact_reading(beyond: Sequence[bool]) -> str:
    """The sentence after the exact-regression result: what Proposition 2 of Mahdavi et al. bounds, and what
    the runs add (``beyond`` as in :func:`proof_gap_clause`)."""
    flags = _flags("beyond", beyond)
    head = "Proposition 2 of Mahdavi et al. bounds the rank of the features, not what the layer memorizes"
    if all(flags):
        return head + ", and at this size training goes beyond it: part of the gap is the proofs'"
    if any(flags):
        return (head + f", and at this size training goes beyond it for {sum(flags)} of the "
                f"{count_noun(len(flags), 'number')} of heads")
    return head + " (the proposition above), but at this size training does not go beyond it"


def beyond_clause(beyond: Sequence[bool], count_name: str) -> str:
    """For how many of the numbers of heads tried training fitted more labels than ``count_name``
    (``beyond`` as in :func:`proof_gap_clause`); follows "fits real labels exactly"."""
    flags = _flags("beyond", beyond)
    if not isinstance(count_name, str) or not count_name:
        raise ValueError("count_name must be a non-empty string")
    k, K = sum(flags), len(flags)
    if K == 1:
        return f"{'beyond' if k else 'not beyond'} {count_name} for the one number of heads tried"
    if k == K:
        return f"beyond {count_name} for every number of heads tried"
    if k == 0:
        return f"beyond {count_name} for none of the {K} numbers of heads tried"
    return f"beyond {count_name} for {k} of the {K} numbers of heads tried"


def ratio_phrase(ratio: float, *, more: str, less: str, same: str, band: tuple[float, float] = (0.8, 1.25)) -> str:
    """``more`` if ``ratio`` > band[1], ``less`` if ``ratio`` < band[0], else ``same``: a measured ratio of
    two capacities read with a margin, so that a small difference is not read as a preference."""
    ratio = float(ratio)
    if not math.isfinite(ratio) or ratio < 0:
        raise ValueError(f"ratio must be a finite number >= 0, got {ratio}")
    low, high = (float(b) for b in band)
    if not 0 < low <= 1 <= high:
        raise ValueError(f"band must satisfy 0 < band[0] <= 1 <= band[1], got {band}")
    return more if ratio > high else less if ratio < low else same


RATIO_KINDS = ("exact", "at least", "at most", "unknown")
"""What a capacity ratio a/b is when a search reached its largest table (a censored capacity is a lower
bound): exact; at least (a censored); at most (b censored); unknown (both)."""


def ratio_kind(numerator_censored: bool, denominator_censored: bool) -> str:
    """The :data:`RATIO_KINDS` entry of a ratio of two capacities, given which of them are censored."""
    return RATIO_KINDS[int(bool(numerator_censored)) + 2 * int(bool(denominator_censored))]


def per_size_clause(ratios: Mapping[int, float], *, more: str, less: str, same: str,
                    band: tuple[float, float] = (0.8, 1.25), kinds: Mapping[int, str] | None = None) -> str:
    """:func:`ratio_phrase` for a capacity ratio measured at one or more sizes (``ratios``: number of heads
    H -> ratio), with the ratios and their sizes: the phrase once when every size reads the same (``'...
    (ratios 1.50 at $H = 4$ and 1.40 at $H = 16$)'``), else each size's phrase, joined by 'but'.
    ``kinds`` (H -> a :data:`RATIO_KINDS` entry, :func:`ratio_kind`; default exact): a bound is read only
    where it decides (a ratio of at least 1.5 still says ``more``); otherwise the size reads "no reading"."""
    if not isinstance(ratios, Mapping) or not ratios:
        raise ValueError(f"ratios must map at least one number of heads to a ratio, got {ratios!r}")
    for H in ratios:
        if isinstance(H, bool) or not isinstance(H, numbers.Integral) or H < 1:
            raise ValueError(f"ratios must be keyed by numbers of heads >= 1, got {H!r}")
    kinds = {H: "exact" for H in ratios} if kinds is None else dict(kinds)
    if set(kinds) != set(ratios) or not set(kinds.values()) <= set(RATIO_KINDS):
        raise ValueError(f"kinds must give one of {RATIO_KINDS} for every size of ratios, got {kinds!r}")
    sizes = sorted(ratios)
    phrases = {}
    for H in sizes:
        phrase = ratio_phrase(ratios[H], more=more, less=less, same=same, band=band)
        decided = {"exact": (more, less, same), "at least": (more,), "at most": (less,), "unknown": ()}
        phrases[H] = phrase if phrase in decided[kinds[H]] else (
            "no reading: the search reached its largest table, so the ratio is only a bound")

    def shown(H):
        bound = {"exact": "", "at least": "at least ", "at most": "at most ", "unknown": "unknown, "}[kinds[H]]
        return f"{bound}{float(ratios[H]):.2f}"
    if len(set(phrases.values())) == 1:
        listed = _join([f"{shown(H)} at $H = {H}$" for H in sizes])
        return f"{phrases[sizes[0]]} (ratio{'s' if len(sizes) > 1 else ''} {listed})"
    return " but ".join(f"{phrases[H]} at $H = {H}$ (ratio {shown(H)})" for H in sizes)


def gains_clause(gains: Sequence[float], names: Sequence[str],
                 censored: Sequence[bool] | None = None) -> str:
    """How trained models compare with their theorems' counts: ``gains`` (M,) capacity / count per model,
    ``names`` (M,) e.g. ``['the attention layer', 'the AoT']``. 'More' means a ratio above 1; a ratio of
    exactly 1 reaches the count. ``censored`` (M,), default none: the model's capacity search memorized its
    largest table, so its gain is a lower bound; it reads 'more' when the bound is above 1, and otherwise
    says that the search did not go far enough to tell."""
    g = _reals("gains", gains)
    if not isinstance(names, Sequence) or isinstance(names, str) or len(names) != len(g) or not all(
            isinstance(n, str) and n for n in names):
        raise ValueError("names must hold one non-empty name per gain")
    cut = [False] * len(g) if censored is None else _flags("censored", censored)
    if len(cut) != len(g):
        raise ValueError(f"censored must hold one flag per gain ({len(g)}), got {len(cut)}")
    above = [n for n, x in zip(names, g) if x > 1]
    at = [n for n, x, c in zip(names, g, cut) if x == 1 and not c]
    below = [n for n, x, c in zip(names, g, cut) if x < 1 and not c]
    open_ = [n for n, x, c in zip(names, g, cut) if x <= 1 and c]
    if len(above) == len(g):
        every = (f"Both {names[0]} and {names[1]}" if len(g) == 2 else
                 ", ".join(names[:-1]) + f" and {names[-1]}")
        return (f"{every}, as trained, memorize more than their theorems' counts" if len(g) > 1 else
                f"The trained model ({names[0]}) memorizes more than its theorem's count")
    parts = []
    for group, verb in ((above, "more than"), (at, "exactly"), (below, "less than")):
        if group:
            parts.append(f"{_join(group)} memorize{'s' if len(group) == 1 else ''} {verb} "
                         f"{'its count' if len(group) == 1 else 'their counts'}")
    if open_:
        one = len(open_) == 1
        parts.append(f"for {_join(open_)} {'the search' if one else 'each search'} memorized even its largest "
                     f"table, which does not exceed the count, so these data cannot compare "
                     f"{'it with its count' if one else 'them with their counts'}")
    text = "; ".join(parts)
    return text[0].upper() + text[1:]


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _flags(name: str, values: Sequence[bool]) -> list[bool]:
    try:
        flags = [bool(v) for v in values]
    except TypeError:
        raise TypeError(f"{name} must be a sequence of booleans, got {values!r}") from None
    if not flags:
        raise ValueError(f"{name} must not be empty")
    return flags


def majority_saturated_clause(first: str, first_share: float, second: str, second_share: float) -> str:
    """Whether most head-example pairs are saturated, in each of two models: the sentence agrees with the two
    shares it prints (``first_share``, ``second_share`` in [0, 1]; 'most' means more than half)."""
    a, b = _share("first_share", first_share), _share("second_share", second_share)
    for name, value in (("first", first), ("second", second)):
        if not isinstance(value, str) or not value:
            raise ValueError(f"{name} must be a non-empty model name")
    pa, pb = f"{100 * a:.0f} %", f"{100 * b:.0f} %"
    if (a > 0.5) and (b > 0.5):
        return f"Most head-example pairs are saturated in both models ({first} {pa}, {second} {pb})"
    if not (a > 0.5) and not (b > 0.5):
        return f"In neither model are most head-example pairs saturated ({first} {pa}, {second} {pb})"
    yes, no = ((first, pa), (second, pb)) if a > 0.5 else ((second, pb), (first, pa))
    return (f"Most head-example pairs are saturated in {yes[0]} ({yes[1]}) but not in {no[0]} ({no[1]}): on "
            "this point the two models differ")


def comparable_clause(model: str, memorized: bool, accuracy: float) -> str:
    """Whether a trained model's saturation can be set beside Mahdavi et al.'s Figure 3, which measures models
    trained to perfect memorization; empty when it can (``accuracy`` in [0, 1] on its training set)."""
    if not isinstance(model, str) or not model:
        raise ValueError("model must be a non-empty model name")
    accuracy = _share("accuracy", accuracy)
    if memorized:
        if accuracy != 1.0:
            raise ValueError(f"a memorized training set has accuracy 1, got {accuracy}")
        return ""
    return (f"{model} memorized no training set of its ladder entirely (best accuracy {accuracy:.3f}), so its "
            "statistics are not comparable with Mahdavi et al.'s Figure 3, which measures models trained to "
            "perfect memorization")


def assumption1_reading(failed: int, points: int) -> str:
    """What Mahdavi et al.'s theorem guarantees on the token tables, after "Assumption 1 fails at
    ``failed`` of the ``points`` measured tables," (Remark 1 then guarantees one example)."""
    failed, points = _nonnegative_int("failed", failed), _nonnegative_int("points", points)
    if points == 0 or failed > points:
        raise ValueError(f"failed must lie in [0, points] with points >= 1, got {failed} and {points}")
    if failed == points:
        return "so on these data their theorem guarantees one example"
    if failed == 0:
        return "so their theorem applies with its full count at every point"
    return "and on those tables their theorem guarantees one example"


def bracket_clause(lows: Sequence[float], uppers: Sequence[float], names: Sequence[str]) -> str:
    """What a capacity search resolves between two points: every seed's capacity at point i lies in
    [``lows[i]``, ``uppers[i]``) (``uppers[i]`` inf: censored, at least ``lows[i]``); ``names`` label the
    two points. Overlapping brackets mean a change the search cannot see."""
    lo = _reals("lows", lows)
    try:
        up = [float(u) for u in uppers]
    except (TypeError, ValueError):
        raise TypeError(f"uppers must be a sequence of real numbers, got {uppers!r}") from None
    if len(lo) != 2 or len(up) != 2 or isinstance(names, str) or len(names) != 2:
        raise ValueError(f"lows, uppers and names must each hold two points, got {len(lo)}, {len(up)} and "
                         f"{len(names) if not isinstance(names, str) else 'a string'}")
    for a, b in zip(lo, up):
        if math.isnan(b) or b <= a:
            raise ValueError(f"each upper end must exceed its lower end, got [{a:g}, {b:g})")

    def bracket(a: float, b: float) -> str:
        return f"at least {a:g}" if math.isinf(b) else f"in $[{a:g}, {b:g})$"

    where = " and ".join(f"{bracket(a, b)} at {n}" for a, b, n in zip(lo, up, names))
    overlap = max(lo) < min(up)
    return (f"the search places every seed's capacity {where}; "
            + ("these brackets overlap, so a change this small is below what the search resolves" if overlap
               else "these brackets are disjoint, so the change is resolved"))


def head_dim_verdict(dh_per_doubling: float, heads_per_doubling: float) -> str:
    """Whether the head dimension buys as much capacity as the number of heads: ``dh_per_doubling`` and
    ``heads_per_doubling`` are the capacity's relative growth per doubling of each
    (``memcap.experiments.syn_common.growth_per_doubling``; 0.5 = +50 %), so axes swept over ranges of
    different sizes compare fairly. "Far less" and "far more" mean under half and over twice as much."""
    a, b = float(dh_per_doubling), float(heads_per_doubling)
    if not (math.isfinite(a) and math.isfinite(b)):
        raise ValueError(f"the growths per doubling must be finite, got {a} and {b}")
    if a <= -1 or b <= -1:
        raise ValueError(f"a growth per doubling must exceed -1 (a capacity stays >= 0), got {a} and {b}")
    if b <= 0:
        return ("The number of heads did not raise the capacity over its range here, so this sweep cannot "
                "compare it with the head dimension")
    if a < b / 2:
        return ("Per doubling, the head dimension, which Dana et al.'s count rewards like the number of "
                "heads, buys far less here than the number of heads")
    if a > 2 * b:
        return "Per doubling, the head dimension buys far more here than the number of heads"
    return "Per doubling, the head dimension buys about as much here as the number of heads"


def saturation_reading(saturated: float, with_unsaturated: float, *, memorized: bool) -> str:
    """A trained model's saturation against Mahdavi et al.'s picture (most head-example pairs saturated,
    almost every example with an unsaturated head): shares in [0, 1]. The picture is of a model that
    memorizes its training set; when ``memorized`` is False the reading says the model cannot show it,
    whatever its shares."""
    a, b = _share("saturated", saturated), _share("with_unsaturated", with_unsaturated)
    if not isinstance(memorized, bool):
        raise TypeError(f"memorized must be a bool, got {type(memorized).__name__}")
    if not memorized:
        return ("cannot show Mahdavi et al.'s picture, which is of a model that memorizes its training "
                "set; its shares are")
    if a > 0.5 and b > 0.9:
        return "shows Mahdavi et al.'s picture"
    if b > 0.9:
        return "keeps an unsaturated head for almost every example, but saturates only a minority of its pairs"
    if a > 0.5:
        return "has most of its head-example pairs saturated, but many examples are served by saturated heads only"
    return "shows neither feature of Mahdavi et al.'s picture"


def robust_clause(with_unsaturated: Sequence[float], saturated: Sequence[float]) -> str:
    """Which features of Mahdavi et al.'s picture hold in every trained model: almost every example keeps an
    unsaturated head (``with_unsaturated`` > 0.9) and most head-example pairs are saturated (``saturated`` >
    0.5), one share per model, in [0, 1], the thresholds of :func:`saturation_reading`."""
    shares = [_share("with_unsaturated", v) for v in _reals("with_unsaturated", with_unsaturated)]
    sat = [_share("saturated", v) for v in _reals("saturated", saturated)]
    if len(sat) != len(shares):
        raise ValueError(f"saturated must hold one share per model ({len(shares)}), got {len(sat)}")
    both = len(shares) == 2
    if min(shares) > 0.9 and min(sat) > 0.5:
        return ("In both architectures both features of Mahdavi et al.'s picture hold: most pairs are "
                "saturated, and almost no example is served by saturated heads only") if both else (
                "Both features of Mahdavi et al.'s picture hold: most pairs are saturated, and almost no "
                "example is served by saturated heads only")
    if min(shares) > 0.9:
        return ("In both architectures the one robust feature of Mahdavi et al.'s picture is the last: almost "
                "no example is served by saturated heads only") if both else (
                "Almost no example is served by saturated heads only")
    return ("Not even the last feature of Mahdavi et al.'s picture holds in every model: some examples are "
            "served by saturated heads only")


def closer_clause(trained: float, saturating: float, generic: float) -> str:
    """Which construction the trained AoT's share of saturated pairs is closer to: ``trained``,
    ``saturating`` (Mahdavi et al.'s construction), ``generic`` (Dana et al.'s), shares in [0, 1]."""
    t, m, g = _share("trained", trained), _share("saturating", saturating), _share("generic", generic)
    dm, dg = abs(t - m), abs(t - g)
    if math.isclose(dm, dg, abs_tol=1e-3):
        return "neither construction: it lies as far from Mahdavi et al.'s as from Dana et al.'s"
    if dm < dg:
        return "Mahdavi et al.'s saturating construction than to Dana et al.'s generic one"
    return "Dana et al.'s generic construction than to Mahdavi et al.'s saturating one"


def short_points_clause(short: int, singular: str, plural: str, consequence: str) -> str:
    """``'2 points of the conjecture fall below the rank it asks for'``, agreeing with ``short``, or the
    sentence for none (``'No point of the conjecture falls below ...'``)."""
    k = _nonnegative_int("short", short)
    for name, value in (("singular", singular), ("plural", plural), ("consequence", consequence)):
        if not isinstance(value, str) or not value:
            raise ValueError(f"{name} must be a non-empty string")
    if k == 0:
        return f"No {singular} falls below {consequence}"
    return f"1 {singular} falls below {consequence}" if k == 1 else f"{k} {plural} fall below {consequence}"


def growth_word(alpha: float) -> str:
    """How a fitted exponent ``alpha`` of capacity ~ d_h^alpha reads in prose (see :data:`QUADRATIC`)."""
    alpha = float(alpha)
    if not math.isfinite(alpha):
        raise ValueError(f"alpha must be finite, got {alpha}")
    if alpha >= QUADRATIC:
        return "about quadratic"
    if alpha >= 1.3:
        return "between linear and quadratic"
    if alpha >= 0.7:
        return "about linear"
    return "slower than linear"


def shape_clause(alpha: float, capacities: Sequence[float], head_dims: Sequence[int],
                 lows: Sequence[float] | None = None, uppers: Sequence[float] | None = None) -> str:
    """:func:`growth_word` for a capacity curve that only grows with d_h; for one that falls somewhere, where it
    first falls instead (an exponent fitted to a curve that rises and falls describes neither). Given the
    search's brackets (``lows``: smallest capacity over seeds, ``uppers``: largest failed size over seeds, inf
    where censored), a fall counts only where they are disjoint (every seed memorized, at the first d_h, a
    size every seed failed at the next); a smaller mean within the brackets is named as a dip the search
    cannot resolve."""
    caps, dims = _reals("capacities", capacities), [int(v) for v in head_dims]
    if len(caps) != len(dims) or len(caps) < 2:
        raise ValueError(f"capacities and head_dims must have the same length >= 2, got {len(caps)} and {len(dims)}")
    if (lows is None) != (uppers is None):
        raise ValueError("lows and uppers must be given together (or neither)")
    if lows is not None:
        lo, up = [float(v) for v in lows], [float(v) for v in uppers]
        if len(lo) != len(caps) or len(up) != len(caps):
            raise ValueError(f"lows and uppers must hold one value per capacity ({len(caps)})")
        if any(not (math.isfinite(a) and a <= c) for a, c in zip(lo, caps)) or any(
                math.isnan(u) or u <= c for u, c in zip(up, caps)):
            raise ValueError("each capacity must lie in its bracket: lows <= capacities < uppers")
    dips = []
    for i, (a, b, x, y) in enumerate(zip(dims, dims[1:], caps, caps[1:])):
        if y < x:
            if lows is None or up[i + 1] <= lo[i]:
                return f"not monotone: it falls from $d_h = {a}$ to {b}, so no exponent describes it well"
            dips.append(f"$d_h = {a}$ to {b}")
    if dips:
        return (f"{growth_word(alpha)}; its mean dips from {_join(dips)}, within the search's resolution "
                "(the seeds' brackets overlap)")
    return growth_word(alpha)


def start_clause(shared_first: float, separate_first: float) -> str:
    """The capacities at d_h = 1 of the AoT with a shared compression and of the AoT of Eq. (2)."""
    a, b = _reals("capacities", [shared_first, separate_first])
    if a < b:
        return ("The shared compression starts lower, as expected: at $d_h = 1$ every head sees the same "
                "one-dimensional projection of the tokens")
    if a == b:
        return "At $d_h = 1$ the two architectures start at the same capacity"
    return "At $d_h = 1$ the shared compression starts higher, against expectation"


def _dofs(dofs: Sequence[int] | None, count: int) -> list[int | None]:
    """``dofs`` (residual degrees of freedom of each fit, :attr:`memcap.fits.PolyFit.dof`) checked, one per
    estimate; None: unknown for every one (the normal rule, :data:`memcap.fits.SIGNIFICANT_SE`)."""
    if dofs is None:
        return [None] * count
    if isinstance(dofs, (str, bytes)) or not hasattr(dofs, "__len__") or len(dofs) != count:
        raise ValueError(f"dofs must hold one number of degrees of freedom per estimate ({count}), got {dofs!r}")
    out = []
    for i, k in enumerate(dofs):
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 0:
            raise ValueError(f"dofs[{i}] must be an integer >= 0 (residual degrees of freedom), got {k!r}")
        out.append(int(k))
    return out


def _margin_text(dofs: Sequence[int | None]) -> str:
    """How many standard errors tell estimates apart, in words, for fits with these ``dofs``
    (:func:`memcap.fits.margin`): '2 standard errors', or the Student-t margin and its degrees of freedom."""
    from memcap.fits import LEVEL, margin

    known = sorted({k for k in dofs if k})
    if not known:
        return f"{margin(None):g} standard errors"
    level = f"{100 * LEVEL:g} %"
    if len(known) == 1:
        k = known[0]
        return (f"{margin(k):.3g} standard errors (Student's $t$ at {level} for {k} residual degree"
                f"{'' if k == 1 else 's'} of freedom)")
    return (f"{margin(known[-1]):.3g} to {margin(known[0]):.3g} standard errors (Student's $t$ at {level} for "
            f"{known[0]} to {known[-1]} residual degrees of freedom)")


def _pm(value: float, se: float) -> str:
    """``'0.71 ± 0.59'`` (no-break spaces: the pair never splits across lines); ``'0.71'`` for a NaN error."""
    return f"{value:.2f}" if math.isnan(se) else f"{value:.2f}\u00a0±\u00a0{se:.2f}"


def steeper_clause(shared_slope: float, separate_slope: float, shared_se: float | None = None,
                   separate_se: float | None = None, dof: int | None = None) -> str:
    """Whether the shared compression's fitted exponent exceeds that of the AoT of Eq. (2). Given the two
    exponents' standard errors (``shared_se``, ``separate_se``; NaN: unknown), exponents that
    :func:`memcap.fits.clearly_apart` cannot tell apart are said to be ranked by neither fit; ``dof``: the
    smaller of the two fits' residual degrees of freedom (None: the normal rule)."""
    from memcap.fits import clearly_apart

    a, b = float(shared_slope), float(separate_slope)
    if not (math.isfinite(a) and math.isfinite(b)):
        raise ValueError(f"the slopes must be finite, got {a} and {b}")
    if (shared_se is None) != (separate_se is None):
        raise ValueError("shared_se and separate_se must be given together (or neither)")
    (dof,) = _dofs(None if dof is None else [dof], 1)
    if shared_se is not None and not clearly_apart(a, shared_se, b, separate_se, dof=dof):
        if math.isnan(shared_se) or math.isnan(separate_se):
            return (f"and the two fitted powers of $d_h$ ({a:.2f} with a shared compression, {b:.2f} for Eq. (2)) "
                    "are not ranked here: a fit through no more points than it has parameters has no "
                    "standard error")
        return (f"and the two fitted powers of $d_h$ ({_pm(a, shared_se)} with a shared "
                f"compression, {_pm(b, separate_se)} for Eq. (2)) differ by less than "
                f"{_margin_text([dof])} of their difference: these fits do not rank them")
    if a > b:
        return "and its fitted power of $d_h$ is the larger"
    return "and its fitted power of $d_h$ is not the larger"


def cost_clause(steps: Sequence[Sequence[float]]) -> str:
    """Whether the parameters per memorized example rise at every step of :math:`d_h` in every architecture:
    ``steps`` holds, per architecture, the successive differences of parameters per example."""
    rows = [[float(x) for x in r] for r in steps]
    if not rows or not all(rows):
        raise ValueError("steps must hold at least one difference per architecture")
    if all(x > 0 for r in rows for x in r):
        return ("wider heads do not pay for themselves in either architecture at this size: the parameters per "
                "memorized example rise with $d_h$")
    if all(x < 0 for r in rows for x in r):
        return "wider heads pay for themselves at this size: the parameters per memorized example fall with $d_h$"
    return "the parameters per memorized example rise with $d_h$ at some steps and fall at others"


def curvature_clause(coefs: Sequence[float], stderrs: Sequence[float], names: Sequence[str],
                     dofs: Sequence[int] | None = None) -> str:
    """The sign of each least-squares quadratic's d_h^2 coefficient (``coefs``, one per architecture named
    in ``names``; ``stderrs`` their standard errors, NaN where the fit has no point to spare). An offset
    cannot change this sign: a law C H d_h^2 + C' has it positive, linear growth zero, flattening growth
    negative. A sign within :func:`memcap.fits.margin` standard errors of 0 (``dofs``: each fit's residual
    degrees of freedom; None: the normal rule), or with no standard error, is not read."""
    from memcap.fits import clearly_apart

    try:
        values = [float(v) for v in coefs]
    except (TypeError, ValueError):
        raise TypeError(f"coefs must be a sequence of real numbers, got {coefs!r}") from None
    if not values or not all(math.isfinite(v) for v in values):
        raise ValueError(f"coefs must be finite numbers, at least one, got {coefs!r}")
    if isinstance(names, str) or len(names) != len(values) or len(stderrs) != len(values):
        raise ValueError(f"names and stderrs must hold one entry per coefficient ({len(values)})")
    dof_list = _dofs(dofs, len(values))
    parts = []
    for i, (c, se, name, dof) in enumerate(zip(values, stderrs, names, dof_list)):
        try:
            apart = clearly_apart(c, se, 0.0, dof=dof)
        except (TypeError, ValueError) as e:
            raise type(e)(str(e).replace("se_a", f"stderrs[{i}]", 1)) from None
        shape = ("convex, as a $d_h^2$ term would make it" if c > 0 else "concave: the growth flattens" if c < 0
                 else "zero: no curvature")
        if math.isnan(float(se)):
            parts.append(f"{c:.2g} for the {name} (no standard error, the fit has no point to spare: its sign "
                         "is not read)")
        elif apart:
            parts.append(f"{_pm(c, float(se))} for the {name} ({shape})")
        else:
            parts.append(f"{_pm(c, float(se))} for the {name} (within {_margin_text([dof])} of 0: "
                         f"no curvature this fit can see)")
    return "the least-squares quadratic's $d_h^2$ coefficient is " + _join(parts)


def quadratic_verdict(slopes: Sequence[float], stderrs: Sequence[float] | None = None,
                      dofs: Sequence[int] | None = None) -> str:
    """Whether any architecture's capacity grows about quadratically in d_h (exponent >= :data:`QUADRATIC`).

    Given the exponents' standard errors ``stderrs`` (one per slope; NaN: unknown), the verdict also weighs
    them (:func:`memcap.fits.clearly_apart`, :data:`memcap.fits.SIGNIFICANT_SE` standard errors): "neither
    grows quadratically" needs every exponent clearly below 2, and an exponent that reaches
    :data:`QUADRATIC` while not clearly above 1 (linear growth) is said not to settle it. ``dofs``: each
    fit's residual degrees of freedom, for Student's t margin (:func:`memcap.fits.margin`; None: the
    normal rule); a fit through 3 points has 1, where the margin is 12.7 standard errors.
    """
    from memcap.fits import clearly_apart

    values = [float(v) for v in slopes]
    if not values or not all(math.isfinite(v) for v in values):
        raise ValueError(f"slopes must be finite numbers, at least one, got {slopes!r}")
    if stderrs is None:
        if max(values) < QUADRATIC:
            return "Neither architecture's capacity grows like a power $d_h^2$ at this size"
        return "At least one architecture's capacity grows about like $d_h^2$"
    if isinstance(stderrs, (str, bytes)) or not hasattr(stderrs, "__len__") or len(stderrs) != len(values):
        raise ValueError(f"stderrs must hold one standard error per slope ({len(values)}), got {stderrs!r}")
    for i, se in enumerate(stderrs):   # a negative or infinite error, or a non-number: refused, named
        try:
            clearly_apart(0.0, se)
        except (TypeError, ValueError) as e:
            raise type(e)(str(e).replace("se_a", f"stderrs[{i}]", 1)) from None
    errors = [float(se) for se in stderrs]
    dof_list = _dofs(dofs, len(values))

    def margin(idx):
        return _margin_text([dof_list[i] for i in idx])

    reach = sorted((i for i, a in enumerate(values) if a >= QUADRATIC), key=lambda i: -values[i])
    settled = [i for i in reach if clearly_apart(values[i], errors[i], 1.0, dof=dof_list[i])]
    if settled:
        return (f"At least one architecture's capacity grows about like $d_h^2$ "
                f"($\\alpha =$ {_pm(values[settled[0]], errors[settled[0]])})")
    if reach:
        a, se = values[reach[0]], errors[reach[0]]
        why = ("it has no standard error" if math.isnan(se)
               else f"it lies within {margin([reach[0]])} of linear growth's $\\alpha = 1$")
        return (f"A fitted exponent reaches the {QUADRATIC:g} read here as about quadratic "
                f"($\\alpha =$ {_pm(a, se)}), but {why}: these fits do not tell quadratic growth from linear")
    close = [i for i, (a, se) in enumerate(zip(values, errors)) if not clearly_apart(a, se, 2.0, dof=dof_list[i])]
    if not close:
        return (f"Neither architecture's capacity grows like a power $d_h^2$ at this size: each fitted "
                f"exponent lies more than {margin(range(len(values)))} below the quadratic's $\\alpha = 2$")
    near = [i for i in close if not math.isnan(errors[i])]
    parts = [f"{_pm(values[i], errors[i])}: no standard error, the fit has no point to spare"
             for i in close if math.isnan(errors[i])]
    if near:
        parts.insert(0, f"{_join([_pm(values[i], errors[i]) for i in near])}: {'each ' if len(near) > 1 else ''}"
                        f"within {margin(near)} of $\\alpha = 2$")
    shown = "; ".join(parts)
    return (f"No fitted exponent reaches the {QUADRATIC:g} read here as about quadratic, but these fits cannot "
            f"rule growth like $d_h^2$ out ($\\alpha =$ {shown})")
