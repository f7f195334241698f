"""Proofs as programs for Dana, Pydi and Chevaleyre (2024), *Memorization in Attention-only Transformers*.

Each public function builds an object whose existence a statement of the paper asserts, in float64,
and refuses inputs that break the statement's hypotheses with an error naming the hypothesis.

* Sequence encoders (Definition 1): ``SequenceEncoder`` (W, E), logits W E(t); their divergence
  :func:`expected_kl`; the generic Adam optimizer :func:`minimize_kl` behind :func:`best_sequence_encoder`
  (Proposition 1, Lemma 1) and :func:`fit_aot` (a trained AoT, for comparison).
* Proposition 2: :func:`exact_sequence_encoder` (d = N - 1 reaches divergence 0 under Assumption 2).
* Proposition 3: :func:`circle_sequence_encoder` (W_j on the unit circle, E(t) = lambda W_{g(t)}).
* Lemmas 2-3: :func:`lemma2_params` (the proof's rank-1 attention with distinct scales),
  :func:`head_input_matrix` (A, the attention before output) and :func:`skip_feature_matrix` (F, the
  columns [x_S; W_V^h A^h] that the output matrix acts on).
* Theorem 1 and Corollary 1: :func:`most_likely_sequences` (T_eps), :func:`theorem1_aot`,
  :func:`corollary1_aot`; its excess divergence is :func:`memcap.bounds.thm1_excess_divergence`.
* Theorem 2: :func:`lookup_sequence_encoder`, :func:`gram_deviation`, :func:`identity_hadamard_unembedding`;
  the bound with a measured constant is :func:`memcap.bounds.thm2_kl_term_with_constant`.
* Assumptions: :func:`association_targets` (Assumption 1), :func:`check_full_support` (Assumption 2).

Conventions: token ids are 0-based; the unembedding W is stored as an (N, d) matrix whose row j is the
paper's column W_j, so logits are ``E @ W.T``; sequences are rows ``tokens`` (T, S). Inputs follow
``memcap._checks`` (tensors, NumPy arrays or nested lists; finite; no half precision); results live on
the device of the tensor inputs (:func:`lemma2_params` and :func:`identity_hadamard_unembedding`, which
have none, take ``device``, None: :func:`memcap.device.pick_device`); ``generator=None`` means a fresh
generator seeded with 0; the constructions run their CPU work on one thread, so two identical calls give
bit-identical weights.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping

import torch

from memcap import _resolve, bounds
from memcap._checks import (
    check_allocation,
    check_shape,
    check_tensor,
    finite_real,
    float_input,
    float_tensor,
    id_tensor,
    ids_in_range,
    positive_int,
    positive_real,
    real_tensor,
    same_device_dtype,
)
from memcap.data import entropy as row_entropy
from memcap.data import kl_divergence
from memcap.device import exact_dtype
from memcap.models import AoTParams, aot_forward, aot_head_inputs, init_aot

__all__ = [
    "DTYPE", "check_full_support", "association_targets", "SequenceEncoder", "expected_kl", "KLFit", "minimize_kl",
    "best_sequence_encoder", "fit_aot", "exact_sequence_encoder", "circle_sequence_encoder", "lemma2_params",
    "head_input_matrix", "skip_feature_matrix", "Theorem1AoT", "most_likely_sequences", "theorem1_aot",
    "corollary1_aot", "gram_deviation", "identity_hadamard_unembedding", "lookup_sequence_encoder",
]

DTYPE = torch.float64
"""All constructions run in float64 (:func:`memcap.device.exact_dtype`; float32 only on Apple's MPS, which
lacks float64): their claims are equalities checked to ~1e-8."""

_DANA = "Dana et al.'s"
"""How refusals name the paper whose assumptions failed (Mahdavi et al. number theirs too)."""


# ---------------------------------------------------------------------------------------------------
# argument checks


def _probs(name: str, probs: object, device: torch.device | None = None) -> torch.Tensor:
    """A (T, N) exact-dtype tensor of probability rows, validated by :func:`memcap.data.entropy` in the dtype
    they come in (a float32 softmax misses 1 by float32's rounding, not float64's). Rows cast to another dtype
    are renormalized there, so that they sum to 1 to its rounding too (and pass this check again)."""
    probs = float_tensor(name, probs, device=device)
    if probs.ndim != 2:
        raise ValueError(f"{name} must have shape (T, N), got {tuple(probs.shape)}")
    check_shape(name, probs, (None, None), "(T, N)")
    row_entropy(probs)  # raises unless every row is a probability vector
    exact = probs.to(exact_dtype(probs.device))
    return exact if exact.dtype == probs.dtype else exact / exact.sum(dim=1, keepdim=True)


def _prior(prior: object, count: int, device: torch.device) -> torch.Tensor:
    """The prior pi(t_{1:S}) over the T rows: uniform when None, else a validated (T,) probability vector."""
    dtype = exact_dtype(device)
    if prior is None:
        return torch.full((count,), 1.0 / count, dtype=dtype, device=device)
    prior = real_tensor("prior", prior, device=device)
    check_shape("prior", prior, (count,), "(T,)")
    tol = max(1e-9, 10 * count * torch.finfo(prior.dtype).eps)   # the rounding of the dtype it comes in
    cast = prior.dtype != dtype
    prior = prior.to(dtype)
    if bool((prior < 0).any()):
        raise ValueError(f"prior must be a probability vector over the T sequences (entries >= 0, sum 1), "
                         f"entry {int((prior < 0).nonzero()[0])} is negative")
    if abs(float(prior.sum()) - 1) > tol:
        raise ValueError(f"prior must be a probability vector over the T sequences (entries >= 0, sum 1), its "
                         f"entries sum to {float(prior.sum())!r}, off by more than {tol:.3g}")
    return prior / prior.sum() if cast else prior   # renormalized where cast, like the rows of _probs


def _tokens(tokens: object, vocab: int | None = None, device: torch.device | None = None) -> torch.Tensor:
    """Validate (T, S) integer token ids, pairwise distinct rows, ids in [0, N) when N is given (array-likes
    are placed on ``device``, a tensor must already be there)."""
    tokens = id_tensor("tokens", tokens, device=device)
    if tokens.ndim != 2 or min(tokens.shape) == 0:
        raise ValueError(f"tokens must have shape (T, S) with T, S >= 1, got {tuple(tokens.shape)}")
    if vocab is not None and (int(tokens.min()) < 0 or int(tokens.max()) >= vocab):
        raise ValueError(f"tokens must be ids in [0, N) = [0, {vocab})")
    ids_in_range("tokens", tokens)
    if torch.unique(tokens, dim=0).shape[0] != tokens.shape[0]:
        raise ValueError("tokens must hold pairwise distinct sequences t_{1:S} (a sequence cannot have two rows)")
    return tokens.to(torch.int64)


def check_full_support(probs: torch.Tensor) -> None:
    """Raise ``ValueError`` unless every conditional pi(. | t_{1:S}) has full support (Assumption 2).

    ``probs``: (T, N) rows pi(. | t). Returns None when the assumption holds.
    """
    probs = _probs("probs", probs)
    bad = (probs <= 0).any(dim=1)
    if bool(bad.any()):
        row = int(bad.nonzero()[0])
        token = int((probs[row] <= 0).nonzero()[0])
        raise ValueError(f"{_DANA} Assumption 2 fails: pi({token} | sequence {row}) = 0, the conditionals need "
                         f"full support")


def association_targets(probs: torch.Tensor) -> torch.Tensor:
    """The look-up table g with pi(g(t) | t) = 1 (Assumption 1), else ``ValueError`` naming a bad row.

    ``probs``: (T, N). Returns targets (T,) int64.
    """
    probs = _probs("probs", probs)
    top, arg = probs.max(dim=1)
    bad = (1 - top).abs() > 1e-12
    if bool(bad.any()):
        row = int(bad.nonzero()[0])
        raise ValueError(f"{_DANA} Assumption 1 fails: sequence {row} has no next token of probability 1 "
                         f"(its largest probability is {float(top[row]):.4g})")
    return arg


# ---------------------------------------------------------------------------------------------------
# sequence encoders (Definition 1) and their divergence


@dataclass(frozen=True)
class SequenceEncoder:
    """A sequence encoder f_{W,E}(t) = W E(t) of L(N, S, d) (Dana et al., Definition 1).

    ``unembedding`` W: (N, d), row j is the unembedding of token j; ``embedding`` E: (T, d), row i is
    the free embedding E(t) of the i-th sequence.
    """

    unembedding: torch.Tensor
    embedding: torch.Tensor

    def __post_init__(self) -> None:
        float_input("unembedding", check_tensor("unembedding", self.unembedding))
        float_input("embedding", check_tensor("embedding", self.embedding), self.unembedding)   # one device
        same_device_dtype(unembedding=self.unembedding, embedding=self.embedding)
        if self.unembedding.ndim != 2 or min(self.unembedding.shape) == 0:
            raise ValueError(f"unembedding must have shape (N, d), got {tuple(self.unembedding.shape)}")
        check_shape("embedding", self.embedding, (None, self.unembedding.shape[1]), "(T, d)")

    @property
    def vocab(self) -> int:
        """N, the number of tokens."""
        return self.unembedding.shape[0]

    @property
    def dim(self) -> int:
        """d, the embedding dimension."""
        return self.unembedding.shape[1]

    @property
    def logits(self) -> torch.Tensor:
        """f(t) = W E(t) for every sequence: (T, N)."""
        return self.embedding @ self.unembedding.T


def expected_kl(probs: torch.Tensor, logits: torch.Tensor, prior: torch.Tensor | None = None) -> float:
    """d_KL(pi, f) = E_{t ~ prior} KL(pi(. | t) || softmax f(t)) in nats (Dana et al., Section 2).

    ``probs``: (T, N); ``logits``: (T, N); ``prior``: (T,) or None (uniform over the T rows).
    """
    probs = _probs("probs", probs)
    logits = float_tensor("logits", logits, device=probs.device)
    check_shape("logits", logits, tuple(probs.shape), "(T, N)")
    weights = _prior(prior, probs.shape[0], probs.device)
    return float(weights @ kl_divergence(probs, logits.to(probs.dtype)))


@dataclass(frozen=True)
class KLFit:
    """Result of :func:`minimize_kl`: the best parameters seen, their divergence and the history."""

    params: dict[str, torch.Tensor]
    kl: float
    history: torch.Tensor


def minimize_kl(logits_fn: Callable[[Mapping[str, torch.Tensor]], torch.Tensor],
                init: Mapping[str, torch.Tensor], probs: torch.Tensor, *, prior: torch.Tensor | None = None,
                steps: int = 1000, lr: float = 0.05) -> KLFit:
    """Minimize d_KL(pi, f) over the parameters of any model f with Adam (deterministic given ``init``).

    ``logits_fn`` maps a dict of tensors (same keys as ``init``) to logits (T, N); ``probs``: (T, N);
    ``prior``: (T,) or None (uniform). Returns the parameters with the smallest divergence seen, that
    divergence, and the divergence after every step (``history``: (steps,)). Used both for the best
    sequence encoder (Proposition 1, Lemma 1) and for a trained AoT.
    """
    probs = _probs("probs", probs)
    steps = positive_int("steps", steps)
    lr = positive_real("lr", lr)
    if not callable(logits_fn):
        raise TypeError("logits_fn must be callable: params dict -> logits (T, N)")
    if not init:
        raise ValueError("init must hold at least one parameter tensor")
    weights = _prior(prior, probs.shape[0], probs.device)
    params = {k: check_shape(f"init[{k!r}]", float_input(f"init[{k!r}]", check_tensor(f"init[{k!r}]", v), probs),
                             (None,) * v.ndim).detach().to(probs.dtype).clone().requires_grad_(True)
              for k, v in init.items()}
    optimizer = torch.optim.Adam(params.values(), lr=lr)
    history = []
    best, best_kl = {k: v.detach().clone() for k, v in params.items()}, math.inf
    for _ in range(steps):
        optimizer.zero_grad()
        logits = logits_fn(params)
        check_shape("logits_fn(params)", logits, tuple(probs.shape), "(T, N)")
        log_q = torch.log_softmax(logits, dim=1)
        loss = weights @ (torch.special.xlogy(probs, probs) - torch.where(probs > 0, probs * log_q, 0.0)).sum(1)
        value = float(loss.detach())
        history.append(value)
        if value < best_kl:
            best_kl, best = value, {k: v.detach().clone() for k, v in params.items()}
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        final = expected_kl(probs, logits_fn(best), weights)
    return KLFit(params=best, kl=final, history=torch.tensor(history, dtype=probs.dtype, device=probs.device))


def _centered_log_probs(probs: torch.Tensor) -> torch.Tensor:
    """log pi(. | t) minus its row mean, with zero probabilities floored at 1e-30: (T, N)."""
    log_p = torch.log(probs.clamp_min(1e-30))
    return log_p - log_p.mean(dim=1, keepdim=True)


def best_sequence_encoder(probs: torch.Tensor, dim: int, *, prior: torch.Tensor | None = None,
                          steps: int = 1500, lr: float = 0.05) -> tuple[SequenceEncoder, KLFit]:
    """Approximate the best sequence encoder of L(N, S, d) (Lemma 1's minimizer) by optimization.

    Starts from the rank-d truncated SVD of the centered log-probabilities (a deterministic start that is
    exact when d >= N - 1) and refines it with :func:`minimize_kl`. ``probs``: (T, N). Returns the
    encoder (W (N, d), E (T, d)) and the fit.
    """
    probs = _probs("probs", probs)
    d = positive_int("dim", dim)
    U, s, Vh = torch.linalg.svd(_centered_log_probs(probs), full_matrices=False)
    k = min(d, s.shape[0])
    E0 = torch.zeros(probs.shape[0], d, dtype=probs.dtype, device=probs.device)
    W0 = torch.zeros(probs.shape[1], d, dtype=probs.dtype, device=probs.device)
    E0[:, :k] = U[:, :k] * s[:k].sqrt()
    W0[:, :k] = Vh[:k].T * s[:k].sqrt()
    fit = minimize_kl(lambda p: p["E"] @ p["W"].T, {"W": W0, "E": E0}, probs, prior=prior, steps=steps, lr=lr)
    return SequenceEncoder(fit.params["W"], fit.params["E"]), fit


def fit_aot(tokens: torch.Tensor, probs: torch.Tensor, *, dim: int, heads: int, head_dim: int,
            generator: torch.Generator | None = None, prior: torch.Tensor | None = None, steps: int = 1500,
            lr: float = 0.02) -> tuple[AoTParams, KLFit]:
    """Train a one-layer AoT on the distribution task by minimizing d_KL(pi, T) with :func:`minimize_kl`.

    ``tokens``: (T, S) the sequences whose conditionals are the rows of ``probs`` (T, N). The start is
    :func:`memcap.models.init_aot` drawn with ``generator``. Returns the trained weights and the fit.
    """
    probs = _probs("probs", probs)
    tokens = _tokens(tokens, probs.shape[1], probs.device)
    check_shape("tokens", tokens, (probs.shape[0], None), "(T, S)")
    start = init_aot(probs.shape[1], tokens.shape[1], dim, heads, head_dim, generator=_resolve.generator(generator),
                     dtype=probs.dtype, device=probs.device)
    names = ("token_embedding", "positional_embedding", "W_Q", "W_K", "W_V", "W_O", "W_U")
    fit = minimize_kl(lambda p: aot_forward(AoTParams(**p), tokens), {n: getattr(start, n) for n in names},
                      probs, prior=prior, steps=steps, lr=lr)
    return AoTParams(**fit.params), fit


# ---------------------------------------------------------------------------------------------------
# Propositions 2 and 3


def exact_sequence_encoder(probs: torch.Tensor) -> SequenceEncoder:
    """Proposition 2: a sequence encoder of dimension d = N - 1 with divergence exactly 0.

    Under Assumption 2 (full support) the logits log pi(. | t) - log pi(N | t) have a zero last entry,
    so they factor through R^{N-1}: W = [I_{N-1}; 0] (N, N-1), E(t) = the first N-1 entries.
    ``probs``: (T, N) with N >= 2.
    """
    check_full_support(probs)
    probs = _probs("probs", probs)
    N = probs.shape[1]
    if N < 2:
        raise ValueError("Proposition 2 needs N >= 2 tokens (d = N - 1 >= 1)")
    log_p = torch.log(probs)
    embedding = (log_p - log_p[:, -1:])[:, :-1]                      # (T, N-1)
    unembedding = torch.eye(N, N - 1, dtype=probs.dtype, device=probs.device)
    return SequenceEncoder(unembedding, embedding)


def circle_sequence_encoder(targets: torch.Tensor, vocab: int, *, scale: float, dim: int = 2) -> SequenceEncoder:
    """Proposition 3: the circle encoder W_j = (cos 2 pi j/N, sin 2 pi j/N, 0, ...), E(t) = lambda W_{g(t)}.

    ``targets``: (T,) the look-up table g(t) of the association task (Assumption 1); ``scale`` lambda > 0.
    Its divergence log(1 + sum_{j != g} exp(-lambda (1 - cos(2 pi (j - g)/N)))) tends to 0 as lambda grows.
    """
    N = positive_int("vocab", vocab)
    d = positive_int("dim", dim)
    if d < 2:
        raise ValueError(f"Proposition 3 needs d >= 2 (the circle lives in a plane), got dim = {d}")
    lam = positive_real("scale", scale)
    targets = id_tensor("targets", targets)
    if targets.ndim != 1:
        raise ValueError(f"targets must be a (T,) integer tensor of next tokens, got {tuple(targets.shape)}")
    check_shape("targets", targets, (None,), "(T,)")
    check_allocation("the unembedding (N, d) and the embeddings (T, d)", (N + len(targets)) * d, targets.device,
                     vocab=N, dim=d)
    if int(targets.min()) < 0 or int(targets.max()) >= N:
        raise ValueError(f"targets must be ids in [0, N) = [0, {N})")
    dtype = exact_dtype(targets.device)
    angle = 2 * math.pi * torch.arange(N, dtype=dtype, device=targets.device) / N
    unembedding = torch.zeros(N, d, dtype=dtype, device=targets.device)
    unembedding[:, 0], unembedding[:, 1] = torch.cos(angle), torch.sin(angle)
    return SequenceEncoder(unembedding, lam * unembedding[targets.long()])


# ---------------------------------------------------------------------------------------------------
# Lemma 2: the rank of the attention before output


def _check_head_dim(dim: int, head_dim: int) -> None:
    if head_dim > dim:
        raise ValueError(f"d_h > d: head_dim = {head_dim} exceeds dim = {dim}; Dana et al. assume d_h <= d "
                         f"(a larger head only adds parameters, the products W_O W_V, W_Q^T W_K have rank <= d)")


def _check_seq_len(seq_len: int) -> None:
    if seq_len < 2:
        raise ValueError(f"S >= 2 is needed ({_DANA} Lemma 2 and Theorem 1), got seq_len = {seq_len}: with S = 1 each "
                         f"head attends to its one position, so the heads only repeat the skip connection x_1(t) "
                         f"and the features have rank <= min(d, L) for every choice of weights")


def lemma2_params(vocab: int, seq_len: int, dim: int, heads: int, head_dim: int, *,
                  generator: torch.Generator | None = None, scales: torch.Tensor | None = None,
                  device: torch.device | str | None = None) -> AoTParams:
    """The attention of Lemma 2's proof: W_QK^h = w_h e_1 e_1^T (rank 1) with distinct scales w_h > 0.

    Embeddings have i.i.d. coordinates (token coordinates in (1, 2), positions in (0, 1)), so every first
    coordinate is positive and generic (Lemma 3); W_V is Gaussian; W_O and W_U are zero (they play no role
    in the rank). ``scales``: (H,) distinct positive w_h, default 1, 2, ..., H. Returns AoTParams (float64)
    on ``device`` (None: the device of ``scales`` when it is a tensor, else :func:`memcap.device.pick_device`;
    a ``scales`` tensor elsewhere is refused; drawn on the generator's device, then moved). Refuses
    d_h > d and S = 1 (see :func:`theorem1_aot`).
    """
    N, S, d = positive_int("vocab", vocab), positive_int("seq_len", seq_len), positive_int("dim", dim)
    H, d_h = positive_int("heads", heads), positive_int("head_dim", head_dim)
    _check_head_dim(d, d_h)
    _check_seq_len(S)
    gen, dev = _resolve.generator(generator), _resolve.device(device, like=scales)
    check_allocation("the embeddings and weights", (2 * N + S) * d + 4 * H * d_h * d, dev,
                     vocab=N, seq_len=S, dim=d, heads=H, head_dim=d_h)
    scales = torch.arange(1, H + 1, dtype=torch.float64, device="cpu") if scales is None else \
        real_tensor("scales", scales, device=dev)   # the default is made on the CPU (MPS has no float64), moved
    dtype = exact_dtype(dev)
    check_shape("scales", scales, (H,), "(H,)")
    scales = scales.to(device=dev, dtype=dtype)
    if bool((scales <= 0).any()) or torch.unique(scales).numel() != H:
        raise ValueError("scales must be H distinct positive numbers w_h (Lemma 2 uses distinct exponents)")
    token_embedding = 1 + _resolve.rand((N, d), gen, dtype, dev)
    positional_embedding = _resolve.rand((S, d), gen, dtype, dev)
    W_Q = torch.zeros(H, d_h, d, dtype=dtype, device=dev)
    W_Q[:, 0, 0] = scales.sqrt()
    W_V = _resolve.randn((H, d_h, d), gen, dtype, dev) / math.sqrt(d)
    return AoTParams(token_embedding, positional_embedding, W_Q, W_Q.clone(), W_V,
                     torch.zeros(H, d, d_h, dtype=dtype, device=dev), torch.zeros(N, d, dtype=dtype, device=dev))


def head_input_matrix(params: AoTParams, tokens: torch.Tensor) -> torch.Tensor:
    """The matrix A of Lemma 2: column t is A(t) = [A^1(t); ...; A^H(t)] in R^{Hd}. Returns (Hd, T)."""
    if not isinstance(params, AoTParams):
        raise TypeError(f"params must be AoTParams, got {type(params).__name__}")
    A = aot_head_inputs(params, _tokens(tokens, params.vocab, params.device))   # (T, H, d)
    return A.reshape(A.shape[0], -1).T


def skip_feature_matrix(params: AoTParams, tokens: torch.Tensor, *,
                        fake_head_scale: float | None = None) -> torch.Tensor:
    """F of Theorem 1's proof: column t is [x_S(t); W_V^1 A^1(t); ...; W_V^H A^H(t)] in R^{d + H d_h}.

    The output map [I_d, W_O^1, ..., W_O^H] applied to F(t) is the sequence embedding E(t). With
    ``fake_head_scale`` lambda, the skip block x_S(t) is replaced by the "fake head"
    sum_s softmax_s(lambda x_S[0] x_s[0]) x_s of the paper's proof (it tends to x_S(t) when position S
    has the largest first coordinate, as in :func:`theorem1_aot`). Returns (d + H d_h, T).
    """
    if not isinstance(params, AoTParams):
        raise TypeError(f"params must be AoTParams, got {type(params).__name__}")
    tokens = _tokens(tokens, params.vocab, params.device)
    A = aot_head_inputs(params, tokens)                                   # (T, H, d)
    values = torch.einsum("hkd,thd->thk", params.W_V, A).reshape(A.shape[0], -1)   # (T, H*d_h)
    x = params.token_embedding[tokens] + params.positional_embedding      # (T, S, d)
    if fake_head_scale is None:
        skip = x[:, -1, :]
    else:
        lam = positive_real("fake_head_scale", fake_head_scale)
        weights = torch.softmax(lam * x[:, -1:, 0] * x[:, :, 0], dim=1)    # (T, S)
        skip = torch.einsum("ts,tsd->td", weights, x)
    return torch.cat([skip, values], dim=1).T


# ---------------------------------------------------------------------------------------------------
# Theorem 1 and Corollary 1


@dataclass(frozen=True)
class Theorem1AoT:
    """An AoT built by Theorem 1's proof, with the quantities its error bound uses.

    ``params``: the AoT; ``kept``: (T_eps,) indices of the sequences solved exactly (the most likely ones);
    ``features``: F (d + H d_h, T), see :func:`skip_feature_matrix`; ``constant``: C = sqrt(1 + max_t
    ||F_1^+ F(t)||^2) over the sequences not kept (1 when all are kept); ``paper_constant``:
    sqrt(1 + ||(P_1 V P_1^T)^{-1}||^2) from the SVD of F when T_eps = d + H d_h, else None.
    """

    params: AoTParams
    kept: torch.Tensor
    features: torch.Tensor
    constant: float
    paper_constant: float | None


def most_likely_sequences(prior: torch.Tensor, epsilon: float) -> torch.Tensor:
    """The T_eps most likely sequences: the fewest whose probabilities sum to at least 1 - eps.

    ``prior``: (T,) probabilities; ``epsilon`` in [0, 1). With eps = 0 these are the T0 sequences of
    positive probability. Returns their indices (T_eps,), most likely first.
    """
    prior = real_tensor("prior", prior)
    if prior.ndim != 1:
        raise ValueError(f"prior must have shape (T,), got {tuple(prior.shape)}")
    p = _prior(prior, prior.shape[0], prior.device)
    if finite_real("epsilon", epsilon) < 0 or epsilon >= 1:
        raise ValueError(f"epsilon must lie in [0, 1), got {epsilon!r}")
    order = torch.argsort(p, descending=True, stable=True)
    if epsilon == 0:
        return order[p[order] > 0]
    mass = torch.cumsum(p[order], 0)
    count = int((mass < 1 - epsilon - 1e-15).sum()) + 1
    return order[:min(count, p.shape[0])]


def _generic_aot(vocab: int, seq_len: int, dim: int, heads: int, head_dim: int,
                 generator: torch.Generator, device: torch.device) -> AoTParams:
    """Random (generic) embeddings and attention, laid out so that the fake head of the proof works:
    first coordinates of tokens in (1, 2), of positions 1..S-1 in (0, 1), of position S in (2.1, 3.1), so that
    x_S has the largest first coordinate of its sequence. W_O, W_U are placeholders (solved later). Drawn
    on the generator's device, placed on ``device``."""
    dtype = exact_dtype(device)
    p = init_aot(vocab, seq_len, dim, heads, head_dim, generator=generator, dtype=dtype, device=device)
    e, pos = p.token_embedding.clone(), p.positional_embedding.clone()
    e[:, 0] = 1 + _resolve.rand((vocab,), generator, dtype, device)
    pos[:, 0] = _resolve.rand((seq_len,), generator, dtype, device)
    pos[-1, 0] += 2.1
    return AoTParams(e, pos, p.W_Q, p.W_K, p.W_V, p.W_O, p.W_U)


def _singular(matrix: torch.Tensor) -> bool:
    """True when the square ``matrix`` is numerically singular (smallest/largest singular value <= 1e-12)."""
    sv = torch.linalg.svdvals(matrix)
    return float(sv[-1]) <= 1e-12 * max(float(sv[0]), 1e-300)


def theorem1_aot(encoder: SequenceEncoder, tokens: torch.Tensor, *, heads: int, head_dim: int,
                 generator: torch.Generator | None = None, prior: torch.Tensor | None = None,
                 epsilon: float = 0.0, fake_head_scale: float | None = None, draws: int = 4) -> Theorem1AoT:
    """Theorem 1's construction: an AoT whose logits reproduce the sequence encoder W E on the T_eps most
    likely sequences, with d = encoder.dim, H = ``heads``, d_h = ``head_dim``.

    ``tokens``: (T, S) distinct sequences, row i embedded by ``encoder.embedding[i]``; ``prior``: (T,) or
    None (uniform). The proof: draw generic embeddings and attention (Lemma 2), form the features F
    (:func:`skip_feature_matrix`), solve M F_1 = E_1 for the output map M = [M_0, M_1] on the kept sequences,
    and absorb M_0 into the unembedding: W_U = W M_0, W_O = M_0^{-1} M_1. The AoT's skip connection is
    exactly x_S; with ``fake_head_scale`` lambda the system is solved with the paper's fake head in place of
    x_S, which leaves a logit error gamma that vanishes as lambda grows. Of ``draws`` generic draws the
    best-conditioned F_1 is kept (every draw works in exact arithmetic; this only helps float64).

    Refuses: d_h > d; S = 1 (the heads only repeat x_1(t)); T_eps > H d_h + d (capacity); T_eps > H d_h +
    min(d, L) when the kept sequences end in only L distinct tokens (the skip block x_S(t) depends on the
    last token only, a case the paper's count misses); T_eps > kappa = min(d, L) + H min(d_h, n + S - 2)
    (no weights make the features independent, see :func:`memcap.construct.dana_features.feature_count`);
    features of the kept sequences of rank < T_eps (draw again); a singular M_0 (perturb E).
    The result lives on the encoder's device; ``generator`` (None: seeded with 0) draws the generic weights.
    """
    if not isinstance(encoder, SequenceEncoder):
        raise TypeError(f"encoder must be a SequenceEncoder, got {type(encoder).__name__}")
    N, d = encoder.vocab, encoder.dim
    H, d_h = positive_int("heads", heads), positive_int("head_dim", head_dim)
    _check_head_dim(d, d_h)
    gen = _resolve.generator(generator)
    dev = encoder.unembedding.device
    tokens = _tokens(tokens, N, dev)
    draws = positive_int("draws", draws)
    if fake_head_scale is not None:
        positive_real("fake_head_scale", fake_head_scale)
    T, S = tokens.shape
    if S < 2:
        raise ValueError(f"tokens must have S >= 2 columns: {_DANA} Theorem 1 needs S >= 2, got S = {S}; with "
                         f"S = 1 each head attends to its one position, so the heads only repeat the skip "
                         f"connection x_1(t) and the features have rank <= min(d, L) for every draw")
    check_shape("encoder.embedding", encoder.embedding, (T, d), "(T, d)")
    weights = _prior(prior, T, dev)
    kept = most_likely_sequences(weights, epsilon)
    capacity = bounds.aot_capacity(H, d_h, d)
    what = "T0" if epsilon == 0 else "T_eps"
    if kept.numel() > capacity:
        raise ValueError(f"{what} > H d_h + d: {kept.numel()} sequences to memorize but the capacity is "
                         f"H d_h + d = {H}*{d_h} + {d} = {capacity} (Theorem 1 needs H d_h + d >= {what})")
    last = int(torch.unique(tokens[kept, -1]).numel())
    if kept.numel() > capacity - d + min(d, last):
        raise ValueError(f"{what} > H d_h + min(d, L): the kept sequences end in only L = {last} distinct tokens, "
                         f"so the skip connection x_S = e(t_S) + pos_S adds only min(d, L) = {min(d, last)} "
                         f"dimensions and at most {capacity - d + min(d, last)} sequences can be fitted")
    from memcap.construct.dana_features import feature_count  # it imports this module: import here
    kappa = feature_count(tokens[kept], d, H, d_h)
    if kept.numel() > kappa:
        n = int(torch.unique(tokens[kept]).numel())
        raise ValueError(
            f"{what} = {kept.numel()} exceeds the feature count kappa = min(d, L) + H min(d_h, n + S - 2) = "
            f"min({d}, {last}) + {H} min({d_h}, {n} + {S} - 2) = {kappa}: no weights make the features of these "
            f"sequences independent (L distinct last tokens, n distinct tokens)")
    with _resolve.one_cpu_thread(dev):
        return _solve_theorem1(encoder, tokens, kept, H, d_h, gen, fake_head_scale, draws)


def _solve_theorem1(encoder: SequenceEncoder, tokens: torch.Tensor, kept: torch.Tensor, H: int, d_h: int,
                    generator: torch.Generator, fake_head_scale: float | None, draws: int) -> Theorem1AoT:
    """The linear algebra of :func:`theorem1_aot` on validated inputs (see there)."""
    N, d = encoder.vocab, encoder.dim
    (T, S), dev = tokens.shape, tokens.device
    dtype = exact_dtype(dev)
    best = None
    for _ in range(draws):
        base = _generic_aot(N, S, d, H, d_h, generator, dev)
        F = skip_feature_matrix(base, tokens, fake_head_scale=fake_head_scale)  # (D, T)
        sv = torch.linalg.svdvals(F[:, kept])
        quality = float(sv[-1] / sv[0])
        if best is None or quality > best[0]:
            best = (quality, base, F)
    _, base, F = best
    F1 = F[:, kept]                                                               # (D, T_eps)
    r = int(torch.linalg.matrix_rank(F1))
    if r < kept.numel():
        raise ValueError(f"Lemma 2's rank condition fails for this draw: the kept features have rank {r} < "
                         f"T_eps = {kept.numel()}; draw the weights again")
    E = encoder.embedding.to(dtype)
    M = E[kept].T @ torch.linalg.pinv(F1)                                        # (d, D): M F_1 = E_1^T
    if _singular(M[:, :d]) and kept.numel() == T and kept.numel() < F.shape[0]:
        # Every sequence is kept (no S outside S_1): any R (I - F_1 F_1^+) can be added to M without changing
        # M F_1 = E_1^T; use it to make M_0 invertible. With sequences outside S_1 this would change their
        # logits, which the error bound below assumes untouched, so there the singular case is refused.
        free = torch.eye(F.shape[0], dtype=dtype, device=dev) - F1 @ torch.linalg.pinv(F1)
        R = _resolve.randn((d, F.shape[0]), generator, dtype, dev)
        M = M + R @ free * max(float(M.abs().max()), 1.0)
    M0, M1 = M[:, :d], M[:, d:]
    if _singular(M0):
        raise ValueError("the skip block M_0 of the solved output map is singular (E has too small a rank); "
                         "perturb the target embedding E slightly")
    W_O = torch.linalg.solve(M0, M1).reshape(d, H, d_h).permute(1, 0, 2).contiguous()   # (H, d, d_h)
    W_U = encoder.unembedding.to(dtype) @ M0
    params = AoTParams(base.token_embedding, base.positional_embedding, base.W_Q, base.W_K, base.W_V, W_O, W_U)
    rest = torch.ones(T, dtype=torch.bool, device=dev)
    rest[kept] = False
    coeff = torch.linalg.pinv(F1) @ F[:, rest]                                    # (T_eps, T - T_eps)
    constant = math.sqrt(1 + float((coeff ** 2).sum(0).max())) if bool(rest.any()) else 1.0
    paper = None
    if kept.numel() == F.shape[0] and bool(rest.any()):
        order = torch.cat([kept, rest.nonzero().squeeze(1)])
        _, _, V = torch.linalg.svd(F[:, order])                                  # F = U [S 0] V
        block = V[:kept.numel(), :kept.numel()]
        paper = math.sqrt(1 + float(torch.linalg.matrix_norm(torch.linalg.inv(block), ord=2)) ** 2)
    return Theorem1AoT(params, kept, F, constant, paper)


def corollary1_aot(tokens: torch.Tensor, targets: torch.Tensor, vocab: int, *, heads: int, head_dim: int,
                   generator: torch.Generator | None = None, scale: float = 1.0) -> Theorem1AoT:
    """Corollary 1: an AoT with d = 2 whose argmax is right on T0 <= H d_h + 2 associations.

    ``tokens``: (T0, S) distinct sequences, ``targets``: (T0,) their next tokens g(t). The target encoder
    is Proposition 3's circle encoder at ``scale`` lambda, each E(t) moved by a generic vector of length
    (1 - cos(2 pi/N))/8 (less than a quarter of the circle's logit margin) so that M_0 is invertible.
    Refuses T0 > H d_h + 2, d_h > 2, and T0 = H d_h + 2 sequences that all end in the same token. The
    result lives on the tokens' device; ``generator`` (None: seeded with 0) draws the jitter and the
    generic weights.
    """
    N = positive_int("vocab", vocab)
    tokens = _tokens(tokens, N)
    dev = tokens.device
    targets = id_tensor("targets", targets, device=dev)
    check_shape("targets", targets, (tokens.shape[0],), "(T0,)")
    scale = positive_real("scale", scale)
    H, d_h = positive_int("heads", heads), positive_int("head_dim", head_dim)
    _check_head_dim(2, d_h)
    if tokens.shape[0] > bounds.aot_capacity(H, d_h, 2):
        raise ValueError(f"T0 > H d_h + d: {tokens.shape[0]} associations exceed Corollary 1's capacity "
                         f"H d_h + 2 = {bounds.aot_capacity(H, d_h, 2)}")
    gen = _resolve.generator(generator)
    circle = circle_sequence_encoder(targets, N, scale=scale, dim=2)
    jitter = _resolve.randn((tokens.shape[0], 2), gen, circle.embedding.dtype, dev)
    jitter = jitter / jitter.norm(dim=1, keepdim=True) * (1 - math.cos(2 * math.pi / N)) / 8
    target = SequenceEncoder(circle.unembedding, circle.embedding + scale * jitter)
    return theorem1_aot(target, tokens, heads=H, head_dim=d_h, generator=gen)


# ---------------------------------------------------------------------------------------------------
# Theorem 2: noisy look-up tables


def gram_deviation(unembedding: torch.Tensor) -> float:
    """||W W^T - I||_inf, the largest entry of the Gram matrix's deviation from identity (Theorem 2's C).

    ``unembedding``: (N, d), rows W_j. Theorem 2 holds with any C at least this value.
    """
    W = real_tensor("unembedding", unembedding)
    if W.ndim != 2:
        raise ValueError(f"unembedding must have shape (N, d), got {tuple(W.shape)}")
    check_shape("unembedding", W, (None, None), "(N, d)")
    W = W.to(exact_dtype(W.device))
    return float((W @ W.T - torch.eye(W.shape[0], dtype=W.dtype, device=W.device)).abs().max())


def identity_hadamard_unembedding(dim: int, *, device: torch.device | str | None = None) -> torch.Tensor:
    """2d unit vectors in R^d, the standard basis and the normalized Sylvester-Hadamard basis.

    Their Gram deviation is 1/sqrt(d) (d a power of 2), far below a random code's: a small-d unembedding
    for which Theorem 2's constant is below 1/2. Returns (2d, d) on ``device`` (None:
    :func:`memcap.device.pick_device`).
    """
    d = positive_int("dim", dim)
    if d & (d - 1):
        raise ValueError(f"dim must be a power of 2 (Sylvester's Hadamard construction), got {d}")
    check_allocation("the Hadamard matrix (d, d) and the unembedding (2d, d)", 4 * d * d, "cpu", dim=d)
    cpu = "cpu"   # made in float64 on the CPU (MPS has no float64), then moved and cast
    had = torch.ones(1, 1, dtype=DTYPE, device=cpu)
    while had.shape[0] < d:
        had = torch.cat([torch.cat([had, had], 1), torch.cat([had, -had], 1)], 0)
    dev = _resolve.device(device)
    return torch.cat([torch.eye(d, dtype=DTYPE, device=cpu), had / math.sqrt(d)]).to(device=dev,
                                                                                     dtype=exact_dtype(dev))


def _solve_scale(gaps: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """lambda >= 0 with log(1 + sum_j exp(-lambda gaps_j)) = target, row-wise, by bisection.

    ``gaps``: (T, N-1) positive; ``target``: (T,) in (0, log N]. The left side falls from log N to 0.
    """
    low = torch.zeros_like(target)
    high = torch.ones_like(target)
    value = lambda lam: torch.log1p(torch.exp(-lam[:, None] * gaps).sum(1))   # noqa: E731
    while bool((value(high) > target).any()):
        high = torch.where(value(high) > target, 2 * high, high)
    for _ in range(200):
        mid = (low + high) / 2
        above = value(mid) > target
        low, high = torch.where(above, mid, low), torch.where(above, high, mid)
    return (low + high) / 2


def lookup_sequence_encoder(probs: torch.Tensor, targets: torch.Tensor,
                            unembedding: torch.Tensor) -> tuple[SequenceEncoder, torch.Tensor]:
    """Theorem 2's encoder for a noisy look-up table: E(t) = lambda(t) W_{g(t)}, lambda(t) solving
    h(pi(. | t)) = log sum_j exp(lambda (W_j - W_g)^T W_g), h the Shannon entropy (the paper's Eq. (6),
    whose -H is h: the paper writes H for the negative entropy sum_j pi_j log pi_j).

    ``probs``: (T, N) with every conditional entropy in (0, log N]; ``targets``: (T,) g(t);
    ``unembedding``: (N, d) with unit rows and Gram deviation < 1. Returns the encoder and lambda (T,).
    """
    probs = _probs("probs", probs)
    T, N = probs.shape
    targets = id_tensor("targets", targets, device=probs.device)
    check_shape("targets", targets, (T,), "(T,)")
    if int(targets.min()) < 0 or int(targets.max()) >= N:
        raise ValueError(f"targets must be ids in [0, N) = [0, {N})")
    W = real_tensor("unembedding", unembedding, device=probs.device)
    check_shape("unembedding", W, (N, None), "(N, d)")
    tol = max(1e-9, 16 * torch.finfo(W.dtype).eps)   # the rounding of the dtype W comes in (float32: 1.9e-6)
    cast, W = W.dtype != probs.dtype, W.to(probs.dtype)
    gap = float((W.norm(dim=1) - 1).abs().max())
    if gap > tol:
        raise ValueError(f"unembedding rows W_j must have unit norm (Theorem 2 with ||W_j||^2 = 1): a row's norm "
                         f"misses 1 by {gap:.3g}, more than the tolerance {tol:.3g}")
    if cast:   # renormalized in the exact dtype, like the probability rows of _probs
        W = W / W.norm(dim=1, keepdim=True)
    if gram_deviation(W) >= 1:
        raise ValueError("unembedding must have Gram deviation < 1 (distinct directions) for lambda to exist")
    h = row_entropy(probs)
    if bool((h <= 1e-12).any()):
        row = int((h <= 1e-12).nonzero()[0])
        raise ValueError(f"Theorem 2's lambda(t) is finite only for positive entropy: sequence {row} has entropy 0 "
                         f"(a pure association; use circle_sequence_encoder with a large scale instead)")
    g = targets.long()
    gaps = 1 - W[g] @ W.T                                                    # (T, N): 1 - W_j^T W_g
    others = torch.ones(T, N, dtype=torch.bool, device=probs.device)
    others[torch.arange(T, device=probs.device), g] = False
    lam = _solve_scale(gaps[others].reshape(T, N - 1), h.clamp_max(math.log(N)))
    return SequenceEncoder(W, lam[:, None] * W[g]), lam
