"""Dana et al.'s Theorem 1 through the rank of its features, as established in the book.

Theorem 1's proof solves one linear system whose unknowns are the output maps; it is solvable when the
*features* F(t) = [x_S(t); W_V^1 A^1(t); ...; W_V^H A^H(t)] of the sequences to memorize are linearly
independent (:func:`memcap.construct.dana.skip_feature_matrix`). This module holds what the book proves
about that rank and the construction built on it:

* :func:`feature_count`: kappa = min(d, L) + H min(d_h, n + S - 2) for sequences ending in L distinct tokens
  and using n distinct tokens. No weights give the features a larger rank (a proved upper bound); the
  book conjectures that kappa is reached (``book-conj-feature-rank``).
* :func:`attention_count`: min(T, Hd, 1 + H min(d, n + S - 2)), the largest rank of the attention matrix A
  of Dana et al.'s Lemma 2 (which claims min(T, Hd)).
* :func:`rank_one_witness`: the book's proof, as a program, that the features of any T <= min(d, L) + H
  distinct sequences (S >= 2) can be made independent with rank-one attention and one value row per head.
* :func:`theorem1_build`: Theorem 1's construction as proved in the book: generic weights, output map
  M = E_1 F_1^+ on the kept sequences, and, when its skip block M_0 is singular, the target shifted by
  eta x_S(t) (``shift``) so that M_0 + eta I can be absorbed into the unembedding.
* :func:`corollary1_build`: Corollary 1 (associations, d = 2) through :func:`theorem1_build` and
  Proposition 3's circle encoder.
* :func:`tight_sets`, :func:`certify_all_sets`, :func:`contains_grid`: for tiny sizes, prove separability
  of every set of sequences that the counts allow, and recognise the grids that forbid it.

Inputs follow :mod:`memcap.construct.dana`: token ids and targets as tensors, NumPy arrays or nested
lists; results live on the device of the tensor inputs (the tokens, or the encoder for
:func:`theorem1_build`); ``generator=None`` means a fresh generator seeded with 0, whose draws are made
on its own device and then moved, so a seed gives the same weights on every device.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from memcap import _resolve
from memcap._checks import check_shape, id_tensor, positive_int, positive_real, real_tensor
from memcap.construct.dana import (
    DTYPE,
    SequenceEncoder,
    _prior,
    circle_sequence_encoder,
    most_likely_sequences,
    skip_feature_matrix,
)
from memcap.construct.dana import _tokens as _distinct_tokens
from memcap.models import AoTParams, init_aot

__all__ = ["feature_count", "attention_count", "rank_one_witness", "Theorem1Build", "theorem1_build",
           "corollary1_build", "contains_grid", "tight_sets", "ExhaustiveCheck", "certify_all_sets"]


def _sizes(tokens: torch.Tensor) -> tuple[int, int, int, int]:
    """(T, S, L, n): sequences, length, distinct last tokens, distinct tokens used."""
    return (tokens.shape[0], tokens.shape[1], int(torch.unique(tokens[:, -1]).numel()),
            int(torch.unique(tokens).numel()))


def _check_head_dim(d: int, d_h: int) -> None:
    """kappa bounds the rank only when d_h <= d (each W_V^h A^h has rank <= d)."""
    if d_h > d:
        raise ValueError(f"d_h > d: head_dim = {d_h} exceeds dim = {d} (Dana et al. assume d_h <= d)")


def feature_count(tokens: torch.Tensor, dim: int, heads: int, head_dim: int) -> int:
    """kappa = min(d, L) + H min(d_h, n + S - 2): the largest rank the features of ``tokens`` can have.

    ``tokens``: (T, S) distinct sequences ending in L distinct tokens and using n distinct tokens.
    The skip block x_S(t) depends on the last token only (at most min(d, L) dimensions) and each head's
    output is a convex combination of the x_s(t), so it moves in an affine space of dimension at most
    n + S - 2; hence rank F <= kappa for every choice of weights. Requires d_h <= d.
    """
    tokens = _distinct_tokens(tokens)
    d, H, d_h = positive_int("dim", dim), positive_int("heads", heads), positive_int("head_dim", head_dim)
    _check_head_dim(d, d_h)
    _, S, L, n = _sizes(tokens)
    return min(d, L) + H * min(d_h, n + S - 2)


def attention_count(tokens: torch.Tensor, dim: int, heads: int) -> int:
    """min(T, Hd, 1 + H min(d, n + S - 2)): the largest rank of the attention matrix A of ``tokens``.

    Each A^h(t) lies in the affine space c + U, U = span{e(q) - e(q0), pos_s - pos_S}, of dimension at
    most min(d, n + S - 2), so the columns [A^1(t); ...; A^H(t)] span at most 1 + H dim U dimensions.
    Dana et al.'s Lemma 2 claims rank min(T, Hd), which exceeds this when d > n + S - 2.
    """
    tokens = _distinct_tokens(tokens)
    d, H = positive_int("dim", dim), positive_int("heads", heads)
    T, S, _, n = _sizes(tokens)
    return min(T, H * d, 1 + H * min(d, n + S - 2))


def _rank_one_attention(x: torch.Tensor, scale: float) -> torch.Tensor:
    """A^w(t) for W_QK = w e_1 e_1^T from embedded tokens x (T, S, d): returns (d, T)."""
    scores = scale * x[:, -1:, 0] * x[:, :, 0]                         # (T, S)
    return torch.einsum("ts,tsd->dt", torch.softmax(scores, dim=1), x)


def _null_space(rows: torch.Tensor) -> torch.Tensor:
    """An orthonormal basis (T, k) of {c : rows @ c = 0}, numerically (relative tolerance 1e-9)."""
    _, s, Vh = torch.linalg.svd(rows, full_matrices=True)
    rank = int((s > 1e-9 * max(float(s[0]), 1e-300)).sum()) if s.numel() else 0
    return Vh[rank:].T


def rank_one_witness(tokens: torch.Tensor, vocab: int, dim: int, heads: int, *,
                     generator: torch.Generator | None = None, scales: torch.Tensor | None = None) -> AoTParams:
    """The book's proof that features of T <= min(d, L) + H distinct sequences can be independent.

    Any T is accepted: the features then reach rank min(T, min(d, L) + H), one dimension per head past
    the skip block's min(d, L) (independence, rank T, only when T <= min(d, L) + H).

    Embeddings have generic coordinates and positive first coordinates (token ones in (1, 2), positional
    ones in (0, 1)). Head h has rank-one attention W_QK^h = w_h e_1 e_1^T (W_Q^h = W_K^h = sqrt(w_h) e_1^T)
    and a single value row r_h (d_h = 1), chosen greedily as in the proof: take c != 0 in the kernel K of
    the rows built so far, pick the scale w_h in ``scales`` (default 2^-3, ..., 2^6) for which
    u = sum_t c_t A^{w_h}(t) is largest, and set r_h = u / ||u||; the new row r_h^T A^{w_h} does not
    vanish on K, so the rank grows by one while it is below T. ``tokens``: (T, S) with S >= 2;
    ``scales``: (k,) candidate scales. Returns AoTParams (float64) with head_dim 1 on the tokens' device
    (W_O and W_U zero: the proof solves for them).
    """
    N, d, H = positive_int("vocab", vocab), positive_int("dim", dim), positive_int("heads", heads)
    tokens = _distinct_tokens(tokens, N)
    if tokens.shape[1] < 2:
        raise ValueError("S >= 2 is needed: with S = 1 every head returns x_1(t), the skip connection itself")
    generator = _resolve.generator(generator)
    if scales is None:
        grid = 2.0 ** torch.arange(-3, 7, dtype=DTYPE, device=tokens.device)
    else:
        grid = check_shape("scales", real_tensor("scales", scales, dtype=DTYPE, device=tokens.device), (None,),
                           "(k,)")
        if bool((grid <= 0).any()):
            raise ValueError("scales must be positive numbers w_h (the rank-one attention w_h e_1 e_1^T)")
    dev = tokens.device
    S = tokens.shape[1]
    e = _resolve.randn((N, d), generator, DTYPE, dev)
    pos = _resolve.randn((S, d), generator, DTYPE, dev)
    e[:, 0] = 1 + _resolve.rand((N,), generator, DTYPE, dev)
    pos[:, 0] = _resolve.rand((S,), generator, DTYPE, dev)
    x = e[tokens] + pos                                                   # (T, S, d)
    rows = x[:, -1, :].T                                                  # skip block (d, T)
    W_Q = torch.zeros(H, 1, d, dtype=DTYPE, device=dev)
    W_V = torch.zeros(H, 1, d, dtype=DTYPE, device=dev)
    for h in range(H):
        kernel = _null_space(rows)
        w, r = float(grid[0]), torch.zeros(d, dtype=DTYPE, device=dev)
        r[0] = 1.0
        if kernel.shape[1]:
            c = kernel @ _resolve.randn((kernel.shape[1],), generator, DTYPE, dev)
            best = -1.0
            for scale in grid.tolist():
                u = _rank_one_attention(x, scale) @ c
                if float(u.norm()) > best:
                    best, w, r = float(u.norm()), scale, u / u.norm()
        W_Q[h, 0, 0] = math.sqrt(w)
        W_V[h, 0] = r
        rows = torch.cat([rows, (r @ _rank_one_attention(x, w))[None]], dim=0)
    return AoTParams(e, pos, W_Q, W_Q.clone(), W_V, torch.zeros(H, d, 1, dtype=DTYPE, device=dev),
                     torch.zeros(N, d, dtype=DTYPE, device=dev))


@dataclass(frozen=True)
class Theorem1Build:
    """An AoT built by the book's proof of Dana et al.'s Theorem 1, with what its error bound uses.

    ``params``: the AoT; ``kept``: (T_eps,) indices of the sequences fitted exactly, most likely first;
    ``features``: F (d + H d_h, T); ``constant``: C = sqrt(1 + max_t ||F_1^+ F(t)||^2) over the sequences
    left out (1 when none is); ``shift``: eta >= 0, the multiple of x_S(t) added to every target
    embedding (0 unless the skip block M_0 of the solved output map was singular); ``paper_constant``:
    Dana et al.'s sqrt(1 + ||(P_1 V P_1^T)^{-1}||^2) from the SVD of F when T_eps = d + H d_h and some
    sequence is left out, else None.
    """

    params: AoTParams
    kept: torch.Tensor
    features: torch.Tensor
    constant: float
    shift: float
    paper_constant: float | None


def _singular(matrix: torch.Tensor, tol: float = 1e-10) -> bool:
    sv = torch.linalg.svdvals(matrix)
    return float(sv[-1]) <= tol * max(float(sv[0]), 1e-300)


def theorem1_build(encoder: SequenceEncoder, tokens: torch.Tensor, *, heads: int, head_dim: int,
                   generator: torch.Generator | None = None, prior: torch.Tensor | None = None,
                   epsilon: float = 0.0, draws: int = 4) -> Theorem1Build:
    """The book's proof of Dana et al.'s Theorem 1, run: an AoT whose logits equal W E(t) + eta W x_S(t)
    on the T_eps most likely sequences (eta = 0 unless needed).

    ``encoder``: the target sequence encoder (W (N, d), E (T, d)), row i of E for row i of ``tokens``
    (T, S) (distinct sequences, S >= 2); ``prior``: (T,) or None (uniform); ``epsilon``: the mass that
    may be left out. Steps: draw generic embeddings and heads (of ``draws`` draws the best-conditioned
    kept features F_1 are used); solve M F_1 = E_1 with M = E_1 F_1^+; if the skip block M_0 of M is
    singular, use M + eta [I_d, 0] (the target E + eta x_S), whose block M_0 + eta I is invertible; set
    W_U = W M_0 and W_O^h = M_0^{-1} M_1^h.

    Refuses: d_h > d, S = 1, T_eps > kappa = min(d, L) + H min(d_h, n + S - 2) of the kept sequences (no
    weights make their features independent, see :func:`feature_count`), and kept features of rank
    < T_eps in every draw. The result lives on the encoder's device; ``generator`` (None: seeded with 0)
    draws the generic weights.
    """
    if not isinstance(encoder, SequenceEncoder):
        raise TypeError(f"encoder must be a SequenceEncoder, got {type(encoder).__name__}")
    N, d = encoder.vocab, encoder.dim
    H, d_h = positive_int("heads", heads), positive_int("head_dim", head_dim)
    if d_h > d:
        raise ValueError(f"d_h > d: head_dim = {d_h} exceeds dim = {d} (Dana et al. assume d_h <= d)")
    generator, draws = _resolve.generator(generator), positive_int("draws", draws)
    dev = encoder.unembedding.device
    tokens = _distinct_tokens(tokens, N, dev)
    T, S = tokens.shape
    if S < 2:
        raise ValueError("S >= 2 is needed: with S = 1 the heads only repeat the skip connection x_1(t)")
    check_shape("encoder.embedding", encoder.embedding, (T, d), "(T, d)")
    kept = most_likely_sequences(_prior(prior, T, dev).to(DTYPE), epsilon)
    what = "T0" if epsilon == 0 else "T_eps"
    kappa = feature_count(tokens[kept], d, H, d_h)
    if kept.numel() > kappa:
        _, _, L, n = _sizes(tokens[kept])
        raise ValueError(
            f"{what} = {kept.numel()} exceeds the feature count kappa = min(d, L) + H min(d_h, n + S - 2) = "
            f"min({d}, {L}) + {H} min({d_h}, {n} + {S} - 2) = {kappa}: no weights make the features of "
            f"these sequences independent (L distinct last tokens, n distinct tokens)")
    best = None
    for _ in range(draws):
        base = init_aot(N, S, d, H, d_h, generator=generator, dtype=DTYPE, device=dev)
        F = skip_feature_matrix(base, tokens)                              # (D, T)
        sv = torch.linalg.svdvals(F[:, kept])
        quality = float(sv[-1] / sv[0])
        if best is None or quality > best[0]:
            best = (quality, base, F)
    quality, base, F = best
    F1 = F[:, kept]
    if int(torch.linalg.matrix_rank(F1)) < kept.numel():
        raise ValueError(f"the kept features have rank < {what} = {kept.numel()} in every draw "
                         f"(best smallest/largest singular value {quality:.1e}); draw again")
    pinv = torch.linalg.pinv(F1)                                           # (T_eps, D)
    E = encoder.embedding.to(device=dev, dtype=DTYPE)
    M = E[kept].T @ pinv                                                   # (d, D): M F_1 = E_1
    M0 = M[:, :d]
    shift = 0.0
    if _singular(M0):
        shift = 1e-6 * max(float(torch.linalg.matrix_norm(M, ord=2)), 1.0)
        eye = torch.eye(d, dtype=DTYPE, device=dev)
        while _singular(M0 + shift * eye, 1e-8):
            shift *= 10
        M0 = M0 + shift * eye
    W_O = torch.linalg.solve(M0, M[:, d:]).reshape(d, H, d_h).permute(1, 0, 2).contiguous()
    W_U = encoder.unembedding.to(device=dev, dtype=DTYPE) @ M0
    params = AoTParams(base.token_embedding, base.positional_embedding, base.W_Q, base.W_K, base.W_V,
                       W_O, W_U)
    rest = torch.ones(T, dtype=torch.bool, device=dev)
    rest[kept] = False
    constant = 1.0
    paper = None
    if bool(rest.any()):
        coeff = pinv @ F[:, rest]                                          # (T_eps, T - T_eps)
        constant = math.sqrt(1 + float((coeff ** 2).sum(0).max()))
        if kept.numel() == F.shape[0]:
            order = torch.cat([kept, rest.nonzero().squeeze(1)])
            _, _, V = torch.linalg.svd(F[:, order])                        # F = U [Sigma 0] V
            block = V[:kept.numel(), :kept.numel()]
            paper = math.sqrt(1 + float(torch.linalg.matrix_norm(torch.linalg.inv(block), ord=2)) ** 2)
    return Theorem1Build(params, kept, F, constant, shift, paper)


def corollary1_build(tokens: torch.Tensor, targets: torch.Tensor, vocab: int, *, heads: int, head_dim: int,
                     generator: torch.Generator | None = None, scale: float = 1.0) -> Theorem1Build:
    """Corollary 1 through :func:`theorem1_build`: an AoT with d = 2 whose argmax is g(t) on every sequence.

    ``tokens``: (T0, S) distinct sequences, ``targets``: (T0,) their next tokens g(t). The target is
    Proposition 3's circle encoder at ``scale`` lambda, whose correct logit leads every other by at least
    lambda mu, mu = 1 - cos(2 pi / N); the shift eta of the construction moves each logit by at most
    eta ||x_S(t)||, so the argmax is right while 2 eta max_t ||x_S(t)|| < lambda mu (checked here).
    The result lives on the tokens' device; ``generator`` (None: seeded with 0) draws the generic weights.
    """
    N = positive_int("vocab", vocab)
    tokens = _distinct_tokens(tokens, N)
    targets = check_shape("targets", id_tensor("targets", targets, device=tokens.device), (tokens.shape[0],),
                          "(T0,)")
    scale, generator = positive_real("scale", scale), _resolve.generator(generator)
    circle = circle_sequence_encoder(targets, N, scale=scale, dim=2)
    built = theorem1_build(circle, tokens, heads=heads, head_dim=head_dim, generator=generator)
    x_last = built.params.token_embedding[tokens[:, -1]] + built.params.positional_embedding[-1]
    mu = 1 - math.cos(2 * math.pi / N)
    if 2 * built.shift * float(x_last.norm(dim=1).max()) >= scale * mu:
        raise ValueError("the shift eta needed to invert M_0 is too large for the circle's margin lambda mu; "
                         "increase scale")
    return built


def contains_grid(tokens: torch.Tensor, k: int) -> bool:
    """True if the rows of ``tokens`` include a k x k grid: for some positions i < j < S and some set Q of
    k tokens, all k^2 sequences that carry (a, b) in Q x Q at positions i, j and agree elsewhere (the last
    token included). Such a grid has features of rank at most 1 + H min(d_h, k) for every choice of
    weights (the book's Proposition "Limits on the rank")."""
    from itertools import combinations

    tokens = _distinct_tokens(tokens)
    k = positive_int("k", k)
    rows = [tuple(r) for r in tokens.tolist()]
    S = tokens.shape[1]
    for i, j in combinations(range(S - 1), 2):
        groups: dict[tuple, set] = {}
        for r in rows:
            rest = r[:i] + r[i + 1:j] + r[j + 1:]
            groups.setdefault(rest, set()).add((r[i], r[j]))
        for pairs in groups.values():
            used = sorted({a for a, _ in pairs} & {b for _, b in pairs})
            for Q in combinations(used, k):
                if all((a, b) in pairs for a in Q for b in Q):
                    return True
    return False


@dataclass(frozen=True)
class ExhaustiveCheck:
    """The outcome of :func:`certify_all_sets`: ``sets`` maximal sets checked, ``certified`` of them proved
    to have independent features; ``smallest_margin``: the least proved lower bound on a smallest
    singular value among them (0.0 if some set was not certified); ``unproved``: the sets not certified,
    as lists of rows of ``all_sequences(N, S)``."""

    sets: int
    certified: int
    smallest_margin: float
    unproved: tuple[tuple[int, ...], ...] = ()


def tight_sets(tokens: torch.Tensor, dim: int, heads: int, head_dim: int) -> list[list[int]]:
    """Every set of rows of ``tokens`` with ``|Sigma| = kappa(Sigma)``, plus all rows if ``|all| <= kappa(all)``.

    Every set with ``|Sigma| <= kappa(Sigma)`` lies inside one of them (adding a sequence never lowers kappa),
    so a property inherited by subsets, such as independent features, holds for all such sets once it
    holds for these. Enumerates all 2^T subsets: meant for T <= 16.
    """
    tokens = _distinct_tokens(tokens)
    T = tokens.shape[0]
    if T > 16:
        raise ValueError(f"tight_sets enumerates 2^T subsets; T = {T} > 16 is too many")
    d, H, d_h = positive_int("dim", dim), positive_int("heads", heads), positive_int("head_dim", head_dim)
    _check_head_dim(d, d_h)
    rows = tokens.tolist()
    S = tokens.shape[1]
    found = []
    for mask in range(1, 2 ** T):
        picked = [i for i in range(T) if mask >> i & 1]
        L = len({rows[i][-1] for i in picked})
        n = len({q for i in picked for q in rows[i]})
        kappa = min(d, L) + H * min(d_h, n + S - 2)
        if len(picked) == kappa or (len(picked) == T and T <= kappa):
            found.append(picked)
    return found


def certify_all_sets(vocab: int, seq_len: int, dim: int, heads: int, head_dim: int, *,
                     generator: torch.Generator | None = None) -> ExhaustiveCheck:
    """Prove the feature-rank conjecture for all sets of sequences of [N]^S at these sizes, or report
    which could not be proved.

    One generic draw of weights (:func:`memcap.models.init_aot`); its feature matrix over all N^S
    sequences is enclosed in interval arithmetic once (:func:`memcap.certify.enclose`), then every set of
    :func:`tight_sets` is checked exactly (:func:`memcap.certify.certify_full_rank`). ``generator``
    (None: seeded with 0) draws the weights. Everything runs on the CPU (exact and interval arithmetic).
    """
    from memcap import certify
    from memcap.data import all_sequences

    N, S = positive_int("vocab", vocab), positive_int("seq_len", seq_len)
    d, H, d_h = positive_int("dim", dim), positive_int("heads", heads), positive_int("head_dim", head_dim)
    _check_head_dim(d, d_h)
    generator = _resolve.generator(generator)
    tokens = all_sequences(N, S, device="cpu")
    params = init_aot(N, S, d, H, d_h, generator=generator, dtype=DTYPE, device="cpu")
    enclosure = certify.enclose(params, tokens, "features")
    sets = tight_sets(tokens, d, H, d_h)
    margins = [certify.certify_full_rank(enclosure, columns=s, margin=0.5) for s in sets]
    proved = [m for m in margins if m.certified]
    smallest = min(m.sigma_lower for m in proved) if len(proved) == len(sets) and proved else 0.0
    unproved = tuple(tuple(s) for s, m in zip(sets, margins) if not m.certified)
    return ExhaustiveCheck(len(sets), len(proved), smallest, unproved)
