"""Checkers of the exercises of *Skip connections and the assumptions after one layer*
(``book/mahdavi/skip.md``)."""
from __future__ import annotations

import torch

from memcap import models
from memcap.construct import mahdavi_limits as ml
from memcap.textbook.exercises.checking import (
    call,
    case,
    checker,
    close,
    expect,
    fail,
    on_device,
    tensor_answer,
    to_case_device,
)

CHAPTER = "book/mahdavi/skip"


@checker("ex-mahdavi-skip-2", CHAPTER)
def shifted_label(y_prime):
    """The target y' = y - W_D^T e that Remark 2 asks the layer without skip to produce, for d = 3,
    d_out = 2, e = (1, -2, 5), y = (0.5, 0.5) and W_D = I_{d x d_out} (a pair of numbers)."""
    values = y_prime.tolist() if hasattr(y_prime, "tolist") else y_prime
    expect(isinstance(values, (list, tuple)), "y' should be a vector of d_out = 2 numbers",
           got=type(y_prime).__name__)
    values = list(values)
    if len(values) in (1, 2) and all(isinstance(v, (list, tuple)) for v in values):   # a column or a row
        values = tensor_answer(values, (2,), "y'").tolist()
    expect(len(values) == 2, "y' should have d_out = 2 entries",
           got=f"{len(values)} entr{'ies' if len(values) != 1 else 'y'}",
           hint="W_D^T e keeps the first d_out coordinates of e")
    if [float(v) for v in values] == [1.5, -1.5]:
        fail("y' adds the skip term to y", got=values,
             hint="the skip connection adds W_D^T e to the output, so the layer must produce y minus it")
    for k, (value, expected) in enumerate(zip(values, (-0.5, 2.5))):
        with case(f"coordinate {k + 1} of y'"):
            close(value, expected, "the coordinate", rtol=1e-9, atol=1e-12,
                  hint="W_D = I_{d x d_out} passes the first d_out coordinates of e to the output")


def _two_layer_cases():
    """Three [CLS]-token data sets with labels and a random first layer of the checker's own, on the CPU."""
    for T, n, d, seed in ((19, 4, 10, 5), (19, 4, 10, 11), (13, 3, 8, 17)):
        heads = (T - 1) // (n - 1)
        contexts, queries = ml.cls_token_data(T, n, d, generator=torch.Generator().manual_seed(seed),
                                              dtype=torch.float64, device="cpu")
        labels = torch.randn(T, 1, generator=torch.Generator().manual_seed(seed + 1), dtype=torch.float64,
                             device="cpu")
        layer = models.init_mha(1, d, d, d, d, skip=True, dtype=torch.float64,
                                generator=torch.Generator().manual_seed(seed + 2), device="cpu")
        yield f"T = {T}, n = {n}, d = {d}, H = {heads}, random layer seed {seed}", \
            contexts, queries, labels, layer, heads, n


@checker("ex-mahdavi-skip-3", CHAPTER)
def random_first_layer(second_layer):
    """A function (contexts, queries, labels, first_layer, heads, head_dim) -> MHAParams of a second
    layer that, applied to the outputs of the random first layer (with skip), reproduces every label to
    1e-6 with the given heads and head_dim; [CLS]-token data whose raw queries break Assumption 1, at
    capacity H(n-1)+1 (three cases)."""
    for description, contexts, queries, labels, layer, heads, dh in _two_layer_cases():
        with case(description):
            params = call(second_layer, *to_case_device(contexts, queries, labels, layer), heads, dh,
                          hint="the raw [CLS] queries break Assumption 1: pass every token through "
                               "first_layer (apply_self_attention) and memorize its outputs")
            if not isinstance(params, models.MHAParams):
                fail("your function should return the second layer's weights (memcap.models.MHAParams)",
                     got=type(params).__name__)
            params = on_device(params, contexts.device)
            contexts1, queries1 = ml.apply_self_attention(layer, contexts, queries)
            expect(params.dim == contexts.shape[-1], "the second layer should read tokens of dimension d",
                   expected=contexts.shape[-1], got=params.dim)
            out = models.mha_forward(params, contexts1, queries1)
            expect(tuple(out.shape) == tuple(labels.shape), "the second layer should output one number "
                   "per example", expected=tuple(labels.shape), got=tuple(out.shape))
            # the point is memorization at Theorem 1's capacity H(n-1)+1: with more heads, or one per
            # example, the labels are reproduced without the assumptions the exercise is about
            H, _, head_dim = params.W_K.shape
            expect((H, head_dim) == (heads, dh), "the second layer should have the given number of heads "
                   "and head dimension", expected=f"H = {heads}, d_h = {dh} (W_K of shape (H, d, d_h))",
                   got=f"H = {H}, d_h = {head_dim}",
                   hint="pass heads and head_dim to memorize: the data are at its capacity H(n-1)+1")
            error = float((out - labels).abs().max())
            expect(error <= 1e-6, "the second layer, on the first layer's outputs, should reproduce "
                   "every label", expected="largest error <= 1e-6", got=f"largest error {error:.3g}",
                   hint="memorize on the first layer's outputs (apply_self_attention), not on the raw "
                        "data; the checker feeds your second layer with those outputs")
