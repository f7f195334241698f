"""Part III: the two papers' theories on one model family, side by side.

The family is one layer of softmax attention with H heads of key/query rank d_h on d-dimensional
tokens, read at one query position through a linear readout. Mahdavi et al. feed it real vectors: a
context E (n, d) and a separate query e (their Sections 3 and 5.2). Dana et al. feed it token sequences:
the context is the S embedded tokens x_s = e(t_s) + pos_s, the query is the last one, x_S, and the query
is added back to the output (the residual stream). That is Mahdavi et al.'s layer with the skip
connection of their Remark 2, with n = S and a value dimension d_v <= d_h. This module turns one view into
the other and evaluates both theories on the same instances.

* The map: :func:`token_inputs` (sequences -> Mahdavi's contexts and queries) and :func:`aot_from_mha`
  (Mahdavi's weights -> an AoT with the same logits, up to a readout).
* Hypotheses and bounds: :func:`mahdavi_hypotheses`, :func:`mahdavi_bound`, :func:`dana_bound`, each
  bound a :class:`Bound` that says whether it applies and, if not, which hypothesis fails.
* Constructions in one currency, the argmax: :func:`dana_association_aot`,
  :func:`mahdavi_association_aot` (token sequences) and :func:`mahdavi_classifier` (Mahdavi et al.'s
  experimental model with the weights of their proof).
* Beyond the rank count: :func:`label_aware_head` (the book's Proposition ``book-prop-label-aware``).
* The open step of Dana et al.'s Lemma 2: :func:`feature_rank`, :func:`feature_rank_survey`.
* Trained models: :func:`trained_aot_attention`, :func:`engine_param_count`, :func:`certified_fit`.

Every construction runs in float64 and is checked by the caller with the model's own forward pass.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Iterable, Mapping

import numpy as np
import torch

from memcap import _resolve, bounds, linalg
from memcap._checks import (
    check_shape,
    finite_real,
    id_tensor,
    ids_in_range,
    listed,
    positive_int,
    positive_real,
    real_tensor,
    seed_int,
)
from memcap._schema import Key, keyed, one_of
from memcap.construct import dana, mahdavi
from memcap.data import MemorizationTask, association_task, sinusoidal_positions
from memcap.models import AoTParams, MHAParams, aot_attention, aot_forward, init_aot, mha_attention
from memcap.train import AoTSpec, MHASpec

__all__ = ["DTYPE", "RANK_MARGIN", "token_inputs", "aot_from_mha", "Hypothesis", "mahdavi_hypotheses", "Bound",
           "mahdavi_bound", "last_token_count", "dana_bound", "dana_table", "dana_association_aot",
           "mahdavi_association_aot", "mahdavi_classifier", "classifier_attention", "label_aware_head",
           "feature_rank", "TABLES", "feature_rank_survey", "trained_aot_attention", "engine_param_count",
           "readout_weights", "certified_fit"]

DTYPE = torch.float64
"""Constructions and rank computations run in float64."""

RANK_MARGIN = 1e-8
"""A rank r counts as certified when sigma_r / sigma_1 exceeds this (the margin of the book's Lemma 2
chapter: both rounding terms are of order 1e-13 ||F|| in float64 at the sizes used)."""


# ---------------------------------------------------------------------------------------------------
# the map between the two settings


def _tokens(tokens: object, vocab: int, device: torch.device | None = None) -> torch.Tensor:
    """``tokens`` as (T, S) int64 ids in [0, vocab) (a tensor, array or nested list; arrays on ``device``)."""
    tokens = check_shape("tokens", id_tensor("tokens", tokens, device=device), (None, None), "(T, S)")
    if int(tokens.min()) < 0 or int(tokens.max()) >= vocab:
        raise ValueError(f"tokens must be ids in [0, N) = [0, {vocab}), got ids from {int(tokens.min())} "
                         f"to {int(tokens.max())}")
    return tokens.long()


def token_inputs(token_embedding: torch.Tensor, positional_embedding: torch.Tensor,
                 tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mahdavi et al.'s inputs for token sequences: contexts E^(t) (T, S, d) with rows x_s = e(t_s) + pos_s,
    and queries e^(t) = x_S (T, d), the last row (self-attention: the query is one of the keys).

    ``token_embedding`` (N, d), ``positional_embedding`` (S, d), ``tokens`` (T, S) ids.
    """
    token_embedding = check_shape("token_embedding", real_tensor("token_embedding", token_embedding),
                                  (None, None), "(N, d)")
    N, d = token_embedding.shape
    tokens = _tokens(tokens, N, token_embedding.device)
    positional_embedding = real_tensor("positional_embedding", positional_embedding, dtype=token_embedding.dtype,
                                       device=token_embedding.device)
    check_shape("positional_embedding", positional_embedding, (tokens.shape[1], d), "(S, d)")
    x = token_embedding[tokens] + positional_embedding                          # (T, S, d)
    return x, x[:, -1]


def aot_from_mha(params: MHAParams, token_embedding: torch.Tensor, positional_embedding: torch.Tensor,
                 readout: torch.Tensor) -> AoTParams:
    """The AoT whose logits are ``readout @ y_hat`` for Mahdavi et al.'s layer ``params`` on token inputs.

    With the inputs of :func:`token_inputs`, Mahdavi's score x_s^T W_K,h W_Q,h^T x_S is Dana's
    x_S^T W_Q^h^T W_K^h x_s for W_Q^h = W_Q,h^T, W_K^h = W_K,h^T; the value path W_O,h^T W_V,h^T z_h is
    W_O^h W_V^h A^h with the d_v value columns padded by zeros to d_h; the skip connection (Remark 2) is the
    residual x_S; and the readout W_D (d, d_out) followed by ``readout`` (N, d_out) is W_U = readout W_D^T.
    Needs ``params.skip`` (the AoT always adds x_S) and d_v <= d_h (an AoT head's W_O^h W_V^h has rank
    at most d_h).
    """
    if not isinstance(params, MHAParams):
        raise TypeError(f"params must be MHAParams, got {type(params).__name__}")
    if not params.skip:
        raise ValueError("the AoT always adds x_S (its residual stream): Mahdavi et al.'s layer must have "
                         "the skip connection of their Remark 2 (skip=True)")
    H, d, d_h, d_v = params.heads, params.dim, params.head_dim, params.value_dim
    if d_v > d_h:
        raise ValueError(f"d_v = {d_v} > d_h = {d_h}: an AoT head's W_O^h W_V^h has rank at most d_h")
    like = {"dtype": params.dtype, "device": params.device}
    token_embedding = check_shape("token_embedding", real_tensor("token_embedding", token_embedding, **like),
                                  (None, d), "(N, d)")
    N = token_embedding.shape[0]
    positional_embedding = check_shape("positional_embedding", real_tensor("positional_embedding",
                                       positional_embedding, **like), (None, d), "(S, d)")
    readout = check_shape("readout", real_tensor("readout", readout, **like), (N, params.out_dim), "(N, d_out)")
    W_V = torch.zeros(H, d_h, d, **like)
    W_V[:, :d_v] = params.W_V.transpose(1, 2)                                   # (H, d_v, d) block
    W_O = torch.zeros(H, d, d_h, **like)
    W_O[:, :, :d_v] = params.W_O.reshape(H, d_v, d).transpose(1, 2)             # (H, d, d_v) block
    return AoTParams(token_embedding.to(**like), positional_embedding.to(**like),
                     params.W_Q.transpose(1, 2).contiguous(), params.W_K.transpose(1, 2).contiguous(),
                     W_V, W_O, readout.to(**like) @ params.W_D.T)


# ---------------------------------------------------------------------------------------------------
# which hypotheses hold, and the two bounds


@dataclass(frozen=True)
class Hypothesis:
    """One hypothesis of a theorem on one instance: its ``name``, whether it ``holds``, and ``why`` not (a few
    words, formulas between ``$`` signs as in the book's Markdown, e.g. ``"$n = 8 \\ge d = 4$"``)."""

    name: str
    holds: bool
    why: str = ""


def _coinciding(queries: torch.Tensor) -> tuple[int, int] | None:
    """Two indices of equal queries (to rounding), or None: equal vectors make the Kruskal rank 1."""
    scale = float(queries.abs().max()) if queries.numel() else 0.0
    gaps = torch.cdist(queries, queries) + torch.eye(queries.shape[0], dtype=queries.dtype,
                                                      device=queries.device) * (scale + 1.0)
    close = torch.nonzero(gaps <= 1e-12 * max(scale, 1.0))
    if not close.numel():
        return None
    i, j = sorted(int(v) for v in close[0])
    return i, j


def _reason(err: ValueError) -> str:
    """The message of a refusal of :mod:`memcap.linalg` without its leading "Mahdavi et al.'s Assumption k
    fails: " (or "... fails (randomized test): "): the caller names the hypothesis itself."""
    return re.sub(r"^(Mahdavi et al\.'s )?Assumption \d fails( \(randomized test\))?: ", "", str(err))


def mahdavi_hypotheses(contexts: torch.Tensor, queries: torch.Tensor) -> list[Hypothesis]:
    """Mahdavi et al.'s hypotheses on one training set: n < d, Assumption 1, Assumption 2.

    ``contexts``: (T, n, d) or shared (n, d); ``queries``: (T, d). Coinciding queries (two sequences with
    the same last token) are reported as such: they make the Kruskal rank 1. Otherwise Assumption 1 is
    tested by :func:`memcap.linalg.check_assumption_1` (exact, or the paper's randomized test on large sets).
    """
    contexts = real_tensor("contexts", contexts)
    queries = real_tensor("queries", queries, device=contexts.device)
    if contexts.ndim not in (2, 3):
        raise ValueError(f"contexts must have shape (T, n, d) or (n, d), got {tuple(contexts.shape)}")
    check_shape("contexts", contexts, (None,) * contexts.ndim, "(T, n, d)" if contexts.ndim == 3 else "(n, d)")
    T = contexts.shape[0] if contexts.ndim == 3 else None
    check_shape("queries", queries, (T, contexts.shape[-1]), "(T, d)")
    n, d = contexts.shape[-2:]
    out = [Hypothesis("n < d", n < d, "" if n < d else f"$n = {n} \\ge d = {d}$")]
    pair = _coinciding(queries.to(DTYPE))
    if pair is not None:
        out.append(Hypothesis("Assumption 1", False, f"queries {pair[0]} and {pair[1]} coincide, so the "
                              f"Kruskal rank is $1 < n = {n}$"))
    else:
        try:
            linalg.check_assumption_1(queries.to(DTYPE), n)
            out.append(Hypothesis("Assumption 1", True))
        except ValueError as err:
            out.append(Hypothesis("Assumption 1", False, _reason(err)))
    try:
        linalg.check_assumption_2(contexts.to(DTYPE))
        out.append(Hypothesis("Assumption 2", True))
    except ValueError as err:
        out.append(Hypothesis("Assumption 2", False, _reason(err)))
    return out


@dataclass(frozen=True)
class Bound:
    """A theorem's count on one setting: ``value`` (the formula), whether it ``applies`` there, ``why`` not
    (the failing hypothesis, in a few words, formulas between ``$`` signs), and ``guarantee``: what the
    theorem does guarantee on that data (``value`` when it applies, otherwise the fallback the paper gives,
    e.g. Remark 1, or 0)."""

    theorem: str
    value: int
    applies: bool
    why: str
    guarantee: int


def _kruskal_rank(queries: torch.Tensor) -> int:
    """The Kruskal rank Q of ``queries`` (T, d) for Remark 1: exact when :func:`memcap.linalg.kruskal_rank`
    can enumerate the subsets it needs, else the lower bound 1 (0 with a zero query)."""
    if not bool((queries.abs().amax(dim=1) > 0).all()):
        return 0
    if _coinciding(queries) is not None:
        return 1
    try:
        return linalg.kruskal_rank(queries)
    except ValueError:       # too many subsets to enumerate: every query is nonzero, so Q >= 1
        return 1


def mahdavi_bound(heads: int, head_dim: int, contexts: torch.Tensor, queries: torch.Tensor) -> Bound:
    """Mahdavi et al.'s Theorem 1, H(min(n, d_h) - 1) + 1, on the training set (``contexts``, ``queries``).

    When only Assumption 1 fails, Remark 1 still guarantees H(min(Q, d_h) - 1) + 1 examples, Q the Kruskal
    rank of the queries (:func:`memcap.linalg.kruskal_rank`; Q = 1 when queries coincide, and Q >= 1 is
    used when the exact Kruskal rank needs too many subsets); a zero query (Q = 0), n >= d or a failing
    Assumption 2 guarantee nothing (0).
    """
    H, d_h = positive_int("heads", heads), positive_int("head_dim", head_dim)
    hypotheses = mahdavi_hypotheses(contexts, queries)
    n = real_tensor("contexts", contexts).shape[-2]
    value = bounds.mha_capacity(H, n, d_h)
    failed = [h for h in hypotheses if not h.holds]
    if not failed:
        return Bound("Mahdavi et al., Theorem 1", value, True, "", value)
    first = failed[0]
    only_queries = [h.name for h in failed] == ["Assumption 1"]
    Q = _kruskal_rank(real_tensor("queries", queries).to(DTYPE)) if only_queries else 0
    guarantee = bounds.mha_capacity_remark1(H, Q, d_h) if Q else 0
    return Bound("Mahdavi et al., Theorem 1", value, False, f"{first.name} fails: {first.why}", guarantee)


def last_token_count(tokens: torch.Tensor) -> int:
    """L, the number of distinct last tokens among the sequences ``tokens`` (T, S)."""
    tokens = ids_in_range("tokens", check_shape("tokens", id_tensor("tokens", tokens), (None, None), "(T, S)"))
    return int(torch.unique(tokens[:, -1]).numel())


def dana_bound(heads: int, head_dim: int, dim: int, tokens: torch.Tensor | None = None, *,
               token_sequences: bool = True, context_size: int | None = None) -> Bound:
    """Dana et al.'s count H d_h + min(d, L) (the book's form of their Theorem 1, L distinct last tokens).

    ``tokens`` (T, S) gives L (None: L >= d, the paper's H d_h + d). With ``token_sequences=False`` the
    inputs are Mahdavi et al.'s real vectors with one shared context of ``context_size`` n tokens: the
    theorem is about token sequences whose embeddings the proof chooses, and Mahdavi et al.'s layer has no
    skip connection, so the count does not apply (guarantee 0). ``why`` adds what Prop. 2 says: even with
    a skip block, the features' rank is at most H(n - 1) + 1 + d for every choice of weights, below the
    count only when H(d_h - n + 1) > 1.
    Also refused by the theorem: d_h > d and S < 2.
    """
    H, d_h, d = positive_int("heads", heads), positive_int("head_dim", head_dim), positive_int("dim", dim)
    if not isinstance(token_sequences, bool):
        raise TypeError(f"token_sequences must be a bool, got {type(token_sequences).__name__}")
    if tokens is not None:
        tokens = ids_in_range("tokens", check_shape("tokens", id_tensor("tokens", tokens), (None, None), "(T, S)"))
    L = d if tokens is None else last_token_count(tokens)
    value = bounds.aot_capacity(H, d_h, d) - d + min(d, L)
    name = "Dana et al., Theorem 1"
    if not token_sequences:
        n = positive_int("context_size", context_size)
        cap = bounds.mha_shared_rank_bound(H, n) + d    # Prop. 2's rank(Z) cap plus a skip block
        where = "below" if cap < value else "not below"
        return Bound(name, value, False, f"real vectors, not token sequences: no embedding to choose, no skip "
                     f"connection; with a shared context of $n = {n}$ tokens even a skip block gives features of "
                     f"rank $\\le H(n-1)+1+d = {cap}$ (Prop. 2), {where} the count", 0)
    if d_h > d:
        return Bound(name, value, False, f"$d_h = {d_h} > d = {d}$", 0)
    if tokens is not None and tokens.shape[1] < 2:
        return Bound(name, value, False, "$S = 1$: attention over one token is constant", 0)
    return Bound(name, value, True, "", value)


# ---------------------------------------------------------------------------------------------------
# constructions, in the argmax currency


def _circle(vocab: int, device: torch.device) -> torch.Tensor:
    """(N, 2): unit vectors at angles 2 pi j / N, Proposition 3's unembedding."""
    angle = 2 * math.pi * torch.arange(vocab, dtype=DTYPE, device=device) / vocab
    return torch.stack([angle.cos(), angle.sin()], dim=1)


def _targets(targets: object, count: int, vocab: int, device: torch.device | None = None,
             name: str = "targets") -> torch.Tensor:
    """``targets`` as (T,) int64 ids in [0, vocab) (a tensor, array or list; arrays on ``device``)."""
    targets = check_shape(name, id_tensor(name, targets, device=device), (count,), "(T,)")
    if int(targets.min()) < 0 or int(targets.max()) >= vocab:
        raise ValueError(f"{name} must be integer ids in [0, {vocab}), got ids from {int(targets.min())} "
                         f"to {int(targets.max())}")
    return targets.long()


def dana_table(vocab: int, seq_len: int, *, dim: int, heads: int, head_dim: int,
               generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """A random association table as large as Dana et al.'s count allows on it: the largest T (from
    H d_h + d down) whose own T random sequences of [N]^S satisfy T <= H d_h + min(d, L_T), L_T their
    distinct last tokens. Returns tokens (T, S) and uniform targets (T,), drawn with ``generator``
    (None: a fresh one seeded with 0), on its device."""
    N, S = positive_int("vocab", vocab), positive_int("seq_len", seq_len)
    H, d_h, d = positive_int("heads", heads), positive_int("head_dim", head_dim), positive_int("dim", dim)
    generator = _resolve.generator(generator)
    T = min(H * d_h + d, N ** S)
    while True:
        tokens, targets = association_task(N, S, count=T, generator=generator, device=generator.device)
        allowed = H * d_h + min(d, last_token_count(tokens))
        if T <= allowed:
            return tokens, targets
        T = allowed


def dana_association_aot(tokens: torch.Tensor, targets: torch.Tensor, vocab: int, *, dim: int, heads: int,
                         head_dim: int, generator: torch.Generator | None = None) -> dana.Theorem1AoT:
    """Dana et al.'s construction for associations at any width d: an AoT whose argmax is ``targets``.

    The target sequence encoder is Proposition 3's circle (in the first two of d coordinates), each
    E(t) moved by a generic vector of length (1 - cos(2 pi / N)) / 8 in all d coordinates, as in the
    book's proof of Corollary 1 (the margin stays above 3/4 of the circle's); then
    :func:`memcap.construct.dana.theorem1_aot` solves for the output maps. Refused beyond
    H d_h + min(d, L) sequences. ``generator`` draws the generic weights (None: a fresh one seeded with 0);
    the result lives on the device of ``tokens``.
    """
    N = positive_int("vocab", vocab)
    d = positive_int("dim", dim)
    if d < 2:
        raise ValueError(f"the circle encoder needs d >= 2, got dim = {d}")
    generator = _resolve.generator(generator)
    tokens = _tokens(tokens, N)
    dev = tokens.device
    targets = _targets(targets, tokens.shape[0], N, dev)
    circle = dana.circle_sequence_encoder(targets, N, scale=1.0, dim=d)
    move = _resolve.randn((tokens.shape[0], d), generator, DTYPE, dev)
    move = move / move.norm(dim=1, keepdim=True) * (1 - math.cos(2 * math.pi / N)) / 8
    target = dana.SequenceEncoder(circle.unembedding, circle.embedding + move)
    return dana.theorem1_aot(target, tokens, heads=heads, head_dim=head_dim, generator=generator)


def mahdavi_association_aot(tokens: torch.Tensor, targets: torch.Tensor, *, token_embedding: torch.Tensor,
                            positional_embedding: torch.Tensor, heads: int, head_dim: int,
                            generator: torch.Generator | None = None) -> AoTParams:
    """Mahdavi et al.'s construction run on token sequences and turned into an AoT.

    The labels are the circle points of the targets (d_out = 2, so d_h >= 2 is needed to host them), the
    layer has the skip connection of Remark 2, the inputs are :func:`token_inputs`; the result is
    :func:`aot_from_mha` with the circle as readout. Mahdavi et al.'s hypotheses are enforced by their
    construction: sequences that share a last token are refused (Assumption 1), naming ``tokens``, before
    any work.
    """
    token_embedding = check_shape("token_embedding", real_tensor("token_embedding", token_embedding, dtype=DTYPE),
                                  (None, None), "(N, d)")
    positional_embedding = real_tensor("positional_embedding", positional_embedding, dtype=DTYPE,
                                       device=token_embedding.device)
    N = token_embedding.shape[0]
    tokens = _tokens(tokens, N, token_embedding.device)
    targets = _targets(targets, tokens.shape[0], N, token_embedding.device)
    positive_int("heads", heads)
    if positive_int("head_dim", head_dim) < 2:
        raise ValueError("d_h >= 2 is needed: the circle labels are 2-dimensional and d_v <= d_h in an AoT")
    last = tokens[:, -1]
    values, counts = torch.unique(last, return_counts=True)
    if bool((counts > 1).any()):
        shared = int(values[counts > 1][0])
        i, j = (int(v) for v in torch.nonzero(last == shared)[:2, 0])
        raise ValueError(f"tokens: sequences share a last token (rows {i} and {j} both end in {shared}), so their "
                         f"queries x_S coincide and Mahdavi et al.'s Assumption 1 fails (Kruskal rank 1)")
    contexts, queries = token_inputs(token_embedding, positional_embedding, tokens)
    circle = _circle(N, contexts.device)
    built = mahdavi.theorem1_construction(contexts, queries, circle[targets.to(contexts.device)], heads=heads,
                                          head_dim=head_dim, value_dim=2, skip=True, generator=generator)
    return aot_from_mha(built.params, token_embedding, positional_embedding, circle)


def mahdavi_classifier(contexts: torch.Tensor, queries: torch.Tensor, labels: torch.Tensor, *, classes: int,
                       heads: int, head_dim: int,
                       generator: torch.Generator | None = None) -> dict[str, torch.Tensor]:
    """The weights of Mahdavi et al.'s experimental model (``MHASpec(embedding=True)``, d_v = 1) that
    classify every example, built by their Theorem 1.

    ``contexts``: the shared raw context (n, d); ``queries`` (T, d) raw; ``labels`` (T,) classes in [0, C).
    The embedding is the identity (W_E = I, b_E = 0), so the layer sees x + pos (sinusoidal positions,
    query at position 0). Theorem 1 fits the scalar s^(t) = y^(t) (d_v = d_out = 1) exactly; the readout
    with bias, logits c s - c^2 / 2, puts the largest logit on the class nearest to s (the book's
    exercise on the Mahdavi experiments). W_K is scaled by sqrt(d) to undo the model's 1/sqrt(d).
    Returns one model's weights by name, float64, in the engine's shapes (check them with
    :func:`memcap.train.mha_forward_stacked`).
    """
    contexts = check_shape("contexts", real_tensor("contexts", contexts), (None, None), "(n, d)")
    n, d = contexts.shape
    C = positive_int("classes", classes)
    queries = check_shape("queries", real_tensor("queries", queries, device=contexts.device), (None, d), "(T, d)")
    labels = _targets(labels, queries.shape[0], C, contexts.device, name="labels")
    pos = sinusoidal_positions(n + 1, d, dtype=DTYPE, device=contexts.device)
    E, e = contexts.to(DTYPE) + pos[1:], queries.to(DTYPE) + pos[0]
    built = mahdavi.theorem1_construction(E, e, labels.to(DTYPE), heads=heads, head_dim=head_dim, value_dim=1,
                                          generator=generator)
    p = built.params
    c = torch.arange(C, dtype=DTYPE, device=E.device)
    return {"W_K": p.W_K * math.sqrt(d), "W_Q": p.W_Q, "W_V": p.W_V, "W_O": p.W_O,
            "W_D": p.W_D[:, :1] * c[None, :], "W_E": torch.eye(d, dtype=DTYPE, device=E.device),
            "b_E": torch.zeros(d, dtype=DTYPE, device=E.device), "b_D": -c ** 2 / 2}


def classifier_attention(task: MemorizationTask, weights: Mapping) -> torch.Tensor:
    """The attention weights theta (T, H, n) of Mahdavi et al.'s classifier on the examples of ``task``.

    ``task``: the training set (:func:`memcap.data.mahdavi_task`), a context (n, d) or (T, n, d) and
    queries (T, d); ``weights``: the weights :func:`memcap.synthesis.mahdavi_classifier` returns, of which
    ``W_K`` and ``W_Q`` (H, d, d_h) are used. The model sees each token with its sinusoidal position added
    (the query at position 0, the context tokens at 1, ..., n; the embedding is the identity) and scales
    its keys by 1/sqrt(d), as the training engine's forward pass does. Computed in float64 on the task's
    device.
    """
    if not isinstance(task, MemorizationTask):
        raise TypeError(f"task must be a memcap.data.MemorizationTask, got {type(task).__name__}")
    if not isinstance(weights, Mapping):
        raise TypeError(f"weights must be a dict of tensors by name, got {type(weights).__name__}")
    missing = [k for k in ("W_K", "W_Q") if k not in weights]
    if missing:
        raise ValueError(f"weights has no {' and no '.join(missing)}: give the dict mahdavi_classifier returns")
    n, d = task.contexts.shape[-2:]
    dev = task.contexts.device
    W_K = check_shape("weights['W_K']", real_tensor("weights['W_K']", weights["W_K"], dtype=torch.float64,
                                                    device=dev), (None, d, None), "(H, d, d_h)")
    W_Q = check_shape("weights['W_Q']", real_tensor("weights['W_Q']", weights["W_Q"], dtype=torch.float64,
                                                    device=dev), tuple(W_K.shape), "(H, d, d_h), as W_K's")
    pos = sinusoidal_positions(n + 1, d, dtype=torch.float64, device=dev)
    contexts, queries = task.contexts.to(torch.float64) + pos[1:], task.queries.to(torch.float64) + pos[0]
    return mha_attention(W_K / d ** 0.5, W_Q, contexts, queries)                    # (T, H, n)


def label_aware_head(context: torch.Tensor, queries: torch.Tensor, labels: torch.Tensor) -> MHAParams:
    """The book's Proposition ``book-prop-label-aware``: one head (d_h = d_v = d_out = 1) on a shared context
    of n = 2 tokens that fits T <= d arbitrary real labels of linearly independent queries exactly.

    rank(Z) <= H(n - 1) + 1 = 2 for every choice of weights (Mahdavi et al., Proposition 2), yet the
    weights, chosen after the labels, fit all T: the key maps the context to scores (s, 0) with
    s = u^T e^(t) free per example, so the head returns x_2 + sigma(s_t)(x_1 - x_2), and the value reads
    a sigma(s_t) + b; s_t = logit((y_t - b) / a) with a, b putting every label strictly inside (b, a + b).
    """
    context = check_shape("context", real_tensor("context", context), (2, None), "a shared context of n = 2 "
                          "tokens, (2, d)")
    d = context.shape[1]
    queries = check_shape("queries", real_tensor("queries", queries, device=context.device), (None, d), "(T, d)")
    T = queries.shape[0]
    labels = check_shape("labels", real_tensor("labels", labels, device=context.device), (T,), "(T,)")
    E, e, y = context.to(DTYPE), queries.to(DTYPE), labels.to(DTYPE)
    if linalg.rank(E) < 2:
        raise ValueError("Assumption 2 fails: the two context tokens are linearly dependent")
    if T > d or linalg.rank(e) < T:
        raise ValueError(f"the queries must be linearly independent (T = {T} <= d = {d}) to choose every "
                         f"score u^T e^(t) freely")
    a = 2 * float(y.max() - y.min()) + 1.0
    b = float(y.min()) - a / 4
    p = (y - b) / a                                                        # in [1/4, 3/4]
    scores = torch.log(p / (1 - p))
    u = torch.linalg.lstsq(e, scores[:, None]).solution[:, 0]             # e u = scores (T <= d, full rank)
    like = {"dtype": DTYPE, "device": E.device}
    k = torch.linalg.lstsq(E, torch.tensor([[1.0], [0.0]], **like)).solution[:, 0]   # E k = (1, 0)
    v = torch.linalg.lstsq(E, torch.tensor([[a + b], [b]], **like)).solution[:, 0]   # v^T x_1 = a + b
    return MHAParams(W_K=k.reshape(1, d, 1), W_Q=u.reshape(1, d, 1), W_V=v.reshape(1, d, 1),
                     W_O=torch.eye(1, d, **like), W_D=torch.eye(d, 1, **like))


# ---------------------------------------------------------------------------------------------------
# the open step of Dana et al.'s Lemma 2, tested


def _certified_rank(matrix: torch.Tensor, expected: int) -> tuple[int, float]:
    """(numerical rank, sigma_expected / sigma_1) of ``matrix`` (margin 1 when expected = 0)."""
    sv = torch.linalg.svdvals(matrix)
    top = float(sv[0]) if sv.numel() else 0.0
    tol = max(matrix.shape) * torch.finfo(matrix.dtype).eps * top
    rank = int((sv > tol).sum())
    margin = 1.0 if expected == 0 else (float(sv[expected - 1]) / top if top > 0 and expected <= sv.numel()
                                        else 0.0)
    return rank, margin


def feature_rank(params: AoTParams, tokens: torch.Tensor) -> dict:
    """The rank that Dana et al.'s Theorem 1 needs, on one AoT and one set of sequences.

    Returns ``T``, ``L`` (distinct last tokens), ``n`` (distinct tokens used), ``rank_F``, the numerical rank
    of the features F(t) = [x_S; W_V^h A^h] (:func:`memcap.construct.dana.skip_feature_matrix`),
    ``expected_F`` = min(T, H d_h + min(d, L)), the count (for all N^S sequences, the rank the conjecture
    ``book-conj-feature-rank`` asks for), ``kappa_F`` = min(T, min(d, L) + H min(d_h, n + S - 2)), a rank
    that no weights exceed (the book's Proposition ``book-prop-rank-limits``), and ``margin_F``, the ratio
    sigma_r / sigma_1 at r = min(expected_F, kappa_F): above :data:`RANK_MARGIN` it certifies rank >= r in
    floating point.
    """
    if not isinstance(params, AoTParams):
        raise TypeError(f"params must be AoTParams, got {type(params).__name__}")
    tokens = _tokens(tokens, params.vocab, params.device)
    (T, S), L = tokens.shape, last_token_count(tokens)
    n = int(torch.unique(tokens).numel())
    H, d_h, d = params.heads, params.head_dim, params.dim
    expected = min(T, H * d_h + min(d, L))
    kappa = min(T, min(d, L) + H * min(d_h, n + S - 2))
    rank, margin = _certified_rank(dana.skip_feature_matrix(params, tokens), min(expected, kappa))
    return {"T": T, "L": L, "n": n, "rank_F": rank, "expected_F": expected, "kappa_F": kappa,
            "margin_F": margin}


TABLES = ("all", "random", "one_last_token", "repeated_token")
"""Sets of sequences the survey draws: all N^S; a random subset; sequences that all end in one token
(L = 1); and constant sequences t = (a, ..., a) with a random extra set (positions only tell them apart)."""

_COUNTED_TABLES = ("random", "one_last_token", "repeated_token")
"""The tables drawn at random, whose grid points need ``count``, how many sequences to draw."""


_DRAWN_FROM_ALL = ("random", "repeated_token")
"""The tables that draw ``count`` distinct sequences of all N^S (so count <= N^S); 'one_last_token' draws
at most N^(S-1), as many as there are."""


def _needs_count(point: dict) -> str | None:
    table = point.get("table", "all")
    return f"the table kind {table!r}" if table in _COUNTED_TABLES else None


_GRID_POINT = {
    "vocab": Key(positive_int, "the vocabulary size N, a positive int"),
    "seq_len": Key(positive_int, "the sequence length S, a positive int"),
    "dim": Key(positive_int, "the embedding dimension d, a positive int"),
    "heads": Key(positive_int, "the number of heads H, a positive int"),
    "head_dim": Key(positive_int, "the head dimension d_h, a positive int"),
    "table": Key(one_of(TABLES), f"which sequences, one of {TABLES} ('all' when left out)", needed=False),
    "count": Key(positive_int, "a count of sequences, a positive int", needed=_needs_count),
}
"""The keys of a grid point of :func:`feature_rank_survey`."""


def _table(kind: str, vocab: int, seq_len: int, count: int | None, gen: torch.Generator) -> torch.Tensor:
    if kind == "all":
        return association_task(vocab, seq_len, generator=gen, device="cpu")[0]
    if kind == "random":
        return association_task(vocab, seq_len, count=count, generator=gen, device="cpu")[0]
    if kind == "one_last_token":
        head = association_task(vocab, seq_len - 1, count=min(count, vocab ** (seq_len - 1)), generator=gen,
                                device="cpu")[0] if seq_len > 1 else torch.zeros(1, 0, dtype=torch.long, device="cpu")
        return torch.cat([head, torch.zeros(head.shape[0], 1, dtype=torch.long, device="cpu")], dim=1)
    if kind == "repeated_token":
        constant = torch.arange(vocab, device="cpu")[:, None].expand(vocab, seq_len)
        rest = association_task(vocab, seq_len, count=count, generator=gen, device="cpu")[0]
        both = torch.unique(torch.cat([constant, rest]), dim=0)
        return both
    raise ValueError(f"table must be one of {TABLES}, got {kind!r}")


def feature_rank_survey(grid: Iterable[Mapping], *, seed: int = 0, draws: int = 1) -> list[dict]:
    """:func:`feature_rank` at generic (Gaussian, :func:`memcap.models.init_aot`) weights on every point of
    ``grid``: dicts with the positive ints ``vocab``, ``seq_len``, ``dim``, ``heads``, ``head_dim``, and
    optionally ``table`` (one of :data:`TABLES`, 'all' when left out) and ``count`` (how many sequences to
    draw: needed by the tables 'random', 'one_last_token' and 'repeated_token', unused by 'all'; at most
    N^S for 'random' and 'repeated_token', while 'one_last_token' draws min(count, N^(S-1)), all there
    are). A point with a missing, unknown or mistyped key, or a count above N^S, is refused naming it
    (``grid[2]['count']``) before any point is computed. Of ``draws`` independent draws of the
    weights the best-conditioned is kept (largest ``margin_F``): the rank statement asks for *some*
    weights, and any draw is a witness. Returns one record per point (the grid point's fields, the ranks,
    the margins and ``draws``); every point has its own generator, seeded from ``seed`` and its index, so
    a record can be recomputed alone.
    """
    draws = positive_int("draws", draws)
    seed = seed_int("seed", seed)
    grid = listed("grid", grid, "grid points (dicts)")
    for i, point in enumerate(grid):        # all points first: a bad one is refused before any work
        checked = keyed(f"grid[{i}]", point, _GRID_POINT, "a grid point of the survey")
        table, total = checked.get("table", "all"), checked["vocab"] ** checked["seq_len"]
        if table in _DRAWN_FROM_ALL and checked["count"] > total:
            raise ValueError(f"grid[{i}]['count'] must be at most N^S = {total} distinct sequences for the table "
                             f"kind {table!r}, got {checked['count']}")
    out = []
    for i, point in enumerate(grid):
        N, S, d, H, d_h = (int(point[k]) for k in ("vocab", "seq_len", "dim", "heads", "head_dim"))
        gen = _resolve.seeded(10_000 * seed + i)
        tokens = _table(point.get("table", "all"), N, S, point.get("count"), gen)
        best = None
        for _ in range(draws):
            params = init_aot(N, S, d, H, d_h, generator=gen, dtype=DTYPE, device="cpu")
            record = feature_rank(params, tokens)
            if best is None or record["margin_F"] > best["margin_F"]:
                best = record
        out.append({**dict(point), **best, "draws": draws})
    return out


# ---------------------------------------------------------------------------------------------------
# trained models


def trained_aot_attention(spec: AoTSpec, params: Mapping[str, np.ndarray]) -> tuple[np.ndarray, float]:
    """Attention a (T, H, S) of a trained plain AoT on its own training set, and its accuracy there.

    ``params``: one model's weights as kept by :func:`memcap.train.train_models` (``keep_params=True``).
    The training set is redrawn as the engine draws it: :func:`memcap.data.association_task` with a CPU
    generator seeded with ``spec.data_seed`` (the accuracy, recomputed here, lets the caller check that
    the two agree). Computed where the weights are (arrays: the CPU; tensors must share one device).
    """
    if not isinstance(spec, AoTSpec):
        raise TypeError(f"spec must be an AoTSpec, got {type(spec).__name__}")
    if not isinstance(params, Mapping):
        raise TypeError(f"params must be a dict of one model's weights by name, got {type(params).__name__}")
    if spec.mlp_width or spec.shared_compression:
        raise ValueError("only the plain AoT of Eq. (2) is supported (mlp_width = 0, no shared compression)")
    names = ("token_embedding", "positional_embedding", "W_Q", "W_K", "W_V", "W_O", "W_U")
    missing = [k for k in names if k not in params]
    if missing:
        raise ValueError(f"params lacks the weights {missing}")
    N, S, d, H, d_h = spec.vocab, spec.seq_len, spec.dim, spec.heads, spec.head_dim
    shapes = {"token_embedding": ((N, d), "(N, d)"), "positional_embedding": ((S, d), "(S, d)"),
              "W_Q": ((H, d_h, d), "(H, d_h, d)"), "W_K": ((H, d_h, d), "(H, d_h, d)"),
              "W_V": ((H, d_h, d), "(H, d_h, d)"), "W_O": ((H, d, d_h), "(H, d, d_h)"), "W_U": ((N, d), "(N, d)")}
    first = params[names[0]]
    dev = first.device if isinstance(first, torch.Tensor) else torch.device("cpu")   # arrays: on the CPU
    weights = AoTParams(*(check_shape(f"params[{k!r}]", real_tensor(f"params[{k!r}]", params[k], dtype=DTYPE,
                                                                    device=dev), *shapes[k]) for k in names))
    tokens, targets = association_task(spec.vocab, spec.seq_len, count=spec.examples,
                                       generator=torch.Generator().manual_seed(spec.data_seed), device=dev)
    with torch.no_grad():
        attention = aot_attention(weights, tokens)
        accuracy = float((aot_forward(weights, tokens).argmax(1) == targets).double().mean())
    return attention.cpu().numpy(), accuracy


def engine_param_count(spec: MHASpec | AoTSpec) -> int:
    """Trainable weights of the model that :mod:`memcap.train` trains for ``spec`` (all of them, including
    embeddings, W_O and biases; the papers' own counts leave some out, see :mod:`memcap.bounds`)."""
    if isinstance(spec, MHASpec):
        H, d, d_h, d_v, out = spec.heads, spec.dim, spec.d_h, spec.value_dim, spec.output_width
        core = 2 * H * d * d_h + H * d * d_v + H * d_v * d + d * out
        return core + (d * d + d + out if spec.embedding else 0)
    if isinstance(spec, AoTSpec):
        N, S, d, H, k, w = spec.vocab, spec.seq_len, spec.dim, spec.heads, spec.head_dim, spec.mlp_width
        heads = H * k * d + (k * d + 3 * H * k * k if spec.shared_compression else 3 * H * k * d)
        return N * d + S * d + heads + N * d + 2 * w * d
    raise TypeError(f"spec must be an MHASpec or AoTSpec, got {type(spec).__name__}")


def readout_weights(spec: MHASpec) -> int:
    """Weights of the readout of the MHA model that :mod:`memcap.train` trains for ``spec`` (W_D, and its
    bias b_D with the embedding): those that grow with the output width C (classes, or d_out), counted as
    C times what one more output adds to :func:`engine_param_count`."""
    if not isinstance(spec, MHASpec):
        raise TypeError(f"spec must be an MHASpec (the AoTs' unembedding is their vocabulary), got "
                        f"{type(spec).__name__}")
    field = "classes" if spec.classes is not None else "out_dim"
    width = spec.output_width
    return (engine_param_count(replace(spec, **{field: width + 1})) - engine_param_count(spec)) * width


def certified_fit(mse: float, examples: int, tol: float) -> bool | None:
    """Whether a regression model with mean squared error ``mse`` (one output) on ``examples`` examples
    fits every label within ``tol``: True if sqrt(T mse) <= tol (then every error is), False if
    sqrt(mse) > tol (then the largest is), None in between (the mean alone cannot tell)."""
    T = positive_int("examples", examples)
    tol = positive_real("tol", tol)
    mse = finite_real("mse", mse)
    if mse < 0:
        raise ValueError(f"mse must be a finite non-negative number, got {mse!r}")
    if math.sqrt(T * mse) <= tol:
        return True
    if math.sqrt(mse) > tol:
        return False
    return None
