"""How AoTs of one shape group are cut into stacks on a CPU: a cost model and the cheapest cut.

Zero-padding lets AoTs of different H, d_h, d and MLP width w share a stack, but every model of a stack
then does the work of the stack's largest model. On a CPU that work is the time (one thread is busy
with any stack worth the name), so a stack pays off only while the padding it adds costs less than
the fixed cost of running another stack. :func:`aot_work` counts a model's multiply-adds per step,
:data:`STACK_COST` is the fixed cost, and :func:`cheapest_cut` finds, among the cuts of the models sorted
by size into consecutive stacks, the one of least total cost (exactly, by dynamic programming).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from memcap.train.specs import AoTSpec

STACK_COST = 4e6
"""The fixed cost of one training step of one stack on a CPU (Python, autograd, Adam; ~1.4 ms) in the
multiply-adds of :func:`aot_work` that take as long; measured on dana_fig2b's paper models (N = 50,
d = d_h = 13, batch 1024): a stack of five H = 1 AoTs took 2.9 ms per step, of five H = 31 AoTs 8.7 ms."""


def aot_work(spec: AoTSpec, batch: int | None) -> float:
    """Multiply-adds of one forward pass of one model per training step (backward: about twice as many).

    S = 2 (closed form over the N^2 sequences, :func:`memcap.train.forward.aot_pair_residuals`):
    N^2 H (d_h + 2 d) for the scores and the heads' outputs, then per row of the loss (the batch B, or
    the N^2 sequences when B >= N^2) d (2 w + N) for the MLP and the unembedding. Other S, example by
    example: B (H (3 S + 1) d d_h + d (2 w + N)).
    """
    N, H, d, d_h, w = spec.vocab, spec.heads, spec.dim, spec.head_dim, spec.mlp_width
    B = spec.T0 if batch is None else batch
    if spec.seq_len == 2:
        rows = N * N if B >= N * N else B
        return N * N * H * (d_h + 2 * d) + rows * d * (2 * w + N)
    return B * (H * (3 * spec.seq_len + 1) * d * d_h + d * (2 * w + N))


def padded_model(specs: Sequence[AoTSpec]) -> AoTSpec:
    """The largest model of a stack: every model of it pads to this H, d_h, d and w."""
    return replace(specs[0], heads=max(s.heads for s in specs), head_dim=max(s.head_dim for s in specs),
                   dim=max(s.dim for s in specs), mlp_width=max(s.mlp_width for s in specs))


def cheapest_cut(specs: Sequence[AoTSpec], batch: int | None) -> list[list[int]]:
    """Indices of ``specs`` in stacks of least total cost, sum over stacks of STACK_COST + (models) x
    aot_work(largest model), among cuts into consecutive runs of the models sorted by (w, H, d, d_h)."""
    order = sorted(range(len(specs)), key=lambda i: (specs[i].mlp_width, specs[i].heads, specs[i].dim,
                                                     specs[i].head_dim))
    k = len(order)
    best = [0.0] + [float("inf")] * k   # best[j]: least cost of the first j models in sorted order
    cut_at = [0] * (k + 1)
    for j in range(1, k + 1):
        for i in range(j):
            run = [specs[order[t]] for t in range(i, j)]
            cost = best[i] + STACK_COST + len(run) * aot_work(padded_model(run), batch)
            if cost < best[j]:
                best[j], cut_at[j] = cost, i
    stacks, j = [], k
    while j > 0:
        stacks.append(sorted(order[cut_at[j]:j]))
        j = cut_at[j]
    return sorted(stacks)
