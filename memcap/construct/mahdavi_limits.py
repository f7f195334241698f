"""The limits of one attention layer (Mahdavi et al., 2024): Propositions 2-5 as programs.

* Propositions 2 and 5 are upper bounds on rank(Z), the rank of the feature matrix of Eq. (7).
  :func:`attention_matrix` returns the matrix Theta of their proofs and :func:`rank_by_heads` the rank
  of Z as heads are added; :func:`simplex_data` draws tokens whose coordinates sum to a constant C
  (the hypothesis of Proposition 5).
* Proposition 3 compares with a two-layer ReLU network f(x) = ReLU(x W_1 + b_1) W_2 + b_2 with m
  hidden units. :func:`relu_hard_dataset` builds the dataset of their Appendix F (one shared context of
  standard basis vectors, queries [0; x^(t)], generic labels, T just above (n+1)m/d_out + m + 1),
  :func:`fit_relu` trains the network with Adam from several random starts at once, and
  :func:`relu_residual_lower_bound` computes a lower bound on the residual of *every* such network
  (enumerating the :func:`activation_patterns` of a hidden unit), so that the failure to fit is
  certified rather than observed.
* Proposition 4 is the zero-key/query self-attention layer with a skip connection:
  :func:`mean_mixing_layer` returns it as :class:`~memcap.models.MHAParams`,
  :func:`apply_self_attention` runs any such layer on every token, and :func:`cls_token_data` draws the
  ViT-like data ([CLS] query shared by all examples) that violate Assumption 1 before the layer.

Closed-form bounds come from :mod:`memcap.bounds` only. Inputs follow ``memcap._checks`` (tensors,
NumPy arrays or nested lists; finite; float32/float64); ``generator=None`` means a fresh generator seeded
with 0; data come out on ``device`` (None: :func:`memcap.device.pick_device`), in float64 by default.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import torch

from memcap import _resolve, bounds
from memcap._checks import check_allocation, check_shape, check_tensor, float_input, positive_int, positive_real
from memcap.data import MemorizationTask
from memcap.device import EXACT_DTYPE, same_device
from memcap.linalg import kruskal_rank, rank
from memcap.models import MHAParams, mha_attention, mha_features, mha_forward

__all__ = [
    "DEFAULT_MAX_TUPLES", "attention_matrix", "rank_by_heads", "simplex_data", "ReLUParams", "relu_forward",
    "fcn_inputs", "relu_hard_dataset", "ReLUFit", "fit_relu", "activation_patterns", "relu_residual_lower_bound",
    "mean_mixing_layer", "apply_self_attention", "cls_token_data",
]

DEFAULT_MAX_TUPLES = 2_000_000
"""How many m-tuples of activation patterns :func:`relu_residual_lower_bound` may examine."""

_CHUNK = 20_000
"""m-tuples of activation patterns handled per batched SVD."""


# ---------------------------------------------------------------------------------------------------
# helpers


def _floating(name: str, value: object, like: torch.Tensor | None = None) -> torch.Tensor:
    """A finite float input (array-likes converted to the device and dtype of ``like``)."""
    return float_input(name, value, like)


def _dtype_device(dtype: torch.dtype | None, device: torch.device | str | None) -> tuple[torch.dtype, torch.device]:
    """``dtype`` (None: float64) and ``device`` (None: :func:`memcap.device.pick_device`) of generated data."""
    return _resolve.float_dtype(dtype, EXACT_DTYPE), _resolve.device(device)


# ---------------------------------------------------------------------------------------------------
# Propositions 2 and 5: the rank of Z


def attention_matrix(W_K: torch.Tensor, W_Q: torch.Tensor, contexts: torch.Tensor,
                     queries: torch.Tensor) -> torch.Tensor:
    """The matrix Theta of the proof of Proposition 2: row t is [theta_1^(t); ...; theta_H^(t)].

    Shapes as in :func:`memcap.models.mha_scores`: ``W_K``, ``W_Q`` (H, d, d_h), ``contexts`` (T, n, d)
    or shared (n, d), ``queries`` (T, d). Returns Theta: (T, H*n), head-major, so that for a shared
    context E the feature matrix factors as Z^T = (I_H kron E^T) Theta^T. Each block of n columns is
    row-stochastic (a softmax output).
    """
    theta = mha_attention(W_K, W_Q, contexts, queries)  # (T, H, n)
    return theta.reshape(theta.shape[0], -1)             # (T, H*n), head-major


def rank_by_heads(W_K: torch.Tensor, W_Q: torch.Tensor, contexts: torch.Tensor, queries: torch.Tensor,
                  *, tol: float | None = None) -> list[int]:
    """rank(Z_{1:h}) for h = 1, ..., H, where Z_{1:h} keeps the features of the first h heads.

    Shapes as in :func:`attention_matrix`. Entry h-1 of the result is the rank of the (T, h*d) matrix
    made of the first h head blocks of Z (Eq. (7)); Proposition 2 bounds it by h(n-1)+1 for a shared
    context, Proposition 5 by h(d-1)+1 for tokens with constant coordinate sum. ``tol`` is passed to
    :func:`memcap.linalg.rank`.
    """
    W_K = _floating("W_K", W_K)
    Z = mha_features(W_K, W_Q, contexts, queries)  # (T, H*d)
    H, d = W_K.shape[0], W_K.shape[1]
    return [rank(Z[:, : h * d], tol=tol) for h in range(1, H + 1)]


def simplex_data(examples: int, context_size: int, dim: int, *, coordinate_sum: float = 1.0,
                 generator: torch.Generator | None = None, dtype: torch.dtype | None = None,
                 device: torch.device | str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Contexts whose tokens have coordinates summing to C (hypothesis of Proposition 5).

    Every context token is C times a uniform point of the probability simplex (a flat Dirichlet draw),
    so 1^T e_i^(t) = C while the tokens are still in general position; queries are i.i.d. U(0,1)^d
    (Proposition 5 assumes nothing about them). Returns ``contexts`` (T, n, d) and ``queries`` (T, d),
    float64 by default. Draw order: contexts, then queries.
    """
    T = positive_int("examples", examples)
    n = positive_int("context_size", context_size)
    d = positive_int("dim", dim)
    C = positive_real("coordinate_sum", coordinate_sum)
    gen = _resolve.generator(generator)
    dtype, dev = _dtype_device(dtype, device)
    check_allocation("the contexts (T, n, d), their draws and the queries (T, d)", T * d * (2 * n + 1), dev,
                     examples=T, context_size=n, dim=d)
    draw = -torch.log1p(-_resolve.rand((T, n, d), gen, torch.float64, dev))
    contexts = C * draw / draw.sum(dim=-1, keepdim=True)  # (T, n, d), Exp(1) normalised: Dirichlet(1)
    return contexts.to(dtype), _resolve.rand((T, d), gen, dtype, dev)


# ---------------------------------------------------------------------------------------------------
# Proposition 3: two-layer ReLU networks


@dataclass(frozen=True, eq=False)
class ReLUParams:
    """A two-layer ReLU network f(x) = ReLU(x W_1 + b_1) W_2 + b_2 with m hidden units.

    Shapes: ``W_1`` (d_in, m), ``b_1`` (m,), ``W_2`` (m, d_out), ``b_2`` (d_out,). Mahdavi et al.
    (Appendix F) write the same network as W_2^T ReLU(W_1^T x + b_1) + b_2.
    """

    W_1: torch.Tensor
    b_1: torch.Tensor
    W_2: torch.Tensor
    b_2: torch.Tensor

    def __post_init__(self) -> None:
        for name in ("W_1", "b_1", "W_2", "b_2"):   # all on W_1's device
            _floating(name, check_tensor(name, getattr(self, name)), None if name == "W_1" else self.W_1)
        if self.W_1.ndim != 2:
            raise ValueError(f"W_1 must have shape (d_in, m), got {tuple(self.W_1.shape)}")
        check_shape("W_1", self.W_1, (None, None), "(d_in, m)")
        m = self.W_1.shape[1]
        check_shape("b_1", self.b_1, (m,), "(m,)")
        check_shape("W_2", self.W_2, (m, None), "(m, d_out)")
        check_shape("b_2", self.b_2, (self.W_2.shape[1],), "(d_out,)")

    @property
    def hidden(self) -> int:
        """m, the number of hidden units."""
        return self.W_1.shape[1]


def relu_forward(params: ReLUParams, inputs: torch.Tensor) -> torch.Tensor:
    """The network output f(x) = ReLU(x W_1 + b_1) W_2 + b_2 for ``inputs`` (T, d_in); returns (T, d_out)."""
    if not isinstance(params, ReLUParams):
        raise TypeError(f"params must be ReLUParams, got {type(params).__name__}")
    inputs = _floating("inputs", inputs, params.W_1)
    check_shape("inputs", inputs, (None, params.W_1.shape[0]), "(T, d_in)")
    return torch.relu(inputs @ params.W_1 + params.b_1) @ params.W_2 + params.b_2


def fcn_inputs(contexts: torch.Tensor, queries: torch.Tensor) -> torch.Tensor:
    """Flatten each example into the input of a fully connected network: x = [e_1; ...; e_n; e].

    ``contexts`` (T, n, d) or shared (n, d); ``queries`` (T, d). Returns (T, (n+1) d), the input of
    Proposition 3's ReLU network, which cannot tell context tokens from the query.
    """
    queries = _floating("queries", queries)
    check_shape("queries", queries, (None, None), "(T, d)")
    T, d = queries.shape
    contexts = _floating("contexts", contexts, queries)
    if contexts.ndim == 2:
        check_shape("contexts", contexts, (None, d), "shared (n, d)")
        flat = contexts.reshape(1, -1).expand(T, -1)      # (T, n*d), the shared context repeated
    elif contexts.ndim == 3:
        check_shape("contexts", contexts, (T, None, d), "(T, n, d)")
        flat = contexts.reshape(T, -1)                    # (T, n*d), rows e_1, ..., e_n in order
    else:
        raise ValueError(f"contexts must have shape (T, n, d) or shared (n, d), got {tuple(contexts.shape)}")
    if not same_device(contexts.device, queries.device) or contexts.dtype != queries.dtype:
        raise ValueError("contexts and queries must share one device and dtype")
    return torch.cat([flat, queries], dim=1)              # (T, (n+1) d)


def relu_hard_dataset(context_size: int, dim: int, hidden: int, *, out_dim: int = 1,
                      generator: torch.Generator | None = None, dtype: torch.dtype | None = None,
                      device: torch.device | str | None = None) -> MemorizationTask:
    """The dataset of Mahdavi et al.'s proof of Proposition 3 (Appendix F), with T one above the bound.

    With n = ``context_size`` < d = ``dim``: one shared context E = [s_1; ...; s_n] (the first n standard
    basis vectors of R^d, so Assumption 2 holds), queries e^(t) = [0_{d-n}; x^(t)] with x^(t) ~ N(0, I_n)
    (Kruskal rank n a.s., so Assumption 1 holds) and labels y^(t) ~ N(0, I_{d_out}). The size is
    T = floor((n+1) m / d_out + m + 1) + 1, the smallest integer above Proposition 3's bound
    (:func:`memcap.bounds.relu_capacity`). Returns a regression :class:`~memcap.data.MemorizationTask`
    with shared ``contexts`` (n, d), ``queries`` (T, d), ``labels`` (T, d_out). Draw order: x, then y.
    """
    n = positive_int("context_size", context_size)
    d = positive_int("dim", dim)
    m = positive_int("hidden", hidden)
    d_out = positive_int("out_dim", out_dim)
    if n >= d:
        raise ValueError(f"Proposition 3 needs context size n < d, got n = {n} >= d = {d}")
    gen = _resolve.generator(generator)
    dtype, dev = _dtype_device(dtype, device)
    T = math.floor(float(bounds.relu_capacity(n, m, d_out))) + 1
    x = _resolve.randn((T, n), gen, dtype, dev)
    y = _resolve.randn((T, d_out), gen, dtype, dev)
    contexts = torch.eye(n, d, dtype=dtype, device=dev)                               # (n, d): rows s_1, ..., s_n
    queries = torch.cat([torch.zeros(T, d - n, dtype=dtype, device=dev), x], dim=1)  # (T, d)
    return MemorizationTask(contexts, queries, y, classes=None)


@dataclass(frozen=True, eq=False)
class ReLUFit:
    """Result of :func:`fit_relu`: the best network and the residual ||f(X) - Y||_F of every restart.

    ``residuals`` (R,) final residuals; ``history`` (checkpoints, R) residuals along training at the
    steps in ``steps``; ``best`` the parameters of the restart with the smallest final residual.
    """

    best: ReLUParams
    residuals: torch.Tensor
    history: torch.Tensor
    steps: tuple[int, ...]

    @property
    def best_residual(self) -> float:
        """The smallest final residual over the restarts."""
        return float(self.residuals.min())


def fit_relu(inputs: torch.Tensor, labels: torch.Tensor, hidden: int, *, restarts: int = 4,
             steps: int = 3000, lr: float = 1e-2, checkpoints: int = 30,
             generator: torch.Generator | None = None) -> ReLUFit:
    """Train ``restarts`` two-layer ReLU networks with m = ``hidden`` units to fit ``labels`` by Adam.

    ``inputs`` (T, d_in), ``labels`` (T, d_out). All restarts are trained at once (a leading restart
    axis, one optimizer) on the mean squared error, full batch, in the inputs' dtype and device;
    initial weights are Gaussian with variance 1/fan_in and zero biases. Returns a :class:`ReLUFit`.
    Training only ever shows an *upper* bound on the best achievable residual; see
    :func:`relu_residual_lower_bound` for a lower bound.
    """
    inputs = _floating("inputs", inputs)
    check_shape("inputs", inputs, (None, None), "(T, d_in)")
    T, d_in = inputs.shape
    labels = _floating("labels", labels, inputs)
    check_shape("labels", labels, (T, None), "(T, d_out)")
    if labels.dtype != inputs.dtype or not same_device(labels.device, inputs.device):
        raise ValueError(f"labels ({labels.dtype}, {labels.device}) must share the inputs' dtype and device "
                         f"({inputs.dtype}, {inputs.device})")
    m = positive_int("hidden", hidden)
    R = positive_int("restarts", restarts)
    n_steps = positive_int("steps", steps)
    lr = positive_real("lr", lr)
    n_checks = positive_int("checkpoints", checkpoints)
    gen = _resolve.generator(generator)
    d_out = labels.shape[1]
    dev, dtype = inputs.device, inputs.dtype

    def draw(shape: tuple[int, ...], fan_in: int) -> torch.Tensor:
        w = _resolve.randn(shape, gen, torch.float64, dev) / fan_in ** 0.5
        return w.to(dtype).requires_grad_(True)

    W_1, W_2 = draw((R, d_in, m), d_in), draw((R, m, d_out), m)
    b_1 = torch.zeros((R, 1, m), device=dev, dtype=dtype, requires_grad=True)
    b_2 = torch.zeros((R, 1, d_out), device=dev, dtype=dtype, requires_grad=True)
    opt = torch.optim.Adam([W_1, b_1, W_2, b_2], lr=lr)

    def residuals() -> torch.Tensor:
        out = torch.relu(inputs @ W_1 + b_1) @ W_2 + b_2      # (R, T, d_out)
        return ((out - labels) ** 2).sum(dim=(1, 2))          # (R,) squared residuals

    marks = sorted({max(1, round(n_steps * (i + 1) / n_checks)) for i in range(n_checks)})
    history = []
    for step in range(1, n_steps + 1):
        opt.zero_grad()
        loss = residuals()
        loss.sum().backward()
        opt.step()
        if step in marks:
            with torch.no_grad():
                history.append(residuals().sqrt())
    with torch.no_grad():
        final = residuals().sqrt()
        b = int(final.argmin())
        best = ReLUParams(W_1[b].detach().clone(), b_1[b, 0].detach().clone(),
                          W_2[b].detach().clone(), b_2[b, 0].detach().clone())
    return ReLUFit(best=best, residuals=final, history=torch.stack(history), steps=tuple(marks))


def _check_affine_general_position(x: torch.Tensor) -> torch.Tensor:
    """Validate points ``x`` (T, k) with T > k + 1 in affine general position; return them in float64."""
    x = _floating("inputs", x)
    check_shape("inputs", x, (None, None), "(T, k)")
    T, k = x.shape
    if T <= k + 1:
        raise ValueError(f"need more than k + 1 = {k + 1} points, got T = {T}")
    x = x.to(torch.float64)
    lifted = torch.cat([x, torch.ones(T, 1, dtype=x.dtype, device=x.device)], dim=1)  # (T, k+1): (x_t, 1)
    if kruskal_rank(lifted) < k + 1:
        raise ValueError("the inputs are not in affine general position: some k + 1 = "
                         f"{k + 1} of them lie on one affine hyperplane")
    return x


def activation_patterns(inputs: torch.Tensor) -> torch.Tensor:
    """Every set {t : w.x_t + b > 0} that an affine function (one ReLU unit) cuts out of ``inputs``.

    ``inputs`` x (T, k) with T > k + 1 points in affine general position (no k + 1 of them on one
    hyperplane; checked). Each non-trivial pattern equals, for some k points P and the hyperplane h
    through them, {t not in P : s h(x_t) > 0} union S with s = +-1 and S a subset of P (an extreme ray
    of the pattern's cone of (w, b)); the empty and the full set are added. Their number is Cover's
    2 sum_{i <= k} C(T-1, i). Returns a (K, T) boolean tensor of distinct patterns.
    """
    x = _check_affine_general_position(inputs)
    return _activation_patterns(x, tol=1e-9 * float(x.abs().max().clamp_min(1.0)))


def _activation_patterns(x: torch.Tensor, tol: float) -> torch.Tensor:
    """:func:`activation_patterns` without validation; ``tol`` bounds |h(x_t)| away from 0 off P."""
    T, k = x.shape
    lifted = torch.cat([x, torch.ones(T, 1, dtype=x.dtype, device=x.device)], dim=1)  # (T, k+1): (x_t, 1)
    found = {0, (1 << T) - 1}
    subsets_of_p = list(itertools.product((0, 1), repeat=k))
    for P in itertools.combinations(range(T), k):
        normal = torch.linalg.svd(lifted[list(P)], full_matrices=True).Vh[-1]   # (k+1,): orthogonal to (x_t,1), t in P
        values = lifted @ normal                                                # (T,): h(x_t)
        off = [t for t in range(T) if t not in P]
        if off and float(values[off].abs().min()) <= tol:
            raise ValueError("the inputs are not in affine general position: "
                             f"k + 1 = {k + 1} of them lie on one hyperplane (|h| <= {tol:.1e})")
        for sign in (1.0, -1.0):
            base = sum(1 << t for t in off if sign * float(values[t]) > 0)
            for choice in subsets_of_p:
                found.add(base | sum(1 << t for t, c in zip(P, choice) if c))
    codes = torch.tensor(sorted(found), dtype=torch.int64, device=x.device)     # (K,)
    return ((codes[:, None] >> torch.arange(T, device=x.device)) & 1).bool()   # (K, T)


def relu_residual_lower_bound(inputs: torch.Tensor, labels: torch.Tensor, hidden: int, *,
                              max_tuples: int = DEFAULT_MAX_TUPLES) -> dict[str, object]:
    """A lower bound on min over all weights of ||f(X) - Y||_F for two-layer ReLU nets with m units.

    ``inputs`` X (T, k): points in affine general position (no k+1 on one hyperplane; checked, with
    the reduced inputs x^(t) of Proposition 3 in mind), ``labels`` Y (T, d_out), ``hidden`` m.
    For a fixed activation pattern D_j = {t : w_j.x_t + b_j > 0} of every unit, the outputs of the
    network lie, column by column, in the subspace W(D_1, ..., D_m) spanned by 1 and the vectors
    (x_t, 1) 1[t in D_j]; so the residual is at least min over all pattern tuples of dist(Y, W).
    All patterns an affine function can produce are enumerated (see the chapter for why this is
    exhaustive), and all multisets of m of them are examined (a ``ValueError`` naming ``max_tuples``
    when there are more). Returns ``bound`` (float), ``patterns`` (K) and ``tuples`` examined.
    """
    inputs = _floating("inputs", inputs)
    check_shape("inputs", inputs, (None, None), "(T, k)")
    T = inputs.shape[0]
    labels = _floating("labels", labels, inputs)
    check_shape("labels", labels, (T, None), "(T, d_out)")
    m = positive_int("hidden", hidden)
    max_tuples = positive_int("max_tuples", max_tuples)
    x = _check_affine_general_position(inputs)
    y = labels.to(device=x.device, dtype=torch.float64)
    lifted = torch.cat([x, torch.ones(T, 1, dtype=x.dtype, device=x.device)], dim=1)  # (T, k+1)
    patterns = _activation_patterns(x, tol=1e-9 * float(lifted.abs().max()))          # (K, T)
    K = patterns.shape[0]
    count = math.comb(K + m - 1, m)
    if count > max_tuples:
        raise ValueError(f"relu_residual_lower_bound must examine C({K} + {m} - 1, {m}) = {count} "
                         f"tuples of activation patterns, more than max_tuples = {max_tuples}")
    blocks = patterns.to(x.dtype)[:, :, None] * lifted[None]                         # (K, T, k+1)
    ones = torch.ones(1, T, 1, dtype=x.dtype, device=x.device)
    y_norm2 = float((y ** 2).sum())
    best = math.inf
    tuples = itertools.combinations_with_replacement(range(K), m)
    while True:
        chunk = list(itertools.islice(tuples, _CHUNK))
        if not chunk:
            break
        index = torch.tensor(chunk, dtype=torch.int64, device=x.device)                # (B, m)
        B = blocks[index]                                                              # (B, m, T, k+1)
        basis = torch.cat([B.permute(0, 2, 1, 3).reshape(len(chunk), T, -1),          # (B, T, m(k+1))
                           ones.expand(len(chunk), -1, -1)], dim=2)                    # (B, T, m(k+1)+1)
        U, s, _ = torch.linalg.svd(basis, full_matrices=False)
        keep = s > s[:, :1] * basis.shape[2] * torch.finfo(s.dtype).eps * 10           # (B, r): numerical range
        proj = torch.einsum("btr,to->bro", U, y)                                       # (B, r, d_out)
        captured = ((proj ** 2).sum(dim=2) * keep).sum(dim=1)                          # (B,)
        best = min(best, float((y_norm2 - captured).clamp_min(0).min()))
    return {"bound": math.sqrt(best), "patterns": K, "tuples": count}


# ---------------------------------------------------------------------------------------------------
# Proposition 4: one layer of mean mixing


def mean_mixing_layer(dim: int, *, dtype: torch.dtype | None = None,
                      device: torch.device | str | None = None) -> MHAParams:
    """The self-attention layer A_0 of Proposition 4 as :class:`~memcap.models.MHAParams`.

    One head, W_K = W_Q = 0 (d x 1, so every softmax is uniform), W_V = W_O = I_d (d_v = d), skip
    connection on, and W_D = I_d so that the output is the new token itself: e' = e + (1/n) sum_i e_i.
    """
    d = positive_int("dim", dim)
    dtype, dev = _dtype_device(dtype, device)
    eye = torch.eye(d, dtype=dtype, device=dev)
    zero = torch.zeros(1, d, 1, dtype=dtype, device=dev)
    return MHAParams(W_K=zero, W_Q=zero.clone(), W_V=eye[None].clone(), W_O=eye.clone(), W_D=eye.clone(),
                     skip=True)


def apply_self_attention(params: MHAParams, contexts: torch.Tensor,
                         queries: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Pass every token of every example through one attention layer over its own context.

    The layer must map R^d to R^d (d_out = d). ``contexts`` (T, n, d) or shared (n, d); ``queries``
    (T, d). Returns the new contexts E' (same shape; row i is the layer at query e_i) and the new
    queries e' (T, d), as in Mahdavi et al., Section 4.4.
    """
    if not isinstance(params, MHAParams):
        raise TypeError(f"params must be MHAParams, got {type(params).__name__}")
    if params.out_dim != params.dim:
        raise ValueError(f"the layer must map R^d to R^d, got d = {params.dim} and d_out = {params.out_dim}")
    contexts = _floating("contexts", contexts, params.W_K)
    queries = _floating("queries", queries, params.W_K)
    new_queries = mha_forward(params, contexts, queries)                   # (T, d)
    if contexts.ndim == 2:
        return mha_forward(params, contexts, contexts), new_queries       # (n, d): the shared context
    T, n, d = contexts.shape
    per_token = contexts.repeat_interleave(n, dim=0)                       # (T*n, n, d): context of each token
    new = mha_forward(params, per_token, contexts.reshape(T * n, d))       # (T*n, d)
    return new.reshape(T, n, d), new_queries


def cls_token_data(examples: int, context_size: int, dim: int, *, generator: torch.Generator | None = None,
                   dtype: torch.dtype | None = None,
                   device: torch.device | str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """ViT-like data: every query is the same [CLS] token, which is also row 0 of every context.

    The [CLS] token c and the n-1 patch tokens of each example are i.i.d. N(0, I_d). The queries
    {c, ..., c} have Kruskal rank 1 < n, so Assumption 1 fails (for n >= 2); the contexts have rank n
    a.s. (Assumption 2) when n <= d. Returns ``contexts`` (T, n, d) and ``queries`` (T, d).
    """
    T = positive_int("examples", examples)
    n = positive_int("context_size", context_size)
    d = positive_int("dim", dim)
    gen = _resolve.generator(generator)
    dtype, dev = _dtype_device(dtype, device)
    cls = _resolve.randn((d,), gen, dtype, dev)
    patches = _resolve.randn((T, n - 1, d), gen, dtype, dev)
    contexts = torch.cat([cls.expand(T, 1, d), patches], dim=1)           # (T, n, d): [CLS] in row 0
    return contexts, cls.expand(T, d).clone()                             # queries (T, d)
