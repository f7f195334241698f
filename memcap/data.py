"""The synthetic tasks of both papers, and the two information measures the chapters use.

* **Mahdavi et al.** (Section 5.2 and Appendix I.1): T examples, each a context E^(t) of n tokens and
  a query e^(t), raw tokens drawn from U(0,1)^d; the context is either shared by all examples
  (x_i^(t) := x_i, the setting of their Proposition 2 and Figures 2, 3 and 5) or drawn afresh per
  example (their Figure 4). Labels are uniform classes in [C] (C = 100 in the paper) or U(0,1) reals.
* **Dana et al.** (Sections 2 and 4.2, Appendix B): token sequences t_{1:S} over a vocabulary [N]
  with a next token t_{S+1} = g(t_{1:S}) given by a random look-up table g (the association task,
  their Assumption 1), and noisy look-up tables whose conditionals pi(. | t_{1:S}) have a
  prescribed entropy (the distribution task, their Assumption 2 and Theorem 2).

Token ids are 0-based: the paper's [N] = {1, ..., N} is {0, ..., N-1} here, and class labels likewise.
Every random draw goes through an explicit ``torch.Generator`` (``None``: a fresh one seeded with 0, as
everywhere in memcap); values are drawn on the generator's device and then moved, so a seed gives the
same task on every device. Outputs go to ``device`` (None: :func:`memcap.device.pick_device`), or to the
device of the tensor inputs (a look-up table, probabilities).
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, replace

import torch

from memcap import _resolve
from memcap._checks import (
    as_float,
    check_allocation,
    check_finite,
    check_precision,
    check_shape,
    check_tensor,
    float_input,
    float_tensor,
    id_tensor,
    on_device,
    positive_int,
    same_device_dtype,
)
from memcap.device import exact_dtype

__all__ = [
    "MAX_SEQUENCES", "sinusoidal_positions", "MemorizationTask", "mahdavi_task", "all_sequences",
    "random_lookup_table", "association_task", "lookup_noise_for_entropy", "next_token_distribution",
    "entropy", "kl_divergence",
]

MAX_SEQUENCES = 10 ** 7
"""Largest N^S that :func:`random_lookup_table`, :func:`all_sequences` and friends will enumerate."""


# ---------------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------------

def _float_dtype(dtype: torch.dtype | None) -> torch.dtype:
    """``dtype``, or torch's default float dtype when None; must be float32 or float64."""
    return _resolve.float_dtype(dtype, torch.get_default_dtype())


def _sequence_count(vocab: int, seq_len: int) -> int:
    """N^S, refused above :data:`MAX_SEQUENCES`."""
    count = vocab ** seq_len
    if count > MAX_SEQUENCES:
        raise ValueError(f"N^S = {vocab}^{seq_len} = {count} sequences exceed the enumeration limit "
                         f"MAX_SEQUENCES = {MAX_SEQUENCES}")
    return count


def _digits(index: torch.Tensor, vocab: int, seq_len: int) -> torch.Tensor:
    """Base-N digits of ``index`` (m,), most significant first: (m, S) token ids."""
    powers = vocab ** torch.arange(seq_len - 1, -1, -1, device=index.device)   # (S,)
    return (index[:, None] // powers) % vocab                                    # (m, S)


def _check_integer(name: str, value: object, device: torch.device | None = None) -> torch.Tensor:
    """``value`` as an integer tensor (array-likes converted, onto ``device``); ``TypeError`` otherwise."""
    return id_tensor(name, value, device=device)


def _check_range(name: str, tensor: torch.Tensor, upper: int, symbol: str) -> None:
    """Raise ``ValueError`` unless every entry of the integer ``tensor`` lies in [0, upper)."""
    if tensor.numel() == 0:
        return
    low, high = int(tensor.min()), int(tensor.max())
    if low < 0 or high >= upper:
        bad = low if low < 0 else high
        raise ValueError(f"{name} must lie in [0, {symbol}) = [0, {upper}), got {bad}")


def _check_probability_rows(name: str, probs: torch.Tensor) -> torch.Tensor:
    """``probs`` as a (rows, N) float tensor whose rows are probability vectors, else raise naming ``name``.

    Array-likes are converted (float64, CPU). Row sums may miss 1 by max(sqrt(eps), 10 N eps), the
    rounding of a float softmax, with eps the machine epsilon of the dtype ``probs`` comes in: check
    before casting (a float32 softmax cast to float64 still misses 1 by float32's rounding).
    """
    probs = float_tensor(name, probs)
    if probs.ndim != 2 or probs.shape[1] == 0:
        raise ValueError(f"{name} must have shape (rows, N) with N >= 1, got {tuple(probs.shape)}")
    check_shape(name, probs, (None, None), "(rows, N)")
    if bool((probs < 0).any()):
        row = int(((probs < 0) | ~torch.isfinite(probs)).any(dim=1).nonzero()[0])
        raise ValueError(f"{name} must hold probabilities (finite entries >= 0), row {row} does not")
    eps = torch.finfo(probs.dtype).eps
    tol = max(eps ** 0.5, 10 * probs.shape[1] * eps)
    gap = (probs.sum(dim=1) - 1).abs()
    if bool((gap > tol).any()):
        row = int(gap.argmax())
        raise ValueError(f"{name} rows must sum to 1 (probability vectors), row {row} sums to "
                         f"{float(probs[row].sum())!r}, off by {float(gap[row]):.3g}, more than the {probs.dtype} "
                         f"tolerance {tol:.3g}")
    return probs


# ---------------------------------------------------------------------------------------------------
# Mahdavi et al.: contexts, queries, labels
# ---------------------------------------------------------------------------------------------------

def sinusoidal_positions(length: int, dim: int, *, dtype: torch.dtype | None = None,
                         device: torch.device | str | None = None) -> torch.Tensor:
    """Sinusoidal positional encodings pos_p (Vaswani et al., 2017), positions p = 0, ..., length-1.

    pos_p[2i] = sin(p / 10000^(2i/d)), pos_p[2i+1] = cos(p / 10000^(2i/d)). Returns (length, d).
    Mahdavi et al. (Section 4.4) use that this matrix has full rank to motivate their Assumption 2.
    """
    length = positive_int("length", length)
    d = positive_int("dim", dim)
    dtype, dev = _float_dtype(dtype), _resolve.device(device)
    cpu = "cpu"   # made in float64 on the CPU, then moved: the same numbers on every device
    check_allocation("the encodings and their angles", 2 * length * d, cpu, length=length, dim=d)
    p = torch.arange(length, dtype=torch.float64, device=cpu)[:, None]              # (length, 1)
    rate = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64, device=cpu) / d)  # (ceil(d/2),)
    angle = p * rate                                                                # (length, ceil(d/2))
    pos = torch.empty(length, d, dtype=torch.float64, device=cpu)
    pos[:, 0::2] = torch.sin(angle)
    pos[:, 1::2] = torch.cos(angle[:, : d // 2])
    return pos.to(device=dev, dtype=dtype)


@dataclass(frozen=True, eq=False)
class MemorizationTask:
    """A training set {(E^(t), e^(t), y^(t))}_{t=1}^T of Mahdavi et al. (Section 3).

    ``contexts`` E: (T, n, d), or (n, d) for one context shared by all examples; ``queries`` e: (T, d);
    ``labels`` y: (T,) int64 classes in [0, C) when ``classes`` = C is given, else (T, d_out) floats.
    """

    contexts: torch.Tensor
    queries: torch.Tensor
    labels: torch.Tensor
    classes: int | None = None

    def __post_init__(self) -> None:
        given = [getattr(self, k) for k in ("contexts", "queries", "labels")]
        like = next((v for v in given[:2] if isinstance(v, torch.Tensor) and v.is_floating_point()), None)
        for name in ("contexts", "queries"):   # arrays and nested lists: converted once, like the tensors
            if not isinstance(getattr(self, name), torch.Tensor):
                object.__setattr__(self, name, float_input(name, getattr(self, name), like))
                like = getattr(self, name) if like is None else like
        if not isinstance(self.labels, torch.Tensor):
            object.__setattr__(self, "labels", id_tensor("labels", self.labels, device=self.queries.device)
                               if self.classes is not None else float_input("labels", self.labels, self.queries))
        for name in ("contexts", "queries"):
            t = check_tensor(name, getattr(self, name))
            if not t.is_floating_point():
                raise TypeError(f"{name} must have a floating-point dtype, got {t.dtype}")
            check_precision(name, t.dtype)
            check_finite(name, on_device(name, t, None if name == "contexts" else self.contexts.device))
        check_shape("queries", self.queries, (None, None), "(T, d)")
        T, d = self.queries.shape
        if self.contexts.ndim == 2:
            check_shape("contexts", self.contexts, (None, d), "shared (n, d)")
        elif self.contexts.ndim == 3:
            check_shape("contexts", self.contexts, (T, None, d), "(T, n, d)")
        else:
            raise ValueError(f"contexts must have shape (T, n, d) = ({T}, *, {d}) or shared (n, d) = (*, {d}), "
                             f"got {tuple(self.contexts.shape)}")
        same_device_dtype(contexts=self.contexts, queries=self.queries)
        check_tensor("labels", self.labels)
        check_finite("labels", on_device("labels", self.labels, self.queries.device))
        if self.classes is not None:
            C = positive_int("classes", self.classes)
            object.__setattr__(self, "classes", C)   # a NumPy integer as a Python int, like the specs'
            if self.labels.dtype != torch.int64:
                raise TypeError(f"labels of a classification task must have dtype torch.int64, "
                                f"got {self.labels.dtype}")
            check_shape("labels", self.labels, (T,), "(T,)")
            _check_range("labels", self.labels, C, "C")
        else:
            if self.labels.dtype != self.queries.dtype:
                raise TypeError(f"labels of a regression task must have the queries' dtype {self.queries.dtype}, "
                                f"got {self.labels.dtype}")
            check_shape("labels", self.labels, (T, None), "(T, d_out)")

    @property
    def examples(self) -> int:
        """T, the number of examples."""
        return self.queries.shape[0]

    @property
    def context_size(self) -> int:
        """n, the number of context tokens per example."""
        return self.contexts.shape[-2]

    @property
    def dim(self) -> int:
        """d, the token dimension."""
        return self.queries.shape[1]

    @property
    def shared(self) -> bool:
        """True when one context (n, d) serves every example."""
        return self.contexts.ndim == 2

    @property
    def out_dim(self) -> int:
        """Width of the model output the task needs: C logits, or d_out regression targets."""
        return self.classes if self.classes is not None else self.labels.shape[1]

    def to(self, device: torch.device | str | None = None, dtype: torch.dtype | None = None) -> "MemorizationTask":
        """A copy moved to ``device``; ``dtype`` casts the float tensors only (class labels stay int64)."""
        float_labels = self.classes is None
        return replace(self, contexts=self.contexts.to(device=device, dtype=dtype),
                       queries=self.queries.to(device=device, dtype=dtype),
                       labels=self.labels.to(device=device, dtype=dtype if float_labels else None))


def mahdavi_task(examples: int, context_size: int, dim: int, *, shared: bool = True,
                 task: str = "classification", classes: int = 100, out_dim: int = 1,
                 generator: torch.Generator | None = None, dtype: torch.dtype | None = None,
                 device: torch.device | str | None = None) -> MemorizationTask:
    """The synthetic training set of Mahdavi et al. (Section 5.2; Appendix I.1 when ``shared=False``).

    Raw tokens are i.i.d. U(0,1)^d (no embedding or positional encoding applied): a shared context
    x_1, ..., x_n (n, d), or one context per example (T, n, d); queries x^(t) (T, d). Labels are uniform
    classes in [0, C) for ``task="classification"`` (``out_dim`` unused) or U(0,1)^{d_out} for
    ``task="regression"`` (``classes`` unused). Draw order: contexts, queries, labels.
    """
    T = positive_int("examples", examples)
    n = positive_int("context_size", context_size)
    d = positive_int("dim", dim)
    if not isinstance(shared, bool):
        raise TypeError(f"shared must be a bool, got {type(shared).__name__}")
    if task not in ("classification", "regression"):
        raise ValueError(f"task must be 'classification' or 'regression', got {task!r}")
    C = positive_int("classes", classes) if task == "classification" else None
    d_out = positive_int("out_dim", out_dim) if C is None else 1
    gen = _resolve.generator(generator)
    dtype, dev = _float_dtype(dtype), _resolve.device(device)
    check_allocation("the training set (contexts, queries, labels)", (1 if shared else T) * n * d + T * (d + d_out),
                     dev, examples=T, context_size=n, dim=d, **({} if C is not None else {"out_dim": d_out}))
    contexts = _resolve.rand((n, d) if shared else (T, n, d), gen, dtype, dev)
    queries = _resolve.rand((T, d), gen, dtype, dev)
    if C is not None:
        labels = _resolve.randint(C, (T,), gen, dev)
        return MemorizationTask(contexts, queries, labels, classes=C)
    return MemorizationTask(contexts, queries, _resolve.rand((T, d_out), gen, dtype, dev), classes=None)


# ---------------------------------------------------------------------------------------------------
# Dana et al.: look-up tables, associations, distributions
# ---------------------------------------------------------------------------------------------------

def all_sequences(vocab: int, seq_len: int, *, device: torch.device | str | None = None) -> torch.Tensor:
    """Every token sequence t_{1:S} in [0, N)^S, in lexicographic order: (N^S, S) int64.

    Row r holds the base-N digits of r, so row r of :func:`next_token_distribution` belongs to it.
    """
    N = positive_int("vocab", vocab)
    S = positive_int("seq_len", seq_len)
    count = _sequence_count(N, S)
    return _digits(torch.arange(count, device=_resolve.device(device)), N, S)


def random_lookup_table(vocab: int, seq_len: int, *, generator: torch.Generator | None = None,
                        device: torch.device | str | None = None) -> torch.Tensor:
    """A uniformly random look-up table g: [N]^S -> [N], t_{S+1} = g(t_{1:S}) (Dana et al., Assumption 1).

    Returns an int64 tensor of shape (N,)*S: ``table[t_1, ..., t_S]`` is the next token.
    """
    N = positive_int("vocab", vocab)
    S = positive_int("seq_len", seq_len)
    _sequence_count(N, S)
    gen = _resolve.generator(generator)
    return _resolve.randint(N, (N,) * S, gen, _resolve.device(device))


def _check_table(table: object, vocab: int, seq_len: int, device: torch.device | None = None) -> torch.Tensor:
    """Validate a look-up table (array-likes converted onto ``device``, a tensor elsewhere refused): integer
    ids in [0, N), shape (N,)*S."""
    table = _check_integer("table", table, device)
    check_shape("table", table, (vocab,) * seq_len, "(N,)*S")
    _check_range("table", table, vocab, "N")
    return table


def association_task(vocab: int, seq_len: int, *, count: int | None = None,
                     table: torch.Tensor | None = None, generator: torch.Generator | None = None,
                     device: torch.device | str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The association task of Dana et al.: T0 distinct sequences and their next tokens under g.

    ``table`` g: (N,)*S int64 (drawn with :func:`random_lookup_table` when None). ``count`` T0: how many
    distinct sequences, drawn uniformly without replacement and listed in lexicographic order; None
    means all N^S of them. Returns tokens (T0, S) int64 and targets (T0,) int64 with
    targets[i] = g(tokens[i]). ``generator`` draws the table and the subset, in that order (None: a
    fresh generator seeded with 0). ``device`` defaults to the table's, else pick_device(); a table on
    another device than ``device`` is refused.
    """
    N = positive_int("vocab", vocab)
    S = positive_int("seq_len", seq_len)
    total = _sequence_count(N, S)
    gen = _resolve.generator(generator)
    if table is None:
        dev = _resolve.device(device)
        table = random_lookup_table(N, S, generator=gen, device=dev)
    else:
        table = _check_table(table, N, S, None if device is None else _resolve.device(device)).to(torch.int64)
        dev = table.device
    if count is None:
        tokens = all_sequences(N, S, device=dev)
    else:
        T0 = positive_int("count", count)
        if T0 > total:
            raise ValueError(f"count must be at most N^S = {total} distinct sequences, got {T0}")
        index = _resolve.randperm(total, gen, dev)[:T0].sort().values
        tokens = _digits(index, N, S)
    targets = table[tuple(tokens.T)]
    return tokens, targets


def _lookup_entropy(eta: float, vocab: int) -> float:
    """Entropy (nats) of the row with mass 1-eta on one token and eta/(N-1) on each other one."""
    keep = -(1 - eta) * math.log(1 - eta) if eta < 1 else 0.0
    spread = -eta * math.log(eta / (vocab - 1)) if eta > 0 else 0.0
    return keep + spread


def lookup_noise_for_entropy(vocab: int, entropy: float) -> float:
    """The noise eta in [0, 1 - 1/N] of a noisy look-up row whose entropy equals ``entropy`` (nats).

    The row puts 1-eta on the table's token and eta/(N-1) on each other token; its entropy
    -(1-eta) log(1-eta) - eta log(eta/(N-1)) rises strictly from 0 to log N on [0, 1-1/N], so the
    solution is unique; it is found by bisection to float64 resolution.
    """
    N = positive_int("vocab", vocab)
    if isinstance(entropy, bool) or not isinstance(entropy, numbers.Real):
        raise TypeError(f"entropy must be a real number (nats), got {entropy!r}")
    h = as_float("entropy", entropy)
    log_n = math.log(N)
    if not (0.0 <= h <= log_n):
        raise ValueError(f"entropy must lie in [0, log N] = [0, {log_n:.6g}] nats, got {h}")
    if h == 0.0 or N == 1:
        return 0.0
    low, high = 0.0, 1.0 - 1.0 / N
    if h == log_n:
        return high
    while high - low > 1e-16:
        mid = 0.5 * (low + high)
        if mid in (low, high):
            break
        if _lookup_entropy(mid, N) < h:
            low = mid
        else:
            high = mid
    return 0.5 * (low + high)


def next_token_distribution(vocab: int, seq_len: int, *, entropy: float,
                            generator: torch.Generator | None = None, table: torch.Tensor | None = None,
                            dtype: torch.dtype | None = None,
                            device: torch.device | str | None = None) -> torch.Tensor:
    """Conditionals pi(. | t_{1:S}) of a noisy look-up table, every one with the given entropy (nats).

    Each row puts 1-eta on the token g(t_{1:S}) and eta/(N-1) on every other token, with eta from
    :func:`lookup_noise_for_entropy`; ``entropy`` = 0 is the association task (Dana et al., Assumption 1),
    0 < entropy has full support (their Assumption 2), log N is uniform. ``table`` g: (N,)*S (drawn
    with ``generator`` when None; ``generator=None`` means a fresh one seeded with 0). Returns probs:
    (N^S, N), rows in the order of :func:`all_sequences`.
    ``dtype`` defaults to float64 (:func:`memcap.device.exact_dtype`); ``device`` to the table's.
    """
    N = positive_int("vocab", vocab)
    S = positive_int("seq_len", seq_len)
    eta = lookup_noise_for_entropy(N, entropy)
    tokens, targets = association_task(N, S, table=table, generator=generator, device=device)
    dev = tokens.device
    dtype = exact_dtype(dev) if dtype is None else _float_dtype(dtype)
    other = eta / (N - 1) if N > 1 else 0.0
    probs = torch.full((tokens.shape[0], N), other, dtype=torch.float64, device=dev)
    probs.scatter_(1, targets[:, None], 1.0 - eta)
    return probs.to(dtype)


# ---------------------------------------------------------------------------------------------------
# information measures
# ---------------------------------------------------------------------------------------------------

def entropy(probs: torch.Tensor) -> torch.Tensor:
    """Shannon entropy H(p) = -sum_j p_j log p_j in nats, with 0 log 0 = 0, of each row.

    ``probs``: (rows, N), each row a probability vector. Returns (rows,).
    """
    probs = _check_probability_rows("probs", probs)
    return -torch.special.xlogy(probs, probs).sum(dim=1)


def kl_divergence(p: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    """KL(p || Softmax(logits)) = sum_j p_j (log p_j - log softmax(logits)_j) of each row, in nats.

    ``p``: (rows, N) probability vectors (the target pi(. | t_{1:S}) of Dana et al.); ``logits``:
    (rows, N) model outputs. Computed with log_softmax, so large logits do not overflow; terms with
    p_j = 0 contribute 0. Returns (rows,).
    """
    p = _check_probability_rows("p", p)
    logits = float_input("logits", logits, p)   # an array-like takes p's dtype; a tensor must match it
    check_shape("logits", logits, tuple(p.shape), "(rows, N)")
    same_device_dtype(p=p, logits=logits)
    log_q = torch.log_softmax(logits, dim=1)
    cross = torch.where(p > 0, p * log_q, torch.zeros_like(log_q))
    return (torch.special.xlogy(p, p) - cross).sum(dim=1)
