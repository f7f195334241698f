"""Checkers of the exercises of *The two theories side by side* (``book/synthesis/side_by_side.md``)."""
from __future__ import annotations

import math

import torch

from memcap import bounds, synthesis
from memcap.textbook.exercises.checking import call, case, checker, close, fail, number, numbers_by_key

CHAPTER = "book/synthesis/side_by_side"
HEADS = (1, 8, 31)


@checker("ex-syn-side-2", CHAPTER)
def parameters_per_example(mahdavi_cost, dana_cost):
    """Parameters per guaranteed example for H = 1, 8, 31 (dicts keyed by H, or lists in that order):
    Mahdavi et al.'s layer (d = d_h = 64, n = 32, d_v = d_out = 1) and Dana et al.'s AoT (N = 50,
    S = 2, d = d_h = 10), each count of parameters divided by the theorem's count of examples."""
    answers = {"Mahdavi et al.'s layer": numbers_by_key(mahdavi_cost, HEADS, "mahdavi_cost"),
               "Dana et al.'s AoT": numbers_by_key(dana_cost, HEADS, "dana_cost")}
    names = {"Mahdavi et al.'s layer": "mahdavi_cost", "Dana et al.'s AoT": "dana_cost"}
    for H in HEADS:
        exact = {"Mahdavi et al.'s layer": (bounds.mha_param_count(H, 64, 64, 1, 1),
                                            bounds.mha_capacity(H, 32, 64)),
                 "Dana et al.'s AoT": (bounds.aot_param_count(50, 2, 10, H, 10),
                                       bounds.aot_capacity(H, 10, 10))}
        for model, (parameters, count) in exact.items():
            with case(f"{model}, H = {H}"):
                value = number(answers[model][H], f"{names[model]}[{H}]")
                hint = "divide the model's parameter count by the number of examples its theorem guarantees"
                if math.isclose(value, count / parameters, rel_tol=1e-6):
                    hint = "that is examples per parameter: divide the parameters by the count instead"
                elif math.isclose(value, parameters, rel_tol=1e-6) or math.isclose(value, count,
                                                                                  rel_tol=1e-6):
                    hint = "give the ratio of the two numbers, parameters per guaranteed example"
                close(value, parameters / count, "the parameters per example", rtol=1e-4, hint=hint)


_CERTIFY_CASES = (  # (description, mse, examples, tol)
    ("a tiny MSE on 8 examples", 1e-7, 8, 1e-2),
    ("a large MSE on 4 examples", 1e-2, 4, 1e-2),
    ("an MSE just below tol^2 on 12 examples", 5e-5, 12, 1e-2),
    ("an MSE between tol^2 / T and tol^2 on 10 examples", 2e-5, 10, 1e-2),
    ("an MSE of exactly zero", 0.0, 6, 1e-3),
    ("a small MSE on 100 examples, tol = 0.1", 5e-5, 100, 0.1),
    ("an MSE just above tol^2 on 5 examples", 1.1e-4, 5, 1e-2),
)


@checker("ex-syn-side-3", CHAPTER)
def certify_from_mse(certify):
    """A function (mse, examples, tol) -> True when the mean squared error proves that every example is
    fitted within tol (sqrt(T mse) <= tol), False when it proves one is not (sqrt(mse) > tol), None
    when the mean alone cannot tell (seven cases, all three verdicts; a 0-d bool tensor reads as a bool)."""
    words = {True: "True (fitted)", False: "False (not fitted)", None: "None (cannot tell)"}
    for description, mse, examples, tol in _CERTIFY_CASES:
        with case(description):
            got = call(certify, mse, examples, tol, name="certify")
            expected = synthesis.certified_fit(mse, examples, tol)
            if isinstance(got, torch.Tensor) and got.dtype == torch.bool and got.dim() == 0:
                got = bool(got)                                   # torch.sqrt(T * mse) <= tol, say
            if not (got is None or type(got) is bool):            # 1 == True: check the type
                fail("certify should return True, False or None (not 1/0 or a tensor)",
                     got=f"{type(got).__name__} {str(got)[:40]}")
            if got is expected:
                continue
            if expected is None:
                hint = ("the largest error lies between sqrt(mse) and sqrt(T mse): when tol is "
                        "between the two, the mean cannot decide")
            elif expected is True:
                hint = "every squared error is at most the sum of them, T times the mean"
            else:
                hint = "the largest squared error is at least the mean of them"
            fail(f"the verdict for mse = {mse:g}, T = {examples}, tol = {tol:g} is wrong",
                 expected=words[expected], got=words.get(got, repr(got)), hint=hint)
