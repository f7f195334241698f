"""Noisy look-up tables (Dana et al., Theorem 2): what the book adds to the paper's proof.

Theorem 2 of Dana, Pydi and Chevaleyre (2024) bounds the divergence of the best sequence encoder when
every conditional pi(. | t) puts most of its mass on one token g(t). Its constant C is the largest
entry of ``W W^T - I`` for a nearly orthonormal unembedding W, which the paper takes from the
Johnson-Lindenstrauss lemma. This module holds the pieces the book uses to derive that constant and to
prove the paper's "simplified form" (which the paper states without proof):

* a Gaussian unembedding (entries N(0, 1/d)) and the union bound on its Gram matrix:
  :data:`GRAM_UNION_BOUND_EXPR` = 2 N^2 exp(-d t^2 / 8) bounds the probability that some entry of
  ``W W^T - I`` reaches t (for t < 1), and :func:`gaussian_gram_constant` is the t where it equals 1;
* one scale for every sequence: the encoder E(t) = Lambda W_{g(t)} with Lambda from the *mean*
  entropy (:func:`common_scale`, :func:`common_scale_encoder`) reaches
  :func:`simplified_kl_bound` = (1 + 2C)/(1 - 2C) E[1 - pi(g(t) | t)] log((N - 1)/(e^{E h} - 1));
* :func:`noisy_lookup_rows` (a task whose sequences have different entropies) and
  :func:`miss_probability` (the per-sequence error 1 - pi(g(t) | t)).

Entropies are Shannon entropies h(p) = -sum_j p_j log p_j in nats. The paper writes H(p) for
sum_j p_j log p_j = -h(p), so its -H and e^{-H} are our h and e^h. The unembedding is stored as an
(N, d) matrix whose row j is the paper's column W_j, as in :mod:`memcap.construct.dana`. Inputs follow
``memcap._checks`` (tensors, NumPy arrays or nested lists; finite; no half precision); results live
on the device of the tensor inputs (:func:`gaussian_unembedding`, which has none, takes ``device``).
"""
from __future__ import annotations

import math

import sympy as sp
import torch

from memcap import _resolve
from memcap._checks import check_allocation, check_shape, finite_real, id_tensor, positive_int, real_tensor
from memcap.bounds import C, N, _check_fano, _in_floats, d, h, p_err
from memcap.construct.dana import DTYPE, SequenceEncoder
from memcap.data import _check_probability_rows, lookup_noise_for_entropy

__all__ = ["t", "lam", "GRAM_UNION_BOUND_EXPR", "GAUSSIAN_GRAM_CONSTANT_EXPR", "ENVELOPE_EXPR",
           "COMMON_SCALE_EXPR", "SIMPLIFIED_KL_BOUND_EXPR", "gaussian_gram_constant", "gram_union_bound",
           "gaussian_unembedding", "common_scale", "simplified_kl_bound", "common_scale_encoder",
           "miss_probability", "noisy_lookup_rows"]

t = sp.Symbol("t", positive=True)
"""A threshold for the entries of W W^T - I."""
lam = sp.Symbol("lambda", nonnegative=True)
"""The scale of the encoder E(t) = lambda W_{g(t)}."""

GRAM_UNION_BOUND_EXPR = 2 * N ** 2 * sp.exp(-d * t ** 2 / 8)
"""Probability bound that a Gaussian W (N x d, entries N(0, 1/d)) has some entry of ``|W W^T - I| >= t``,
for 0 < t < 1: N diagonal entries with 2 e^{-d t^2/8} each (chi-square tail) and N(N-1)/2 pairs with
4 e^{-d t^2/8} each (W_i^T W_j is half a difference of two independent chi-square averages)."""
GAUSSIAN_GRAM_CONSTANT_EXPR = sp.sqrt(8 * sp.log(2 * N ** 2) / d)
"""The threshold t at which :data:`GRAM_UNION_BOUND_EXPR` equals 1."""
ENVELOPE_EXPR = (-h + sp.log(1 + (N - 1) * sp.exp(-lam * (1 - 2 * C)))
                 + lam * (1 + 2 * C) * p_err)
"""Upper bound on KL(p || softmax(lambda W W_g)) for any lambda >= 0 when ``|W W^T - I| <= C < 1/2``
entrywise: h = h(p), p_err = 1 - p_g. It is affine in (h, p_err), so it averages over sequences."""
COMMON_SCALE_EXPR = sp.log((N - 1) / (sp.exp(h) - 1)) / (1 - 2 * C)
"""The scale Lambda at which the middle term of :data:`ENVELOPE_EXPR` equals h (here the mean entropy)."""
SIMPLIFIED_KL_BOUND_EXPR = (1 + 2 * C) / (1 - 2 * C) * p_err * sp.log((N - 1) / (sp.exp(h) - 1))
"""The simplified form of Theorem 2 with the book's factor 1 + 2C (the paper has 1 + 4C): p_err the
mean miss probability, h the mean entropy."""


_LOG_GRAM_UNION_BOUND = sp.lambdify((N, d, t), _in_floats(sp.log(GRAM_UNION_BOUND_EXPR)), modules="math")
_GAUSSIAN_GRAM_CONSTANT = sp.lambdify((N, d), GAUSSIAN_GRAM_CONSTANT_EXPR, modules="math")
_COMMON_SCALE = sp.lambdify((N, C, h), _in_floats(COMMON_SCALE_EXPR), modules="math")
_SIMPLIFIED_KL_BOUND = sp.lambdify((N, C, p_err, h), _in_floats(SIMPLIFIED_KL_BOUND_EXPR), modules="math")


def _vocab(vocab: object) -> int:
    nv = positive_int("vocab", vocab)
    if nv < 2:
        raise ValueError(f"vocab must be >= 2 (the bounds have log(N - 1)), got {nv}")
    return nv


def _targets(targets: object, vocab: int, device: torch.device | None = None) -> torch.Tensor:
    """The look-up table g as ``(T,)`` token ids in [0, N) (array-likes placed on ``device``)."""
    g = check_shape("targets", id_tensor("targets", targets, device=device), (None,), "(T,)")
    if int(g.min()) < 0 or int(g.max()) >= vocab:
        raise ValueError(f"targets must be token ids in [0, N) = [0, {vocab})")
    return g.long()


def _constant(value: object) -> float:
    c = finite_real("constant", value)
    if not 0 <= c < 0.5:
        raise ValueError(f"Dana et al.'s Theorem 2 needs a Gram deviation C in [0, 1/2), got C = {c:.4g}")
    return c


def _mean_entropy(value: object, vocab: int) -> float:
    x = finite_real("mean_entropy", value)
    if not 0 < x <= math.log(vocab):
        raise ValueError(f"mean_entropy must lie in (0, log N] = (0, {math.log(vocab):.4g}] nats, got {x}")
    return x


def gaussian_gram_constant(vocab: int, dim: int) -> float:
    """sqrt(8 log(2 N^2)/d): where this is below 1, a Gaussian unembedding has ||W W^T - I||_max < C with
    positive probability for every C above it (at C equal to it the union bound is exactly 1). It is at
    most the paper's sqrt(32 log(N + 1)/d) for every N >= 1."""
    return float(_GAUSSIAN_GRAM_CONSTANT(positive_int("vocab", vocab), positive_int("dim", dim)))


def gram_union_bound(vocab: int, dim: int, threshold: float) -> float:
    """2 N^2 exp(-d t^2/8): bounds the probability that a Gaussian (N, d) unembedding with N(0, 1/d)
    entries has some entry of ``|W W^T - I| >= t``. Valid for 0 < t < 1 (the chi-square tail used)."""
    x = finite_real("threshold", threshold)
    if not 0 < x < 1:
        raise ValueError(f"threshold t must lie in (0, 1) for the chi-square tail bound, got {x}")
    nv, dm = positive_int("vocab", vocab), positive_int("dim", dim)
    log_bound = _LOG_GRAM_UNION_BOUND(nv, dm, x)   # in log space: N^2 alone overflows for N near 1e155
    try:
        return math.exp(log_bound)
    except OverflowError:
        raise ValueError(f"vocab N = 10^{math.log10(nv):.4g} (with dim d = {dm}, t = {x:g}) makes the bound "
                         f"2 N^2 exp(-d t^2/8) about 10^{log_bound / math.log(10):.0f}, beyond a float (and far "
                         f"above 1: it says nothing)") from None


def gaussian_unembedding(vocab: int, dim: int, *, generator: torch.Generator | None = None,
                         device: torch.device | str | None = None) -> torch.Tensor:
    """An (N, d) unembedding with independent N(0, 1/d) entries, drawn with ``generator`` (None: a fresh
    one seeded with 0) in float64 on the generator's device.

    Row j is W_j; E ||W_j||^2 = 1 and E W_i^T W_j = 0, and its Gram deviation concentrates at scale
    sqrt(log N / d) (see :data:`GRAM_UNION_BOUND_EXPR`). Returns float64 on ``device`` (None:
    :func:`memcap.device.pick_device`).
    """
    nv, dm = positive_int("vocab", vocab), positive_int("dim", dim)
    generator, dev = _resolve.generator(generator), _resolve.device(device)
    check_allocation("the unembedding (N, d)", nv * dm, dev, vocab=nv, dim=dm)
    return _resolve.randn((nv, dm), generator, DTYPE, dev) / math.sqrt(dm)


def common_scale(vocab: int, constant: float, mean_entropy: float) -> float:
    """Lambda = log((N - 1)/(e^{h_bar} - 1)) / (1 - 2C): the one scale of the encoder that proves the
    simplified form of Theorem 2 (``mean_entropy`` h_bar in (0, log N], ``constant`` C in [0, 1/2))."""
    nv = _vocab(vocab)
    scale = float(_COMMON_SCALE(nv, _constant(constant), _mean_entropy(mean_entropy, nv)))
    return max(scale, 0.0)   # >= 0 for h_bar <= log N: at h_bar = log N, rounding can leave -1e-17


def simplified_kl_bound(vocab: int, constant: float, error_prob: float, mean_entropy: float) -> float:
    """(1 + 2C)/(1 - 2C) * error_prob * log((N - 1)/(e^{h_bar} - 1)): the simplified form of Dana et
    al.'s Theorem 2 with the book's factor 1 + 2C, for any unembedding of Gram deviation <= C < 1/2.

    ``error_prob`` is the mean miss probability E[1 - pi(g(t) | t)] in [0, 1], ``mean_entropy`` the mean
    Shannon entropy in (0, log N] nats. The two must be those of some task: by Fano's inequality (and the
    concavity of its right side, for the means) mean_entropy <= H_b(error_prob) + error_prob log(N - 1),
    H_b the binary entropy in nats; other pairs are refused. The bound is then >= 0.
    """
    nv = _vocab(vocab)
    e = finite_real("error_prob", error_prob)
    if not 0 <= e <= 1:
        raise ValueError(f"error_prob must lie in [0, 1], got {e}")
    c, hbar = _constant(constant), _mean_entropy(mean_entropy, nv)
    _check_fano(nv, e, hbar, "mean_entropy", what="no task has these two means")
    bound = float(_SIMPLIFIED_KL_BOUND(nv, c, e, hbar))
    return max(bound, 0.0)   # >= 0 by Fano (then e^h_bar - 1 <= N - 1); rounding can leave -1e-18


def common_scale_encoder(targets: torch.Tensor, unembedding: torch.Tensor, scale: float) -> SequenceEncoder:
    """The sequence encoder E(t) = scale * W_{g(t)} with one scale for every sequence.

    ``targets``: (T,) the look-up table g(t) as token ids; ``unembedding``: (N, d), rows W_j;
    ``scale`` >= 0. Returns a float64 :class:`~memcap.construct.dana.SequenceEncoder` (logits (T, N)) on
    the unembedding's device.
    """
    W = check_shape("unembedding", real_tensor("unembedding", unembedding, dtype=DTYPE), (None, None), "(N, d)")
    g = _targets(targets, W.shape[0], W.device)
    s = finite_real("scale", scale)
    if s < 0:
        raise ValueError(f"scale must be >= 0, got {s}")
    return SequenceEncoder(W, s * W[g])


def miss_probability(probs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """1 - pi(g(t) | t) for every sequence: ``probs`` (T, N) probability rows, ``targets`` (T,) token ids.
    Returns (T,) on the device of ``probs``, in its dtype."""
    p = _check_probability_rows("probs", probs)
    g = _targets(targets, p.shape[1], p.device)
    check_shape("targets", g, (p.shape[0],), "(T,)")
    return 1 - p.gather(1, g[:, None])[:, 0]


def noisy_lookup_rows(targets: torch.Tensor, vocab: int, entropies: torch.Tensor) -> torch.Tensor:
    """Conditionals of a noisy look-up table whose sequences have different entropies.

    Row t puts 1 - eta_t on ``targets[t]`` and eta_t/(N - 1) on every other token, with eta_t chosen
    so that its Shannon entropy is ``entropies[t]`` (nats, in [0, log N]); see
    :func:`memcap.data.lookup_noise_for_entropy`. ``targets``: (T,), ``entropies``: (T,). Returns
    float64 probabilities (T, N) on the targets' device.
    """
    nv = _vocab(vocab)
    g = _targets(targets, nv)
    levels = real_tensor("entropies", entropies, device=g.device)
    check_shape("entropies", levels, (g.shape[0],), "(T,)")
    values = levels.detach().to("cpu", DTYPE)   # checked in float64, the precision of the rows
    log_n = math.log(nv)
    slack = torch.finfo(levels.dtype).eps * log_n   # log N written in float32 can round up by this much
    if bool((values < 0).any()) or bool((values > log_n + slack).any()):
        raise ValueError(f"entropies must lie in [0, log N] = [0, {log_n:.4g}] nats, got values from "
                         f"{float(values.min()):.4g} to {float(values.max()):.4g}")
    values = values.clamp(max=log_n)   # the rounded log N as log N
    noise = {float(v): lookup_noise_for_entropy(nv, float(v)) for v in torch.unique(values)}
    eta = torch.tensor([noise[float(v)] for v in values], dtype=DTYPE, device="cpu")   # built on the CPU, moved
    probs = (eta / (nv - 1))[:, None].repeat(1, nv)
    probs[torch.arange(len(eta), device="cpu"), g.cpu()] = 1 - eta
    return probs.to(g.device)
