"""Checkers of the exercises of *Dana et al.'s Theorem 1* (``book/dana/theorem1.md``)."""
from __future__ import annotations

import math
import numbers

import torch

from memcap import bounds
from memcap.data import all_sequences
from memcap.models import aot_forward, init_aot
from memcap.textbook.exercises.checking import call, case, checker, close, fail, numbers_by_key, to_case_device

CHAPTER = "book/dana/theorem1"
N, S, T0 = 100, 8, 10_000


@checker("ex-dana-t1-2", CHAPTER)
def parameter_counts(paper, narrow):
    """The parameter counts of Theorem 1's AoT for T0 = 10^4, N = 100, S = 8 at d = 2 and d = 64: with
    H d_h = T0 - d (the paper's count) and with H = T0 - d heads of d_h = 1, each a dict keyed by d (or
    a list in the order 2, 64)."""
    for name, answer in (("H d_h = T0 - d", paper), ("H = T0 - d, d_h = 1", narrow)):
        given = numbers_by_key(answer, [2, 64], f"the counts with {name}")
        for d in (2, 64):
            with case(f"{name}, d = {d}"):
                expected = bounds.dana_assoc_param_count(S, N, T0, d)
                value = given[d]
                hint = "the AoT has d (S + 2N + 4 H d_h) weights: e, pos, W_U and four matrices per head"
                if value == d * (S + 2 * N + 4 * T0):
                    hint = "H d_h = T0 - d, not T0: the skip block takes d of the T0 dimensions"
                elif value == d * (S + N + 4 * (T0 - d)):
                    hint = "the token embedding e and the unembedding W_U are two N x d matrices"
                elif value == d * (S + 2 * N + 3 * (T0 - d)):
                    hint = "each head has four d_h x d matrices: W_Q, W_K, W_V and W_O (d x d_h)"
                close(value, expected, "the count", rtol=0, atol=0.5, hint=hint)


def _accuracy_cases():
    """Random AoTs with tables that agree with the AoT's argmax on the kept sequences (as a Corollary 1
    construction does) and are random elsewhere, with the accuracy on all, kept and unseen sequences; on
    the CPU."""
    for vocab, length, d, heads, dh, kept_count, seed in ((4, 3, 3, 2, 2, 12, 21), (5, 2, 4, 3, 1, 9, 22),
                                                          (3, 4, 2, 4, 2, 20, 23)):
        gen = torch.Generator().manual_seed(seed)
        params = init_aot(vocab, length, d, heads, dh, generator=gen, dtype=torch.float64, device="cpu")
        everything = all_sequences(vocab, length, device="cpu")
        guesses = aot_forward(params, everything).argmax(1)
        table = torch.randint(vocab, (len(everything),), generator=gen, device="cpu")
        keep = torch.zeros(len(everything), dtype=torch.bool, device="cpu")
        keep[torch.randperm(len(everything), generator=gen, device="cpu")[:kept_count]] = True
        table[keep] = guesses[keep]
        right = guesses == table
        yield (f"N = {vocab}, S = {length}, d = {d}, H = {heads}, d_h = {dh}, {kept_count} kept sequences",
               params, everything[keep], table.reshape((vocab,) * length),
               {"unseen": float(right[~keep].double().mean()), "all": float(right.double().mean()),
                "kept": float(right[keep].double().mean()), "count": int(right[~keep].sum())})


@checker("ex-dana-t1-3", CHAPTER)
def accuracy_on_unseen(accuracy_on_unseen):
    """A function (params, seqs, table) -> the accuracy (a fraction) of the AoT params on the sequences
    of [N]^S not in seqs, the target of t being table[t]: equal to the checker's own on three random
    AoTs whose tables agree with the AoT on the kept sequences and are random elsewhere."""
    for description, params, seqs, table, accuracy in _accuracy_cases():
        with case(description):
            value = call(accuracy_on_unseen, *to_case_device(params, seqs, table))
            if isinstance(value, torch.Tensor) and value.numel() == 1:
                value = float(value)
            if not isinstance(value, numbers.Real) or isinstance(value, bool):
                fail("your function should return the accuracy, a number", got=type(value).__name__)
            value = float(value)
            hint = ("compare the argmax of the logits with table[t] on every sequence of [N]^S that is not "
                    "a row of seqs")
            # an accuracy is k/m over m <= N^S sequences: 1e-6 tells every k apart and accepts a float32 mean
            tol = 1e-6
            if math.isclose(value, accuracy["all"], abs_tol=tol) and accuracy["all"] != accuracy["unseen"]:
                hint = "that is the accuracy on all N^S sequences: leave out the rows of seqs"
            elif math.isclose(value, accuracy["kept"], abs_tol=tol):
                hint = "that is the accuracy on the kept sequences; measure it on the others"
            elif value == accuracy["count"] and accuracy["count"] > 1:
                hint = "return the fraction of unseen sequences predicted right, not their number"
            close(value, accuracy["unseen"], "the accuracy on the unseen sequences", rtol=0, atol=tol,
                  hint=hint)
