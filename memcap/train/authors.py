"""The papers' own way of training one model, re-implemented in our words for the benchmark.

Both papers train one small model per run with plain PyTorch modules and loops (see the engineering
notes of the project, "The papers' own code"). :func:`train_like_authors` times that recipe so that
``python -m memcap bench`` can put the stacked engine next to it on the same machine, in the same run:

* Dana et al.: an AoT whose H heads are H separate ``torch.nn.MultiheadAttention`` modules (one head
  each, d_h = d) called one after the other and summed into the residual stream at the last position,
  Adam, batches from a ``DataLoader`` drawing with replacement.
* Mahdavi et al.: their layer on the sequence (query, context tokens) of every example, so the keys
  and values of the shared context are recomputed for every example (B, H, n, d_h), Adam with linear
  warm-up and cosine decay, ``DataLoader`` batches.

These are timing stand-ins, not the engine: they are not used to produce any figure
(``tests/test_bench.py`` checks that they train on small cases).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, RandomSampler, TensorDataset

from memcap._checks import positive_int
from memcap.data import sinusoidal_positions
from memcap.train.config import TrainConfig
from memcap.train.prepare import dataset
from memcap.train.schedule import lr_factor
from memcap.train.specs import AoTSpec, MHASpec, Spec


class DanaAoT(nn.Module):
    """Dana et al.'s AoT as their code builds it: one ``nn.MultiheadAttention`` (one head, width d) per head."""

    def __init__(self, spec: AoTSpec) -> None:
        super().__init__()
        d = spec.dim
        self.embed = nn.Embedding(spec.vocab, d)
        self.positions = nn.Parameter(torch.randn(spec.seq_len, d, device="cpu") / math.sqrt(d))
        self.heads = nn.ModuleList(nn.MultiheadAttention(d, 1, bias=False, batch_first=True) for _ in range(spec.heads))
        self.unembed = nn.Linear(d, spec.vocab, bias=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits (B, N) at the last position of ``tokens`` (B, S)."""
        x = self.embed(tokens) + self.positions                              # (B, S, d)
        last = x[:, -1:, :]
        r = x[:, -1, :]
        for head in self.heads:                                               # one module after the other
            r = r + head(last, x, x, need_weights=False)[0][:, 0, :]
        return self.unembed(r)


class MahdaviLayer(nn.Module):
    """Mahdavi et al.'s experimental model on (query, context) sequences: embedding, sinusoidal positions,
    H heads with d_v = 1, keys and values of the context computed for every example."""

    def __init__(self, spec: MHASpec) -> None:
        super().__init__()
        d, H, d_h = spec.dim, spec.heads, spec.d_h
        self.embed = nn.Linear(d, d)
        self.register_buffer("positions", sinusoidal_positions(spec.context_size + 1, d, dtype=torch.float32,
                                                               device=torch.device("cpu")))
        self.W_Q, self.W_K = nn.Linear(d, H * d_h, bias=False), nn.Linear(d, H * d_h, bias=False)
        self.W_V = nn.Linear(d, H * spec.value_dim, bias=False)
        self.W_O = nn.Linear(H * spec.value_dim, d, bias=False)
        self.readout = nn.Linear(d, spec.output_width)
        self.shape = (H, d_h, spec.value_dim)

    def forward(self, sequences: torch.Tensor) -> torch.Tensor:
        """Outputs (B, C) of ``sequences`` (B, n+1, d): the query first, then the n context tokens."""
        H, d_h, d_v = self.shape
        x = self.embed(sequences) + self.positions                            # (B, n+1, d)
        B, n1, d = x.shape
        q = self.W_Q(x[:, 0]).view(B, H, 1, d_h)
        k = self.W_K(x[:, 1:]).view(B, n1 - 1, H, d_h).transpose(1, 2)        # (B, H, n, d_h): per example
        v = self.W_V(x[:, 1:]).view(B, n1 - 1, H, d_v).transpose(1, 2)
        theta = torch.softmax(q @ k.transpose(2, 3) / math.sqrt(d), dim=-1)  # (B, H, 1, n)
        return self.readout(self.W_O((theta @ v).reshape(B, H * d_v)))


def train_like_authors(spec: Spec, config: TrainConfig, steps: int, *, device: torch.device | None = None) -> float:
    """Train one model of ``spec`` for ``steps`` optimizer steps the authors' way; returns the last loss.

    ``config`` gives the batch size, learning rate and schedule (as in the engine); early stop and
    periodic evaluation are left out, as in the benchmark's engine runs.
    """
    S = positive_int("steps", steps)
    if not isinstance(spec, (AoTSpec, MHASpec)):
        raise TypeError(f"spec must be an AoTSpec or MHASpec, got {type(spec).__name__}")
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")
    dev = torch.device("cpu") if device is None else device
    torch.manual_seed(spec.seed)
    inputs, labels = dataset(spec)
    if isinstance(spec, AoTSpec):
        model, data = DanaAoT(spec), inputs[0]
    else:
        contexts, queries = inputs
        T = queries.shape[0]
        ctx = contexts.expand(T, -1, -1) if spec.shared else contexts         # the context in every example
        model, data = MahdaviLayer(spec), torch.cat([queries[:, None, :], ctx], dim=1).float()
        labels = labels if spec.task == "classification" else labels.float()
    model = model.to(dev)
    batch = config.batch_size or data.shape[0]
    loader = DataLoader(TensorDataset(data, labels), batch_size=batch,
                        sampler=RandomSampler(range(data.shape[0]), replacement=True, num_samples=batch * S))
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr, betas=config.betas, eps=config.eps)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda t: float(lr_factor(
        min(t, S - 1), S, schedule=config.schedule, warmup_fraction=config.warmup_fraction,
        start_factor=config.warmup_start_factor)))
    loss = torch.zeros((), device=dev)
    for x, y in loader:
        x, y = x.to(dev), y.to(dev)
        out = model(x)
        loss = F.cross_entropy(out, y) if spec.task == "classification" else F.mse_loss(out, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
    return float(loss.detach())
