"""One stack: the models of one ``shape_key`` as rows of a single weight tensor, with their data.

All weights of model i live in row i of one leaf tensor ``flat`` (m, P), so one backward pass and one
Adam step (``memcap.train.adam.adam_update``) serve every model; :meth:`Stack.views` gives the named
stacked weights as views into it for the forwards of :mod:`memcap.train.forward`.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from memcap.data import sinusoidal_positions
from memcap.train.forward import aot_head, aot_outputs, aot_pair_outputs, aot_pair_residuals, cross_entropy, mha_outputs
from memcap.train.prepare import init_one, max_shape, pad_to, stack_data
from memcap.train.specs import AoTSpec, MHASpec, Spec

EVAL_BUDGET = 2 ** 24
"""Largest number of activation entries one evaluation chunk may hold (keeps GPU and CPU memory bounded)."""


class Stack:
    """Models of one ``shape_key``, zero-padded to one shape: stacked weights, data, forward on a batch."""

    def __init__(self, specs: Sequence[Spec], dtype: torch.dtype, device: torch.device) -> None:
        self.specs = list(specs)
        self.classification = specs[0].task == "classification"
        inits = [init_one(s) for s in specs]
        self.true_shapes = [{name: tuple(t.shape) for name, t in p.items()} for p in inits]
        padded = {name: max_shape([p[name] for p in inits]) for name in inits[0]}   # largest model of the stack
        if isinstance(specs[0], MHASpec):   # W_O (H*d_v, d) is head-major: pad it head by head
            d_v, H_max = specs[0].value_dim, max(s.heads for s in specs)
            for p in inits:
                p["W_O"] = pad_to(p["W_O"].reshape(-1, d_v, p["W_O"].shape[1]),
                                   (H_max, d_v, p["W_O"].shape[1])).reshape(H_max * d_v, -1)
        self.layout: list[tuple[str, tuple[int, ...], int, int]] = []   # (name, shape, start, end)
        start = 0
        for name, shape in padded.items():
            size = int(np.prod(shape))
            self.layout.append((name, shape, start, start + size))
            start += size
        # all weights of model i live in row i of one leaf tensor: one gradient, one Adam step
        flat = torch.stack([torch.cat([pad_to(p[name], padded[name]).reshape(-1) for name in padded])
                            for p in inits])                                  # (m, P)
        self.flat = flat.to(device=device, dtype=dtype).requires_grad_()
        self.data = stack_data(specs, dtype, device)
        self.positions = None
        self.token_bias = None
        s = specs[0]
        if isinstance(s, MHASpec):
            n = [spec.context_size for spec in specs]
            if min(n) < max(n):   # (m, n_max): 0 on a model's own context tokens, -inf on padding
                valid = torch.arange(max(n), device=device)[None, :] < torch.tensor(n, device=device)[:, None]
                bias = torch.zeros(valid.shape, dtype=dtype, device=device)
                self.token_bias = bias.masked_fill(~valid, float("-inf"))
            if s.embedding:
                self.positions = sinusoidal_positions(max(n) + 1, s.dim, dtype=dtype, device=device)
        self.counts = self.data.counts[self.data.owner]                       # (m,) T of each model
        self.pairs = None   # AoTs with S = 2: (m, T_max) row t_1 N + t_2 of each model's examples, (D, N^2) its label
        if isinstance(s, AoTSpec) and s.seq_len == 2:
            tokens, N = self.data.inputs[0], s.vocab
            self.pairs = tokens[..., 0] * N + tokens[..., 1]
            self.pair_labels = torch.zeros((tokens.shape[0], N * N), dtype=self.data.labels.dtype, device=device)
            for j, T in enumerate(self.data.counts.tolist()):   # padded examples (T..T_max) must not write
                self.pair_labels[j, self.pairs[j, :T]] = self.data.labels[j, :T]
            self.pairs = self.pairs[self.data.owner]                           # (m, T_max): each model's own
        # class labels (m, T_max) of each model's own set, picked with torch.gather: indexing labels[own, idx]
        # took 20 us a step where gather takes 5 (and 42 + 11 us for the tokens and their row t_1 N + t_2)
        self.labels = self.data.labels[self.data.owner] if self.data.labels.ndim == 2 else None
        self.dtype = dtype
        if isinstance(s, MHASpec):   # activation entries per example and model, for evaluation chunks
            H, n_max = max(x.heads for x in specs), max(x.context_size for x in specs)
            self.per_example = H * (2 * n_max + s.dim) + s.output_width + (0 if s.shared else 2 * n_max * s.dim)
        else:
            H, d, w = (max(getattr(x, a) for x in specs) for a in ("heads", "dim", "mlp_width"))
            self.per_example = H * (s.seq_len + d + max(x.head_dim for x in specs)) + 2 * s.seq_len * d + \
                2 * s.vocab + w

    def views(self, flat: torch.Tensor) -> dict[str, torch.Tensor]:
        """The named stacked weights (m, ...) as views into the rows of ``flat`` (m, P)."""
        m = flat.shape[0]
        return {name: flat[:, a:b].reshape((m,) + shape) for name, shape, a, b in self.layout}

    def gradient(self, loss: torch.Tensor, views: dict[str, torch.Tensor], out: torch.Tensor) -> torch.Tensor:
        """d ``loss`` / d flat, written into ``out`` (m, P) and returned; ``views`` are the :meth:`views` the loss
        was computed from.

        The same numbers as ``torch.autograd.grad(loss, [flat])``, cheaper: autograd stops at each named view
        and its gradient is copied into its columns, where the backward of each slice would build an (m, P)
        tensor of zeros around it and add them all up. A weight the loss does not use gets zeros.
        """
        used = [(name, a, b) for name, _, a, b in self.layout if b > a]
        grads = torch.autograd.grad(loss, [views[name] for name, _, _ in used], allow_unused=True)
        for (_, a, b), g in zip(used, grads):
            if g is None:
                out[:, a:b] = 0
            else:
                out[:, a:b] = g.reshape(out.shape[0], b - a)
        return out

    def unpadded(self, flat: torch.Tensor, i: int) -> dict[str, np.ndarray]:
        """Model i's weights at their own shapes (padding removed), as NumPy arrays."""
        out = {}
        for name, t in self.views(flat).items():
            shape = self.true_shapes[i][name]
            w = t[i]
            if name == "W_O" and isinstance(self.specs[i], MHASpec):   # head-major rows: keep the first H heads
                w = w[: shape[0]]
            out[name] = w[tuple(slice(0, k) for k in shape)].cpu().numpy()
        return out

    def outputs(self, params: dict[str, torch.Tensor], idx: torch.Tensor) -> torch.Tensor:
        """Model outputs (m, B, out) on examples ``idx`` (m, B) of each model's own training set."""
        own = self.data.owner[:, None]                                         # (m, 1)
        if self.pairs is not None:
            return aot_pair_outputs(params, torch.gather(self.pairs, 1, idx))
        if isinstance(self.specs[0], AoTSpec):
            return aot_outputs(params, self.data.inputs[0][own, idx])
        contexts, queries = self.data.inputs
        ctx = contexts[self.data.owner] if self.data.shared else contexts[own, idx]
        return mha_outputs(params, ctx, queries[own, idx], self.positions, self.token_bias)[0]

    def losses(self, params: dict[str, torch.Tensor], idx: torch.Tensor, weight: torch.Tensor, *,
               count_correct: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Per-model mean loss (m,) and correct count (m,) over examples ``idx`` with 0/1 ``weight`` (m, B).

        Training passes ``count_correct=False`` (the count is then None). AoTs with S = 2 whose N^2
        possible sequences are no more than the batch compute the loss once per sequence, weighted by
        how often the batch holds it (the same sum, in another order).
        """
        own = self.data.owner[:, None]                                         # (m, 1)
        if self.pairs is not None and not count_correct and self.pair_labels.shape[1] <= idx.shape[1]:
            logits = aot_head(params, aot_pair_residuals(params))                # (m, N^2, N)
            times = torch.zeros((idx.shape[0], logits.shape[1]), dtype=weight.dtype, device=weight.device)
            times.scatter_add_(1, torch.gather(self.pairs, 1, idx), weight)    # (m, N^2) weight of each sequence
            per = cross_entropy(logits, self.pair_labels[self.data.owner])
            return (per * times).sum(1) / weight.sum(1).clamp(min=1), None
        out = self.outputs(params, idx)                                        # (m, B, out)
        y = self.data.labels[own, idx] if self.labels is None else torch.gather(self.labels, 1, idx)
        correct = None
        if self.classification:
            per = cross_entropy(out, y)
            if count_correct:
                correct = ((out.argmax(-1) == y) * weight.bool()).sum(1)
        else:
            per = ((out - y) ** 2).mean(-1)                                   # (m, B)
            correct = torch.zeros_like(self.counts)
        return (per * weight).sum(1) / weight.sum(1).clamp(min=1), correct

    @torch.no_grad()
    def evaluate(self, params: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """Full-training-set (mean loss (m,), correct count (m,)), in chunks that bound memory."""
        m, T_max = len(self.specs), int(self.counts.max())
        chunk = max(1, min(T_max, EVAL_BUDGET // (m * self.per_example)))
        loss_sum = torch.zeros(m, dtype=torch.float64, device=self.counts.device)
        correct = torch.zeros(m, dtype=torch.long, device=self.counts.device)
        for start in range(0, T_max, chunk):
            idx = torch.arange(start, min(start + chunk, T_max), device=self.counts.device).expand(m, -1)
            weight = (idx < self.counts[:, None]).to(self.dtype)
            mean, right = self.losses(params, idx, weight)
            loss_sum += mean.double() * weight.sum(1).double()
            correct += right
        return loss_sum / self.counts.double(), correct
