"""Checkers of the exercises of *The rank of the attention features* (``book/dana/attention_rank.md``)."""
from __future__ import annotations

import math
import random

import sympy as sp

from memcap.construct import dana_features as features
from memcap.data import all_sequences
from memcap.textbook.exercises.checking import case, checker, close, expect, fail, numbers_by_key

CHAPTER = "book/dana/attention_rank"
NAMES = ("w", "a1", "a2", "y1", "y2")


def _numeric(expr, what: str):
    """``expr`` (a SymPy expression in the symbols named w, a1, a2, y1, y2) as a float function of them."""
    given = expr
    try:
        expr = sp.sympify(expr)
    except (sp.SympifyError, TypeError):
        fail(f"{what} should be a SymPy expression", got=type(given).__name__)
    if not isinstance(expr, sp.Expr):
        fail(f"{what} should be a SymPy expression", got=type(given).__name__)
    names = {s.name for s in expr.free_symbols}
    expect(names <= set(NAMES), f"{what} should be written with the symbols w, a1, a2, y1, y2 only",
           got=f"symbols {sorted(names)}",
           hint="a1, a2 are the first coordinates of x_1, x_2 and y1, y2 another coordinate")
    by_name = {s.name: s for s in expr.free_symbols}
    symbols = [by_name.get(n, sp.Symbol(n)) for n in NAMES]
    function = sp.lambdify(symbols, expr, modules="math")
    return lambda *values: float(function(*values))


def _softmax_form(w, a1, a2, y1, y2):
    z1, z2 = w * a2 * a1, w * a2 * a2
    top = max(z1, z2)
    e1, e2 = math.exp(z1 - top), math.exp(z2 - top)
    return (e1 * y1 + e2 * y2) / (e1 + e2)


def _points(count: int = 8):
    rng = random.Random(20240)
    return [tuple(rng.uniform(-1.5, 1.5) for _ in NAMES) for _ in range(count)]


def _agrees(function, reference, points) -> bool:
    try:
        return all(math.isclose(function(*p), reference(*p), rel_tol=1e-9, abs_tol=1e-12) for p in points)
    except (ValueError, TypeError, ZeroDivisionError, OverflowError):
        return False


@checker("ex-dana-ar-2", CHAPTER)
def closed_form(A_y, slope):
    """The closed form of A(t) (one coordinate, S = 2, W_QK = w e_1 e_1^T) as a SymPy expression in w,
    a1, a2 (first coordinates) and y1, y2 (another coordinate): equal to the softmax average at random
    points; and its derivative in w at w = 0, equal to the stated slope a2 (a1 - a2) (y1 - y2) / 4."""
    points = _points()
    with case("A as a function of w, a1, a2, y1, y2"):
        A = _numeric(A_y, "A_y")
        if not _agrees(A, _softmax_form, points):
            hint = ("the query is x_2, so the score of position s is w a2 a_s; A is the softmax-weighted "
                    "average of y1 and y2")
            if _agrees(A, lambda w, a1, a2, y1, y2: _softmax_form(w, a1, a2, y2, y1), points):
                hint = "the weights of the two positions are swapped: position 1 (score w a2 a1) weighs y1"
            elif _agrees(A, lambda w, a1, a2, y1, y2: _softmax_form(0, a1, a2, y1, y2), points):
                hint = "that is the uniform average of w = 0; A depends on w through the softmax"
            fail("A_y is not the softmax average of y1 and y2 with scores w a2 a1 and w a2 a2",
                 expected="equal at random values of the five symbols", got="different values", hint=hint)
    with case("the slope at w = 0"):
        d = _numeric(slope, "slope")
        stated = lambda w, a1, a2, y1, y2: a2 * (a1 - a2) * (y1 - y2) / 4     # noqa: E731
        if not _agrees(d, stated, points):
            hint = "differentiate A_y in w, then set w = 0"
            if _agrees(lambda *p: d(*p) / 4, stated, points):
                hint = "the logistic function's derivative at 0 is 1/4"
            elif not _agrees(d, lambda w, *rest: d(0.0, *rest), points):
                hint = "the slope still depends on w: substitute w = 0 after differentiating"
            fail("the slope is not a2 (a1 - a2) (y1 - y2) / 4", got=str(slope)[:60], hint=hint)


@checker("ex-dana-ar-3", CHAPTER)
def feature_ranks(ranks):
    """The rank of F for H = 1, ..., 8 (random weights, the 16 sequences of [4]^3 ending in token 0,
    d = 3, d_h = 2), a dict keyed by H or a list in that order: each equal to the generic rank."""
    given = numbers_by_key(ranks, list(range(1, 9)), "ranks")
    seqs = all_sequences(4, 3, device="cpu")
    ending0 = seqs[seqs[:, -1] == 0]
    for H in range(1, 9):
        with case(f"H = {H}"):
            expected = min(16, features.feature_count(ending0, 3, H, 2))
            hint = "compute the rank of dana.skip_feature_matrix with H heads and random weights"
            if given[H] == min(16, 2 * H + 3) != expected:
                hint = "that is the paper's min(16, H d_h + d); the skip block x_S is common to all 16 sequences"
            close(given[H], expected, "the rank", rtol=0, atol=0.01, hint=hint)
