"""Checkers of the exercises of *When the bound is tight* (``book/mahdavi/tightness.md``)."""
from __future__ import annotations

import torch

from memcap import bounds
from memcap.construct import mahdavi_limits as ml
from memcap.models import init_mha
from memcap.textbook.exercises.checking import (
    call,
    case,
    checker,
    close,
    expect,
    numbers_by_key,
    tensor_answer,
    to_case_device,
)

CHAPTER = "book/mahdavi/tightness"
HEADS = (1, 5, 10, 20, 40)


@checker("ex-mahdavi-tightness-2", CHAPTER)
def shared_context_bounds(rank_bounds):
    """Proposition 2's bound on rank(Z) for n = 32 and H = 1, 5, 10, 20, 40 (a dict keyed by H, or a
    list in that order)."""
    given = numbers_by_key(rank_bounds, HEADS, "rank_bounds")
    for heads in HEADS:
        with case(f"H = {heads}"):
            value = given[heads]
            hint = "softmax weights sum to one: each head adds n - 1 directions, and one is shared"
            if value == heads * 32:
                hint = "H n counts every head's n weights; they sum to one, so each adds only n - 1"
            elif value == bounds.mha_simplex_rank_bound(heads, 64):
                hint = "that is Proposition 5's bound, in d; Proposition 2 bounds the rank in n"
            close(value, bounds.mha_shared_rank_bound(heads, 32), "the bound", hint=hint)


@checker("ex-mahdavi-tightness-3", CHAPTER)
def zero_sum_shift(shift_to_zero_sum):
    """A function contexts (T, n, d) -> contexts whose tokens are all shifted by one vector b with
    1^T b = -1, applied to simplex data with C = 1: every token's coordinates then sum to 0, and
    random weights give rank(Z) = H(d-1) for H = 1, 2, ..., not H(d-1)+1 (three data sets)."""
    gen = torch.Generator().manual_seed(2718)
    for T, n, d, heads in ((60, 3, 6, 4), (40, 4, 5, 3), (45, 2, 8, 3)):
        with case(f"T = {T}, n = {n}, d = {d}, H = {heads}"):
            contexts, queries = ml.simplex_data(T, n, d, generator=gen, dtype=torch.float64, device="cpu")
            shifted = call(shift_to_zero_sum, to_case_device(contexts))
            shifted = tensor_answer(shifted, (T, n, d), "the shifted contexts (the same shape as the contexts)",
                                    device=contexts.device)
            sums = shifted.sum(dim=-1)
            worst = float(sums.abs().max())
            expect(worst <= 1e-9, "every token's coordinates should sum to 0", expected=0.0,
                   got=float(sums.flatten()[sums.abs().flatten().argmax()]),
                   hint="the tokens sum to C = 1, so the shift b must have 1^T b = -1")
            offsets = (shifted - contexts).reshape(-1, d)
            spread = float((offsets - offsets[0]).abs().max())
            expect(spread <= 1e-9, "every token should be shifted by the same vector b",
                   got=f"shifts differing by up to {spread:.3g}",
                   hint="add one constant vector b to every token of every context")
            weights = init_mha(heads, d, d, 1, 1, generator=gen, dtype=torch.float64, device="cpu")
            ranks = ml.rank_by_heads(weights.W_K, weights.W_Q, shifted, queries)
            expected = [h * (d - 1) for h in range(1, heads + 1)]
            expect(ranks == expected, "rank(Z) for H = 1, 2, ... should be H(d-1)", expected=expected,
                   got=ranks)
