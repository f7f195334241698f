"""Part III's generated clauses (memcap.experiments.syn_prose): each case a sentence can meet, and that the
sentence agrees with the numbers it is built from."""
import math
import re

import pytest

from memcap.experiments import syn_prose as sp

NAME = "Dana et al.'s count"


def factors(text):
    """The factors a clause quotes, as floats."""
    return [float(x) for x in re.findall(r"factor (?:of|between) ([0-9.]+)(?: and ([0-9.]+))?", text)[0] if x]


@pytest.mark.parametrize("count, noun, text", [(0, "point", "0 points"), (1, "point", "1 point"),
                                               (3, "point", "3 points"),
                                               (1, "axis", "1 axis")])
def test_count_noun_agrees(count, noun, text):
    assert sp.count_noun(count, noun) == text
    assert sp.count_noun(2, "axis", "axes") == "2 axes"


def test_count_noun_refuses_bad_counts():
    with pytest.raises(ValueError, match="count must be >= 0"):
        sp.count_noun(-1, "point")
    with pytest.raises(TypeError, match="count must be an integer"):
        sp.count_noun(1.5, "point")
    with pytest.raises(TypeError, match="count must be an integer"):
        sp.count_noun(True, "point")


def test_number_writes_counts_and_means():
    assert sp.number(12.0) == "12" and sp.number(12.5) == "12.5" and sp.number(0) == "0"
    with pytest.raises(ValueError, match="value must be finite"):
        sp.number(float("nan"))


def test_exceeds_all_points_range_over_all_and_smallest_count():
    text = sp.exceeds_clause([6, 8, 30], [3, 4, 5], ["$H = 1$", "$H = 2$", "$H = 4$"], NAME)
    assert text.startswith(f"exceeds {NAME} at every one of the 3 points, by a factor between 2.0 and 6.0")
    assert "the largest factor, 6.0, is at $H = 4$, where the count is 5" in text
    assert "smallest" not in text and "below" not in text and "nothing" not in text


def test_exceeds_names_the_smallest_count_when_it_gives_the_largest_factor():
    text = sp.exceeds_clause([20, 8], [3, 4], ["$n = 2$", "$n = 3$"], NAME)
    assert "at both points" in text
    assert "the largest factor, 6.7, is at $n = 2$, where the count is the smallest, 3" in text


def test_a_failed_point_is_outside_the_range_and_named():
    text = sp.exceeds_clause([0, 12, 45], [9, 3, 3], ["$H = 1$", "$H = 2$", "$H = 4$"], NAME)
    assert text.startswith(f"exceeds {NAME} at 2 of the 3 points, by a factor between 4.0 and 15.0 there")
    assert min(factors(text)) > 1                      # the 0 is not inside an "exceeds" range
    assert "at $H = 1$ training memorized nothing (count 9)" in text


def test_points_equal_to_or_below_the_count_are_named_with_their_numbers():
    text = sp.exceeds_clause([3, 2, 8], [3, 4, 4], ["a", "b", "c"], NAME)
    assert "at 1 of the 3 points, by a factor of 2.0 there" in text
    assert "at a it equals the count, 3" in text
    assert "at b it stays below the count (2 against 4)" in text
    assert "largest factor" not in text               # one exceeding point: nothing to single out


def test_no_point_exceeds():
    text = sp.exceeds_clause([1, 2], [3, 4], ["a", "b"], NAME)
    assert text.startswith(f"does not exceed {NAME} at either point")
    assert "factor" not in text and "b it stays below the count (2 against 4)" in text


@pytest.mark.parametrize("measured, verdict", [([5], "exceeds"), ([3], "does not exceed"), ([0], "does not exceed")])
def test_one_point(measured, verdict):
    text = sp.exceeds_clause(measured, [3], ["$H = 1$"], NAME)
    assert text.startswith(f"{verdict} {NAME} at the one point measured")
    assert ("factor of 1.7" in text) == (measured[0] == 5)
    assert "largest" not in text


def test_equal_factors_are_one_factor_not_a_range():
    text = sp.exceeds_clause([6, 8], [3, 4], ["a", "b"], NAME)
    assert "by a factor of 2.0" in text and "between" not in text


def test_means_over_seeds_are_written_with_a_decimal():
    assert "(2.5 against 4)" in sp.exceeds_clause([2.5, 9], [4, 3], ["a", "b"], NAME)


@pytest.mark.parametrize("args, error, match", [
    (([], [], [], NAME), ValueError, "measured must not be empty"),
    (([1, 2], [3], ["a", "b"], NAME), ValueError, "one entry per point"),
    (([1], [0], ["a"], NAME), ValueError, "counts must hold finite numbers > 0"),
    (([-1], [3], ["a"], NAME), ValueError, "measured must hold finite numbers >= 0"),
    (([float("nan")], [3], ["a"], NAME), ValueError, "measured must hold finite numbers"),
    (([1], [3], "a", NAME), TypeError, "names must be a sequence of strings"),
    (([1], [3], ["a"], ""), ValueError, "count_name must be a non-empty string"),
    ((["x"], [3], ["a"], NAME), TypeError, "measured must be a sequence of real numbers"),
])
def test_exceeds_clause_refuses_bad_input(args, error, match):
    with pytest.raises(error, match=match):
        sp.exceeds_clause(*args)


@pytest.mark.parametrize("beyond, says", [
    ([True, True, True], "for every number of heads tried, so some of the gap belongs to the proofs"),
    ([True, False, False], "for 1 of the 3 numbers of heads tried, so some of the gap"),
    ([True], "for the one number of heads tried"),
    ([False, False], "do not go beyond Mahdavi et al.'s count for any number of heads tried"),
])
def test_proof_gap_clause_says_some_never_much(beyond, says):
    text = sp.proof_gap_clause(beyond, 2)
    assert says in text and "$n = 2$" in text
    assert "much of the gap" not in text
    assert ("how much, one size does not say" in text) == any(beyond)


def test_exact_reading_follows_the_runs():
    assert sp.exact_reading([True, True]).endswith("training goes beyond it: part of the gap is the proofs'")
    assert "for 1 of the 2 numbers of heads" in sp.exact_reading([False, True])
    assert sp.exact_reading([False]).endswith("training does not go beyond it")
    with pytest.raises(ValueError, match="beyond must not be empty"):
        sp.exact_reading([])
    with pytest.raises(TypeError, match="beyond must be a sequence of booleans"):
        sp.proof_gap_clause(3, 2)


@pytest.mark.parametrize("a, b, says", [
    (0.59, 0.26, "saturated in MHA (59 %) but not in AoT (26 %): on this point the two models differ"),
    (0.26, 0.59, "saturated in AoT (59 %) but not in MHA (26 %)"),
    (0.6, 0.7, "saturated in both models (MHA 60 %, AoT 70 %)"),
    (0.2, 0.5, "In neither model are most head-example pairs saturated (MHA 20 %, AoT 50 %)"),
    (0.5, 0.5, "In neither model"),
])
def test_majority_saturated_clause_agrees_with_its_shares(a, b, says):
    text = sp.majority_saturated_clause("MHA", a, "AoT", b)
    assert says in text
    assert ("differ" in text) == ((a > 0.5) != (b > 0.5))


def test_majority_saturated_clause_refuses_shares_outside_0_1():
    with pytest.raises(ValueError, match="first_share must be a share in \\[0, 1\\]"):
        sp.majority_saturated_clause("MHA", 59, "AoT", 0.2)
    with pytest.raises(ValueError, match="second must be a non-empty model name"):
        sp.majority_saturated_clause("MHA", 0.5, "", 0.2)


def test_comparable_clause():
    assert sp.comparable_clause("The layer", True, 1.0) == ""
    text = sp.comparable_clause("The layer", False, 0.982)
    assert "best accuracy 0.982" in text and "not comparable with Mahdavi et al.'s Figure 3" in text
    with pytest.raises(ValueError, match="accuracy 1"):
        sp.comparable_clause("The layer", True, 0.9)
    with pytest.raises(ValueError, match="accuracy must be a share"):
        sp.comparable_clause("The layer", False, 1.5)


@pytest.mark.parametrize("beyond, text", [
    ([True, True, True], "beyond X for every number of heads tried"),
    ([True, False, True], "beyond X for 2 of the 3 numbers of heads tried"),
    ([False, False], "beyond X for none of the 2 numbers of heads tried"),
    ([True], "beyond X for the one number of heads tried"),
    ([False], "not beyond X for the one number of heads tried"),
])
def test_beyond_clause(beyond, text):
    assert sp.beyond_clause(beyond, "X") == text


@pytest.mark.parametrize("ratio, word", [(0.5, "less"), (0.8, "same"), (1.0, "same"), (1.25, "same"),
                                         (1.3, "more"), (0.0, "less")])
def test_ratio_phrase_reads_a_ratio_with_a_margin(ratio, word):
    assert sp.ratio_phrase(ratio, more="more", less="less", same="same") == word


def test_ratio_phrase_refuses_bad_input():
    with pytest.raises(ValueError, match="ratio must be a finite number >= 0"):
        sp.ratio_phrase(float("inf"), more="a", less="b", same="c")
    with pytest.raises(ValueError, match="band must satisfy"):
        sp.ratio_phrase(1.0, more="a", less="b", same="c", band=(1.1, 2.0))


@pytest.mark.parametrize("gains, text", [
    ([4.4, 1.3], "Both A and B, as trained, memorize more than their theorems' counts"),
    ([2.0], "The trained model (A) memorizes more than its theorem's count"),
    ([2.0, 0.5], "A memorizes more than its count; B memorizes less than its count"),
    ([1.0, 3.0], "B memorizes more than its count; A memorizes exactly its count"),
    ([0.5, 0.0], "A and B memorize less than their counts"),
])
def test_gains_clause_agrees_with_each_gain(gains, text):
    assert sp.gains_clause(gains, ["A", "B"][:len(gains)]) == text
    assert sp.gains_clause([2.0, 3.0, 4.0], ["A", "B", "C"]).startswith("A, B and C, as trained, memorize more")


def test_per_size_clause_reads_every_size_and_says_when_they_disagree():
    words = dict(more="wider memorize more", less="more heads memorize more", same="about as much")
    assert sp.per_size_clause({4: 1.5}, **words) == "wider memorize more (ratio 1.50 at $H = 4$)"
    assert sp.per_size_clause({16: 1.4, 4: 1.5}, **words) == (
        "wider memorize more (ratios 1.50 at $H = 4$ and 1.40 at $H = 16$)")
    # the review's case: the two sizes disagree, and the sentence says so rather than reading one of them
    assert sp.per_size_clause({4: 1.5, 16: 0.67}, **words) == (
        "wider memorize more at $H = 4$ (ratio 1.50) but more heads memorize more at $H = 16$ (ratio 0.67)")
    # a censored capacity makes the ratio a bound: read only where the bound decides
    assert sp.ratio_kind(True, False) == "at least" and sp.ratio_kind(False, True) == "at most"
    assert sp.ratio_kind(False, False) == "exact" and sp.ratio_kind(True, True) == "unknown"
    assert sp.per_size_clause({4: 1.5}, kinds={4: "at least"}, **words) == (
        "wider memorize more (ratio at least 1.50 at $H = 4$)")
    # the review's case: both shapes at the largest table, a ratio of 1.0 read as "about as much"
    assert sp.per_size_clause({4: 1.0}, kinds={4: "unknown"}, **words).startswith("no reading: the search")
    assert sp.per_size_clause({4: 1.0}, kinds={4: "at least"}, **words).startswith("no reading")
    assert sp.per_size_clause({4: 0.5}, kinds={4: "at most"}, **words) == (
        "more heads memorize more (ratio at most 0.50 at $H = 4$)")
    with pytest.raises(ValueError, match="kinds must give one of"):
        sp.per_size_clause({4: 1.0}, kinds={16: "exact"}, **words)
    with pytest.raises(ValueError, match="kinds must give one of"):
        sp.per_size_clause({4: 1.0}, kinds={4: "roughly"}, **words)
    for bad in ({}, [1.5], {0: 1.5}, {True: 1.5}, {2.0: 1.5}):
        with pytest.raises(ValueError, match="ratios must"):
            sp.per_size_clause(bad, **words)
    with pytest.raises(ValueError, match="ratio must be a finite number"):
        sp.per_size_clause({4: -1.0}, **words)


def test_gains_clause_reads_a_censored_gain_as_a_lower_bound():
    # a censored capacity is a lower bound: above the count it still reads "more"...
    assert sp.gains_clause([1.5, 2.0], ["A", "B"], [True, False]).startswith("Both A and B")
    # ...but a bound at or below the count decides nothing, where the exact gain would read "less"
    assert sp.gains_clause([0.5, 2.0], ["A", "B"]).startswith("B memorizes more than its count; A memorizes less")
    text = sp.gains_clause([0.5, 2.0], ["A", "B"], [True, False])
    assert "less" not in text
    assert "for A the search memorized even its largest table, which does not exceed the count" in text
    with pytest.raises(ValueError, match="one flag per gain"):
        sp.gains_clause([0.5, 2.0], ["A", "B"], [True])


def test_gains_clause_refuses_mismatched_names():
    with pytest.raises(ValueError, match="one non-empty name per gain"):
        sp.gains_clause([1.0, 2.0], ["A"])
    with pytest.raises(ValueError, match="gains must hold finite numbers >= 0"):
        sp.gains_clause([-1.0], ["A"])


@pytest.mark.parametrize("failed, points, says", [
    (8, 8, "so on these data"), (3, 8, "and on those tables"), (0, 8, "applies with its full count"),
    (1, 1, "so on these data")])
def test_assumption1_reading(failed, points, says):
    assert says in sp.assumption1_reading(failed, points)


def test_assumption1_reading_refuses_more_failures_than_points():
    with pytest.raises(ValueError, match="failed must lie in \\[0, points\\]"):
        sp.assumption1_reading(3, 2)


@pytest.mark.parametrize("dh, heads, says", [
    (0.0, 7.2, "buys far less"), (-0.1, 1.0, "buys far less"), (-0.9, 1.0, "buys far less"),
    (0.49, 1.0, "buys far less"), (0.5, 1.0, "about as much"), (1.0, 1.0, "about as much"),
    (2.0, 1.0, "about as much"), (3.0, 1.0, "far more"), (0.5, 0.0, "cannot compare"),
    (0.5, -0.2, "cannot compare")])
def test_head_dim_verdict(dh, heads, says):
    assert says in sp.head_dim_verdict(dh, heads)


@pytest.mark.parametrize("dh, heads, says", [
    (math.inf, 1.0, "must be finite"), (0.5, math.nan, "must be finite"), (-1.0, 1.0, "must exceed -1"),
    (0.5, -1.5, "must exceed -1")])
def test_head_dim_verdict_refuses_impossible_growths(dh, heads, says):
    with pytest.raises(ValueError, match=says):
        sp.head_dim_verdict(dh, heads)


@pytest.mark.parametrize("sat, unsat, says", [
    (0.6, 0.95, "shows Mahdavi et al.'s picture"), (0.48, 0.97, "only a minority"),
    (0.7, 0.5, "served by saturated heads only"), (0.2, 0.5, "shows neither"), (0.5, 0.9, "shows neither")])
def test_saturation_reading(sat, unsat, says):
    assert says in sp.saturation_reading(sat, unsat, memorized=True)


@pytest.mark.parametrize("sat, unsat", [(0.6, 0.95), (0.48, 0.97), (0.2, 0.5)])
def test_saturation_reading_of_a_model_that_memorized_nothing(sat, unsat):
    # the picture is of a model at perfect memorization: shares that match it must not read as "shows" it
    text = sp.saturation_reading(sat, unsat, memorized=False)
    assert text.startswith("cannot show Mahdavi et al.'s picture")
    assert "shows" not in text


def test_saturation_reading_needs_a_bool_memorized():
    with pytest.raises(TypeError, match="memorized must be a bool"):
        sp.saturation_reading(0.6, 0.95, memorized=1)


def test_robust_clause():
    # the quick run, about: both keep an unsaturated head almost everywhere, under half the pairs saturated
    assert sp.robust_clause([0.97, 0.98], [0.47, 0.26]).startswith(
        "In both architectures the one robust feature of Mahdavi et al.'s picture is the last")
    assert sp.robust_clause([0.97, 0.98], [0.47, 0.8]).startswith("In both architectures the one robust")
    # most pairs saturated in both models: both features hold, so "the one robust feature" would be false
    assert sp.robust_clause([0.97, 0.98], [0.8, 0.7]).startswith("In both architectures both features")
    assert sp.robust_clause([0.97], [0.8]).startswith("Both features")
    assert sp.robust_clause([0.97], [0.2]).startswith("Almost no example")
    assert sp.robust_clause([0.97, 0.9], [0.8, 0.8]).startswith("Not even the last feature")
    with pytest.raises(ValueError, match="with_unsaturated must be a share"):
        sp.robust_clause([1.5], [0.5])
    with pytest.raises(ValueError, match="one share per model"):
        sp.robust_clause([0.97, 0.98], [0.5])


@pytest.mark.parametrize("trained, says", [(0.26, "Dana et al.'s generic construction than"),
                                           (0.5, "Mahdavi et al.'s saturating construction than"),
                                           (0.335, "neither construction")])
def test_closer_clause(trained, says):
    assert sp.closer_clause(trained, 0.56, 0.11).startswith(says)


@pytest.mark.parametrize("k, text", [(0, "No point falls below x"), (1, "1 point falls below x"),
                                     (4, "4 points fall below x")])
def test_short_points_clause_agrees(k, text):
    assert sp.short_points_clause(k, "point", "points", "x") == text


@pytest.mark.parametrize("alpha, word", [(2.0, "about quadratic"), (1.7, "about quadratic"),
                                         (1.5, "between linear and quadratic"), (1.0, "about linear"),
                                         (0.2, "slower than linear"), (-1.0, "slower than linear")])
def test_growth_word_and_the_quadratic_verdict_share_a_threshold(alpha, word):
    assert sp.growth_word(alpha) == word
    assert sp.shape_clause(alpha, [1.0, 2.0, 4.0], [1, 2, 4]) == word
    quadratic = sp.quadratic_verdict([alpha, 0.5]).startswith("At least one")
    assert quadratic == (word == "about quadratic")


def test_quadratic_verdict_weighs_the_exponents_standard_errors():
    nan = float("nan")
    # the quick run's exponents, about: 0.71 + 2 x 0.59 = 1.89 < 2, 0.37 + 2 x 0.21 < 2
    assert sp.quadratic_verdict([0.71, 0.37], [0.59, 0.21]) == (
        "Neither architecture's capacity grows like a power $d_h^2$ at this size: each fitted exponent lies "
        "more than 2 standard errors below the quadratic's $\\alpha = 2$")
    # below 1.7, but 1.45 + 2 x 0.3 > 2: not ruled out, and the sentence shows which exponent and why
    loose = sp.quadratic_verdict([1.45, 0.37], [0.3, 0.21])
    assert loose.startswith("No fitted exponent reaches the 1.7 read here as about quadratic, but these fits "
                            "cannot rule growth like $d_h^2$ out")
    assert "1.45\u00a0±\u00a00.30: within 2 standard errors of $\\alpha = 2$" in loose and "0.37" not in loose
    assert "1.45: no standard error" in sp.quadratic_verdict([1.45, 0.37], [nan, 0.21])
    # at or above 1.7: about quadratic only when clearly above linear growth (1)
    assert sp.quadratic_verdict([1.8, 0.37], [0.1, 0.21]).startswith("At least one architecture's capacity grows")
    unsettled = sp.quadratic_verdict([1.9, 0.37], [0.5, 0.21])
    assert ("($\\alpha =$ 1.90\u00a0±\u00a00.50), but it lies within 2 standard errors of linear growth's "
            "$\\alpha = 1$") in unsettled
    assert "it has no standard error" in sp.quadratic_verdict([1.9, 0.37], [nan, 0.21])
    # a settled one is reported even when a larger unsettled one exists
    assert "1.75\u00a0±\u00a00.05" in sp.quadratic_verdict([1.9, 1.75], [1.0, 0.05])
    # with the fits' residual degrees of freedom: the quick run's fits through 3 points have 1 each, where
    # 0.71 + 12.7 x 0.59 and 0.37 + 12.7 x 0.21 both pass 2: growth like d_h^2 is not ruled out
    quick = sp.quadratic_verdict([0.71, 0.37], [0.59, 0.21], dofs=[1, 1])
    assert quick.startswith("No fitted exponent reaches the 1.7") and "cannot rule growth like $d_h^2$ out" in quick
    assert "within 12.7 standard errors (Student's $t$ at 95 % for 1 residual degree of freedom)" in quick
    # eight points (6 degrees of freedom, t = 2.45): 0.71 + 2.45 x 0.2 < 2, ruled out
    assert sp.quadratic_verdict([0.71, 0.37], [0.2, 0.21], dofs=[6, 6]).startswith(
        "Neither architecture's capacity grows like a power $d_h^2$ at this size: each fitted exponent lies more "
        "than 2.45 standard errors (Student's $t$ at 95 % for 6 residual degrees of freedom) below")
    # about quadratic needs the exponent clearly above 1: 1.8 +- 0.1 is, by 8 errors, but not at 1 dof
    assert sp.quadratic_verdict([1.8, 0.37], [0.1, 0.21], dofs=[1, 1]).startswith("A fitted exponent reaches")
    with pytest.raises(ValueError, match="one number of degrees of freedom per estimate"):
        sp.quadratic_verdict([0.71, 0.37], [0.59, 0.21], dofs=[1])
    # without errors, the point estimates decide as before
    assert sp.quadratic_verdict([1.45, 0.37]).startswith("Neither")
    with pytest.raises(ValueError, match="one standard error per slope"):
        sp.quadratic_verdict([0.5, 0.5], [0.1])
    with pytest.raises(ValueError, match=r"stderrs\[0\] must be a finite standard error >= 0"):
        sp.quadratic_verdict([0.5, 0.5], [-0.1, 0.1])
    with pytest.raises(ValueError, match=r"stderrs\[1\] must be a finite standard error"):
        sp.quadratic_verdict([0.5, 0.5], [0.1, float("inf")])
    with pytest.raises(TypeError, match=r"stderrs\[1\] must be a real number"):
        sp.quadratic_verdict([0.5, 0.5], [0.1, "x"])


def test_shape_clause_says_where_a_curve_falls():
    assert sp.shape_clause(0.71, [16, 53, 43], [1, 2, 4]).startswith("not monotone: it falls from $d_h = 2$ to 4")
    # the quick run's brackets: 53 memorized by every seed at d_h = 2, failed by every seed at 4: a real fall
    assert sp.shape_clause(0.71, [16, 53, 43], [1, 2, 4], [16, 53, 43], [21, 64, 53]).startswith("not monotone")
    # three seeds' mean 107 -> 106.67, brackets [107, 128) and [106, 128): a dip the search cannot resolve
    dip = sp.shape_clause(0.3, [64, 107, 106.67], [1, 2, 4], [64, 107, 106], [85, 128, 128])
    assert dip == ("slower than linear; its mean dips from $d_h = 2$ to 4, within the search's resolution "
                   "(the seeds' brackets overlap)")
    with pytest.raises(ValueError, match="same length"):
        sp.shape_clause(1.0, [1.0, 2.0], [1])
    with pytest.raises(ValueError, match="given together"):
        sp.shape_clause(1.0, [1.0, 2.0], [1, 2], [1.0, 2.0])
    with pytest.raises(ValueError, match="lows <= capacities < uppers"):
        sp.shape_clause(1.0, [1.0, 2.0], [1, 2], [1.0, 3.0], [2.0, 4.0])


@pytest.mark.parametrize("a, b, says", [(3, 5, "starts lower"), (5, 5, "same capacity"), (6, 5, "starts higher")])
def test_start_clause(a, b, says):
    assert says in sp.start_clause(a, b)


def test_steeper_and_cost_clauses():
    assert "power of $d_h$ is the larger" in sp.steeper_clause(1.2, 0.8)
    assert "is not the larger" in sp.steeper_clause(0.8, 0.8)
    # with standard errors: 0.4 apart with errors 0.1 each is 2.8 standard errors of the difference
    assert "is the larger" in sp.steeper_clause(1.2, 0.8, 0.1, 0.1)
    loose = sp.steeper_clause(0.71, 0.37, 0.59, 0.21)   # the quick run's exponents, about
    assert "0.71\u00a0±\u00a00.59 with a shared compression, 0.37\u00a0±\u00a00.21 for Eq. (2)" in loose
    assert loose.endswith("differ by less than 2 standard errors of their difference: these fits do not rank them")
    assert "no standard error" in sp.steeper_clause(1.2, 0.8, float("nan"), 0.1)
    # 2.8 standard errors of the difference rank them by the normal rule, not with 1 degree of freedom
    assert "differ by less than 12.7 standard errors (Student's $t$ at 95 % for 1 residual degree of freedom)" in (
        sp.steeper_clause(1.2, 0.8, 0.1, 0.1, dof=1))
    assert "starts low" not in sp.steeper_clause(1.2, 0.8)     # no claim about where the curves start
    with pytest.raises(ValueError, match="given together"):
        sp.steeper_clause(1.2, 0.8, 0.1)
    with pytest.raises(ValueError, match="se_b must be a finite standard error >= 0"):
        sp.steeper_clause(1.2, 0.8, 0.1, -0.1)
    assert "rise with" in sp.cost_clause([[1.0, 2.0], [0.5]])
    assert "fall with" in sp.cost_clause([[-1.0], [-0.5, -0.1]])
    assert "rise with $d_h$ at some steps and fall at others" in sp.cost_clause([[1.0, -2.0], [0.5]])
    with pytest.raises(ValueError, match="at least one difference"):
        sp.cost_clause([[]])
    with pytest.raises(ValueError, match="slopes must be finite"):
        sp.quadratic_verdict([])


def test_bracket_clause_says_whether_the_search_resolves_a_change():
    same = sp.bracket_clause([53, 53], [64, 64], ["$d_h = 1$", "$d_h = 4$"])
    assert "in $[53, 64)$ at $d_h = 1$ and in $[53, 64)$ at $d_h = 4$" in same
    assert same.endswith("below what the search resolves")
    apart = sp.bracket_clause([16, 107], [32, math.inf], ["a", "b"])
    assert "at least 107 at b" in apart and apart.endswith("the change is resolved")
    with pytest.raises(ValueError, match="upper end must exceed"):
        sp.bracket_clause([64, 53], [64, 64], ["a", "b"])
    with pytest.raises(ValueError, match="two points"):
        sp.bracket_clause([1, 2, 3], [4, 5, 6], ["a", "b", "c"])


def test_curvature_clause_reads_the_sign_an_offset_cannot_change():
    nan = float("nan")
    three = sp.curvature_clause([-7.17, 2.0], [nan, nan], ["AoT of Eq. (2)", "shared compression"])
    assert three.startswith("the least-squares quadratic's $d_h^2$ coefficient is -7.2 for the AoT of Eq. (2) "
                            "(no standard error, the fit has no point to spare: its sign is not read)")
    assert "convex" not in three and "concave" not in three      # no sign read without an error
    assert "(convex, as a $d_h^2$ term would make it" in sp.curvature_clause([2.0], [0.1], ["x"])
    # 3.5 standard errors: read with 3 residual degrees of freedom (t = 3.18), not with 2 (t = 4.30)
    assert "(convex" in sp.curvature_clause([0.35], [0.1], ["x"], dofs=[3])
    assert ("within 4.3 standard errors (Student's $t$ at 95 % for 2 residual degrees of freedom) of 0"
            in sp.curvature_clause([0.35], [0.1], ["x"], dofs=[2]))
    with pytest.raises(ValueError, match=r"dofs\[0\] must be an integer >= 0"):
        sp.curvature_clause([0.35], [0.1], ["x"], dofs=[-1])
    with pytest.raises(ValueError, match="one number of degrees of freedom per estimate"):
        sp.curvature_clause([0.35], [0.1], ["x"], dofs=[1, 2])
    assert "within 2 standard errors of 0" in sp.curvature_clause([0.5], [0.4], ["x"])
    assert "1.00\u00a0±\u00a00.10 for the x (convex" in sp.curvature_clause([1.0], [0.1], ["x"])
    with pytest.raises(ValueError, match="one entry per coefficient"):
        sp.curvature_clause([1.0, 2.0], [0.1], ["x", "y"])
    with pytest.raises(ValueError, match=r"stderrs\[0\]"):
        sp.curvature_clause([1.0], [-0.1], ["x"])
