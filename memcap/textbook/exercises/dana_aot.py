"""Checkers of the exercises of *The attention-only transformer and its tasks* (``book/dana/aot.md``)."""
from __future__ import annotations

import torch

from memcap.models import AoTParams, aot_forward, aot_param_count, init_aot
from memcap.textbook.exercises.checking import call, case, checker, close, expect, fail, on_device, to_case_device

CHAPTER = "book/dana/aot"
GPT2 = {"N": 50257, "S": 1024, "d": 768, "H": 12, "d_h": 64}


@checker("ex-dana-aot-2", CHAPTER)
def gpt2_sized_count(total, head_fraction):
    """The number of weights of the GPT-2-small-sized AoT (N = 50257, S = 1024, d = 768, H = 12,
    d_h = 64) and the fraction of them in the attention heads (a number between 0 and 1, to three
    significant digits)."""
    N, S, d, H, dh = GPT2.values()
    expected_total = aot_param_count(N, S, d, H, dh)
    heads = 4 * dh * H * d
    with case("the number of weights"):
        hint = ("count e (N x d), pos (S x d), W_U (N x d) and the four d_h x d matrices "
                "W_Q, W_K, W_V, W_O^T of each head")
        if total == d * (S + N + 4 * dh * H):
            hint = "the token embedding e and the unembedding W_U are two matrices of N x d weights"
        elif total == d * (2 * N + 4 * dh * H):
            hint = "the positional embedding pos has S x d weights too"
        elif total == d * (S + 2 * N + 3 * dh * H):
            hint = "each head has four d_h x d matrices: W_Q, W_K, W_V and W_O (d x d_h)"
        close(total, expected_total, "the number of weights", rtol=0, atol=0.5, hint=hint)
    with case("the fraction in the heads"):
        expected = heads / expected_total
        value = float(head_fraction) if isinstance(head_fraction, (int, float)) else head_fraction
        if isinstance(value, float) and abs(value / 100 - expected) <= 1e-3 * expected:
            fail("the fraction should be a number between 0 and 1, not a percentage", got=value)
        hint = "the heads hold 4 d_h H d weights; divide by the total"
        if isinstance(value, float) and abs(value - 3 * dh * H * d / expected_total) <= 1e-3 * expected:
            hint = "each head has four d_h x d matrices: W_Q, W_K, W_V and W_O (d x d_h)"
        close(value, expected, "the fraction", rtol=1e-4, digits=3, hint=hint)


def _permutation_cases():
    """Three random AoTs with a permutation of their heads and token sequences, on the CPU."""
    for N, S, d, H, dh, perm, seed in ((6, 4, 3, 2, 2, [1, 0], 11), (7, 5, 4, 4, 3, [2, 0, 3, 1], 12),
                                       (5, 3, 3, 3, 1, [1, 2, 0], 13)):
        gen = torch.Generator().manual_seed(seed)
        params = init_aot(N, S, d, H, dh, generator=gen, dtype=torch.float64, device="cpu")
        tokens = torch.randint(N, (40, S), generator=gen, device="cpu")
        yield (f"N = {N}, S = {S}, d = {d}, H = {H}, d_h = {dh}, perm = {perm}", params,
               torch.tensor(perm, device="cpu"), tokens)


@checker("ex-dana-aot-3", CHAPTER)
def permuted_heads(permute_heads):
    """A function (params, perm) -> AoTParams whose head h is head perm[h] of params (the same
    permutation of W_Q, W_K, W_V and W_O, everything else unchanged): its logits equal the original
    ones to 1e-12; three random AoTs of the checker's own, with 2 to 4 heads."""
    names = ("W_Q", "W_K", "W_V", "W_O")
    for description, params, perm, tokens in _permutation_cases():
        with case(description):
            given = to_case_device(params)
            before = [p.clone() for p in given.parameters()]
            new = call(permute_heads, given, to_case_device(perm))
            if not isinstance(new, AoTParams):
                fail("your function should return the permuted AoT (memcap.models.AoTParams)",
                     got=type(new).__name__)
            expect(all(torch.equal(a, b) for a, b in zip(before, given.parameters())),
                   "your function changed the weights of params in place",
                   hint="build a new AoTParams from indexed copies; leave params as it is")
            new = on_device(new, tokens.device)
            for name in ("token_embedding", "positional_embedding", "W_U"):
                expect(torch.equal(getattr(new, name), getattr(params, name)),
                       f"{name} should not change: only the heads are permuted")
            change = float((aot_forward(new, tokens) - aot_forward(params, tokens)).abs().max())
            expect(change <= 1e-12, "the logits should not change when the heads are permuted",
                   expected="largest change <= 1e-12", got=f"largest change {change:.3g}",
                   hint="apply the same permutation to all four of W_Q, W_K, W_V and W_O, so that "
                        "each head keeps its own four matrices")
            moved = [name for name in names if not torch.equal(getattr(new, name), getattr(params, name)[perm])]
            if moved:
                same = all(torch.equal(getattr(new, n), getattr(params, n)) for n in names)
                inverse = all(torch.equal(getattr(new, n), getattr(params, n)[torch.argsort(perm)])
                              for n in names)
                hint = "index each head tensor with perm: head h of the result is head perm[h]"
                if same:
                    hint = "the heads were not moved at all; index each head tensor with perm"
                elif inverse:
                    hint = "that is the inverse permutation: head h of the result should be head perm[h]"
                fail(f"{', '.join(moved)} of the result should hold the heads of params in the order perm",
                     hint=hint)
