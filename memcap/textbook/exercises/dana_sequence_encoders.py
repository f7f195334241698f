"""Checkers of the exercises of *Sequence encoders* (``book/dana/sequence_encoders.md``)."""
from __future__ import annotations

import math
import numbers

import torch

from memcap.construct import dana
from memcap.textbook.exercises.checking import call, case, checker, close, expect, fail, to_case_device

CHAPTER = "book/dana/sequence_encoders"


def _circle_kl(lam: float, vocab: int, weight: float = 1.0) -> float:
    """The circle encoder's divergence log(1 + sum_k exp(-weight lam (1 - cos(2 pi k/N))))."""
    return math.log1p(sum(math.exp(-weight * lam * (1 - math.cos(2 * math.pi * k / vocab)))
                          for k in range(1, vocab)))


def _smallest_scale(vocab: int, level: float) -> float:
    """The smallest lambda with _circle_kl(lambda, vocab) <= level (bisection; the divergence decreases)."""
    lo, hi = 0.0, 1.0
    while _circle_kl(hi, vocab) > level:
        lo, hi = hi, 2 * hi
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _circle_kl(mid, vocab) > level else (lo, mid)
    return hi


@checker("ex-dana-se-2", CHAPTER)
def circle_scale(lam):
    """The smallest scale lambda whose circle encoder with N = 10 has divergence at most 1e-3 nats on
    every look-up table (a number, to four significant digits)."""
    with case("the smallest lambda"):
        expected = _smallest_scale(10, 1e-3)
        value = lam
        hint = ("the divergence log(1 + sum_k exp(-lambda (1 - cos(2 pi k/N)))) is the same for every "
                "sequence and decreases in lambda: find where it crosses 1e-3")
        if isinstance(value, numbers.Real) and math.isfinite(value) and value > 0:
            if abs(2 * value - expected) <= 5e-4 * expected:   # the gap taken as 2 (1 - cos)
                hint = ("the logit of token j is lambda W_j^T W_g = lambda cos(2 pi (j - g)/N): the gap "
                        "to the target is lambda (1 - cos), not the squared distance 2 (1 - cos)")
            elif _circle_kl(value, 10) <= 1e-3:
                hint = "the divergence is already below 1e-3 at a smaller lambda; " + hint
            else:
                hint = f"at that lambda the divergence is {_circle_kl(value, 10):.3g} nats, above 1e-3"
        close(value, expected, "lambda", rtol=5e-4, hint=hint)


def _smoothed(vocab: int, eps: float) -> torch.Tensor:
    """The association task with targets 0, ..., N-1 (S = 1), smoothed to full support, on the CPU."""
    return (torch.eye(vocab, dtype=torch.float64, device="cpu") + eps) / (1 + vocab * eps)


def _width_one_floor(probs: torch.Tensor) -> float:
    """A lower bound on the divergence of every width-1 encoder on a smoothed identity task.

    With d = 1 the logits are E(t) W, so only the tokens with the largest and the smallest W_j can be the
    strict argmax: N - 2 of the N targets get probability at most 1/2, and KL >= the binary divergence
    KL(p || 1/2) on those rows (data processing; p is the target's probability)."""
    vocab = probs.shape[1]
    p = float(probs[0, 0])
    binary = p * math.log(2 * p) + (1 - p) * math.log(2 * (1 - p))
    return (vocab - 2) / vocab * binary


@checker("ex-dana-se-3", CHAPTER)
def width_plateau(best_divergence):
    """A function (probs, d) -> the best divergence (nats) of a sequence encoder of width d on the task
    probs (T, N): at d = N - 1 it is 0 (Proposition 2); at d = 1 it is no smaller than what any width-1
    encoder can reach, and within 0.01 nats (or 5 %) of the checker's optimum; smoothed association tasks
    with N = 3 and N = 4 of the checker's own."""
    for vocab, eps in ((3, 1e-3), (4, 1e-2)):
        probs = _smoothed(vocab, eps)
        uniform = float(math.log(vocab) + (probs * probs.log()).sum(1).mean())
        for d in (1, vocab - 1):
            with case(f"N = {vocab}, targets 0, ..., {vocab - 1} smoothed by {eps:g}, d = {d}"):
                value = call(best_divergence, to_case_device(probs), d,
                             hint="optimise over the sequence encoders of width d with dana.best_sequence_encoder")
                if isinstance(value, torch.Tensor) and value.numel() == 1:
                    value = float(value)
                if not isinstance(value, numbers.Real) or isinstance(value, bool):
                    fail("your function should return the divergence, a number",
                         got=type(value).__name__, hint="the fit returned with the encoder holds it (fit.kl)")
                value = float(value)
                expect(math.isfinite(value) and value >= -1e-9, "a divergence is a finite number >= 0",
                       got=value)
                expect(value <= uniform + 1e-9, "the best encoder is at least as good as the uniform "
                       "prediction (E = 0)", expected=f"at most {uniform:.4f} nats", got=value,
                       hint="return the divergence in nats (natural logarithm) of the best encoder found")
                if d == vocab - 1:
                    expect(value <= 1e-6, f"at d = N - 1 = {d} the best divergence is 0 (Proposition 2)",
                           expected="at most 1e-6", got=value,
                           hint="with d >= N - 1 the centred log-probabilities factor exactly; optimise "
                                "over encoders of width d, starting from their truncated SVD")
                    continue
                expect(value >= _width_one_floor(probs) - 1e-9,
                       "no encoder of width 1 gets this close: only two tokens can ever be its argmax",
                       got=value, hint="is d passed on as the width of the encoder?")
                _, fit = dana.best_sequence_encoder(probs, 1, steps=400)
                expect(value <= fit.kl + max(0.01, 0.05 * fit.kl), "a width-1 encoder does clearly better "
                       "than this", got=value,
                       hint="return the smallest divergence found by the optimisation, not the start's")
