"""The two models of the book, as pure functions over frozen dataclasses of tensors.

* **MHA** (Mahdavi et al., 2024, Section 3, Eqs. (1)-(6)): one multi-head attention layer read out
  at a single query. For one example with context ``E`` (n x d) and query ``e`` (d):

  - alpha_h = E W_K,h W_Q,h^T e          (scores, Eq. (1))
  - theta_h = Softmax(alpha_h)           (attention, Eq. (2))
  - z_h     = E^T theta_h                (a convex combination of context rows, Eq. (3))
  - p_h     = W_V,h^T z_h                (Eq. (4))
  - o       = W_O^T [p_1; ...; p_H]      (Eq. (5); with the skip connection of their Appendix C, o += e)
  - y_hat   = W_D^T o                    (Eq. (6))

  Stacking the z_h of all T examples head-major gives the feature matrix Z of Eq. (7), and Eq. (8)
  reads y_hat = Z diag(W_V,1, ..., W_V,H) W_O W_D.

* **AoT** (Dana et al., 2024, Section 2, Eqs. (1)-(2)): a one-layer attention-only transformer over
  token ids, predicting the next token at the last position only:

  - x_s   = e(t_s) + pos_s                                      (embedded tokens)
  - a^h   = Softmax_s( x_S^T W_Q^h^T W_K^h x_s )                 (last-position attention)
  - A^h   = sum_s a^h_s x_s                                      ("attention before output")
  - logits = W_U ( x_S + sum_h W_O^h W_V^h A^h )                 (Eq. (2))

Contexts convention (used everywhere in memcap): ``contexts`` is either ``(T, n, d)``, one context
per example, or ``(n, d)``, one context shared by all T examples (the setting of Mahdavi et al.,
Proposition 2 and Section 5.2). A shared context is never copied T times.

Every function runs batched over all examples with ``torch.einsum``, on whatever device and dtype
its inputs live on (CUDA, MPS or CPU; one code path).

This module is the plain, readable definition of each model, one example set at a time. The training
engine (:mod:`memcap.train`) runs many models at once with its own stacked forwards
(``memcap.train.forward``), written for speed; ``tests/test_train.py`` checks them against the
functions here, so these stay the reference.

Inputs follow the rules of ``memcap._checks``: tensors, NumPy arrays or nested lists (array-likes
take the weights' device and dtype), finite values, float32 or float64, no empty axes.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from memcap import _resolve
from memcap._checks import (
    check_allocation,
    check_bool,
    check_shape,
    check_tensor,
    float_input,
    id_tensor,
    positive_int,
    same_device_dtype,
)
from memcap.device import same_device

__all__ = [
    "mha_parameter_names", "aot_parameter_names",
    "MHAParams", "init_mha", "mha_scores", "mha_attention", "mha_features_from_attention", "mha_features",
    "mha_forward", "mha_param_count",
    "AoTParams", "init_aot", "aot_embed", "aot_attention", "aot_head_inputs", "aot_sequence_embedding",
    "aot_forward", "aot_param_count",
]

mha_parameter_names: tuple[str, ...] = ("W_K", "W_Q", "W_V", "W_O", "W_D")
"""Names of the MHA weight tensors, in the order of :meth:`MHAParams.parameters` and of the fields."""

aot_parameter_names: tuple[str, ...] = (
    "token_embedding", "positional_embedding", "W_Q", "W_K", "W_V", "W_O", "W_U",
)
"""Names of the AoT weight tensors, in the order of :meth:`AoTParams.parameters` and of the fields."""


# ---------------------------------------------------------------------------------------------------
# shared helpers
# ---------------------------------------------------------------------------------------------------

def _check_floating(name: str, tensor: object) -> torch.Tensor:
    """Raise unless ``tensor`` is a finite float32/float64 tensor (``TypeError`` / ``ValueError`` naming it)."""
    return float_input(name, check_tensor(name, tensor))


def _input(name: str, value: object, like: torch.Tensor | None = None) -> torch.Tensor:
    """A float input: a tensor is validated as is; an array-like takes the device and dtype of ``like``
    (the call's weights), or becomes a CPU tensor of its own dtype when there is none."""
    return float_input(name, value, like)


def _check_params_tensors(names: tuple[str, ...], tensors: tuple[torch.Tensor, ...]) -> None:
    """All weights are finite floating tensors on one device with one dtype."""
    for name, t in zip(names, tensors):
        float_input(name, check_tensor(name, t), tensors[0] if isinstance(tensors[0], torch.Tensor) else None)
    same_device_dtype(**dict(zip(names, tensors)))


def _gaussian(shape: tuple[int, ...], fan_in: int, generator: torch.Generator,
              dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """N(0, 1/fan_in) entries, drawn in float64 on the generator's device then moved.

    Drawing in float64 on the generator's device makes the values independent of the target
    ``dtype``/``device`` (up to rounding), so a seed means the same model on a laptop and on a GPU.
    """
    return (_resolve.randn(shape, generator, torch.float64, device) / fan_in ** 0.5).to(dtype)


def _dtype_device(dtype: torch.dtype | None,
                  device: torch.device | str | None) -> tuple[torch.dtype, torch.device]:
    """``dtype`` defaults to torch's default float dtype, ``device`` to :func:`memcap.device.pick_device`."""
    return _resolve.float_dtype(dtype, torch.get_default_dtype()), _resolve.device(device)


# ---------------------------------------------------------------------------------------------------
# Mahdavi et al.: one-layer multi-head attention
# ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class MHAParams:
    """Weights W = {W_K,h, W_Q,h, W_V,h}_h, W_O, W_D of one MHA layer (Mahdavi et al., Section 3).

    Shapes: ``W_K`` (H, d, d_h), ``W_Q`` (H, d, d_h), ``W_V`` (H, d, d_v), ``W_O`` (H*d_v, d) with rows
    ``h*d_v:(h+1)*d_v`` acting on head h, ``W_D`` (d, d_out). ``skip`` adds the query to the layer
    output (their Appendix C: o = W_O^T [p_1; ...; p_H] + e). Field order equals
    :data:`mha_parameter_names`, so ``MHAParams(*params.parameters(), skip=params.skip)`` round-trips.
    """

    W_K: torch.Tensor
    W_Q: torch.Tensor
    W_V: torch.Tensor
    W_O: torch.Tensor
    W_D: torch.Tensor
    skip: bool = False

    def __post_init__(self) -> None:
        check_bool("skip", self.skip)
        _check_params_tensors(mha_parameter_names, self.parameters())
        if self.W_K.ndim != 3:
            raise ValueError(f"W_K must have shape (H, d, d_h), got {tuple(self.W_K.shape)}")
        H, d, d_h = self.W_K.shape
        if min(H, d, d_h) == 0:
            raise ValueError(f"W_K must have positive sizes (H, d, d_h), got {tuple(self.W_K.shape)}")
        check_shape("W_Q", self.W_Q, (H, d, d_h), "(H, d, d_h)")
        check_shape("W_V", self.W_V, (H, d, None), "(H, d, d_v)", allow_empty=True)
        d_v = self.W_V.shape[2]
        if d_v == 0:
            raise ValueError("W_V must have a positive value dimension d_v, got 0")
        check_shape("W_O", self.W_O, (H * d_v, d), "(H*d_v, d)")
        check_shape("W_D", self.W_D, (d, None), "(d, d_out)", allow_empty=True)
        if self.W_D.shape[1] == 0:
            raise ValueError("W_D must have a positive output dimension d_out, got 0")

    @property
    def heads(self) -> int:
        """H, the number of heads."""
        return self.W_K.shape[0]

    @property
    def dim(self) -> int:
        """d, the token (embedding) dimension."""
        return self.W_K.shape[1]

    @property
    def head_dim(self) -> int:
        """d_h, the key/query dimension of each head."""
        return self.W_K.shape[2]

    @property
    def value_dim(self) -> int:
        """d_v, the value dimension of each head."""
        return self.W_V.shape[2]

    @property
    def out_dim(self) -> int:
        """d_out, the dimension of the model output y_hat."""
        return self.W_D.shape[1]

    @property
    def dtype(self) -> torch.dtype:
        """The common dtype of all weights."""
        return self.W_K.dtype

    @property
    def device(self) -> torch.device:
        """The common device of all weights."""
        return self.W_K.device

    def parameters(self) -> tuple[torch.Tensor, ...]:
        """The weight tensors in the fixed order :data:`mha_parameter_names`."""
        return tuple(getattr(self, name) for name in mha_parameter_names)

    def to(self, device: torch.device | str | None = None, dtype: torch.dtype | None = None) -> "MHAParams":
        """A copy with every weight moved to ``device`` and/or cast to ``dtype`` (None: unchanged)."""
        return replace(self, **{name: t.to(device=device, dtype=dtype)
                                for name, t in zip(mha_parameter_names, self.parameters())})


def init_mha(heads: int, dim: int, head_dim: int, value_dim: int, out_dim: int, *, skip: bool = False,
             generator: torch.Generator | None = None, dtype: torch.dtype | None = None,
             device: torch.device | str | None = None) -> MHAParams:
    """Random MHA weights: i.i.d. Gaussian entries with variance 1/fan_in.

    fan_in is d for W_K, W_Q, W_V, W_D and H*d_v for W_O. ``generator=None`` means a fresh generator
    seeded with 0; ``dtype`` defaults to torch's default float dtype, ``device`` to
    :func:`memcap.device.pick_device`.
    """
    H = positive_int("heads", heads)
    d = positive_int("dim", dim)
    d_h = positive_int("head_dim", head_dim)
    d_v = positive_int("value_dim", value_dim)
    d_out = positive_int("out_dim", out_dim)
    gen = _resolve.generator(generator)
    dtype, dev = _dtype_device(dtype, device)
    check_allocation("the weights W_K, W_Q, W_V, W_O, W_D", 2 * H * d * (d_h + d_v) + d * d_out, dev,
                     heads=H, dim=d, head_dim=d_h, value_dim=d_v, out_dim=d_out)
    return MHAParams(
        W_K=_gaussian((H, d, d_h), d, gen, dtype, dev),
        W_Q=_gaussian((H, d, d_h), d, gen, dtype, dev),
        W_V=_gaussian((H, d, d_v), d, gen, dtype, dev),
        W_O=_gaussian((H * d_v, d), H * d_v, gen, dtype, dev),
        W_D=_gaussian((d, d_out), d, gen, dtype, dev),
        skip=skip,
    )


def _check_contexts(contexts: torch.Tensor, T: int, d: int) -> bool:
    """Validate ``contexts`` as ``(T, n, d)`` or shared ``(n, d)``; return True when shared."""
    _check_floating("contexts", contexts)
    if contexts.ndim == 2:
        check_shape("contexts", contexts, (None, d), "shared (n, d)", allow_empty=True)
    elif contexts.ndim == 3:
        check_shape("contexts", contexts, (T, None, d), "(T, n, d)", allow_empty=True)
    else:
        raise ValueError(f"contexts must have shape (T, n, d) = ({T}, *, {d}) or shared (n, d) = (*, {d}), "
                         f"got {tuple(contexts.shape)}")
    if contexts.shape[-2] == 0:
        raise ValueError("contexts must hold at least one token (n >= 1), got n = 0")
    return contexts.ndim == 2


def _check_mha_inputs(W_K: object, W_Q: object, contexts: object, queries: object
                      ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, bool]:
    """Validate key/query weights, contexts and queries together (array-likes converted to W_K's device
    and dtype); return them as tensors and whether the context is shared."""
    W_K = _input("W_K", W_K)
    if W_K.ndim != 3 or min(W_K.shape) == 0:
        raise ValueError(f"W_K must have shape (H, d, d_h) with positive sizes, got {tuple(W_K.shape)}")
    H, d, d_h = W_K.shape
    W_Q = _input("W_Q", W_Q, W_K)
    check_shape("W_Q", W_Q, (H, d, d_h), "(H, d, d_h)")
    queries = _input("queries", queries, W_K)
    check_shape("queries", queries, (None, d), "(T, d)")
    contexts = _input("contexts", contexts, W_K)
    shared = _check_contexts(contexts, queries.shape[0], d)
    same_device_dtype(contexts=contexts, queries=queries, W_K=W_K, W_Q=W_Q)
    return W_K, W_Q, contexts, queries, shared


def _scores(W_K: torch.Tensor, W_Q: torch.Tensor, contexts: torch.Tensor, queries: torch.Tensor,
            shared: bool) -> torch.Tensor:
    """Eq. (1) without validation: alpha (T, H, n)."""
    # u_h = W_K,h W_Q,h^T e, so that alpha_h = E u_h; costs (T, H, d) instead of (T, H, n, d_h).
    q = torch.einsum("hdk,td->thk", W_Q, queries)   # (T, H, d_h)
    u = torch.einsum("hdk,thk->thd", W_K, q)        # (T, H, d)
    if shared:
        return torch.einsum("nd,thd->thn", contexts, u)
    return torch.einsum("tnd,thd->thn", contexts, u)


def _head_features(theta: torch.Tensor, contexts: torch.Tensor, shared: bool) -> torch.Tensor:
    """Eq. (3) without validation: z_h = E^T theta_h, returned as (T, H, d)."""
    if shared:
        return torch.einsum("thn,nd->thd", theta, contexts)
    return torch.einsum("thn,tnd->thd", theta, contexts)


def mha_scores(W_K: torch.Tensor, W_Q: torch.Tensor, contexts: torch.Tensor,
               queries: torch.Tensor) -> torch.Tensor:
    """Attention scores alpha_h = E W_K,h W_Q,h^T e (Mahdavi et al., Eq. (1)).

    ``W_K``, ``W_Q``: (H, d, d_h); ``contexts`` E: (T, n, d) or shared (n, d); ``queries`` e: (T, d).
    Returns alpha: (T, H, n).
    """
    W_K, W_Q, contexts, queries, shared = _check_mha_inputs(W_K, W_Q, contexts, queries)
    return _scores(W_K, W_Q, contexts, queries, shared)


def mha_attention(W_K: torch.Tensor, W_Q: torch.Tensor, contexts: torch.Tensor,
                  queries: torch.Tensor) -> torch.Tensor:
    """Attention weights theta_h = Softmax(alpha_h) over the n context tokens (Eq. (2)).

    Shapes as in :func:`mha_scores`; returns theta: (T, H, n), each row on the probability simplex.
    """
    return torch.softmax(mha_scores(W_K, W_Q, contexts, queries), dim=-1)


def _check_attention_input(theta: object, contexts: object) -> tuple[torch.Tensor, torch.Tensor, bool]:
    """Validate prescribed attention ``theta`` (T, H, n) against ``contexts``; return both as tensors
    (array-likes converted to theta's device and dtype) and whether the context is shared."""
    theta = _input("theta", theta)
    if theta.ndim != 3:
        raise ValueError(f"theta must have shape (T, H, n), got {tuple(theta.shape)}")
    check_shape("theta", theta, (None, None, None), "(T, H, n)")
    T, _, n = theta.shape
    contexts = _input("contexts", contexts, theta)
    if contexts.ndim not in (2, 3):
        raise ValueError(f"contexts must have shape (T, n, d) = ({T}, {n}, *) or shared (n, d) = ({n}, *), "
                         f"got {tuple(contexts.shape)}")
    shared = contexts.ndim == 2
    if shared:
        check_shape("contexts", contexts, (n, None), "shared (n, d)")
    else:
        check_shape("contexts", contexts, (T, n, None), "(T, n, d)")
    same_device_dtype(theta=theta, contexts=contexts)
    return theta, contexts, shared


def mha_features_from_attention(theta: torch.Tensor, contexts: torch.Tensor) -> torch.Tensor:
    """Features z_h = E^T theta_h for prescribed attention weights (Eqs. (3) and (7)).

    ``theta``: (T, H, n); ``contexts`` E: (T, n, d) or shared (n, d). Returns the rows of Z of Eq. (7):
    (T, H*d), head-major (columns ``h*d:(h+1)*d`` hold z_h). ``theta`` is not required to lie on the
    simplex, so that the map of Eq. (3) can also be evaluated at limits of softmax outputs.
    """
    theta, contexts, shared = _check_attention_input(theta, contexts)
    T, H, _ = theta.shape
    z = _head_features(theta, contexts, shared)   # (T, H, d)
    return z.reshape(T, H * contexts.shape[-1])   # (T, H*d), head-major


def mha_features(W_K: torch.Tensor, W_Q: torch.Tensor, contexts: torch.Tensor,
                 queries: torch.Tensor) -> torch.Tensor:
    """The rows z^(t) = [z_1; ...; z_H] of the feature matrix Z (Eqs. (1)-(3) and (7)).

    Shapes as in :func:`mha_scores`; returns Z: (T, H*d), head-major. Each z_h is a convex
    combination of the rows of that example's context.
    """
    W_K, W_Q, contexts, queries, shared = _check_mha_inputs(W_K, W_Q, contexts, queries)
    theta = torch.softmax(_scores(W_K, W_Q, contexts, queries, shared), dim=-1)   # (T, H, n)
    z = _head_features(theta, contexts, shared)                                    # (T, H, d)
    return z.reshape(queries.shape[0], W_K.shape[0] * W_K.shape[1])                # (T, H*d)


def mha_forward(params: MHAParams, contexts: torch.Tensor, queries: torch.Tensor) -> torch.Tensor:
    """The model output y_hat = W_D^T o of Eqs. (1)-(6) (with o += e when ``params.skip``).

    ``contexts`` E: (T, n, d) or shared (n, d); ``queries`` e: (T, d). Returns y_hat: (T, d_out).
    """
    if not isinstance(params, MHAParams):
        raise TypeError(f"params must be MHAParams, got {type(params).__name__}")
    _, _, contexts, queries, shared = _check_mha_inputs(params.W_K, params.W_Q, contexts, queries)
    T = queries.shape[0]
    theta = torch.softmax(_scores(params.W_K, params.W_Q, contexts, queries, shared), dim=-1)  # (T, H, n)
    z = _head_features(theta, contexts, shared)                   # (T, H, d)
    p = torch.einsum("thd,hdv->thv", z, params.W_V)                # (T, H, d_v), Eq. (4)
    o = p.reshape(T, params.heads * params.value_dim) @ params.W_O  # (T, H*d_v) @ (H*d_v, d), Eq. (5)
    if params.skip:
        o = o + queries
    return o @ params.W_D                                          # (T, d_out), Eq. (6)


def mha_param_count(heads: int, dim: int, head_dim: int, value_dim: int, out_dim: int) -> int:
    """The parameter count 2 H d d_h + H d d_v + d d_out of Mahdavi et al. (after Theorem 1).

    The formula lives in :mod:`memcap.bounds`. It counts W_K, W_Q, W_V and W_D but not the H d_v d
    entries of W_O, so the tensors of :class:`MHAParams` hold H d_v d more numbers than it says.
    """
    sizes = {"heads": heads, "dim": dim, "head_dim": head_dim, "value_dim": value_dim, "out_dim": out_dim}
    sizes = {name: positive_int(name, value) for name, value in sizes.items()}
    from memcap import bounds

    return int(bounds.mha_param_count(**sizes))


# ---------------------------------------------------------------------------------------------------
# Dana et al.: one-layer attention-only transformer (AoT)
# ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class AoTParams:
    """Weights of a one-layer attention-only transformer (Dana et al., Section 2).

    Shapes: ``token_embedding`` e (N, d), ``positional_embedding`` pos (S, d), ``W_Q``, ``W_K``, ``W_V``
    (H, d_h, d), ``W_O`` (H, d, d_h), ``W_U`` (N, d) (unembedding). Field order equals
    :data:`aot_parameter_names`, so ``AoTParams(*params.parameters())`` round-trips.
    """

    token_embedding: torch.Tensor
    positional_embedding: torch.Tensor
    W_Q: torch.Tensor
    W_K: torch.Tensor
    W_V: torch.Tensor
    W_O: torch.Tensor
    W_U: torch.Tensor

    def __post_init__(self) -> None:
        _check_params_tensors(aot_parameter_names, self.parameters())
        if self.token_embedding.ndim != 2 or min(self.token_embedding.shape) == 0:
            raise ValueError(f"token_embedding must have shape (N, d) with positive sizes, "
                             f"got {tuple(self.token_embedding.shape)}")
        N, d = self.token_embedding.shape
        check_shape("positional_embedding", self.positional_embedding, (None, d), "(S, d)", allow_empty=True)
        if self.positional_embedding.shape[0] == 0:
            raise ValueError("positional_embedding must have a positive sequence length S, got 0")
        if self.W_Q.ndim != 3 or min(self.W_Q.shape) == 0:
            raise ValueError(f"W_Q must have shape (H, d_h, d) with positive sizes, got {tuple(self.W_Q.shape)}")
        H, d_h = self.W_Q.shape[:2]
        check_shape("W_Q", self.W_Q, (H, d_h, d), "(H, d_h, d)")
        check_shape("W_K", self.W_K, (H, d_h, d), "(H, d_h, d)")
        check_shape("W_V", self.W_V, (H, d_h, d), "(H, d_h, d)")
        check_shape("W_O", self.W_O, (H, d, d_h), "(H, d, d_h)")
        check_shape("W_U", self.W_U, (N, d), "(N, d)")

    @property
    def vocab(self) -> int:
        """N, the number of token ids."""
        return self.token_embedding.shape[0]

    @property
    def seq_len(self) -> int:
        """S, the context window (input sequence length)."""
        return self.positional_embedding.shape[0]

    @property
    def dim(self) -> int:
        """d, the embedding dimension."""
        return self.token_embedding.shape[1]

    @property
    def heads(self) -> int:
        """H, the number of heads."""
        return self.W_Q.shape[0]

    @property
    def head_dim(self) -> int:
        """d_h, the inner dimension of each head."""
        return self.W_Q.shape[1]

    @property
    def dtype(self) -> torch.dtype:
        """The common dtype of all weights."""
        return self.W_U.dtype

    @property
    def device(self) -> torch.device:
        """The common device of all weights."""
        return self.W_U.device

    def parameters(self) -> tuple[torch.Tensor, ...]:
        """The weight tensors in the fixed order :data:`aot_parameter_names`."""
        return tuple(getattr(self, name) for name in aot_parameter_names)

    def to(self, device: torch.device | str | None = None, dtype: torch.dtype | None = None) -> "AoTParams":
        """A copy with every weight moved to ``device`` and/or cast to ``dtype`` (None: unchanged)."""
        return replace(self, **{name: t.to(device=device, dtype=dtype)
                                for name, t in zip(aot_parameter_names, self.parameters())})


def init_aot(vocab: int, seq_len: int, dim: int, heads: int, head_dim: int, *,
             generator: torch.Generator | None = None, dtype: torch.dtype | None = None,
             device: torch.device | str | None = None) -> AoTParams:
    """Random AoT weights: i.i.d. Gaussian entries with variance 1/fan_in.

    fan_in is 1 for the two embeddings (a one-hot input), d for W_Q, W_K, W_V, W_U and d_h for W_O.
    ``generator=None`` means a fresh generator seeded with 0; ``dtype`` defaults to torch's default
    float dtype, ``device`` to :func:`memcap.device.pick_device`.
    """
    N = positive_int("vocab", vocab)
    S = positive_int("seq_len", seq_len)
    d = positive_int("dim", dim)
    H = positive_int("heads", heads)
    d_h = positive_int("head_dim", head_dim)
    gen = _resolve.generator(generator)
    dtype, dev = _dtype_device(dtype, device)
    check_allocation("the embeddings and weights", (2 * N + S) * d + 4 * H * d_h * d, dev,
                     vocab=N, seq_len=S, dim=d, heads=H, head_dim=d_h)
    return AoTParams(
        token_embedding=_gaussian((N, d), 1, gen, dtype, dev),
        positional_embedding=_gaussian((S, d), 1, gen, dtype, dev),
        W_Q=_gaussian((H, d_h, d), d, gen, dtype, dev),
        W_K=_gaussian((H, d_h, d), d, gen, dtype, dev),
        W_V=_gaussian((H, d_h, d), d, gen, dtype, dev),
        W_O=_gaussian((H, d, d_h), d_h, gen, dtype, dev),
        W_U=_gaussian((N, d), d, gen, dtype, dev),
    )


def _check_aot_inputs(params: AoTParams, tokens: object) -> torch.Tensor:
    """Validate ``params`` and ``tokens`` (B, S): integer ids in [0, N) on the weights' device (an
    array-like is placed there); return the tokens as a tensor."""
    if not isinstance(params, AoTParams):
        raise TypeError(f"params must be AoTParams, got {type(params).__name__}")
    if isinstance(tokens, torch.Tensor) and not same_device(tokens.device, params.device):
        raise ValueError(f"tokens is on {tokens.device} but params are on {params.device}")
    tokens = id_tensor("tokens", tokens, device=params.device)
    check_shape("tokens", tokens, (None, params.seq_len), "(B, S)")
    low, high = int(tokens.min()), int(tokens.max())
    if low < 0 or high >= params.vocab:
        bad = low if low < 0 else high
        raise ValueError(f"tokens must be ids in [0, N) = [0, {params.vocab}), got {bad}")
    return tokens


def _embed(params: AoTParams, tokens: torch.Tensor) -> torch.Tensor:
    """x_s = e(t_s) + pos_s without validation: (B, S, d)."""
    return params.token_embedding[tokens] + params.positional_embedding


def _attention(params: AoTParams, x: torch.Tensor) -> torch.Tensor:
    """Last-position attention a^h without validation, from embedded tokens x (B, S, d): (B, H, S)."""
    x_last = x[:, -1, :]                                          # (B, d)
    q = torch.einsum("hkd,bd->bhk", params.W_Q, x_last)          # (B, H, d_h)
    u = torch.einsum("hkd,bhk->bhd", params.W_K, q)              # (B, H, d): W_K^h^T W_Q^h x_S
    return torch.softmax(torch.einsum("bsd,bhd->bhs", x, u), dim=-1)


def _sequence_embedding(params: AoTParams, x: torch.Tensor) -> torch.Tensor:
    """E(t_{1:S}) = x_S + sum_h W_O^h W_V^h A^h without validation: (B, d)."""
    A = torch.einsum("bhs,bsd->bhd", _attention(params, x), x)   # (B, H, d)
    v = torch.einsum("hkd,bhd->bhk", params.W_V, A)              # (B, H, d_h)
    return x[:, -1, :] + torch.einsum("hek,bhk->be", params.W_O, v)


def aot_embed(params: AoTParams, tokens: torch.Tensor) -> torch.Tensor:
    """Embedded tokens x_s = e(t_s) + pos_s (Dana et al., Eq. (1)).

    ``tokens``: (B, S) integer ids in [0, N). Returns X: (B, S, d).
    """
    tokens = _check_aot_inputs(params, tokens)
    return _embed(params, tokens)


def aot_attention(params: AoTParams, tokens: torch.Tensor) -> torch.Tensor:
    """Attention of the last position, a^h_s = Softmax_s(x_S^T W_Q^h^T W_K^h x_s) (Eq. (1)).

    ``tokens``: (B, S) integer ids. Returns a: (B, H, S), rows on the probability simplex.
    """
    tokens = _check_aot_inputs(params, tokens)
    return _attention(params, _embed(params, tokens))


def aot_head_inputs(params: AoTParams, tokens: torch.Tensor) -> torch.Tensor:
    """The "attention before output" A^h = sum_s a^h_s x_s of every head (Eq. (1)).

    ``tokens``: (B, S) integer ids. Returns A: (B, H, d).
    """
    tokens = _check_aot_inputs(params, tokens)
    x = _embed(params, tokens)
    return torch.einsum("bhs,bsd->bhd", _attention(params, x), x)


def aot_sequence_embedding(params: AoTParams, tokens: torch.Tensor) -> torch.Tensor:
    """The sequence embedding E(t_{1:S}) = x_S + sum_h W_O^h W_V^h A^h (Dana et al., Section 3).

    The AoT is the sequence encoder t_{1:S} -> W_U E(t_{1:S}). ``tokens``: (B, S). Returns (B, d).
    """
    tokens = _check_aot_inputs(params, tokens)
    return _sequence_embedding(params, _embed(params, tokens))


def aot_forward(params: AoTParams, tokens: torch.Tensor) -> torch.Tensor:
    """Next-token logits at the last position, W_U (x_S + sum_h W_O^h W_V^h A^h) (Dana et al., Eq. (2)).

    ``tokens``: (B, S) integer ids in [0, N). Returns logits: (B, N).
    """
    tokens = _check_aot_inputs(params, tokens)
    return _sequence_embedding(params, _embed(params, tokens)) @ params.W_U.T   # (B, d) @ (d, N)


def aot_param_count(vocab: int, seq_len: int, dim: int, heads: int, head_dim: int) -> int:
    """Number of trainable weights d (S + 2N + 4 d_h H) (formula in :mod:`memcap.bounds`)."""
    sizes = {"vocab": vocab, "seq_len": seq_len, "dim": dim, "heads": heads, "head_dim": head_dim}
    sizes = {name: positive_int(name, value) for name, value in sizes.items()}
    from memcap import bounds

    return int(bounds.aot_param_count(**sizes))
