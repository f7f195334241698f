"""Verdicts of the experiments chapters: the words that state a finding, decided from the results.

A chapter never types "accuracy grows with H for every T": a function of the figure's summary decides
it and returns a :class:`Verdict`, whose ``text`` the chapter glues into its prose and whose ``status``
fills the chapter's opening table (reproduced ✓, partly, not reproduced ✗). The functions live in the
figure modules (``mahdavi_fig2a.verdict``, ``dana_fig1a.verdict``, ...); this module holds what they
share: the type and the phrasing of "for which values of T" a property holds (:func:`holds`), so that one sentence is
right for the quick profile (often one or two values of T) and for the paper profile (four to six).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from memcap._checks import host_array

STATUSES = ("yes", "partly", "no")
"""A finding of a paper is reproduced ('yes'), partly reproduced, or not ('no')."""

MARKS = {"yes": "✓", "partly": "partly", "no": "✗"}
"""How the opening table of an experiments chapter writes each status."""


@dataclass(frozen=True)
class Verdict:
    """A finding checked on results: ``status`` one of :data:`STATUSES`, ``text`` a clause for the prose
    (no final full stop, starts in lower case unless it starts with a symbol), ``shows`` a short
    account for the opening table of what the results show (math in ``$...$``)."""

    status: str
    text: str
    shows: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")
        if not isinstance(self.text, str) or not self.text.strip():
            raise ValueError("text must be a non-empty clause")

    @property
    def mark(self) -> str:
        """✓, partly or ✗, for the opening table."""
        return MARKS[self.status]


def grade(checks: Sequence[bool], partial: Sequence[bool] = ()) -> str:
    """'yes' when every check holds, 'partly' when some do (or every ``partial`` check holds), else 'no'."""
    checks = [bool(c) for c in checks]
    if not checks:
        raise ValueError("checks must hold at least one condition")
    if all(checks):
        return "yes"
    if any(checks) or (partial and all(bool(p) for p in partial)):
        return "partly"
    return "no"


def holds(hits: Sequence[bool], values: Sequence[int], claim: str, negation: str, symbol: str = "T") -> str:
    """A clause saying for which ``values`` of ``symbol`` a property holds, right for one value or many.

    ``claim`` says the property holds, ``negation`` that it fails (both without the values)::

        holds([True, True], [300, 500], "accuracy rises", "accuracy does not rise")
        # 'accuracy rises for every $T$'
        holds([False], [300], "accuracy rises", "accuracy does not rise")
        # 'accuracy does not rise ($T = 300$)'   (one value qualifies the whole clause)
        holds([True, False], [300, 500], "accuracy rises", "accuracy does not rise")
        # 'accuracy rises for $T = 300$ but not for $T = 500$'
    """
    hits = [bool(h) for h in np.ravel(host_array(hits))]
    values = [int(v) for v in np.ravel(host_array(values))]
    if len(hits) != len(values) or not values:
        raise ValueError(f"hits and values must have the same non-zero length, got {len(hits)} and {len(values)}")
    if len(values) == 1:
        return f"{claim if hits[0] else negation} (${symbol} = {_num(values[0])}$)"
    if all(hits):
        return f"{claim} for every ${symbol}$"
    if not any(hits):
        return f"{negation} for every ${symbol}$"
    yes = [v for v, h in zip(values, hits) if h]
    no = [v for v, h in zip(values, hits) if not h]
    return f"{claim} for {_list(yes, symbol)} but not for {_list(no, symbol)}"


def _num(v: int) -> str:
    return f"{int(v):,}".replace(",", r"\,")


def _list(values: Sequence[int], symbol: str) -> str:
    items = [_num(v) for v in values]
    if len(items) == 1:
        return f"${symbol} = {items[0]}$"
    return f"${symbol} = {', '.join(items[:-1])}$ and ${items[-1]}$"


def percent(x: float) -> str:
    """A share in [0, 1] as a percentage for prose: ``0.9467 -> '95 %'``."""
    x = float(x)
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"a share must lie in [0, 1], got {x}")
    return f"{100 * x:.0f} %"


def tally(verdicts: Sequence[Verdict]) -> str:
    """A sentence counting how many figures reproduce their paper's finding, for an experiments chapter.

    ``[yes, yes, partly] -> 'In this build, 2 of the 3 figures reproduce their paper's finding, 1 partly.'``
    Every status present is named; none is named with a count of zero.
    """
    if isinstance(verdicts, Verdict) or not isinstance(verdicts, (list, tuple)):
        raise TypeError(f"verdicts must be a list of Verdict, got {type(verdicts).__name__}")
    if not verdicts or not all(isinstance(v, Verdict) for v in verdicts):
        raise ValueError("verdicts must be a non-empty list of Verdict")
    n = len(verdicts)
    count = {s: sum(v.status == s for v in verdicts) for s in STATUSES}
    figures = "the figure" if n == 1 else f"the {n} figures"
    if count["yes"] == n:
        return f"In this build, {'the figure reproduces its' if n == 1 else f'all {n} figures reproduce their'} " \
               f"paper's finding."
    if count["no"] == n:
        return f"In this build, {'the figure does' if n == 1 else f'none of the {n} figures'} " \
               f"{'not reproduce' if n == 1 else 'reproduces'} its paper's finding."
    verb = "reproduces its" if count["yes"] == 1 else "reproduce their"
    head = f"In this build, {count['yes']} of {figures} {verb} paper's finding"
    rest = [f"{count['partly']} partly"] if count["partly"] else []
    rest += [f"{count['no']} not at all"] if count["no"] else []
    return head + ", " + " and ".join(rest) + "."
