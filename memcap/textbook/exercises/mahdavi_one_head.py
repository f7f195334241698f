"""Checkers of the exercises of *One head* (``book/mahdavi/one_head.md``)."""
from __future__ import annotations

import torch

from memcap import models
from memcap.textbook.exercises.checking import call, case, checker, close, fail, to_case_device

CHAPTER = "book/mahdavi/one_head"


@checker("ex-mahdavi-one-head-2", CHAPTER)
def examples_per_claim(claim1, claim2, used):
    """For d = 64, n = 32, d_h = 16: the examples Claim 1 fits in one head, the examples Claim 2 fits,
    and the number of key/query parameters (entries of the nonzero columns of W_K and W_Q) that the
    Claim 2 head uses."""
    with case("Claim 1"):
        hint = "Claim 1 fits r = min(n, d_h) examples"
        if claim1 == 32:
            hint = "the rank budget is d_h: r = min(n, d_h), not n"
        close(claim1, 16, "the number of examples", hint=hint)
    with case("Claim 2"):
        close(claim2, 15, "the number of examples",
              hint="the separator W+ takes one dimension of the rank budget")
    with case("the parameters used"):
        hint = "W* + cW+ has rank m + 1; count the nonzero columns of both factors, d entries each"
        if used == 32:
            hint = "that is the number of columns; count the parameters, d = 64 in each column"
        close(used, 2 * 64 * 16, "the number of parameters used", hint=hint)


def _one_head_cases():
    """Three data sets of the checker's own, on the CPU."""
    gen = torch.Generator().manual_seed(2024)
    for T, n, d, dh, examples, weight in ((12, 5, 8, 4, [0, 3, 7, 9], 0.9), (10, 4, 6, 6, [2, 5, 8, 9], 0.75),
                                          (8, 6, 10, 3, [1, 6], 0.5)):
        contexts = torch.rand(T, n, d, generator=gen, dtype=torch.float64, device="cpu")
        queries = torch.rand(T, d, generator=gen, dtype=torch.float64, device="cpu")
        yield (f"T = {T}, n = {n}, d = {d}, d_h = {dh}, weight {weight}, examples {examples}",
               contexts, queries, examples, weight, dh)


_REFUSAL = "open simplex"
"""What claim1_head's refusal of an attention row with a zero entry says (the chapter's expect_refusal matches
it too): with weight 1 only this refusal counts, not any error of the answer's own."""


@checker("ex-mahdavi-one-head-3", CHAPTER)
def last_token_head(last_token_head):
    """A function (contexts, queries, examples, weight, head_dim) -> a head (W_K, W_Q of shape (d, d_h))
    under which each chosen example puts the given weight on its last token and spreads the rest
    evenly, on data of the checker's own (three cases); with weight exactly 1 claim1_head must refuse (a
    ValueError: the attention is not in the open simplex)."""
    for description, contexts, queries, examples, weight, dh in _one_head_cases():
        with case(description):
            head = call(last_token_head, *to_case_device(contexts, queries), list(examples), weight, dh)
            W_K, W_Q = getattr(head, "W_K", None), getattr(head, "W_Q", None)
            d = contexts.shape[-1]
            if not all(isinstance(w, torch.Tensor) and tuple(w.shape) == (d, dh) for w in (W_K, W_Q)):
                fail("your function should return a head with W_K and W_Q of shape (d, d_h), as "
                     "mahdavi.claim1_head does (a mahdavi.OneHead)", got=type(head).__name__)
            W_K, W_Q = (w[None].detach().to(device=contexts.device, dtype=torch.float64) for w in (W_K, W_Q))
            theta = models.mha_attention(W_K, W_Q, contexts, queries)[examples, 0]
            n = contexts.shape[1]
            want = torch.full((len(examples), n), (1 - weight) / (n - 1), dtype=torch.float64,
                              device=theta.device)
            want[:, -1] = weight
            error = (theta - want).abs().amax(dim=1)
            if float(error.max()) > 1e-8:
                k = int(error.argmax())
                fail(f"the attention of example {examples[k]} is not right",
                     expected=f"weight {weight} on the last token, {(1 - weight) / (n - 1):.4g} on each other",
                     got=theta[k], hint="prescribe the whole attention row (m, n) to claim1_head, rows "
                     "summing to one")
    with case("weight exactly 1"):
        description, contexts, queries, examples, _, dh = next(_one_head_cases())
        try:
            head = last_token_head(*to_case_device(contexts, queries), list(examples), 1.0, dh)
        except Exception as err:
            # by name: through the grader the refusal comes back as a RemoteError named ValueError
            if type(err).__name__ == "ValueError" and _REFUSAL in str(err):
                return
            fail(f"with weight exactly 1 your function raised {type(err).__name__}: {str(err)[:300]}",
                 expected=f"claim1_head's refusal, a ValueError saying the attention must lie in the {_REFUSAL}",
                 hint="build the prescribed attention as for other weights and let claim1_head refuse it")
        fail("with weight exactly 1 your function returned a head instead of refusing",
             got=type(head).__name__,
             hint="no finite logits put all the weight on one token; let claim1_head say so")
