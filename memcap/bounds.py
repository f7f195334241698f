"""Every closed-form bound of the book, written once as a SymPy expression.

Each formula is a SymPy expression named ``*_EXPR`` over the symbols below, turned into a numeric
function once with :func:`sympy.lambdify`, and wrapped by a small public function whose keyword names
are the papers' quantities. The wrappers validate their arguments and return an ``int`` where the
formula is integer-valued, a ``float`` otherwise. Chapters import from here and never re-type a bound;
:data:`BOUNDS` lists them all for tables.

Symbols (all positive integers):

==========  ==================  ==========================================================
symbol      keyword             meaning
==========  ==================  ==========================================================
``H``       ``heads``           attention heads
``n``       ``context_size``    context tokens per example (Mahdavi et al.)
``d``       ``dim``             embedding dimension
``d_h``     ``head_dim``        key/query dimension of a head
``d_v``     ``value_dim``       value dimension of a head
``d_out``   ``out_dim``         output dimension
``m``       ``hidden``          hidden width of a two-layer ReLU network
``N``       ``vocab``           dictionary size (Dana et al.)
``S``       ``seq_len``         sequence length (Dana et al.)
``T0``      ``associations``    number of associations / sequences with non-zero probability
==========  ==================  ==========================================================

References: Mahdavi, Liao, Thrampoulidis, *Memorization Capacity of Multi-Head Attention in
Transformers*, ICLR 2024; Dana, Pydi, Chevaleyre, *Memorization in Attention-only Transformers*, 2024.
"""
from __future__ import annotations

import math
import numbers
from typing import Callable, NamedTuple

import sympy as sp
from sympy.codegen.cfunctions import expm1

from memcap._checks import as_float, positive_int

__all__ = [
    "H", "n", "d", "d_h", "d_v", "d_out", "m", "N", "S", "T0", "X", "acc", "h", "p_err", "d_tv", "C", "eps", "norm_WE",
    "MAHDAVI", "DANA",
    "MHA_CAPACITY_EXPR", "MHA_SHARED_RANK_BOUND_EXPR", "MHA_SIMPLEX_RANK_BOUND_EXPR", "MHA_PARAM_COUNT_EXPR",
    "RELU_CAPACITY_EXPR", "RELU_PARAM_COUNT_EXPR", "AOT_CAPACITY_EXPR", "AOT_PARAM_COUNT_EXPR",
    "AOT_COR1_PARAM_COUNT_EXPR", "ACCURACY_FROM_MEMORIZED_EXPR", "COR2_ACCURACY_EXPR",
    "COR2_CAPACITY_FROM_ACCURACY_EXPR", "JL_CONSTANT_EXPR", "THM2_LAMBDA_BOUND_EXPR", "THM2_KL_TERM_ANY_C_EXPR",
    "THM2_KL_TERM_EXPR", "THM1_EXCESS_EXPR", "THM2_SIMPLIFIED_KL_BOUND_EXPR", "KIM_PARAM_COUNT_EXPR",
    "HUBEN_MORRIS_PARAM_COUNT_EXPR", "MAHDAVI_ASSOC_HEADS_EXPR", "MAHDAVI_ASSOC_PARAM_COUNT_EXPR",
    "DANA_ASSOC_PARAM_COUNT_EXPR",
    "mha_capacity", "mha_capacity_remark1", "mha_shared_rank_bound", "mha_simplex_rank_bound", "mha_param_count",
    "relu_capacity", "relu_param_count", "aot_capacity", "aot_param_count", "aot_cor1_param_count",
    "accuracy_from_memorized", "cor2_accuracy", "cor2_capacity_from_accuracy", "jl_constant", "thm2_lambda_bound",
    "thm2_kl_bound_term", "thm2_kl_term_with_constant", "thm1_excess_divergence", "thm2_simplified_kl_bound",
    "kim_param_count", "huben_morris_param_count", "mahdavi_assoc_param_count", "dana_assoc_param_count",
    "Bound", "BOUNDS",
]

H, n, d, d_h, d_v, d_out, m, N, S, T0 = sp.symbols(
    "H n d d_h d_v d_out m N S T_0", positive=True, integer=True)
"""The papers' integer quantities (see the module docstring)."""

X = sp.Symbol("X", real=True, nonnegative=True)
"""Number of associations memorized (the argument of Dana et al.'s map phi to accuracy)."""
acc = sp.Symbol("acc", real=True, nonnegative=True)
"""Expected accuracy."""
h = sp.Symbol("h", real=True, positive=True)
"""Shannon entropy (nats) of a next-token distribution."""
p_err = sp.Symbol("p_err", real=True, nonnegative=True)
"""Probability that the next token differs from the look-up table's answer g(t_{1:S})."""
d_tv = sp.Symbol("d_TV", real=True, nonnegative=True)
"""Total-variation distance between the renormalised error distribution and the uniform one."""
C = sp.Symbol("C", real=True, positive=True)
"""A constant of Dana et al.: Theorem 1's C (depends on the attention), Theorem 2's ||W W^T - I||_inf."""
eps = sp.Symbol("epsilon", real=True, nonnegative=True)
"""Probability mass of the sequences an AoT of Theorem 1 does not keep."""
norm_WE = sp.Symbol("norm_WE", real=True, nonnegative=True)
"""Spectral norm of the (N, T) matrix of optimal logits W E (Dana et al., Theorem 1)."""

MAHDAVI = "Mahdavi et al. (2024)"
DANA = "Dana et al. (2024)"

# ---------------------------------------------------------------------------------------------------
# expressions

MHA_CAPACITY_EXPR = H * (sp.Min(n, d_h) - 1) + 1
"""Mahdavi et al., Theorem 1: T <= H(min(n, d_h) - 1) + 1 examples can be memorized."""
MHA_SHARED_RANK_BOUND_EXPR = H * (n - 1) + 1
"""Mahdavi et al., Proposition 2: rank(Z) <= H(n - 1) + 1 when all contexts are shared."""
MHA_SIMPLEX_RANK_BOUND_EXPR = H * (d - 1) + 1
"""Mahdavi et al., Proposition 5: rank(Z) <= H(d - 1) + 1 when every context token sums to one constant."""
MHA_PARAM_COUNT_EXPR = 2 * H * d * d_h + H * d * d_v + d * d_out
"""Parameters of Mahdavi et al.'s MHA layer (W_K, W_Q, W_V, W_O, W_D), stated after Theorem 1."""
RELU_CAPACITY_EXPR = (n + 1) * m / d_out + m + 1
"""Mahdavi et al., Proposition 3: a two-layer ReLU net with input dimension (n+1)d and m hidden units
memorizes at most (n+1)m/d_out + m + 1 such datasets' examples (d does not appear)."""
RELU_PARAM_COUNT_EXPR = ((n + 1) * d + 1) * m + (m + 1) * d_out
"""Parameters (weights and biases) of that ReLU net, input dimension (n+1)d (Mahdavi et al., App. F)."""

AOT_CAPACITY_EXPR = H * d_h + d
"""Dana et al., Theorem 1 / Corollary 2, the count as the paper states it: H d_h + d. What the book proves
is weaker (see the chapter *Theorem 1*, section on its status): any H + min(d, L) sequences, and up to
H d_h + min(d, L) (L = distinct last tokens) under a separability hypothesis; the count on all N^S
sequences is checked numerically, not proved."""
AOT_PARAM_COUNT_EXPR = d * (S + 2 * N + 4 * d_h * H)
"""Dana et al., Theorem 1: parameters of the one-layer attention-only transformer."""
AOT_COR1_PARAM_COUNT_EXPR = 2 * (S + 2 * N + 4 * (T0 - 2))
"""Dana et al., Corollary 1: d = 2 and H d_h = T0 - 2 memorize T0 associations with this many parameters."""
ACCURACY_FROM_MEMORIZED_EXPR = 1 / N + (1 - 1 / N) * X / T0
"""Dana et al., Sec. 4.2, the map phi: X memorized associations out of T0 give accuracy phi(X)
(the others are guessed uniformly among N tokens)."""
COR2_ACCURACY_EXPR = sp.Min(1, ACCURACY_FROM_MEMORIZED_EXPR.subs(X, AOT_CAPACITY_EXPR))
"""Dana et al., Corollary 2: expected accuracy >= 1/N + (1 - 1/N)(H d_h + d)/T0, capped at 1."""
COR2_CAPACITY_FROM_ACCURACY_EXPR = sp.solve(sp.Eq(ACCURACY_FROM_MEMORIZED_EXPR, acc), X)[0]
"""Inverse of phi: the number of memorized associations that an accuracy acc corresponds to."""
JL_CONSTANT_EXPR = sp.sqrt(32 * sp.log(N + 1) / d)
"""Dana et al., Theorem 2: C = sqrt(32 log(N+1)/d) with ||W W^T - I||_inf <= C (Johnson-Lindenstrauss)."""
THM2_LAMBDA_BOUND_EXPR = sp.log((N - 1) / (sp.exp(h) - 1)) / (1 - 2 * JL_CONSTANT_EXPR)
"""Dana et al., Theorem 2 proof (App. A.3): the scale lambda solving their Eq. (6) is at most
log((N-1)/(e^h - 1)) / (1 - 2C), h the Shannon entropy of the next-token distribution."""
THM2_KL_TERM_ANY_C_EXPR = p_err * sp.log((N - 1) / (sp.exp(h) - 1)) * (1 + 2 * C + C * d_tv) / (1 - 2 * C)
"""Dana et al., Theorem 2's per-sequence term for any C >= ||W W^T - I||_inf with C < 1/2 (their proof
uses nothing else about C)."""
THM2_KL_TERM_EXPR = THM2_KL_TERM_ANY_C_EXPR.subs(C, JL_CONSTANT_EXPR)
"""Dana et al., Theorem 2: the term inside the expectation over t_{1:S} bounding d_KL(pi, L(N, S, d)),
with the Johnson-Lindenstrauss C."""
THM1_EXCESS_EXPR = 2 * C * eps * norm_WE
"""Dana et al., Theorem 1: how much the AoT's divergence may exceed the best sequence encoder's (beside
gamma): 2 C eps ||W E||_2, the factor 2 from their inequality (14)."""
THM2_SIMPLIFIED_KL_BOUND_EXPR = ((1 + 4 * JL_CONSTANT_EXPR) / (1 - 2 * JL_CONSTANT_EXPR)
                                 * p_err * sp.log((N - 1) / (sp.exp(h) - 1)))
"""Dana et al., Theorem 2, simplified form: p_err the mean error probability, h the mean entropy."""

KIM_PARAM_COUNT_EXPR = S + N + sp.sqrt(T0 * sp.log(T0))
"""Kim et al. (2023) as adapted by Dana et al., Sec. 6: O(S + N + sqrt(T0 log T0)) parameters."""
HUBEN_MORRIS_PARAM_COUNT_EXPR = (d + S) * (S + N + T0)
"""Huben & Morris (2023) as counted by Dana et al., Sec. 6: O((d + S)(S + N + T0)), needs d >= S + 2."""
MAHDAVI_ASSOC_HEADS_EXPR = sp.Max(1, sp.ceiling((T0 - 1) / (sp.Min(S, d_h) - 1)))
"""Fewest heads H >= 1 with H(min(S, d_h) - 1) + 1 >= T0 (Mahdavi et al.'s Theorem 1 with n = S; the theorem,
like any attention layer, has at least one head, so T0 = 1 also counts one)."""
MAHDAVI_ASSOC_PARAM_COUNT_EXPR = AOT_PARAM_COUNT_EXPR.subs(H, MAHDAVI_ASSOC_HEADS_EXPR)
"""AoT parameters when the heads are sized by Mahdavi et al.'s guarantee (Dana et al., Sec. 6)."""
DANA_ASSOC_PARAM_COUNT_EXPR = AOT_PARAM_COUNT_EXPR.subs(H, (T0 - d) / d_h)
"""Dana et al., Remarks 1: with H d_h + d = T0, the AoT uses d(S + 2N + 4(T0 - d)) parameters."""


_KEYWORDS = {H: "heads", n: "context_size", d: "dim", d_h: "head_dim", d_v: "value_dim", d_out: "out_dim",
             m: "hidden", N: "vocab", S: "seq_len", T0: "associations"}


def _shown(value: object) -> str:
    """``value`` for an error message: integers beyond 10^15 by their order of magnitude."""
    if isinstance(value, int) and abs(value) >= 10 ** 15:
        return f"about 10^{len(str(abs(value))) - 1}"
    return f"{value!r}"


def _in_floats(expr: sp.Expr) -> sp.Expr:
    """``expr`` written for floats: logarithms of products split, e^h - 1 as expm1(h). For h below about
    1e-16, e^h - 1 rounds to 0 (log((N - 1)/0) divides by zero), and (N - 1)/expm1(h) overflows for a
    subnormal h, though log(N - 1) - log(expm1(h)) is finite; N^2 overflows for N near 1e155."""
    return sp.expand_log(expr, force=True).subs(sp.exp(h) - 1, expm1(h))


def _numeric(args: tuple[sp.Symbol, ...], expr: sp.Expr) -> Callable[..., float]:
    """``expr`` as a function of ``args`` in Python's ints and floats. Integer arithmetic stays exact; where
    a value leaves the floats (an integer argument such as 10**400 met by a division, a logarithm's
    argument, exp), the ``OverflowError`` becomes a ``ValueError`` naming the arguments."""
    fn = sp.lambdify(args, expr, modules="math")
    names = [_KEYWORDS.get(a, str(a)) for a in args]

    def evaluate(*values: float) -> float:
        try:
            return fn(*values)
        except OverflowError:
            given = ", ".join(f"{name} = {_shown(v)}" for name, v in zip(names, values))
            raise ValueError(f"{expr} cannot be evaluated in floats at {given}: a value on the way exceeds "
                             f"the largest float, 1.8e308") from None
    return evaluate


def _exact(args: tuple[sp.Symbol, ...], expr: sp.Expr) -> Callable[..., int]:
    """An integer-valued ``expr`` evaluated exactly by SymPy (its ceiling divides in rationals, not floats:
    ceil((T0 - 1)/r) in floats is one off at T0 = 2^53 + 2)."""
    def evaluate(*values: int) -> int:
        return int(expr.xreplace({a: sp.Integer(v) for a, v in zip(args, values)}))
    return evaluate


_MHA_CAPACITY = _numeric((H, n, d_h), MHA_CAPACITY_EXPR)
_MHA_SHARED_RANK_BOUND = _numeric((H, n), MHA_SHARED_RANK_BOUND_EXPR)
_MHA_SIMPLEX_RANK_BOUND = _numeric((H, d), MHA_SIMPLEX_RANK_BOUND_EXPR)
_MHA_PARAM_COUNT = _numeric((H, d, d_h, d_v, d_out), MHA_PARAM_COUNT_EXPR)
_RELU_CAPACITY = _numeric((n, m, d_out), RELU_CAPACITY_EXPR)
_RELU_PARAM_COUNT = _numeric((n, d, m, d_out), RELU_PARAM_COUNT_EXPR)
_AOT_CAPACITY = _numeric((H, d_h, d), AOT_CAPACITY_EXPR)
_AOT_PARAM_COUNT = _numeric((N, S, d, H, d_h), AOT_PARAM_COUNT_EXPR)
_AOT_COR1_PARAM_COUNT = _numeric((S, N, T0), AOT_COR1_PARAM_COUNT_EXPR)
_ACCURACY_FROM_MEMORIZED = _numeric((X, N, T0), ACCURACY_FROM_MEMORIZED_EXPR)
_COR2_ACCURACY = _numeric((H, d_h, d, N, T0), COR2_ACCURACY_EXPR)
_COR2_CAPACITY_FROM_ACCURACY = _numeric((acc, N, T0), COR2_CAPACITY_FROM_ACCURACY_EXPR)
_JL_CONSTANT = _numeric((N, d), JL_CONSTANT_EXPR)
_THM2_LAMBDA_BOUND = _numeric((N, d, h), _in_floats(THM2_LAMBDA_BOUND_EXPR))
_THM2_KL_TERM = _numeric((N, d, p_err, h, d_tv), _in_floats(THM2_KL_TERM_EXPR))
_THM2_KL_TERM_ANY_C = _numeric((N, C, p_err, h, d_tv), _in_floats(THM2_KL_TERM_ANY_C_EXPR))
_THM1_EXCESS = _numeric((C, eps, norm_WE), THM1_EXCESS_EXPR)
_THM2_SIMPLIFIED_KL_BOUND = _numeric((N, d, p_err, h), _in_floats(THM2_SIMPLIFIED_KL_BOUND_EXPR))
_KIM_PARAM_COUNT = _numeric((S, N, T0), KIM_PARAM_COUNT_EXPR)
_HUBEN_MORRIS_PARAM_COUNT = _numeric((S, N, T0, d), HUBEN_MORRIS_PARAM_COUNT_EXPR)
_MAHDAVI_ASSOC_PARAM_COUNT = _exact((S, N, T0, d, d_h), MAHDAVI_ASSOC_PARAM_COUNT_EXPR)
_DANA_ASSOC_PARAM_COUNT = _numeric((S, N, T0, d), DANA_ASSOC_PARAM_COUNT_EXPR)


# ---------------------------------------------------------------------------------------------------
# argument checks


def _real_in(name: str, value: object, low: float, high: float, *, open_low: bool = False) -> float:
    """``value`` as a float in [low, high] (or (low, high] with ``open_low``), else raise naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r} of type {type(value).__name__}")
    x = as_float(name, value)
    below = x <= low if open_low else x < low
    if not math.isfinite(x) or below or x > high:
        interval = f"({low:g}, {high:g}]" if open_low else f"[{low:g}, {high:g}]"
        raise ValueError(f"{name} must lie in {interval}, got {value!r}")
    return x


def _at_least(name: str, value: object, low: int, why: str) -> int:
    v = positive_int(name, value)
    if v < low:
        raise ValueError(f"{name} must be >= {low} ({why}), got {v}")
    return v


def _jl_below_half(vocab: int, dim: int) -> None:
    """Theorem 2 of Dana et al. divides by 1 - 2C: it needs C < 1/2, i.e. d > 128 log(N + 1)."""
    c = _JL_CONSTANT(vocab, dim)
    if c >= 0.5:
        raise ValueError(f"Dana et al.'s Theorem 2 needs C = sqrt(32 log(N+1)/d) < 1/2, i.e. dim > "
                         f"128 log(vocab + 1) = {128 * math.log(vocab + 1):.1f}; got C = {c:.3f} "
                         f"for vocab = {vocab}, dim = {dim}")


# ---------------------------------------------------------------------------------------------------
# Mahdavi et al.


def mha_capacity(heads: int, context_size: int, head_dim: int) -> int:
    """Mahdavi et al., Theorem 1: examples an H-head attention layer memorizes, H(min(n, d_h) - 1) + 1.

    Holds under their Assumptions 1 and 2 with n < d. Under Remark 1 (queries of Kruskal rank Q < n),
    pass Q as ``context_size`` (see :func:`mha_capacity_remark1`).
    """
    return int(_MHA_CAPACITY(positive_int("heads", heads), positive_int("context_size", context_size),
                             positive_int("head_dim", head_dim)))


def mha_capacity_remark1(heads: int, kruskal_rank: int, head_dim: int) -> int:
    """Mahdavi et al., Remark 1: with queries of Kruskal rank Q < n, H(min(Q, d_h) - 1) + 1 examples
    are still memorized (Theorem 1's formula with n replaced by Q)."""
    return int(_MHA_CAPACITY(positive_int("heads", heads), positive_int("kruskal_rank", kruskal_rank),
                             positive_int("head_dim", head_dim)))


def mha_shared_rank_bound(heads: int, context_size: int) -> int:
    """Mahdavi et al., Proposition 2: with one shared context, rank(Z) <= H(n - 1) + 1 for all weights."""
    return int(_MHA_SHARED_RANK_BOUND(positive_int("heads", heads), positive_int("context_size", context_size)))


def mha_simplex_rank_bound(heads: int, dim: int) -> int:
    """Mahdavi et al., Proposition 5: when 1^T e_i^(t) = C for all context tokens, rank(Z) <= H(d - 1) + 1."""
    return int(_MHA_SIMPLEX_RANK_BOUND(positive_int("heads", heads), positive_int("dim", dim)))


def mha_param_count(heads: int, dim: int, head_dim: int, value_dim: int, out_dim: int) -> int:
    """Parameters of Mahdavi et al.'s MHA layer: 2 H d d_h + H d d_v + d d_out
    (W_K, W_Q: (H, d, d_h); W_V: (H, d, d_v); W_O: (H d_v, d); W_D: (d, d_out))."""
    return int(_MHA_PARAM_COUNT(positive_int("heads", heads), positive_int("dim", dim),
                                positive_int("head_dim", head_dim), positive_int("value_dim", value_dim),
                                positive_int("out_dim", out_dim)))


def relu_capacity(context_size: int, hidden: int, out_dim: int) -> float:
    """Mahdavi et al., Proposition 3: a two-layer ReLU net with input dimension (n+1)d (context and query
    flattened), m hidden units and d_out outputs memorizes at most (n+1)m/d_out + m + 1 of their datasets.

    The bound does not involve d: the proof embeds an n-dimensional problem in the (n+1)d inputs.
    Returns a float; its floor is the largest T allowed.
    """
    return float(_RELU_CAPACITY(positive_int("context_size", context_size), positive_int("hidden", hidden),
                                positive_int("out_dim", out_dim)))


def relu_param_count(context_size: int, dim: int, hidden: int, out_dim: int) -> int:
    """Parameters of Proposition 3's ReLU net with input dimension (n+1)d: ((n+1)d + 1) m + (m + 1) d_out."""
    return int(_RELU_PARAM_COUNT(positive_int("context_size", context_size), positive_int("dim", dim),
                                 positive_int("hidden", hidden), positive_int("out_dim", out_dim)))


# ---------------------------------------------------------------------------------------------------
# Dana et al.


def aot_capacity(heads: int, head_dim: int, dim: int) -> int:
    """Dana et al.'s Theorem 1 count for a one-layer AoT, H d_h + d, as the paper states it.

    An upper limit of what the construction can reach (H d_h + min(d, L) when the sequences end in L
    distinct tokens), not a proved guarantee for every set of sequences: see ``AOT_CAPACITY_EXPR``.
    Dana et al. assume d_h <= d; for d_h > d (the left part of their Figure 2(a)) this is the formula
    evaluated, not a statement of theirs, and it is accepted for that comparison."""
    return int(_AOT_CAPACITY(positive_int("heads", heads), positive_int("head_dim", head_dim),
                             positive_int("dim", dim)))


def aot_param_count(vocab: int, seq_len: int, dim: int, heads: int, head_dim: int) -> int:
    """Dana et al., Theorem 1: parameters of the one-layer AoT, d(S + 2N + 4 d_h H)."""
    return int(_AOT_PARAM_COUNT(positive_int("vocab", vocab), positive_int("seq_len", seq_len),
                                positive_int("dim", dim), positive_int("heads", heads),
                                positive_int("head_dim", head_dim)))


def aot_cor1_param_count(seq_len: int, vocab: int, associations: int) -> int:
    """Dana et al., Corollary 1: an AoT with d = 2 and H d_h = T0 - 2 memorizes T0 associations with
    2(S + 2N + 4(T0 - 2)) parameters (needs T0 >= 3, i.e. at least one head)."""
    return int(_AOT_COR1_PARAM_COUNT(
        positive_int("seq_len", seq_len), positive_int("vocab", vocab),
        _at_least("associations", associations, 3, "T0 = H d_h + 2 with H, d_h >= 1")))


def accuracy_from_memorized(memorized: float, vocab: int, associations: int) -> float:
    """Dana et al.'s map phi (Sec. 4.2): memorizing X of T0 equally likely associations and guessing the
    rest uniformly gives expected accuracy 1/N + (1 - 1/N) X / T0."""
    t0 = positive_int("associations", associations)
    x = _real_in("memorized", memorized, 0.0, as_float("associations", t0))
    return float(_ACCURACY_FROM_MEMORIZED(x, positive_int("vocab", vocab), t0))


def cor2_accuracy(heads: int, head_dim: int, dim: int, vocab: int, associations: int) -> float:
    """Dana et al., Corollary 2: some AoT reaches expected accuracy
    min(1, 1/N + (1 - 1/N)(H d_h + d)/T0) on T0 uniformly weighted associations.

    Stated for d_h <= d; with d_h > d (the left part of their Figure 2(a), which the book plots it on)
    it is the formula evaluated, not the corollary. Needs d >= 2, a hypothesis the paper omits: the proof
    uses Proposition 3's circle encoder, and at d = 1 the logits of any AoT are multiples of one vector,
    so at most two tokens can ever be an argmax and the bound can fail (d = 1 is refused)."""
    return float(_COR2_ACCURACY(positive_int("heads", heads), positive_int("head_dim", head_dim),
                                _at_least("dim", dim, 2, "Corollary 2 needs d >= 2: at d = 1 at most two "
                                          "tokens can ever be an argmax"),
                                positive_int("vocab", vocab), positive_int("associations", associations)))


def cor2_capacity_from_accuracy(accuracy: float, vocab: int, associations: int) -> float:
    """Inverse of Corollary 2's map phi: the number X of memorized associations (out of T0) that an
    expected accuracy corresponds to, X = T0 (N acc - 1)/(N - 1), solved symbolically from phi(X) = acc.

    Needs N >= 2; accuracies below chance 1/N give negative values (less than nothing memorized).
    """
    a = _real_in("accuracy", accuracy, 0.0, 1.0)
    return float(_COR2_CAPACITY_FROM_ACCURACY(
        a, _at_least("vocab", vocab, 2, "with one token every guess is right"),
        positive_int("associations", associations)))


def jl_constant(vocab: int, dim: int) -> float:
    """Dana et al., Theorem 2: the Johnson-Lindenstrauss constant C = sqrt(32 log(N + 1)/d), such that
    some W in R^{d x N} has ||W W^T - I_d||_inf <= C."""
    return float(_JL_CONSTANT(positive_int("vocab", vocab), positive_int("dim", dim)))


def _entropy(name: str, value: object, vocab: int) -> float:
    return _real_in(name, value, 0.0, math.log(vocab), open_low=True)


def _fano_entropy(vocab: int, error_prob: float) -> float:
    """H_b(e) + e log(N - 1) nats: by Fano's inequality, the largest entropy of a distribution on N tokens
    that puts 1 - e on one of them (and, being concave in e, the largest mean entropy at mean miss e)."""
    binary = -sum(q * math.log(q) for q in (error_prob, 1 - error_prob) if q > 0)
    return binary + error_prob * math.log(vocab - 1)


def _check_fano(vocab: int, error_prob: float, entropy: float, entropy_name: str, error_name: str = "error_prob",
                what: str = "no distribution has this pair") -> None:
    """Refuse an (error probability, entropy) pair that breaks Fano's inequality (beyond rounding)."""
    most = _fano_entropy(vocab, error_prob)
    if entropy > most + 1e-12 * (1 + math.log(vocab)):
        raise ValueError(f"{entropy_name} = {entropy:.6g} nats is more than Fano's inequality allows with "
                         f"{error_name} = {error_prob:.6g} and N = {vocab}: {entropy_name} <= H_b({error_name}) + "
                         f"{error_name} log(N - 1) = {most:.6g}; {what}")


def thm2_lambda_bound(vocab: int, dim: int, entropy: float) -> float:
    """Dana et al., Theorem 2 (proof, App. A.3): the scale lambda(t_{1:S}) of their sequence encoder
    satisfies lambda <= log((N - 1)/(e^h - 1)) / (1 - 2C), C = :func:`jl_constant`.

    ``entropy`` h is the Shannon entropy in nats of pi(. | t_{1:S}), in (0, log N]. The paper writes
    H(pi) for the negative entropy sum_j pi_j log pi_j, so its e^{-H} is our e^h. Needs C < 1/2.
    """
    nv = _at_least("vocab", vocab, 2, "the bound has log(N - 1)")
    dm = positive_int("dim", dim)
    _jl_below_half(nv, dm)
    return max(float(_THM2_LAMBDA_BOUND(nv, dm, _entropy("entropy", entropy, nv))), 0.0)   # at h = log N: 0


def thm2_kl_bound_term(vocab: int, dim: int, error_prob: float, entropy: float, tv_distance: float) -> float:
    """Dana et al., Theorem 2: the per-sequence term whose expectation over t_{1:S} bounds
    d_KL(pi, L(N, S, d)):

    (1 - pi(g | t)) log((N - 1)/(e^h - 1)) (1 + 2C + C d_TV(pi~, pi_unif)) / (1 - 2C),

    with ``error_prob`` = 1 - pi(g(t_{1:S}) | t_{1:S}), ``entropy`` h in nats (see
    :func:`thm2_lambda_bound`) and ``tv_distance`` = d_TV(pi~, pi_unif) in [0, 2] (the simplified form's
    1 + 4C corresponds to d_TV <= 2). Needs C < 1/2, and a pair (error_prob, entropy) that some distribution
    has: by Fano's inequality entropy <= H_b(error_prob) + error_prob log(N - 1); others are refused.
    """
    nv = _at_least("vocab", vocab, 2, "the bound has log(N - 1)")
    dm = positive_int("dim", dim)
    _jl_below_half(nv, dm)
    e, hv = _real_in("error_prob", error_prob, 0.0, 1.0), _entropy("entropy", entropy, nv)
    _check_fano(nv, e, hv, "entropy")
    return max(float(_THM2_KL_TERM(nv, dm, e, hv, _real_in("tv_distance", tv_distance, 0.0, 2.0))), 0.0)


def thm2_kl_term_with_constant(vocab: int, constant: float, error_prob: float, entropy: float,
                               tv_distance: float) -> float:
    """Dana et al., Theorem 2's per-sequence term with a given C in (0, 1/2) instead of the
    Johnson-Lindenstrauss value: valid for any unembedding whose Gram deviation ||W W^T - I||_inf is at
    most C (e.g. the measured one). Arguments, and the refusal of pairs that break Fano's inequality, as in
    :func:`thm2_kl_bound_term`."""
    nv = _at_least("vocab", vocab, 2, "the bound has log(N - 1)")
    c = _real_in("constant", constant, 0.0, math.inf, open_low=True)
    if c >= 0.5:
        raise ValueError(f"Theorem 2 needs C < 1/2, got C = {c:.3f}")
    e, hv = _real_in("error_prob", error_prob, 0.0, 1.0), _entropy("entropy", entropy, nv)
    _check_fano(nv, e, hv, "entropy")
    return max(float(_THM2_KL_TERM_ANY_C(nv, c, e, hv, _real_in("tv_distance", tv_distance, 0.0, 2.0))), 0.0)


def thm1_excess_divergence(constant: float, epsilon: float, logits_norm: float) -> float:
    """Dana et al., Theorem 1: the excess 2 C eps ||W E||_2 of the AoT's divergence over the best
    sequence encoder's (gamma aside). ``constant`` C >= 1, ``epsilon`` in [0, 1] the mass of the sequences
    not kept, ``logits_norm`` >= 0 the spectral norm of the optimal logits W E.

    C, the square root of 1 + the largest squared norm of F_1^+ F(t) over the sequences not kept (the
    ``constant`` of the result of :func:`memcap.construct.dana.theorem1_aot`), is at least 1 by definition;
    a smaller value is refused, as it is no such constant (for instance the largest norm itself)."""
    c = _real_in("constant", constant, 0.0, math.inf, open_low=True)
    if c < 1:
        raise ValueError(f"constant must be >= 1: Theorem 1's C = sqrt(1 + max_t ||F_1^+ F(t)||^2) is at least 1 "
                         f"by definition, got C = {constant!r}")
    e = _real_in("epsilon", epsilon, 0.0, 1.0)
    w = _real_in("logits_norm", logits_norm, 0.0, math.inf)
    return float(_THM1_EXCESS(c, e, w))


def thm2_simplified_kl_bound(vocab: int, dim: int, error_prob: float, mean_entropy: float) -> float:
    """Dana et al., Theorem 2, simplified form as the paper states it:
    d_KL(pi, L(N, S, d)) <= (1 + 4C)/(1 - 2C) E[pi(t_{S+1} != g(t_{1:S}))] log((N - 1)/(e^{E[h]} - 1)).

    ``error_prob`` is the mean probability of missing the look-up answer, ``mean_entropy`` the mean
    Shannon entropy in nats. Needs C < 1/2, and means that some task has: mean_entropy <= H_b(error_prob) +
    error_prob log(N - 1) (Fano's inequality, concave in error_prob, so it holds for the means); others are
    refused. The bound is then >= 0.
    """
    nv = _at_least("vocab", vocab, 2, "the bound has log(N - 1)")
    dm = positive_int("dim", dim)
    _jl_below_half(nv, dm)
    e, hbar = _real_in("error_prob", error_prob, 0.0, 1.0), _entropy("mean_entropy", mean_entropy, nv)
    _check_fano(nv, e, hbar, "mean_entropy", what="no task has these two means")
    return max(float(_THM2_SIMPLIFIED_KL_BOUND(nv, dm, e, hbar)), 0.0)   # >= 0 by Fano; rounding aside


# ---------------------------------------------------------------------------------------------------
# parameters needed for T0 associations (Dana et al., Sec. 6)


def kim_param_count(seq_len: int, vocab: int, associations: int) -> float:
    """Kim et al. (2023), adapted by Dana et al. (Sec. 6): T0 associations with O(S + N + sqrt(T0 log T0))
    parameters. Returns S + N + sqrt(T0 log T0), *without* the unknown constant of the O()."""
    return float(_KIM_PARAM_COUNT(positive_int("seq_len", seq_len), positive_int("vocab", vocab),
                                  positive_int("associations", associations)))


def huben_morris_param_count(seq_len: int, vocab: int, associations: int, dim: int | None = None) -> int:
    """Huben & Morris (2023), counted by Dana et al. (Sec. 6): attention heads simulating MLP neurons
    memorize T0 associations with O((d + S)(S + N + T0)) parameters, needing d >= S + 2.

    Returns (d + S)(S + N + T0) *without* the unknown constant of the O(); ``dim`` defaults to the
    smallest allowed d = S + 2.
    """
    s = positive_int("seq_len", seq_len)
    dm = s + 2 if dim is None else _at_least("dim", dim, s + 2, "Huben & Morris need d >= S + 2")
    return int(_HUBEN_MORRIS_PARAM_COUNT(s, positive_int("vocab", vocab),
                                         positive_int("associations", associations), dm))


def mahdavi_assoc_param_count(seq_len: int, vocab: int, associations: int, dim: int, head_dim: int) -> int:
    """AoT parameters d(S + 2N + 4 d_h H) when H is the fewest heads that Mahdavi et al.'s Theorem 1
    (context size n = S) guarantees for T0 examples: H = ceil((T0 - 1)/(min(S, d_h) - 1)).

    This is the comparison of Dana et al., Sec. 6 (capacity H(d_h - 1) + 1 against their H d_h + d).
    Theorem 1 needs n < d, so ``seq_len < dim``, and min(S, d_h) >= 2 for heads to add capacity.
    """
    s = _at_least("seq_len", seq_len, 2, "Theorem 1 adds min(S, d_h) - 1 >= 1 example per head")
    dm = positive_int("dim", dim)
    if s >= dm:
        raise ValueError(f"Mahdavi et al.'s Theorem 1 needs context size n = seq_len < dim, got "
                         f"seq_len = {s}, dim = {dm}")
    dh = _at_least("head_dim", head_dim, 2, "Theorem 1 adds min(S, d_h) - 1 >= 1 example per head")
    return int(_MAHDAVI_ASSOC_PARAM_COUNT(s, positive_int("vocab", vocab),
                                          positive_int("associations", associations), dm, dh))


def dana_assoc_param_count(seq_len: int, vocab: int, associations: int, dim: int = 2) -> int:
    """Dana et al., Theorem 1 and Remarks 1: T0 associations with H d_h = T0 - d, i.e.
    d(S + 2N + 4(T0 - d)) parameters (Corollary 1 is d = 2). Needs T0 > d (at least one head)."""
    dm = positive_int("dim", dim)
    t0 = _at_least("associations", associations, dm + 1, "H d_h = T0 - d must be >= 1")
    return int(_DANA_ASSOC_PARAM_COUNT(positive_int("seq_len", seq_len), positive_int("vocab", vocab), t0, dm))


# ---------------------------------------------------------------------------------------------------
# registry


class Bound(NamedTuple):
    """One closed form: its SymPy expression, the public numeric function, what it says, where from."""

    expr: sp.Expr
    fn: Callable[..., float]
    description: str
    citation: str


BOUNDS: dict[str, Bound] = {
    "mha_capacity": Bound(MHA_CAPACITY_EXPR, mha_capacity, "examples memorized by H heads (lower bound)",
                          f"{MAHDAVI}, Theorem 1"),
    "mha_shared_rank_bound": Bound(MHA_SHARED_RANK_BOUND_EXPR, mha_shared_rank_bound,
                                   "rank of Z with a shared context (upper bound)", f"{MAHDAVI}, Proposition 2"),
    "mha_simplex_rank_bound": Bound(MHA_SIMPLEX_RANK_BOUND_EXPR, mha_simplex_rank_bound,
                                    "rank of Z when context tokens sum to a constant (upper bound)",
                                    f"{MAHDAVI}, Proposition 5"),
    "mha_param_count": Bound(MHA_PARAM_COUNT_EXPR, mha_param_count, "parameters of the MHA layer",
                             f"{MAHDAVI}, Section 4"),
    "relu_capacity": Bound(RELU_CAPACITY_EXPR, relu_capacity,
                           "examples a two-layer ReLU net can memorize (upper bound)", f"{MAHDAVI}, Proposition 3"),
    "relu_param_count": Bound(RELU_PARAM_COUNT_EXPR, relu_param_count,
                              "parameters of that ReLU net (input (n+1)d)", f"{MAHDAVI}, Appendix F"),
    "aot_capacity": Bound(AOT_CAPACITY_EXPR, aot_capacity, "sequences memorized by a one-layer AoT (lower bound)",
                          f"{DANA}, Theorem 1"),
    "aot_param_count": Bound(AOT_PARAM_COUNT_EXPR, aot_param_count, "parameters of the one-layer AoT",
                             f"{DANA}, Theorem 1"),
    "aot_cor1_param_count": Bound(AOT_COR1_PARAM_COUNT_EXPR, aot_cor1_param_count,
                                  "parameters to memorize T0 associations with d = 2", f"{DANA}, Corollary 1"),
    "accuracy_from_memorized": Bound(ACCURACY_FROM_MEMORIZED_EXPR, accuracy_from_memorized,
                                     "accuracy when X of T0 associations are memorized", f"{DANA}, Section 4.2"),
    "cor2_accuracy": Bound(COR2_ACCURACY_EXPR, cor2_accuracy, "expected accuracy of some AoT (lower bound)",
                           f"{DANA}, Corollary 2"),
    "cor2_capacity_from_accuracy": Bound(COR2_CAPACITY_FROM_ACCURACY_EXPR, cor2_capacity_from_accuracy,
                                         "associations memorized, read off an accuracy", f"{DANA}, Corollary 2"),
    "jl_constant": Bound(JL_CONSTANT_EXPR, jl_constant, "Johnson-Lindenstrauss constant C",
                         f"{DANA}, Theorem 2"),
    "thm2_lambda_bound": Bound(THM2_LAMBDA_BOUND_EXPR, thm2_lambda_bound, "scale lambda of the sequence encoder",
                               f"{DANA}, Theorem 2 (App. A.3)"),
    "thm2_kl_bound_term": Bound(THM2_KL_TERM_EXPR, thm2_kl_bound_term,
                                "per-sequence term of the divergence bound", f"{DANA}, Theorem 2"),
    "thm2_kl_term_with_constant": Bound(THM2_KL_TERM_ANY_C_EXPR, thm2_kl_term_with_constant,
                                       "Theorem 2's per-sequence KL term for a given C < 1/2", DANA),
    "thm1_excess_divergence": Bound(THM1_EXCESS_EXPR, thm1_excess_divergence,
                                   "Theorem 1: excess divergence 2 C eps ||W E||_2 over the best encoder", DANA),
    "thm2_simplified_kl_bound": Bound(THM2_SIMPLIFIED_KL_BOUND_EXPR, thm2_simplified_kl_bound,
                                      "divergence of the best sequence encoder (simplified)", f"{DANA}, Theorem 2"),
    "kim_param_count": Bound(KIM_PARAM_COUNT_EXPR, kim_param_count,
                             "parameters for T0 associations, O(), deep MLP-based Transformer",
                             f"Kim et al. (2023) via {DANA}, Section 6"),
    "huben_morris_param_count": Bound(HUBEN_MORRIS_PARAM_COUNT_EXPR, huben_morris_param_count,
                                      "parameters for T0 associations, O(), heads simulating MLPs",
                                      f"Huben & Morris (2023) via {DANA}, Section 6"),
    "mahdavi_assoc_param_count": Bound(MAHDAVI_ASSOC_PARAM_COUNT_EXPR, mahdavi_assoc_param_count,
                                       "AoT parameters for T0 associations via Mahdavi et al.'s capacity",
                                       f"{MAHDAVI}, Theorem 1, as compared in {DANA}, Section 6"),
    "dana_assoc_param_count": Bound(DANA_ASSOC_PARAM_COUNT_EXPR, dana_assoc_param_count,
                                    "AoT parameters for T0 associations", f"{DANA}, Theorem 1 and Remarks 1"),
}
"""Every closed form by name: ``(expr, fn, description, citation)``, for tables in the chapters.

:meta hide-value:
"""
