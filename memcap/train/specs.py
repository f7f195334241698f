"""What to train: one dataclass per model family, each naming the model and its training set.

* :class:`MHASpec`: Mahdavi et al.'s one-layer multi-head attention (Eqs. (1)-(6)) and their synthetic
  memorization task (Section 5.2).
* :class:`AoTSpec`: Dana et al.'s attention-only transformer (Eqs. (1)-(2)) and their association task.

A spec is a frozen, JSON-able record (:meth:`MHASpec.to_dict`, :func:`spec_from_dict`); its
``shape_key`` says which specs can share one stack of the engine and its ``data_key`` which share one
training set.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields

import numpy as np

from memcap._checks import check_bool, nonnegative_int, positive_int, seed_int
from memcap._schema import Key, optional, tagged


def _plain_ints(spec: object) -> None:
    """Store NumPy integers of a validated spec as Python ints, so that its job key is JSON."""
    for f in fields(spec):
        value = getattr(spec, f.name)
        if isinstance(value, np.integer):
            object.__setattr__(spec, f.name, int(value))


@dataclass(frozen=True)
class MHASpec:
    """One Mahdavi et al. model (Eqs. (1)-(6)) together with its training set (Section 5.2).

    ``heads`` H, ``context_size`` n, ``examples`` T, ``dim`` d (the raw tokens are U(0,1)^d and the
    embedding keeps width d), ``head_dim`` d_h (None: d_h = d, as in the paper), ``value_dim`` d_v,
    ``classes`` C for classification (None: regression with ``out_dim`` targets y ~ U(0,1)),
    ``shared`` (one context for all examples, Prop. 2) or a fresh context per example (Appendix I.1),
    ``embedding`` (the paper's experimental model; False: bare Eqs. (1)-(6)). ``seed`` draws the
    initial weights and the mini-batches, ``data_seed`` the training set (each in [0, 2**63 - 1]).
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
        check_bool("shared", self.shared)
        check_bool("embedding", self.embedding)
        seed_int("seed", self.seed)
        seed_int("data_seed", self.data_seed)
        _plain_ints(self)

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
    paper). ``seed`` draws the initial weights and mini-batches, ``data_seed`` the look-up table (each in
    [0, 2**63 - 1]).
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
        check_bool("shared_compression", self.shared_compression)
        if self.shared_compression and self.head_dim > self.dim:
            raise ValueError(f"head_dim must be at most dim for a shared compression d -> d_h, "
                             f"got head_dim={self.head_dim}, dim={self.dim}")
        if self.examples is not None:
            T0 = positive_int("examples", self.examples)
            if T0 > self.vocab ** self.seq_len:
                raise ValueError(f"examples must be at most N^S = {self.vocab ** self.seq_len} distinct "
                                 f"sequences, got {T0}")
        seed_int("seed", self.seed)
        seed_int("data_seed", self.data_seed)
        _plain_ints(self)

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


_SEEDS = {"seed": Key(seed_int, "the seed of the weights and mini-batches, an int in [0, 2**63 - 1]", needed=False),
          "data_seed": Key(seed_int, "the seed of the training set, an int in [0, 2**63 - 1]", needed=False)}
_MHA_KEYS = {
    "heads": Key(positive_int, "the number of heads H, a positive int"),
    "context_size": Key(positive_int, "the context size n, a positive int"),
    "examples": Key(positive_int, "the number of examples T, a positive int"),
    "dim": Key(positive_int, "the token dimension d, a positive int", needed=False),
    "head_dim": Key(optional(positive_int), "the head dimension d_h, a positive int or None (d)", needed=False),
    "value_dim": Key(positive_int, "the value dimension d_v, a positive int", needed=False),
    "classes": Key(optional(positive_int), "the number of classes C, a positive int or None (regression)",
                   needed=False),
    "out_dim": Key(positive_int, "the regression output width, a positive int", needed=False),
    "shared": Key(check_bool, "whether all examples share one context, a bool", needed=False),
    "embedding": Key(check_bool, "whether the model has the paper's embedding, a bool", needed=False),
    **_SEEDS,
}
_AOT_KEYS = {
    "heads": Key(positive_int, "the number of heads H, a positive int"),
    "head_dim": Key(positive_int, "the head dimension d_h, a positive int"),
    "dim": Key(positive_int, "the embedding dimension d, a positive int"),
    "vocab": Key(positive_int, "the vocabulary size N, a positive int", needed=False),
    "seq_len": Key(positive_int, "the sequence length S, a positive int", needed=False),
    "mlp_width": Key(nonnegative_int, "the MLP width w, an int >= 0", needed=False),
    "examples": Key(optional(positive_int), "the number of sequences T0, a positive int or None (all N^S)",
                    needed=False),
    **_SEEDS,
    "shared_compression": Key(check_bool, "whether the heads share one compression, a bool", needed=False),
}
_KINDS = {"mha": (_MHA_KEYS, "an MHASpec record"), "aot": (_AOT_KEYS, "an AoTSpec record")}


def _spec_record(name: str, record: object) -> dict:
    """``record`` checked as a whole to be a spec's dict (:meth:`MHASpec.to_dict`, :meth:`AoTSpec.to_dict`):
    a missing, unknown or mistyped key is refused naming ``name[key]``. Returns ``record``."""
    tagged(name, record, "model", _KINDS)
    return record


def spec_from_dict(record: dict) -> Spec:
    """Rebuild an :class:`MHASpec` or :class:`AoTSpec` from :meth:`MHASpec.to_dict` or :meth:`AoTSpec.to_dict`
    output: ``model`` ('mha' or 'aot') and the dataclass's fields, those without a default needed
    (``heads``, ``context_size``, ``examples`` for 'mha'; ``heads``, ``head_dim``, ``dim`` for 'aot').
    A missing, unknown or mistyped key is refused naming it (``record['heads']``)."""
    _spec_record("record", record)
    cls = MHASpec if record["model"] == "mha" else AoTSpec
    return cls(**{k: v for k, v in record.items() if k != "model"})
