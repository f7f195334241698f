"""Checkers of the exercises of *The rank of Z* (``book/mahdavi/rank_of_z.md``)."""
from __future__ import annotations

import math

import torch

from memcap import bounds, linalg
from memcap.construct import mahdavi
from memcap.textbook.exercises.checking import call, case, checker, close, expect, fail, numbers_by_key, to_case_device

CHAPTER = "book/mahdavi/rank_of_z"
HEAD_DIMS = (64, 32, 8)


@checker("ex-mahdavi-rank-of-z-2", CHAPTER)
def heads_for_rank(needed):
    """The fewest heads with which Proposition 1 reaches rank(Z) = 1000 for n = 32 and d_h = 64, 32, 8
    (a dict keyed by d_h, or a list in that order)."""
    given = numbers_by_key(needed, HEAD_DIMS, "needed")
    for dh in HEAD_DIMS:
        with case(f"d_h = {dh}"):
            hint = "the smallest H with H(min(n, d_h) - 1) + 1 >= 1000"
            if dh > 32 and given[dh] == math.ceil(999 / (dh - 1)):
                hint = "only min(n, d_h) counts: the rank per head is limited by n = 32 too"
            close(given[dh], next(h for h in range(1, 2000) if bounds.mha_capacity(h, 32, dh) >= 1000),
                  "the number of heads", hint=hint)


def _constructions():
    """Three constructions of the checker's own, on the CPU."""
    for n, d, dh, heads, seed in ((5, 9, 3, 6, 41), (4, 7, 4, 4, 42), (6, 10, 2, 5, 43)):
        gen = torch.Generator().manual_seed(seed)
        T = bounds.mha_capacity(heads, n, dh)
        contexts = torch.rand(T, n, d, generator=gen, dtype=torch.float64, device="cpu")
        queries = torch.rand(T, d, generator=gen, dtype=torch.float64, device="cpu")
        kq = mahdavi.key_query_construction(contexts, queries, heads=heads, head_dim=dh, generator=gen)
        yield f"n = {n}, d = {d}, d_h = {dh}, H = {heads}, seed {seed}", kq


@checker("ex-mahdavi-rank-of-z-3", CHAPTER)
def induction_summary(step_summary):
    """A function KeyQueryConstruction -> (rank gained by each induction step after the first, as
    step_features shows it; the largest scale c of the steps; the smallest sigma_min of the steps), on
    constructions of the checker's own (three, d_h below and at n); every gain must be r - 1."""
    for description, kq in _constructions():
        with case(description):
            answer = call(step_summary, to_case_device(kq))
            if not isinstance(answer, (tuple, list)) or len(answer) != 3:
                fail("your function should return three things (a tuple): the gains, the largest c and "
                     "the smallest sigma_min", got=type(answer).__name__)
            gains, scale, sigma = answer
            heads = len(kq.steps)
            ranks = [linalg.rank(kq.step_features(h)) for h in range(1, heads + 1)]
            expected = [b - a for a, b in zip(ranks, ranks[1:])]
            gains = gains.tolist() if hasattr(gains, "tolist") else gains
            expect(isinstance(gains, (list, tuple)) and len(gains) == heads - 1,
                   f"the gains should be a list of H - 1 = {heads - 1} numbers, one per step after the "
                   "first", got=gains, hint="compare the rank of step_features(h) with that of "
                   "step_features(h - 1)")
            expect([int(g) for g in gains] == expected, "the rank gains are not right",
                   expected=expected, got=list(gains),
                   hint="linalg.rank(kq.step_features(h)) for h = 1, ..., H, then the differences")
            expect(expected == [kq.r - 1] * (heads - 1), "the construction did not add r - 1 per step",
                   got=expected)
            close(scale, max(st.scale for st in kq.steps), "the largest scale c", rtol=1e-9,
                  hint="take the largest .scale over kq.steps")
            close(sigma, min(st.sigma_min for st in kq.steps), "the smallest sigma_min", rtol=1e-9,
                  hint="take the smallest .sigma_min over all of kq.steps, head 1's included (the finite "
                       "weights, not the limit)")
