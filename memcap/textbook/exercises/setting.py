"""Checkers of the exercises of *The setting* (``book/setting.md``)."""
from __future__ import annotations

import math

import torch

from memcap import bounds, models
from memcap.textbook.exercises.checking import (
    call,
    case,
    checker,
    close,
    expect,
    fail,
    numbers_by_key,
    tensor_answer,
    to_case_device,
    whole_number,
)

CHAPTER = "book/setting"
# ex-setting-2's sizes, as its statement gives them
DIM, CONTEXT, EXAMPLES, HEAD_DIMS = 64, 32, 10_000, (64, 16)


@checker("ex-setting-2", CHAPTER)
def heads_and_parameters(heads, parameters):
    """The fewest heads that guarantee T = 10 000 examples (d = 64, n = 32, d_v = d_out = 1) for
    d_h = 64 and d_h = 16, and the parameter count of each layer as bounds.mha_param_count counts it
    (the paper's count, without W_O; two dicts keyed by d_h). Both are whole numbers, compared exactly."""
    given_heads = numbers_by_key(heads, HEAD_DIMS, "heads")
    given_params = numbers_by_key(parameters, HEAD_DIMS, "parameters")
    for dh in HEAD_DIMS:
        with case(f"d_h = {dh}"):
            needed = math.ceil((EXAMPLES - 1) / (min(CONTEXT, dh) - 1))
            hint = "the smallest H with H(min(n, d_h) - 1) + 1 >= T"
            value = whole_number(given_heads[dh], "the number of heads", hint=hint)
            if dh > CONTEXT and value == math.ceil((EXAMPLES - 1) / (dh - 1)):
                hint = f"only min(n, d_h) counts: a head cannot use more than n = {CONTEXT} dimensions"
            elif value == needed - 1:
                hint = "round up: with one head fewer, H(min(n, d_h) - 1) + 1 is still below T"
            close(value, needed, "the number of heads", rtol=0.0, hint=hint)
            hint = "2Hdd_h + Hdd_v + dd_out with d_v = d_out = 1, for the number of heads found"
            count = whole_number(given_params[dh], "the parameter count", hint=hint)
            close(count, bounds.mha_param_count(needed, DIM, dh, 1, 1), "the parameter count", rtol=0.0,
                  hint=hint)


def _layers():
    """Three random layers with a shared context and queries, built on the CPU (the student's function gets
    copies on the case device)."""
    gen = torch.Generator().manual_seed(1618)
    for T, n, d, heads, dh, out in ((7, 4, 6, 3, 2, 1), (5, 3, 8, 2, 4, 2), (9, 6, 5, 4, 3, 3)):
        layer = models.init_mha(heads, d, dh, dh, out, generator=gen, dtype=torch.float64, device="cpu")
        context = torch.rand(n, d, generator=gen, dtype=torch.float64, device="cpu")
        queries = torch.rand(T, d, generator=gen, dtype=torch.float64, device="cpu")
        yield f"T = {T}, n = {n}, d = {d}, H = {heads}", layer, context, queries


@checker("ex-setting-3", CHAPTER)
def shared_context(shared_and_repeated):
    """A function (layer, context, queries) -> (outputs with the shared (n, d) context, outputs with
    the context repeated as (T, n, d), attention weights (T, H, n)): both outputs equal the layer's
    output, and the weights are the layer's, each row summing to one (three random layers)."""
    for description, layer, context, queries in _layers():
        with case(description):
            answer = call(shared_and_repeated, *to_case_device(layer, context, queries))
            if not isinstance(answer, (tuple, list)) or len(answer) != 3:
                fail("your function should return three tensors (a tuple): shared outputs, repeated "
                     "outputs, attention weights", got=type(answer).__name__)
            shared, repeated, theta = answer
            T, n = queries.shape[0], context.shape[0]
            want = models.mha_forward(layer, context, queries)
            for name, got in (("the outputs with the shared context", shared),
                              ("the outputs with the repeated context", repeated)):
                got = tensor_answer(got, want.shape, f"{name}, of shape (T, d_out),", device=want.device)
                error = float((got - want).abs().max())
                expect(error <= 1e-10, f"{name} differ from the layer's output",
                       expected="largest difference <= 1e-10", got=f"{error:.3g}",
                       hint="pass the context to mha_forward once as (n, d), and once expanded to "
                            "(T, n, d) with context.expand(T, n, d)")
            heads = layer.W_K.shape[0]
            reference = models.mha_attention(layer.W_K, layer.W_Q, context, queries)
            theta = tensor_answer(theta, (T, heads, n), "the attention weights, of shape (T, H, n),",
                                  device=reference.device)
            sums = theta.sum(dim=-1)
            worst = float((sums - 1).abs().max())
            expect(worst <= 1e-10, "each head's attention over the n tokens should sum to one",
                   got=f"sums off by up to {worst:.3g}",
                   hint="the softmax runs over the context tokens (the last axis)")
            error = float((theta - reference).abs().max())
            expect(error <= 1e-10, "the attention weights are not the layer's",
                   got=f"largest difference {error:.3g}",
                   hint="use the layer's key and query weights W_K, W_Q")
