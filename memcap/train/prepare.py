"""A stack's starting point: each model's initial weights and training set, zero-padded to one shape.

Initial weights come from :func:`memcap.models.init_mha` / :func:`memcap.models.init_aot` (plus the
experimental model's embedding, and the MLP and shared-compression weights of the AoT variants), drawn
in float64 on the CPU from a generator seeded with ``spec.seed``; training sets from
:mod:`memcap.data` with ``spec.data_seed``. So a model's numbers do not depend on which stack, device or
dtype it is trained in, up to the final cast.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import torch

from memcap._checks import check_allocation
from memcap.data import association_task, mahdavi_task
from memcap.models import init_aot, init_mha
from memcap.train.specs import MHASpec, Spec


def check_fits(spec: Spec, device: torch.device, name: str, *, examples: str | None = None) -> None:
    """Refuse (:func:`memcap._checks.check_allocation`, naming ``name``'s sizes) a spec whose training set and
    weights (four times: the weights, their gradient and Adam's two moments) cannot be held on ``device``:
    before anything is drawn, where the sizes of ``name`` = ``'specs[i]'`` are known (``examples``: another
    name for its T, such as ``'max(candidates)'``). A lower bound: activations and padding come on top."""
    if isinstance(spec, MHASpec):
        T, n, d, H = spec.examples, spec.context_size, spec.dim, spec.heads
        data = (n * d if spec.shared else T * n * d) + T * d + T * (1 if spec.classes is not None else spec.out_dim)
        weights = 2 * H * d * (spec.d_h + spec.value_dim) + d * spec.output_width + (d * d + d + spec.output_width
                                                                                     if spec.embedding else 0)
        sizes = {"examples": T, "context_size": n, "dim": d, "heads": H, "head_dim": spec.d_h}
    else:
        N, S, d, H = spec.vocab, spec.seq_len, spec.dim, spec.heads
        data = spec.T0 * (S + 1)
        weights = (2 * N + S) * d + 4 * H * spec.head_dim * d + 2 * spec.mlp_width * d + spec.head_dim * d
        sizes = {"examples": spec.T0, "vocab": N, "seq_len": S, "dim": d, "heads": H, "head_dim": spec.head_dim,
                 "mlp_width": spec.mlp_width}
    sizes = {examples if key == "examples" and examples else f"{name}.{key}": value for key, value in sizes.items()}
    check_allocation(f"the training set and weights of {name}", data + 4 * weights, device, **sizes)


def init_one(spec: Spec) -> dict[str, torch.Tensor]:
    """Initial float64 CPU weights of one model from its own generator seeded with ``spec.seed``."""
    gen = torch.Generator().manual_seed(spec.seed)
    cpu = torch.device("cpu")
    if isinstance(spec, MHASpec):
        core = init_mha(spec.heads, spec.dim, spec.d_h, spec.value_dim, spec.output_width,
                        generator=gen, dtype=torch.float64, device=cpu)
        params = {name: getattr(core, name) for name in ("W_K", "W_Q", "W_V", "W_O", "W_D")}
        if spec.embedding:
            d = spec.dim
            params["W_E"] = torch.randn(d, d, generator=gen, dtype=torch.float64, device=gen.device) / math.sqrt(d)
            params["b_E"] = torch.zeros(d, dtype=torch.float64, device=cpu)
            params["b_D"] = torch.zeros(spec.output_width, dtype=torch.float64, device=cpu)
        return params
    core = init_aot(spec.vocab, spec.seq_len, spec.dim, spec.heads, spec.head_dim, generator=gen,
                    dtype=torch.float64, device=cpu)
    params = {name: getattr(core, name) for name in
              ("token_embedding", "positional_embedding", "W_Q", "W_K", "W_V", "W_O", "W_U")}
    w, d = spec.mlp_width, spec.dim   # w = 0: no MLP (empty W_1, W_2 keep one layout for every AoT)
    params["W_1"] = torch.randn(w, d, generator=gen, dtype=torch.float64, device=gen.device) / math.sqrt(d)
    params["W_2"] = torch.randn(d, w, generator=gen, dtype=torch.float64, device=gen.device) / math.sqrt(max(w, 1))
    params["W_C"] = torch.zeros(0, d, dtype=torch.float64, device=cpu)   # Eq. (2): no shared compression
    if spec.shared_compression:   # heads act on z = W_C x in R^{d_h}: variance 1/fan_in as everywhere
        H, k = spec.heads, spec.head_dim
        params["W_C"] = torch.randn(k, d, generator=gen, dtype=torch.float64, device=gen.device) / math.sqrt(d)
        for name in ("W_Q", "W_K", "W_V"):
            params[name] = torch.randn(H, k, k, generator=gen, dtype=torch.float64, device=gen.device) / math.sqrt(k)
    return params


@dataclass
class StackData:
    """Training sets of one stack, padded to T_max: D distinct sets, ``owner[i]`` = set of model i."""

    inputs: tuple[torch.Tensor, ...]   # MHA: (contexts, queries); AoT: (tokens,)
    labels: torch.Tensor               # (D, T_max) classes, or (D, T_max, d_out) regression targets
    counts: torch.Tensor               # (D,) T of each set
    owner: torch.Tensor                # (m,) index into the D sets
    shared: bool


def dataset(spec: Spec) -> tuple[tuple[torch.Tensor, ...], torch.Tensor]:
    """The training set of one spec, float64 on the CPU, from a generator seeded with ``data_seed``."""
    gen = torch.Generator().manual_seed(spec.data_seed)
    cpu = torch.device("cpu")
    if isinstance(spec, MHASpec):
        task = mahdavi_task(spec.examples, spec.context_size, spec.dim, shared=spec.shared, task=spec.task,
                            classes=spec.classes or 1, out_dim=spec.out_dim, generator=gen,
                            dtype=torch.float64, device=cpu)
        return (task.contexts, task.queries), task.labels
    tokens, targets = association_task(spec.vocab, spec.seq_len, count=spec.examples, generator=gen, device=cpu)
    return (tokens,), targets


def pad_to(t: torch.Tensor, shape: Sequence[int]) -> torch.Tensor:
    """``t`` with zeros appended along every axis up to ``shape``.

    Zero padding is exact for the weights: a padded head (W_Q, W_K, W_V, W_O all zero) adds nothing to the
    output and receives zero gradient, so Adam leaves it at zero; likewise padded d_h, d (AoT) and MLP
    width w. Padded examples are excluded by weights and counts, padded context tokens by a -inf bias.
    """
    if tuple(t.shape) == tuple(shape):
        return t
    out = t.new_zeros(tuple(shape))
    out[tuple(slice(0, k) for k in t.shape)] = t
    return out


def max_shape(tensors: Sequence[torch.Tensor]) -> tuple[int, ...]:
    return tuple(max(sizes) for sizes in zip(*(t.shape for t in tensors)))


def stack_data(specs: Sequence[Spec], dtype: torch.dtype, device: torch.device) -> StackData:
    keys: dict[tuple, int] = {}
    sets = []
    for spec in specs:
        if spec.data_key() not in keys:
            keys[spec.data_key()] = len(sets)
            sets.append(dataset(spec))
    owner = torch.tensor([keys[s.data_key()] for s in specs], device=device)
    counts = torch.tensor([labels.shape[0] for _, labels in sets], device=device)
    T_max = int(counts.max())
    shared = isinstance(specs[0], MHASpec) and specs[0].shared
    inputs = []
    for j in range(len(sets[0][0])):
        shape = max_shape([s[0][j] for s in sets])
        if not (shared and j == 0):
            shape = (T_max,) + shape[1:]
        stacked = torch.stack([pad_to(s[0][j], shape) for s in sets]).to(device)
        inputs.append(stacked if not stacked.is_floating_point() else stacked.to(dtype))
    labels = torch.stack([pad_to(s[1], (T_max,) + tuple(s[1].shape[1:])) for s in sets]).to(device)
    if labels.is_floating_point():
        labels = labels.to(dtype)
    return StackData(tuple(inputs), labels, counts, owner, shared)
