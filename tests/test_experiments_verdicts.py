"""The shared pieces of the experiments chapters' verdicts (memcap/experiments/verdicts.py)."""
import pytest

from memcap.experiments.verdicts import MARKS, Verdict, grade, holds, percent, tally


def test_verdict_marks_and_validation():
    assert Verdict("yes", "holds").mark == "✓" and Verdict("no", "fails").mark == "✗"
    assert Verdict("partly", "half").mark == "partly" and set(MARKS) == {"yes", "partly", "no"}
    with pytest.raises(ValueError, match="status"):
        Verdict("maybe", "x")
    with pytest.raises(ValueError, match="non-empty"):
        Verdict("yes", " ")


def test_grade_counts_checks_and_partial_conditions():
    assert grade([True, True]) == "yes"
    assert grade([True, False]) == "partly"
    assert grade([False, False]) == "no"
    assert grade([False], partial=[True]) == "partly"
    assert grade([False], partial=[True, False]) == "no"
    with pytest.raises(ValueError, match="at least one"):
        grade([])


@pytest.mark.parametrize("hits, values, expected", [
    ([True], [300], "rises ($T = 300$)"),
    ([False], [300], "falls ($T = 300$)"),
    ([True, True], [300, 500], "rises for every $T$"),
    ([False, False], [300, 500], "falls for every $T$"),
    ([True, False, True], [300, 500, 10_000], r"rises for $T = 300$ and $10\,000$ but not for $T = 500$"),
])
def test_holds_phrases_one_or_many_values(hits, values, expected):
    assert holds(hits, values, "rises", "falls") == expected


def test_holds_refuses_mismatched_lengths():
    with pytest.raises(ValueError, match="same non-zero length"):
        holds([True], [1, 2], "a", "b")
    with pytest.raises(ValueError, match="same non-zero length"):
        holds([], [], "a", "b")


def test_percent():
    assert percent(0.9467) == "95 %" and percent(0) == "0 %"
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        percent(1.2)


def _v(status):
    return Verdict(status, "a clause")


@pytest.mark.parametrize("statuses, expected", [
    (["yes"], "In this build, the figure reproduces its paper's finding."),
    (["no"], "In this build, the figure does not reproduce its paper's finding."),
    (["yes", "yes"], "In this build, all 2 figures reproduce their paper's finding."),
    (["no", "no", "no"], "In this build, none of the 3 figures reproduces its paper's finding."),
    (["yes", "partly"], "In this build, 1 of the 2 figures reproduces its paper's finding, 1 partly."),
    (["partly", "no"], "In this build, 0 of the 2 figures reproduce their paper's finding, 1 partly and "
                       "1 not at all."),
    (["yes", "yes", "partly", "no", "yes", "partly"],
     "In this build, 3 of the 6 figures reproduce their paper's finding, 2 partly and 1 not at all."),
])
def test_tally_counts_zero_one_and_many(statuses, expected):
    assert tally([_v(s) for s in statuses]) == expected


def test_tally_refuses_what_is_not_a_list_of_verdicts():
    with pytest.raises(TypeError, match="verdicts"):
        tally(_v("yes"))
    with pytest.raises(ValueError, match="verdicts"):
        tally([])
    with pytest.raises(ValueError, match="verdicts"):
        tally(["yes"])
