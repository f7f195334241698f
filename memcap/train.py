"""The stacked training engine: many small attention models trained as one tensor program.

Both papers train thousands of tiny models one per process (Mahdavi et al., Section 5.2 and their
Appendix H; Dana et al., Section 4.2 and Appendix B). Here k independent models live in one set of
tensors whose first axis is the model axis: one forward pass, one backward pass and one Adam step update
all of them. Models never interact: every parameter, batch index, learning rate, Adam moment and
early-stop flag is per model, so training k models stacked gives the same numbers as training them one
by one (``tests/test_train.py`` checks it).

Models (the ``*Spec`` dataclasses say which model and which training set):

* :class:`MHASpec`: Mahdavi et al.'s one-layer multi-head attention, Eqs. (1)-(6), read out at the
  query. With ``embedding=True`` it is their experimental model (Section 5.2 and their published code):
  a trainable linear embedding of the raw U(0,1)^d tokens plus sinusoidal positions (query at position
  0, context tokens at 1..n), scores divided by sqrt(d), biases on embedding and readout, d_v = 1,
  no skip connection. With ``embedding=False`` it is exactly :func:`memcap.models.mha_forward`.
* :class:`AoTSpec`: Dana et al.'s attention-only transformer, Eqs. (1)-(2), and with ``mlp_width`` = w > 0
  their "MLP-based Transformer" of Section 4.2.1, W_U (W_2 GELU(W_1 .) + I_d)(x_S + sum_h W_O^h W_V^h A^h).

Training (:class:`TrainConfig`): Adam, linear warm-up then cosine decay (Mahdavi et al.'s recipe) or a
constant rate (Dana et al.'s), mini-batches drawn with replacement from each model's own training set,
full-training-set evaluation every ``eval_every`` steps, and per-model early stop at 100 % training
accuracy (a stopped model's parameters and Adam state are frozen exactly). Models that differ in H, d_h,
n, T (and for the AoT d and the MLP width w) share one stack: weights are zero-padded to the largest
model (a zero head, zero d_h column or zero MLP unit adds nothing and gets zero gradient, so it stays
zero), padded context tokens get attention exactly 0, padded examples are masked. Only models that
differ in what cannot be padded (see ``shape_key``) go to separate stacks.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from memcap._checks import check_shape, check_tensor, nonnegative_int, positive_int, positive_real
from memcap.data import association_task, mahdavi_task, sinusoidal_positions
from memcap.device import pick_device
from memcap.models import init_aot, init_mha

SCHEDULES = ("warmup_cosine", "constant")
"""Learning-rate schedules: Mahdavi et al.'s linear warm-up + cosine decay to 0, or Dana et al.'s constant."""

_EVAL_BUDGET = 2 ** 24
"""Largest number of activation entries one evaluation chunk may hold (keeps GPU and CPU memory bounded)."""


# ---------------------------------------------------------------------------------------------------
# model specifications
# ---------------------------------------------------------------------------------------------------

def _check_bool(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return value


@dataclass(frozen=True)
class MHASpec:
    """One Mahdavi et al. model (Eqs. (1)-(6)) together with its training set (Section 5.2).

    ``heads`` H, ``context_size`` n, ``examples`` T, ``dim`` d (the raw tokens are U(0,1)^d and the
    embedding keeps width d), ``head_dim`` d_h (None: d_h = d, as in the paper), ``value_dim`` d_v,
    ``classes`` C for classification (None: regression with ``out_dim`` targets y ~ U(0,1)),
    ``shared`` (one context for all examples, Prop. 2) or a fresh context per example (Appendix I.1),
    ``embedding`` (the paper's experimental model; False: bare Eqs. (1)-(6)). ``seed`` draws the
    initial weights and the mini-batches, ``data_seed`` the training set.
    """

    heads: int
    context_size: int
    examples: int
    dim: int = 64
    head_dim: int | None = None
    value_dim: int = 1
    classes: int | None = 100
    out_dim: int = 1
    shared: bool = True
    embedding: bool = True
    seed: int = 0
    data_seed: int = 0

    def __post_init__(self) -> None:
        for name in ("heads", "context_size", "examples", "dim", "value_dim", "out_dim"):
            positive_int(name, getattr(self, name))
        if self.head_dim is not None:
            positive_int("head_dim", self.head_dim)
        if self.classes is not None:
            positive_int("classes", self.classes)
        _check_bool("shared", self.shared)
        _check_bool("embedding", self.embedding)
        nonnegative_int("seed", self.seed)
        nonnegative_int("data_seed", self.data_seed)

    @property
    def d_h(self) -> int:
        """The head dimension, d_h = d when ``head_dim`` is None."""
        return self.dim if self.head_dim is None else self.head_dim

    @property
    def task(self) -> str:
        """'classification' when ``classes`` is set, else 'regression'."""
        return "classification" if self.classes is not None else "regression"

    @property
    def output_width(self) -> int:
        """Width of y_hat: C logits or d_out regression outputs."""
        return self.classes if self.classes is not None else self.out_dim

    def shape_key(self) -> tuple:
        """What models of one stack must share; H, d_h, n and T may differ (zero-padded or masked, exactly)."""
        return ("mha", self.dim, self.value_dim, self.classes, self.out_dim, self.shared, self.embedding)

    def data_key(self) -> tuple:
        """Everything that fixes the training set; models with equal keys share one copy of it."""
        return ("mha", self.examples, self.context_size, self.dim, self.classes, self.out_dim, self.shared,
                self.data_seed)

    def to_dict(self) -> dict:
        """JSON-able form, with ``model: 'mha'`` so that :func:`spec_from_dict` can rebuild it."""
        return {"model": "mha", **asdict(self)}


@dataclass(frozen=True)
class AoTSpec:
    """One Dana et al. attention-only transformer (Eqs. (1)-(2)) and its association task.

    ``heads`` H, ``head_dim`` d_h, ``dim`` d, ``vocab`` N, ``seq_len`` S, ``mlp_width`` w of the GELU MLP
    of Section 4.2.1 (0: the plain AoT), ``examples`` T0 distinct sequences (None: all N^S, as in the
    paper). ``seed`` draws the initial weights and mini-batches, ``data_seed`` the look-up table.
    ``shared_compression``: a variant that is not Eq. (2): one map W_C (d_h, d) compresses every token
    to z = W_C x before all heads, which then act on z (W_Q, W_K, W_V of shape (H, d_h, d_h)); the
    description of Dana et al.'s final code (see the experiment chapter). False: Eq. (2).
    """

    heads: int
    head_dim: int
    dim: int
    vocab: int = 50
    seq_len: int = 2
    mlp_width: int = 0
    examples: int | None = None
    seed: int = 0
    data_seed: int = 0
    shared_compression: bool = False

    def __post_init__(self) -> None:
        for name in ("heads", "head_dim", "dim", "vocab", "seq_len"):
            positive_int(name, getattr(self, name))
        nonnegative_int("mlp_width", self.mlp_width)
        _check_bool("shared_compression", self.shared_compression)
        if self.shared_compression and self.head_dim > self.dim:
            raise ValueError(f"head_dim must be at most dim for a shared compression d -> d_h, "
                             f"got head_dim={self.head_dim}, dim={self.dim}")
        if self.examples is not None:
            T0 = positive_int("examples", self.examples)
            if T0 > self.vocab ** self.seq_len:
                raise ValueError(f"examples must be at most N^S = {self.vocab ** self.seq_len} distinct "
                                 f"sequences, got {T0}")
        nonnegative_int("seed", self.seed)
        nonnegative_int("data_seed", self.data_seed)

    @property
    def task(self) -> str:
        """Always 'classification' (next-token prediction)."""
        return "classification"

    @property
    def T0(self) -> int:
        """Number of associations in the training set."""
        return self.vocab ** self.seq_len if self.examples is None else self.examples

    def shape_key(self) -> tuple:
        """What models of one stack must share; H, d_h, d, w and T0 may differ (zero-padded, exactly)."""
        return ("aot", self.vocab, self.seq_len, self.shared_compression)

    def data_key(self) -> tuple:
        """Everything that fixes the training set."""
        return ("aot", self.vocab, self.seq_len, self.examples, self.data_seed)

    def to_dict(self) -> dict:
        """JSON-able form, with ``model: 'aot'``."""
        return {"model": "aot", **asdict(self)}


Spec = MHASpec | AoTSpec


def spec_from_dict(record: dict) -> Spec:
    """Rebuild an :class:`MHASpec` or :class:`AoTSpec` from :meth:`MHASpec.to_dict` or :meth:`AoTSpec.to_dict` output
    (extra keys refused)."""
    if not isinstance(record, dict):
        raise TypeError(f"record must be a dict, got {type(record).__name__}")
    kinds = {"mha": MHASpec, "aot": AoTSpec}
    kind = record.get("model")
    if kind not in kinds:
        raise ValueError(f"record['model'] must be one of {tuple(kinds)}, got {kind!r}")
    cls = kinds[kind]
    allowed = {f.name for f in fields(cls)}
    rest = {k: v for k, v in record.items() if k != "model"}
    unknown = sorted(set(rest) - allowed)
    if unknown:
        raise ValueError(f"record has keys {unknown} that {cls.__name__} does not know")
    return cls(**rest)


# ---------------------------------------------------------------------------------------------------
# training configuration and learning-rate schedule
# ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TrainConfig:
    """How every model of a stack is trained.

    ``steps``: optimizer steps per model; with ``epochs`` set, a model with T examples trains for
    max(steps, epochs*T // batch_size) steps (Mahdavi et al.: max(500 epochs, 50k steps)).
    ``batch_size`` B (None: the full training set every step). ``lr`` peak learning rate;
    ``schedule`` one of :data:`SCHEDULES`; ``warmup_fraction`` and ``warmup_start_factor`` shape the
    warm-up (5 % of the steps, from 1 % of ``lr``, in Mahdavi et al.'s code). ``betas``, ``eps``: Adam's.
    ``early_stop``: freeze a classification model once it reaches 100 % training accuracy, checked on the
    full training set every ``eval_every`` steps. ``dtype``: 'float32' or 'float64'; ``device``: None
    means :func:`memcap.device.pick_device`.
    """

    steps: int = 1000
    epochs: int | None = None
    batch_size: int | None = 256
    lr: float = 1e-3
    schedule: str = "warmup_cosine"
    warmup_fraction: float = 0.05
    warmup_start_factor: float = 0.01
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    early_stop: bool = True
    eval_every: int = 500
    dtype: str = "float32"
    device: str | None = None

    def __post_init__(self) -> None:
        positive_int("steps", self.steps)
        if self.epochs is not None:
            positive_int("epochs", self.epochs)
        if self.batch_size is not None:
            positive_int("batch_size", self.batch_size)
        positive_real("lr", self.lr)
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {self.schedule!r}")
        if not 0.0 <= float(self.warmup_fraction) < 1.0:
            raise ValueError(f"warmup_fraction must lie in [0, 1), got {self.warmup_fraction}")
        if not 0.0 < float(self.warmup_start_factor) <= 1.0:
            raise ValueError(f"warmup_start_factor must lie in (0, 1], got {self.warmup_start_factor}")
        betas = tuple(self.betas)
        if len(betas) != 2 or not all(0.0 <= float(b) < 1.0 for b in betas):
            raise ValueError(f"betas must be two numbers in [0, 1), got {self.betas}")
        object.__setattr__(self, "betas", (float(betas[0]), float(betas[1])))
        positive_real("eps", self.eps)
        _check_bool("early_stop", self.early_stop)
        positive_int("eval_every", self.eval_every)
        if self.dtype not in ("float32", "float64"):
            raise ValueError(f"dtype must be 'float32' or 'float64', got {self.dtype!r}")
        if self.device is not None:
            pick_device(self.device)

    def steps_for(self, examples: int) -> int:
        """Optimizer steps of a model with T = ``examples`` training examples."""
        T = positive_int("examples", examples)
        if self.epochs is None:
            return self.steps
        batch = T if self.batch_size is None else self.batch_size
        return max(self.steps, self.epochs * T // batch)

    def to_dict(self) -> dict:
        """JSON-able form (``betas`` as a list)."""
        record = asdict(self)
        record["betas"] = list(self.betas)
        return record

    @classmethod
    def from_dict(cls, record: dict) -> "TrainConfig":
        """Inverse of :meth:`to_dict`; unknown keys are refused."""
        if not isinstance(record, dict):
            raise TypeError(f"record must be a dict, got {type(record).__name__}")
        unknown = sorted(set(record) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"record has keys {unknown} that TrainConfig does not know")
        record = dict(record)
        if "betas" in record:
            record["betas"] = tuple(record["betas"])
        return cls(**record)


def lr_factor(step: torch.Tensor | int, total_steps: torch.Tensor | int, *, schedule: str = "warmup_cosine",
              warmup_fraction: float = 0.05, start_factor: float = 0.01) -> torch.Tensor:
    """Multiplier of the peak learning rate used by update number ``step`` (0-based) of ``total_steps``.

    'warmup_cosine' (Mahdavi et al.'s code): W = floor(warmup_fraction * total) warm-up steps rising
    linearly from ``start_factor`` to 1, then 0.5 (1 + cos(pi (step - W) / (total - W))) down to 0 at
    step = total. 'constant': 1 (Dana et al. use Adam's default rate throughout). Works elementwise on
    tensors, so a stack of models with different ``total_steps`` gets one factor per model.
    """
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    step_t = torch.as_tensor(step, dtype=torch.float64)
    total_t = torch.as_tensor(total_steps, dtype=torch.float64)
    if bool((total_t <= 0).any()):
        raise ValueError(f"total_steps must be positive, got {total_steps}")
    if bool((step_t < 0).any()):
        raise ValueError(f"step must be non-negative, got {step}")
    if schedule == "constant":
        return torch.ones(torch.broadcast_shapes(step_t.shape, total_t.shape), dtype=torch.float64)
    warm = torch.floor(total_t * warmup_fraction)
    ramp = start_factor + (1.0 - start_factor) * step_t / warm.clamp(min=1.0)
    phase = ((step_t - warm) / (total_t - warm)).clamp(0.0, 1.0)
    cosine = 0.5 * (1.0 + torch.cos(math.pi * phase))
    return torch.where(step_t < warm, ramp, cosine)


# ---------------------------------------------------------------------------------------------------
# stacked forward passes (leading model axis m)
# ---------------------------------------------------------------------------------------------------

def _softmax(scores: torch.Tensor) -> torch.Tensor:
    """Softmax over the last axis, written out: torch's CPU kernel is ~5x slower on short rows (n, S <= 64)."""
    shifted = scores - scores.amax(-1, keepdim=True)                          # -inf entries (padding) give 0
    weights = shifted.exp()
    return weights / weights.sum(-1, keepdim=True)


def _mha_core(params: dict[str, torch.Tensor], contexts: torch.Tensor, queries: torch.Tensor,
              scale: float, token_bias: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Eqs. (1)-(5) for a stack, without validation: returns (o (m, B, d), theta (m, B, H, n)).

    ``contexts``: shared (m, n, d) or per example (m, B, n, d); ``queries``: (m, B, d). For a shared
    context the keys K_h = E W_K,h and values V_h = E W_V,h are computed once per model, not per
    example (Mahdavi et al.'s code recomputes them for every example). ``token_bias`` (m, n): 0 for a
    context token, -inf for padding, so padded tokens get attention exactly 0.
    """
    m, B, _ = queries.shape
    q = torch.einsum("mhdk,mbd->mbhk", params["W_Q"], queries)              # (m, B, H, d_h)
    if contexts.ndim == 3:
        keys = torch.einsum("mnd,mhdk->mhnk", contexts, params["W_K"])      # (m, H, n, d_h), once
        values = torch.einsum("mnd,mhdv->mhnv", contexts, params["W_V"])    # (m, H, n, d_v), once
        scores = scale * torch.einsum("mhnk,mbhk->mbhn", keys, q)   # (m, B, H, n), Eq. (1)
        if token_bias is not None:
            scores = scores + token_bias[:, None, None, :]
        theta = _softmax(scores)                                              # Eq. (2)
        p = torch.einsum("mbhn,mhnv->mbhv", theta, values)                  # (m, B, H, d_v), Eqs. (3)-(4)
    else:
        u = torch.einsum("mhdk,mbhk->mbhd", params["W_K"], q)               # (m, B, H, d): W_K,h W_Q,h^T e
        scores = scale * torch.einsum("mbnd,mbhd->mbhn", contexts, u)   # (m, B, H, n), Eq. (1)
        if token_bias is not None:
            scores = scores + token_bias[:, None, None, :]
        theta = _softmax(scores)                                              # Eq. (2)
        z = torch.einsum("mbhn,mbnd->mbhd", theta, contexts)                # (m, B, H, d), Eq. (3)
        p = torch.einsum("mbhd,mhdv->mbhv", z, params["W_V"])               # (m, B, H, d_v), Eq. (4)
    o = torch.bmm(p.reshape(m, B, -1), params["W_O"])                       # (m, B, H*d_v) @ (m, H*d_v, d), Eq. (5)
    return o, theta


def _mahdavi_embed(params: dict[str, torch.Tensor], contexts: torch.Tensor, queries: torch.Tensor,
                   positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Embedding of raw tokens, x W_E + b_E + pos, query at position 0, context token i at position i."""
    W_E, b_E = params["W_E"], params["b_E"]
    e = torch.einsum("mbi,mid->mbd", queries, W_E) + b_E[:, None, :] + positions[0]   # (m, B, d)
    if contexts.ndim == 3:
        E = torch.einsum("mni,mid->mnd", contexts, W_E) + b_E[:, None, :]              # (m, n, d)
    else:
        E = torch.einsum("mbni,mid->mbnd", contexts, W_E) + b_E[:, None, None, :]     # (m, B, n, d)
    return E + positions[1:], e


def _mha_outputs(params: dict[str, torch.Tensor], contexts: torch.Tensor, queries: torch.Tensor,
                 positions: torch.Tensor | None,
                 token_bias: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """y_hat (m, B, d_out) and theta (m, B, H, n) of a stack of MHA models, without validation."""
    if positions is None:
        o, theta = _mha_core(params, contexts, queries, 1.0, token_bias)
        return torch.bmm(o, params["W_D"]), theta                            # Eq. (6)
    E, e = _mahdavi_embed(params, contexts, queries, positions)
    o, theta = _mha_core(params, E, e, 1.0 / math.sqrt(e.shape[-1]), token_bias)
    return torch.bmm(o, params["W_D"]) + params["b_D"][:, None, :], theta


def _aot_outputs(params: dict[str, torch.Tensor], tokens: torch.Tensor) -> torch.Tensor:
    """Logits (m, B, N) of a stack of AoTs (Dana et al., Eqs. (1)-(2)), MLP of Section 4.2.1 if present."""
    m = tokens.shape[0]
    rows = torch.arange(m, device=tokens.device)[:, None, None]
    x = params["token_embedding"][rows, tokens] + params["positional_embedding"][:, None, :, :]   # (m, B, S, d)
    x_last = x[:, :, -1, :]                                                  # (m, B, d)
    heads_in = x                                                             # (m, B, S, d_in), d_in = d
    if "W_C" in params and params["W_C"].shape[1] > 0:                       # shared compression, d_in = d_h
        heads_in = torch.einsum("mkd,mbsd->mbsk", params["W_C"], x)
    q = torch.einsum("mhkd,mbd->mbhk", params["W_Q"], heads_in[:, :, -1, :])  # (m, B, H, d_h)
    u = torch.einsum("mhkd,mbhk->mbhd", params["W_K"], q)                    # (m, B, H, d_in)
    a = _softmax(torch.einsum("mbsd,mbhd->mbhs", heads_in, u))               # (m, B, H, S)
    A = torch.einsum("mbhs,mbsd->mbhd", a, heads_in)                         # (m, B, H, d_in)
    v = torch.einsum("mhkd,mbhd->mbhk", params["W_V"], A)                    # (m, B, H, d_h)
    r = x_last + torch.einsum("mhek,mbhk->mbe", params["W_O"], v)            # (m, B, d)
    if "W_1" in params and params["W_1"].shape[1] > 0:
        hidden = F.gelu(torch.einsum("mwd,mbd->mbw", params["W_1"], r))      # (m, B, w)
        r = r + torch.einsum("mdw,mbw->mbd", params["W_2"], hidden)          # (W_2 GELU(W_1 r) + I_d) r
    return torch.einsum("mnd,mbd->mbn", params["W_U"], r)                    # (m, B, N)


def _check_stack(params: dict[str, torch.Tensor], required: Sequence[str]) -> int:
    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict of stacked tensors, got {type(params).__name__}")
    missing = [name for name in required if name not in params]
    if missing:
        raise ValueError(f"params lacks the stacked weights {missing}")
    m = params[required[0]].shape[0]
    for name, t in params.items():
        check_tensor(f"params[{name!r}]", t)
        if t.ndim == 0 or t.shape[0] != m:
            raise ValueError(f"params[{name!r}] must have the model axis m = {m} first, got {tuple(t.shape)}")
    return m


def mha_forward_stacked(params: dict[str, torch.Tensor], contexts: torch.Tensor, queries: torch.Tensor,
                        positions: torch.Tensor | None = None) -> torch.Tensor:
    """y_hat of m MHA models at once (Mahdavi et al., Eqs. (1)-(6)); model i sees row i of every input.

    ``params``: W_K, W_Q (m, H, d, d_h), W_V (m, H, d, d_v), W_O (m, H*d_v, d), W_D (m, d, d_out), and with
    ``positions`` (n+1, d) also W_E (m, d, d), b_E (m, d), b_D (m, d_out) (Mahdavi et al.'s experimental
    model: embedding, positions, scores / sqrt(d)). ``contexts``: shared (m, n, d) or (m, B, n, d);
    ``queries``: (m, B, d). Returns (m, B, d_out). Without ``positions`` model i equals
    :func:`memcap.models.mha_forward` on its slice.
    """
    m = _check_stack(params, ("W_K", "W_Q", "W_V", "W_O", "W_D") + (("W_E", "b_E", "b_D") if positions is not None else ()))
    check_shape("queries", queries, (m, None, None), "(m, B, d)")
    B, d = queries.shape[1:]
    if contexts.ndim == 3:
        check_shape("contexts", contexts, (m, None, d), "shared (m, n, d)")
    else:
        check_shape("contexts", contexts, (m, B, None, d), "(m, B, n, d)")
    if positions is not None:
        check_shape("positions", positions, (contexts.shape[-2] + 1, params["W_E"].shape[2]), "(n+1, d)")
    return _mha_outputs(params, contexts, queries, positions)[0]


def aot_forward_stacked(params: dict[str, torch.Tensor], tokens: torch.Tensor) -> torch.Tensor:
    """Last-position logits of m AoTs at once (Dana et al., Eqs. (1)-(2); with W_1, W_2 their Section 4.2.1).

    ``params``: token_embedding (m, N, d), positional_embedding (m, S, d), W_Q, W_K, W_V (m, H, d_h, d),
    W_O (m, H, d, d_h), W_U (m, N, d), optionally W_1 (m, w, d), W_2 (m, d, w), and W_C (m, d_h, d) for
    the shared-compression variant (then W_Q, W_K, W_V are (m, H, d_h, d_h)). ``tokens``: (m, B, S) ids.
    Returns (m, B, N). Without W_1 and W_C model i equals :func:`memcap.models.aot_forward` on its slice.
    """
    m = _check_stack(params, ("token_embedding", "positional_embedding", "W_Q", "W_K", "W_V", "W_O", "W_U"))
    check_shape("tokens", tokens, (m, None, params["positional_embedding"].shape[1]), "(m, B, S)")
    d = params["token_embedding"].shape[2]
    d_in = d
    if "W_C" in params and params["W_C"].shape[1] > 0:   # shared compression: heads act on z in R^{d_h}
        check_shape("W_C", params["W_C"], (m, None, d), "(m, d_h, d)")
        d_in = params["W_C"].shape[1]
    H, d_h = params["W_Q"].shape[1:3]
    for name in ("W_Q", "W_K", "W_V"):
        check_shape(name, params[name], (m, H, d_h, d_in), f"(m, H, d_h, {'d_h' if d_in != d else 'd'})")
    if tokens.is_floating_point():
        raise TypeError(f"tokens must have an integer dtype (token ids), got {tokens.dtype}")
    return _aot_outputs(params, tokens)


# ---------------------------------------------------------------------------------------------------
# initial weights and stacked data
# ---------------------------------------------------------------------------------------------------

def _init_one(spec: Spec) -> dict[str, torch.Tensor]:
    """Initial float64 CPU weights of one model from its own generator seeded with ``spec.seed``."""
    gen = torch.Generator().manual_seed(spec.seed)
    cpu = torch.device("cpu")
    if isinstance(spec, MHASpec):
        core = init_mha(spec.heads, spec.dim, spec.d_h, spec.value_dim, spec.output_width,
                        generator=gen, dtype=torch.float64, device=cpu)
        params = {name: getattr(core, name) for name in ("W_K", "W_Q", "W_V", "W_O", "W_D")}
        if spec.embedding:
            d = spec.dim
            params["W_E"] = torch.randn(d, d, generator=gen, dtype=torch.float64) / math.sqrt(d)
            params["b_E"] = torch.zeros(d, dtype=torch.float64)
            params["b_D"] = torch.zeros(spec.output_width, dtype=torch.float64)
        return params
    core = init_aot(spec.vocab, spec.seq_len, spec.dim, spec.heads, spec.head_dim, generator=gen,
                    dtype=torch.float64, device=cpu)
    params = {name: getattr(core, name) for name in
              ("token_embedding", "positional_embedding", "W_Q", "W_K", "W_V", "W_O", "W_U")}
    w, d = spec.mlp_width, spec.dim   # w = 0: no MLP (empty W_1, W_2 keep one layout for every AoT)
    params["W_1"] = torch.randn(w, d, generator=gen, dtype=torch.float64) / math.sqrt(d)
    params["W_2"] = torch.randn(d, w, generator=gen, dtype=torch.float64) / math.sqrt(max(w, 1))
    params["W_C"] = torch.zeros(0, d, dtype=torch.float64)   # Eq. (2): no shared compression
    if spec.shared_compression:   # heads act on z = W_C x in R^{d_h}: variance 1/fan_in as everywhere
        H, k = spec.heads, spec.head_dim
        params["W_C"] = torch.randn(k, d, generator=gen, dtype=torch.float64) / math.sqrt(d)
        for name in ("W_Q", "W_K", "W_V"):
            params[name] = torch.randn(H, k, k, generator=gen, dtype=torch.float64) / math.sqrt(k)
    return params


@dataclass
class _StackData:
    """Training sets of one stack, padded to T_max: D distinct sets, ``owner[i]`` = set of model i."""

    inputs: tuple[torch.Tensor, ...]   # MHA: (contexts, queries); AoT: (tokens,)
    labels: torch.Tensor               # (D, T_max) classes, or (D, T_max, d_out) regression targets
    counts: torch.Tensor               # (D,) T of each set
    owner: torch.Tensor                # (m,) index into the D sets
    shared: bool


def _dataset(spec: Spec) -> tuple[tuple[torch.Tensor, ...], torch.Tensor]:
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


def _pad_to(t: torch.Tensor, shape: Sequence[int]) -> torch.Tensor:
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


def _max_shape(tensors: Sequence[torch.Tensor]) -> tuple[int, ...]:
    return tuple(max(sizes) for sizes in zip(*(t.shape for t in tensors)))


def _stack_data(specs: Sequence[Spec], dtype: torch.dtype, device: torch.device) -> _StackData:
    keys: dict[tuple, int] = {}
    sets = []
    for spec in specs:
        if spec.data_key() not in keys:
            keys[spec.data_key()] = len(sets)
            sets.append(_dataset(spec))
    owner = torch.tensor([keys[s.data_key()] for s in specs], device=device)
    counts = torch.tensor([labels.shape[0] for _, labels in sets], device=device)
    T_max = int(counts.max())
    shared = isinstance(specs[0], MHASpec) and specs[0].shared
    inputs = []
    for j in range(len(sets[0][0])):
        shape = _max_shape([s[0][j] for s in sets])
        if not (shared and j == 0):
            shape = (T_max,) + shape[1:]
        stacked = torch.stack([_pad_to(s[0][j], shape) for s in sets]).to(device)
        inputs.append(stacked if not stacked.is_floating_point() else stacked.to(dtype))
    labels = torch.stack([_pad_to(s[1], (T_max,) + tuple(s[1].shape[1:])) for s in sets]).to(device)
    if labels.is_floating_point():
        labels = labels.to(dtype)
    return _StackData(tuple(inputs), labels, counts, owner, shared)


# ---------------------------------------------------------------------------------------------------
# one stack: loss, evaluation, Adam, the training loop
# ---------------------------------------------------------------------------------------------------

class _Stack:
    """Models of one ``shape_key``, zero-padded to one shape: stacked weights, data, forward on a batch."""

    def __init__(self, specs: Sequence[Spec], dtype: torch.dtype, device: torch.device) -> None:
        self.specs = list(specs)
        self.classification = specs[0].task == "classification"
        inits = [_init_one(s) for s in specs]
        self.true_shapes = [{name: tuple(t.shape) for name, t in p.items()} for p in inits]
        padded = {name: _max_shape([p[name] for p in inits]) for name in inits[0]}   # largest model of the stack
        if isinstance(specs[0], MHASpec):   # W_O (H*d_v, d) is head-major: pad it head by head
            d_v, H_max = specs[0].value_dim, max(s.heads for s in specs)
            for p in inits:
                p["W_O"] = _pad_to(p["W_O"].reshape(-1, d_v, p["W_O"].shape[1]),
                                   (H_max, d_v, p["W_O"].shape[1])).reshape(H_max * d_v, -1)
        self.layout: list[tuple[str, tuple[int, ...], int, int]] = []   # (name, shape, start, end)
        start = 0
        for name, shape in padded.items():
            size = int(np.prod(shape))
            self.layout.append((name, shape, start, start + size))
            start += size
        # all weights of model i live in row i of one leaf tensor: one gradient, one Adam step
        flat = torch.stack([torch.cat([_pad_to(p[name], padded[name]).reshape(-1) for name in padded])
                            for p in inits])                                  # (m, P)
        self.flat = flat.to(device=device, dtype=dtype).requires_grad_()
        self.data = _stack_data(specs, dtype, device)
        self.positions = None
        self.token_bias = None
        s = specs[0]
        if isinstance(s, MHASpec):
            n = [spec.context_size for spec in specs]
            if min(n) < max(n):   # (m, n_max): 0 on a model's own context tokens, -inf on padding
                valid = torch.arange(max(n))[None, :] < torch.tensor(n)[:, None]
                self.token_bias = torch.zeros(valid.shape, dtype=dtype).masked_fill(~valid, float("-inf")).to(device)
            if s.embedding:
                self.positions = sinusoidal_positions(max(n) + 1, s.dim, dtype=dtype, device=device)
        self.counts = self.data.counts[self.data.owner]                       # (m,) T of each model
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
        if isinstance(self.specs[0], AoTSpec):
            return _aot_outputs(params, self.data.inputs[0][own, idx])
        contexts, queries = self.data.inputs
        ctx = contexts[self.data.owner] if self.data.shared else contexts[own, idx]
        return _mha_outputs(params, ctx, queries[own, idx], self.positions, self.token_bias)[0]

    def losses(self, params: dict[str, torch.Tensor], idx: torch.Tensor,
               weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-model mean loss (m,) and correct count (m,) over examples ``idx`` with 0/1 ``weight`` (m, B)."""
        out = self.outputs(params, idx)                                        # (m, B, out)
        y = self.data.labels[self.data.owner[:, None], idx]
        if self.classification:
            per = F.cross_entropy(out.flatten(0, 1), y.flatten(), reduction="none").view_as(weight)
            correct = ((out.argmax(-1) == y) * weight.bool()).sum(1)
        else:
            per = ((out - y) ** 2).mean(-1)                                   # (m, B)
            correct = torch.zeros_like(self.counts)
        return (per * weight).sum(1) / weight.sum(1).clamp(min=1), correct

    @torch.no_grad()
    def evaluate(self, params: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """Full-training-set (mean loss (m,), correct count (m,)), in chunks that bound memory."""
        m, T_max = len(self.specs), int(self.counts.max())
        chunk = max(1, min(T_max, _EVAL_BUDGET // (m * self.per_example)))
        loss_sum = torch.zeros(m, dtype=torch.float64, device=self.counts.device)
        correct = torch.zeros(m, dtype=torch.long, device=self.counts.device)
        for start in range(0, T_max, chunk):
            idx = torch.arange(start, min(start + chunk, T_max), device=self.counts.device).expand(m, -1)
            weight = (idx < self.counts[:, None]).to(self.dtype)
            mean, right = self.losses(params, idx, weight)
            loss_sum += mean.double() * weight.sum(1).double()
            correct += right
        return loss_sum / self.counts.double(), correct


def _adam_update(flat: torch.Tensor, grad: torch.Tensor, state: dict, lr: torch.Tensor,
                 active: torch.Tensor, betas: tuple[float, float], eps: float) -> None:
    """One Adam step (Kingma & Ba; torch.optim.Adam's formula) on the rows of ``flat`` (m, P) of active models.

    ``lr``: (m,) learning rate per model; ``active``: (m,) bool. Inactive models keep weights, moments
    and step count bit for bit: a frozen model stays frozen exactly.
    """
    b1, b2 = betas
    on = active[:, None]                                                      # (m, 1)
    state["t"] = state["t"] + active.long()                                   # (m,) updates applied
    t = state["t"].to(torch.float64).clamp(min=1)
    c1 = (1 - b1 ** t).to(flat.dtype)[:, None]                                # bias corrections (m, 1)
    c2 = (1 - b2 ** t).to(flat.dtype)[:, None]
    m1, m2 = state["m"], state["v"]
    m1.copy_(torch.where(on, b1 * m1 + (1 - b1) * grad, m1))
    m2.copy_(torch.where(on, b2 * m2 + (1 - b2) * grad * grad, m2))
    step = (lr[:, None] / c1) * m1 / (m2.sqrt() / c2.sqrt() + eps)
    flat.sub_(torch.where(on, step, torch.zeros_like(step)))


@dataclass(frozen=True)
class TrainResult:
    """What training a list of models produced, in the order of ``specs``.

    ``accuracy`` (k,): full-training-set accuracy (NaN for regression); ``loss`` (k,): mean training loss
    (cross-entropy, or mean squared error per output for regression); ``memorized`` (k,): accuracy = 100 %;
    ``steps`` (k,): updates applied; ``stop_step`` (k,): the update after which early stop froze the model
    (-1: never); ``history_steps`` (e,) and ``history_accuracy``/``history_loss`` (e, k): the periodic
    evaluations; ``params``: per-model weights as NumPy arrays when ``keep_params`` was set.
    """

    specs: tuple[Spec, ...]
    accuracy: np.ndarray
    loss: np.ndarray
    memorized: np.ndarray
    steps: np.ndarray
    stop_step: np.ndarray
    history_steps: np.ndarray
    history_accuracy: np.ndarray
    history_loss: np.ndarray
    seconds: float
    device: str
    params: tuple[dict[str, np.ndarray], ...] | None = field(default=None)

    def records(self) -> list[dict]:
        """One JSON-able dict per model: its spec's fields plus accuracy, loss, memorized, steps, stop_step."""
        out = []
        for i, spec in enumerate(self.specs):
            acc = float(self.accuracy[i])
            out.append({**spec.to_dict(), "accuracy": None if math.isnan(acc) else acc,
                        "loss": float(self.loss[i]), "memorized": bool(self.memorized[i]),
                        "steps": int(self.steps[i]), "stop_step": int(self.stop_step[i])})
        return out


def _batch_indices(gens: list[torch.Generator], counts: list[int], chunk: int, batch: int) -> torch.Tensor:
    """(chunk, m, B) indices, row i drawn with replacement from [0, T_i) by model i's own generator."""
    return torch.stack([torch.randint(T, (chunk, batch), generator=g) for g, T in zip(gens, counts)], dim=1)


def _train_stack(specs: Sequence[Spec], config: TrainConfig, device: torch.device, dtype: torch.dtype,
                 keep_params: bool) -> dict:
    """Train one stack (models of one :meth:`shape_key`); returns per-model arrays (see :class:`TrainResult`)."""
    stack = _Stack(specs, dtype, device)
    m = len(specs)
    counts = [int(c) for c in stack.counts.cpu()]
    total = torch.tensor([config.steps_for(c) for c in counts], device=device)   # (m,) steps per model
    max_steps = int(total.max())
    gens = [torch.Generator().manual_seed(10_007 * s.seed + 1) for s in specs]   # batches: own stream
    flat = stack.flat
    state = {"t": torch.zeros(m, dtype=torch.long, device=device),
             "m": torch.zeros_like(flat), "v": torch.zeros_like(flat)}
    stopped = torch.zeros(m, dtype=torch.bool, device=device)
    stop_step = torch.full((m,), -1, dtype=torch.long, device=device)
    full = config.batch_size is None
    T_max = max(counts)
    history_steps, history_acc, history_loss = [], [], []
    chunk = 256
    total_cpu = total.cpu().to(torch.float64)
    if full:
        idx = torch.arange(T_max, device=device).expand(m, -1)
        weight = (idx < stack.counts[:, None]).to(dtype)
    else:
        ones = torch.ones((m, config.batch_size), dtype=dtype, device=device)
    for step in range(max_steps):
        active = ~stopped & (step < total)
        if not bool(active.any()):
            break
        if not full:
            weight = ones
        if step % chunk == 0:   # learning rates and batch indices for the next `chunk` steps
            steps_ahead = torch.arange(step, step + chunk, dtype=torch.float64)[:, None]    # (chunk, 1)
            lr_chunk = (config.lr * lr_factor(steps_ahead, total_cpu, schedule=config.schedule,
                                              warmup_fraction=config.warmup_fraction,
                                              start_factor=config.warmup_start_factor)).to(device, dtype)
            if not full:
                idx_chunk = _batch_indices(gens, counts, chunk, config.batch_size).to(device)
        if not full:
            idx = idx_chunk[step % chunk]
        loss, _ = stack.losses(stack.views(flat), idx, weight)
        (grad,) = torch.autograd.grad(loss.sum(), [flat])
        with torch.no_grad():
            _adam_update(flat, grad, state, lr_chunk[step % chunk], active, config.betas, config.eps)
        if (step + 1) % config.eval_every == 0:
            eval_loss, correct = stack.evaluate(stack.views(flat))
            history_steps.append(step + 1)
            history_acc.append((correct.double() / stack.counts).cpu().numpy())
            history_loss.append(eval_loss.cpu().numpy())
            if config.early_stop and stack.classification:
                newly = active & (correct == stack.counts)
                stop_step[newly] = step + 1
                stopped |= newly
    eval_loss, correct = stack.evaluate(stack.views(flat))
    accuracy = (correct.double() / stack.counts).cpu().numpy() if stack.classification else np.full(m, np.nan)
    result = {
        "accuracy": accuracy, "loss": eval_loss.cpu().numpy(),
        "memorized": (correct == stack.counts).cpu().numpy() if stack.classification else np.zeros(m, bool),
        "steps": state["t"].cpu().numpy(), "stop_step": stop_step.cpu().numpy(),
        "history_steps": np.asarray(history_steps, dtype=np.int64),
        "history_accuracy": np.stack(history_acc) if history_acc else np.zeros((0, m)),
        "history_loss": np.stack(history_loss) if history_loss else np.zeros((0, m)),
        "params": None,
    }
    if keep_params:
        result["params"] = [stack.unpadded(flat.detach(), i) for i in range(m)]
    return result


def group_by_shape(specs: Sequence[Spec]) -> list[list[int]]:
    """Indices of ``specs`` grouped by :meth:`MHASpec.shape_key` / :meth:`AoTSpec.shape_key`, in order of first
    appearance (one stack each)."""
    groups: dict[tuple, list[int]] = {}
    for i, spec in enumerate(specs):
        if not isinstance(spec, (MHASpec, AoTSpec)):
            raise TypeError(f"specs[{i}] must be an MHASpec or AoTSpec, got {type(spec).__name__}")
        groups.setdefault(spec.shape_key(), []).append(i)
    return list(groups.values())


def train_models(specs: Sequence[Spec], config: TrainConfig | None = None, *, keep_params: bool = False,
                 max_stack: int | None = None) -> TrainResult:
    """Train every model of ``specs`` and evaluate it on its full training set.

    Models are grouped by ``shape_key``; each group (zero-padded exactly, split into stacks of at most
    ``max_stack`` models, None: no limit) trains as one stacked tensor program. ``config`` defaults to :class:`TrainConfig` (). Returns a
    :class:`TrainResult` in the order of ``specs``.
    """
    specs = tuple(specs)
    if not specs:
        raise ValueError("specs must hold at least one model, got an empty list")
    config = TrainConfig() if config is None else config
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")
    if max_stack is not None:
        positive_int("max_stack", max_stack)
    device = pick_device(config.device)
    dtype = torch.float64 if config.dtype == "float64" else torch.float32
    k = len(specs)
    keys = ("accuracy", "loss", "memorized", "steps", "stop_step")
    merged = {"accuracy": np.full(k, np.nan), "loss": np.zeros(k), "memorized": np.zeros(k, bool),
              "steps": np.zeros(k, np.int64), "stop_step": np.full(k, -1, np.int64)}
    params: list = [None] * k
    hist_steps: list[int] = []
    hist: dict[int, tuple[dict[int, float], dict[int, float]]] = {}
    start = time.perf_counter()
    for group in group_by_shape(specs):
        size = len(group) if max_stack is None else max_stack
        for lo in range(0, len(group), size):
            part = group[lo:lo + size]
            out = _train_stack([specs[i] for i in part], config, device, dtype, keep_params)
            for key in keys:
                merged[key][part] = out[key]
            for e, s in enumerate(out["history_steps"]):
                accs, losses = hist.setdefault(int(s), ({}, {}))
                for j, i in enumerate(part):
                    accs[i], losses[i] = out["history_accuracy"][e, j], out["history_loss"][e, j]
            if keep_params:
                for j, i in enumerate(part):
                    params[i] = out["params"][j]
    hist_steps = sorted(hist)
    h_acc = np.full((len(hist_steps), k), np.nan)
    h_loss = np.full((len(hist_steps), k), np.nan)
    for e, s in enumerate(hist_steps):
        for i, v in hist[s][0].items():
            h_acc[e, i] = v
        for i, v in hist[s][1].items():
            h_loss[e, i] = v
    return TrainResult(specs=specs, history_steps=np.asarray(hist_steps, np.int64), history_accuracy=h_acc,
                       history_loss=h_loss, seconds=time.perf_counter() - start, device=str(device),
                       params=tuple(params) if keep_params else None, **merged)


# ---------------------------------------------------------------------------------------------------
# capacity search
# ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CapacityResult:
    """Largest training-set size a model memorized: ``capacity`` = largest tried T with 100 % accuracy
    (0 if none), ``upper`` = smallest tried T above it that was not memorized (None if none), ``tried``
    = ((T, accuracy), ...) in increasing T."""

    spec: Spec
    capacity: int
    upper: int | None
    tried: tuple[tuple[int, float], ...]

    def to_dict(self) -> dict:
        """JSON-able form."""
        return {"spec": self.spec.to_dict(), "capacity": self.capacity, "upper": self.upper,
                "tried": [list(t) for t in self.tried]}


def _bracket(tried: dict[int, bool]) -> tuple[int, int | None]:
    memorized = [T for T, ok in tried.items() if ok]
    lo = max(memorized) if memorized else 0
    above = [T for T, ok in tried.items() if not ok and T > lo]
    return lo, (min(above) if above else None)


def capacity_search(specs: Sequence[Spec], candidates: Sequence[int], config: TrainConfig | None = None, *,
                    rounds: int = 2, points: int = 3,
                    train: Callable[..., TrainResult] | None = None) -> list[CapacityResult]:
    """Largest T each model of ``specs`` memorizes (100 % training accuracy), by a ladder then bisection.

    Every (spec, T) of the ladder ``candidates`` trains in one stacked run (``spec.examples`` is replaced
    by T). Each refinement round then tries ``points`` evenly spaced T strictly between the largest
    memorized and the smallest non-memorized T of every spec, again all stacked, until the bracket closes
    (upper - capacity = 1) or ``rounds`` are spent. ``train`` defaults to :func:`train_models` (tests pass
    a stand-in with a known capacity).
    """
    specs = tuple(specs)
    if not specs:
        raise ValueError("specs must hold at least one model, got an empty list")
    ladder = sorted({positive_int("candidates[i]", T) for T in candidates})
    if not ladder:
        raise ValueError("candidates must hold at least one training-set size T, got an empty list")
    nonnegative_int("rounds", rounds)
    positive_int("points", points)
    train = train_models if train is None else train
    for i, spec in enumerate(specs):
        if spec.task != "classification":
            raise ValueError(f"specs[{i}] is a regression model; capacity needs 100 % accuracy, a classification notion")
        if isinstance(spec, AoTSpec) and ladder[-1] > spec.vocab ** spec.seq_len:
            raise ValueError(f"candidates must not exceed N^S = {spec.vocab ** spec.seq_len} for specs[{i}], "
                             f"got T = {ladder[-1]}")
    tried: list[dict[int, float]] = [{} for _ in specs]
    todo = [list(ladder) for _ in specs]
    for _ in range(rounds + 1):
        jobs = [(i, T) for i, Ts in enumerate(todo) for T in Ts]
        if not jobs:
            break
        result = train([replace(specs[i], examples=T) for i, T in jobs], config)
        for (i, T), acc, ok in zip(jobs, result.accuracy, result.memorized):
            tried[i][T] = (float(acc), bool(ok))
        todo = []
        for i in range(len(specs)):
            lo, hi = _bracket({T: ok for T, (_, ok) in tried[i].items()})
            if hi is None or hi - lo <= 1:
                todo.append([])
                continue
            grid = np.linspace(lo, hi, points + 2)[1:-1]
            todo.append(sorted({int(round(g)) for g in grid} - set(tried[i]) - {lo, hi}))
    out = []
    for spec, t in zip(specs, tried):
        lo, hi = _bracket({T: ok for T, (_, ok) in t.items()})
        out.append(CapacityResult(spec=spec, capacity=lo, upper=hi,
                                  tried=tuple((T, t[T][0]) for T in sorted(t))))
    return out


# ---------------------------------------------------------------------------------------------------
# inspecting trained models
# ---------------------------------------------------------------------------------------------------

def trained_attention(spec: MHASpec, params: dict[str, np.ndarray], *, device: str | None = None) -> np.ndarray:
    """Attention weights theta (T, H, n) of a trained MHA model on its whole training set (Eq. (2)).

    ``params``: one model's weights, e.g. ``train_models(..., keep_params=True).params[i]``. Used for the
    softmax-saturation study (Mahdavi et al., Appendix H).
    """
    if not isinstance(spec, MHASpec):
        raise TypeError(f"spec must be an MHASpec, got {type(spec).__name__}")
    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict of arrays, got {type(params).__name__}")
    dev = pick_device(device)
    expected = _init_one(spec)
    for name, t in expected.items():
        if name not in params or tuple(np.shape(params[name])) != tuple(t.shape):
            got = None if name not in params else tuple(np.shape(params[name]))
            raise ValueError(f"params[{name!r}] must have shape {tuple(t.shape)} for this spec, got {got}")
    stacked = {n: torch.as_tensor(np.asarray(params[n]), dtype=torch.float64, device=dev)[None] for n in expected}
    (contexts, queries), _ = _dataset(spec)
    ctx = contexts.to(dev)[None]                                              # (1, n, d) or (1, T, n, d)
    positions = sinusoidal_positions(spec.context_size + 1, spec.dim, dtype=torch.float64, device=dev) \
        if spec.embedding else None
    with torch.no_grad():
        _, theta = _mha_outputs(stacked, ctx, queries.to(dev)[None], positions)
    return theta[0].cpu().numpy()
