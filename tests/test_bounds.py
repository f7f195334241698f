"""Tests of memcap.bounds: hand-computed values, SymPy identities between the papers' closed forms,
argument validation, and inequalities that the theorems imply."""
from __future__ import annotations

import math
import re

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from memcap import bounds as B

PROPERTY = settings(max_examples=25, deadline=None)
C = B.JL_CONSTANT_EXPR


# ----------------------------------------------------------------------------------- hand values


def test_mahdavi_values_by_hand() -> None:
    assert B.mha_capacity(heads=4, context_size=32, head_dim=64) == 4 * 31 + 1
    assert B.mha_capacity(heads=2, context_size=10, head_dim=3) == 2 * 2 + 1  # r = min(n, d_h) = 3
    assert B.mha_capacity_remark1(heads=3, kruskal_rank=5, head_dim=8) == 13
    assert B.mha_shared_rank_bound(heads=3, context_size=5) == 13
    assert B.mha_simplex_rank_bound(heads=2, dim=4) == 7
    assert B.mha_param_count(heads=4, dim=64, head_dim=64, value_dim=1, out_dim=100) == 32768 + 256 + 6400
    assert B.relu_capacity(context_size=5, hidden=10, out_dim=3) == pytest.approx(6 * 10 / 3 + 11)
    assert B.relu_param_count(context_size=2, dim=3, hidden=4, out_dim=1) == (9 + 1) * 4 + 5


def test_dana_values_by_hand() -> None:
    assert B.aot_capacity(heads=4, head_dim=10, dim=10) == 50
    assert B.aot_param_count(vocab=50, seq_len=2, dim=10, heads=4, head_dim=10) == 10 * (2 + 100 + 160)
    assert B.aot_cor1_param_count(seq_len=2, vocab=50, associations=100) == 2 * (2 + 100 + 4 * 98)
    assert B.cor2_accuracy(heads=4, head_dim=10, dim=10, vocab=50, associations=2500) == pytest.approx(
        0.02 + 0.98 * 50 / 2500)
    assert B.cor2_accuracy(heads=100, head_dim=100, dim=10, vocab=50, associations=2500) == 1.0  # capped
    assert B.accuracy_from_memorized(0, vocab=50, associations=2500) == pytest.approx(1 / 50)
    assert B.accuracy_from_memorized(2500, vocab=50, associations=2500) == pytest.approx(1.0)
    assert B.cor2_capacity_from_accuracy(0.0396, vocab=50, associations=2500) == pytest.approx(50)
    assert B.jl_constant(vocab=50, dim=1000) == pytest.approx(math.sqrt(32 * math.log(51) / 1000))


def test_related_work_counts_by_hand() -> None:
    assert B.kim_param_count(seq_len=2, vocab=50, associations=100) == pytest.approx(52 + math.sqrt(100 * math.log(100)))
    assert B.huben_morris_param_count(seq_len=2, vocab=50, associations=100) == (4 + 2) * (2 + 50 + 100)
    assert B.huben_morris_param_count(seq_len=2, vocab=50, associations=100, dim=10) == 12 * 152
    # S = 2: each of Mahdavi et al.'s heads adds min(S, d_h) - 1 = 1 example, so H = T0 - 1 heads
    assert B.mahdavi_assoc_param_count(seq_len=2, vocab=50, associations=100, dim=10, head_dim=10) == (
        10 * (2 + 100 + 4 * 10 * 99))
    assert B.dana_assoc_param_count(seq_len=2, vocab=50, associations=100, dim=10) == 10 * (2 + 100 + 4 * 90)


def test_return_types() -> None:
    assert type(B.mha_capacity(4, 8, 8)) is int
    assert type(B.mha_param_count(1, 2, 3, 4, 5)) is int
    assert type(B.aot_param_count(5, 2, 3, 4, 5)) is int
    assert type(B.mahdavi_assoc_param_count(3, 5, 9, 4, 2)) is int
    assert type(B.relu_capacity(1, 1, 1)) is float
    assert type(B.cor2_accuracy(1, 1, 2, 2, 10)) is float


# ------------------------------------------------------------------------------- Theorem 2 (Dana)


def test_thm2_lambda_bound_solves_the_worst_case_of_eq6() -> None:
    # The bound is the lambda with 1 + (N - 1) exp(-lambda (1 - 2C)) = e^h: every j != g contributes at
    # most exp(-lambda (1 - 2C)) to the sum of Eq. (6).
    lam = B.THM2_LAMBDA_BOUND_EXPR
    residual = 1 + (B.N - 1) * sp.exp(-lam * (1 - 2 * C)) - sp.exp(B.h)
    assert sp.simplify(residual) == 0
    assert B.thm2_lambda_bound(vocab=50, dim=1000, entropy=math.log(50)) == pytest.approx(0.0, abs=1e-12)
    expected = math.log(49 / (math.exp(0.5) - 1)) / (1 - 2 * B.jl_constant(50, 1000))
    assert B.thm2_lambda_bound(vocab=50, dim=1000, entropy=0.5) == pytest.approx(expected)


@PROPERTY
@given(vocab=st.integers(2, 60), extra=st.integers(1, 5000), e1=st.floats(0.01, 0.99), e2=st.floats(0.01, 0.99),
       p=st.floats(0.001, 0.999), tv=st.floats(0.0, 2.0))
def test_thm2_forms_are_ordered(vocab: int, extra: int, e1: float, e2: float, p: float, tv: float) -> None:
    dim = math.ceil(128 * math.log(vocab + 1)) + extra  # C < 1/2
    lo, hi = sorted((e1 * math.log(vocab), e2 * math.log(vocab)))
    # lambda shrinks as the entropy grows (uniform distribution: lambda -> 0)
    assert B.thm2_lambda_bound(vocab, dim, hi) <= B.thm2_lambda_bound(vocab, dim, lo) + 1e-12
    # d_TV <= 2 makes 1 + 2C + C d_TV <= 1 + 4C: the simplified factor dominates the per-sequence one
    # (at an entropy that a distribution missing with probability p can have: Fano's inequality)
    h = e1 * min(B._fano_entropy(vocab, p), math.log(vocab))
    term = B.thm2_kl_bound_term(vocab, dim, error_prob=p, entropy=h, tv_distance=tv)
    assert 0 <= term <= B.thm2_simplified_kl_bound(vocab, dim, error_prob=p, mean_entropy=h) + 1e-12


def test_thm2_needs_c_below_one_half() -> None:
    with pytest.raises(ValueError, match="needs C = sqrt\\(32 log\\(N\\+1\\)/d\\) < 1/2, i.e. dim > 128 log"):
        B.thm2_lambda_bound(vocab=50, dim=100, entropy=0.5)
    with pytest.raises(ValueError, match="entropy must lie in \\(0, 3.91202\\]"):
        B.thm2_lambda_bound(vocab=50, dim=1000, entropy=4.0)


# ------------------------------------------------------------------------------ SymPy identities


def test_dana_capacity_exceeds_mahdavi_by_h_plus_d_minus_1() -> None:
    mahdavi = B.MHA_CAPACITY_EXPR.subs(B.n, B.d_h)  # context at least as long as the head: r = d_h
    assert sp.simplify(B.AOT_CAPACITY_EXPR - mahdavi - (B.H + B.d - 1)) == 0


def test_corollary_1_is_theorem_1_at_d_2() -> None:
    at_d2 = B.AOT_PARAM_COUNT_EXPR.subs(B.d, 2).subs(B.H, (B.T0 - 2) / B.d_h)  # H d_h = T0 - 2
    assert sp.simplify(at_d2 - B.AOT_COR1_PARAM_COUNT_EXPR) == 0
    assert sp.simplify(B.DANA_ASSOC_PARAM_COUNT_EXPR.subs(B.d, 2) - B.AOT_COR1_PARAM_COUNT_EXPR) == 0
    # "2S + 4N + 8 T0" (Dana et al., Sec. 6) up to a constant
    assert sp.expand(B.AOT_COR1_PARAM_COUNT_EXPR - (2 * B.S + 4 * B.N + 8 * B.T0)) == -16


def test_cor2_forms_are_the_papers_typed_independently() -> None:
    # the library solves phi(X) = acc with SymPy and builds Corollary 2 from phi and the count: compare each
    # with the paper's forms typed here (a wrong phi or count would pass a check of the solve against itself)
    phi = 1 / B.N + (1 - 1 / B.N) * B.X / B.T0                               # Dana et al., Sec. 4.2
    assert sp.simplify(B.ACCURACY_FROM_MEMORIZED_EXPR - phi) == 0
    assert sp.simplify(B.COR2_CAPACITY_FROM_ACCURACY_EXPR - B.T0 * (B.N * B.acc - 1) / (B.N - 1)) == 0
    assert sp.simplify(B.AOT_CAPACITY_EXPR - (B.H * B.d_h + B.d)) == 0
    uncapped = phi.subs(B.X, B.H * B.d_h + B.d)
    assert B.COR2_ACCURACY_EXPR.func is sp.Min and 1 in B.COR2_ACCURACY_EXPR.args
    other = next(a for a in B.COR2_ACCURACY_EXPR.args if a != 1)
    assert sp.simplify(other - uncapped) == 0


@PROPERTY
@given(heads=st.integers(1, 20), head_dim=st.integers(1, 20), dim=st.integers(2, 20), vocab=st.integers(2, 100),
       slack=st.integers(0, 500))
def test_cor2_inverse_numerically(heads: int, head_dim: int, dim: int, vocab: int, slack: int) -> None:
    t0 = heads * head_dim + dim + slack  # below the cap
    a = B.cor2_accuracy(heads, head_dim, dim, vocab, t0)
    assert 1 / vocab < a <= 1
    assert B.cor2_capacity_from_accuracy(a, vocab, t0) == pytest.approx(B.aot_capacity(heads, head_dim, dim))


def test_cor2_accuracy_refuses_d_1() -> None:
    # Corollary 2 needs d >= 2 (the paper omits it): at d = 1 the logits are z W_U[:, 0] for a scalar z, so at
    # most two tokens are ever an argmax. With N = 3 and T0 = 3 sequences, H = 2, d_h = 1, the formula gives
    # accuracy 1, but a table whose three next tokens differ is never all right (expected accuracy <= 25/27).
    with pytest.raises(ValueError, match=r"dim must be >= 2 \(Corollary 2 needs d >= 2"):
        B.cor2_accuracy(2, 1, 1, 3, 3)
    assert B.cor2_accuracy(2, 1, 2, 3, 3) == 1.0


@PROPERTY
@given(heads=st.integers(1, 50), n=st.integers(1, 100), head_dim=st.integers(1, 100))
def test_theorem_1_lower_bound_below_proposition_2_upper_bound(heads: int, n: int, head_dim: int) -> None:
    lower = B.mha_capacity(heads, n, head_dim)
    assert lower <= B.mha_shared_rank_bound(heads, n)
    assert (lower == B.mha_shared_rank_bound(heads, n)) == (head_dim >= n)  # tight iff r = n


@PROPERTY
@given(seq_len=st.integers(2, 6), extra=st.integers(1, 5), head_dim=st.integers(2, 10), t0=st.integers(1, 500))
def test_mahdavi_assoc_heads_are_the_fewest_that_suffice(seq_len: int, extra: int, head_dim: int, t0: int) -> None:
    heads = int(B.MAHDAVI_ASSOC_HEADS_EXPR.subs({B.S: seq_len, B.d_h: head_dim, B.T0: t0}))
    r = min(seq_len, head_dim)
    assert heads >= 1 and heads * (r - 1) + 1 >= t0   # enough, with at least one head (the layer has one)
    assert heads == 1 or t0 > (heads - 1) * (r - 1) + 1   # and no fewer would do
    dim = seq_len + extra
    assert B.mahdavi_assoc_param_count(seq_len, 7, t0, dim, head_dim) == dim * (seq_len + 14 + 4 * head_dim * heads)


# ----------------------------------------------------------------------------------- validation


def test_arguments_are_validated_by_name() -> None:
    with pytest.raises(ValueError, match="heads must be a positive integer, got 0"):
        B.mha_capacity(0, 4, 4)
    with pytest.raises(TypeError, match="head_dim must be a positive integer, got 1.5"):
        B.mha_capacity(1, 4, 1.5)
    with pytest.raises(TypeError, match="context_size must be a positive integer, got True"):
        B.mha_shared_rank_bound(2, True)
    with pytest.raises(ValueError, match="associations must be >= 3"):
        B.aot_cor1_param_count(2, 50, 2)
    with pytest.raises(ValueError, match="accuracy must lie in \\[0, 1\\], got 1.5"):
        B.cor2_capacity_from_accuracy(1.5, 50, 100)
    with pytest.raises(ValueError, match="vocab must be >= 2"):
        B.cor2_capacity_from_accuracy(0.5, 1, 100)
    with pytest.raises(ValueError, match="dim must be >= 4 \\(Huben & Morris need d >= S \\+ 2\\)"):
        B.huben_morris_param_count(2, 50, 100, dim=3)
    with pytest.raises(ValueError, match="needs context size n = seq_len < dim"):
        B.mahdavi_assoc_param_count(4, 50, 100, dim=4, head_dim=4)
    with pytest.raises(ValueError, match="associations must be >= 11"):
        B.dana_assoc_param_count(2, 50, 10, dim=10)
    with pytest.raises(ValueError, match="memorized must lie in \\[0, 100\\]"):
        B.accuracy_from_memorized(101, 50, 100)


def test_registry_lists_every_bound_with_its_expression() -> None:
    assert len(B.BOUNDS) >= 20
    symbols = {B.H, B.n, B.d, B.d_h, B.d_v, B.d_out, B.m, B.N, B.S, B.T0, B.X, B.acc, B.h, B.p_err, B.d_tv, B.C, B.eps, B.norm_WE}
    for name, (expr, fn, description, citation) in B.BOUNDS.items():
        assert fn is getattr(B, name)
        assert isinstance(expr, sp.Expr) and expr.free_symbols <= symbols
        assert description and ("Mahdavi" in citation or "Dana" in citation)
    assert B.BOUNDS["mha_capacity"].expr == B.MHA_CAPACITY_EXPR
    assert all(s.is_integer and s.is_positive for s in (B.H, B.n, B.d, B.d_h, B.d_v, B.d_out, B.m, B.N, B.S, B.T0))


def test_theorem2_term_with_the_jl_constant_equals_the_general_term():
    from memcap import bounds

    N_, d_ = 4, 2000
    c = bounds.jl_constant(N_, d_)
    assert bounds.thm2_kl_term_with_constant(N_, c, 0.2, 0.5, 0.3) == pytest.approx(
        bounds.thm2_kl_bound_term(N_, d_, 0.2, 0.5, 0.3), rel=1e-12)
    with pytest.raises(ValueError, match="Theorem 2 needs C < 1/2"):
        bounds.thm2_kl_term_with_constant(N_, 0.5, 0.1, 0.5, 0.0)


def test_theorem1_excess_divergence():
    from memcap import bounds

    assert bounds.thm1_excess_divergence(3.0, 0.1, 2.0) == pytest.approx(1.2)
    assert bounds.thm1_excess_divergence(3.0, 0.0, 2.0) == 0.0
    with pytest.raises(ValueError, match="epsilon must lie in"):
        bounds.thm1_excess_divergence(3.0, 1.5, 2.0)
    assert bounds.thm1_excess_divergence(1.0, 0.1, 2.0) == pytest.approx(0.4)   # C = 1: all sequences kept
    # C = sqrt(1 + max ||F_1^+ F(t)||^2) >= 1 by definition: a smaller value (e.g. the norm alone) is refused
    with pytest.raises(ValueError, match=r"constant must be >= 1: Theorem 1's C = sqrt\(1 \+"):
        bounds.thm1_excess_divergence(0.5, 0.1, 1.0)


# ------------------------------------------------------------------ exactness, Fano, float range


def test_mahdavi_assoc_heads_are_counted_exactly_beyond_2_to_53() -> None:
    # ceil((T0 - 1)/(r - 1)) in floats: (2^53 + 1)/2 rounds to 2^52 (one head short); SymPy divides exactly
    t0, seq_len, head_dim, dim = 2 ** 53 + 2, 3, 3, 4
    heads = -(-(t0 - 1) // (min(seq_len, head_dim) - 1))
    assert heads == 2 ** 52 + 1
    assert B.mahdavi_assoc_param_count(seq_len, 5, t0, dim, head_dim) == dim * (seq_len + 10 + 4 * head_dim * heads)
    # one association still counts one head: Theorem 1's layer has H >= 1
    assert B.mahdavi_assoc_param_count(2, 5, 1, 3, 2) == B.aot_param_count(5, 2, 3, 1, 2)


def test_theorem2_refuses_pairs_that_break_fano() -> None:
    # N = 4, error 0.1: an entropy above H_b(0.1) + 0.1 log 3 = 0.435 nats belongs to no distribution
    for call in (lambda: B.thm2_kl_bound_term(4, 2000, 0.1, 0.5, 0.3),
                 lambda: B.thm2_kl_term_with_constant(4, 0.2, 0.1, 0.5, 0.3)):
        with pytest.raises(ValueError, match=r"entropy = 0.5 nats is more than Fano's inequality allows with "
                                             r"error_prob = 0.1 and N = 4: .* = 0.434\d*; no distribution"):
            call()
    with pytest.raises(ValueError, match=r"mean_entropy = 1 nats .* error_prob = 0 .*no task has these two means"):
        B.thm2_simplified_kl_bound(4, 2000, 0.0, 1.0)   # returned 0.0: "nothing missed" with 1 nat of noise
    # at the edge the bound is 0 and never below it: the uniform distribution misses with 1 - 1/N
    assert B.thm2_simplified_kl_bound(4, 2000, 0.75, math.log(4)) == 0.0
    assert B.thm2_kl_term_with_constant(4, 0.2, 0.75, math.log(4), 1.0) == 0.0


def test_theorem2_is_finite_at_tiny_entropies() -> None:
    # e^h - 1 rounds to 0 below h ~ 1e-16 (ZeroDivisionError before); log(N - 1) - log(expm1(h)) does not
    for h in (1e-17, 1e-300):
        lam = B.thm2_lambda_bound(5, 100000, h)
        assert math.isfinite(lam) and lam == pytest.approx(
            (math.log(4) - math.log(h)) / (1 - 2 * B.jl_constant(5, 100000)), rel=1e-12)
        term = B.thm2_kl_term_with_constant(5, 0.1, 1e-3, h, 0.5)
        assert term == pytest.approx(1e-3 * (math.log(4) - math.log(h)) * 1.25 / 0.8, rel=1e-12)
    assert B.thm2_simplified_kl_bound(5, 100000, 0.1, 1e-17) > B.thm2_simplified_kl_bound(5, 100000, 0.1, 1e-3)


@pytest.mark.parametrize("call, names", [
    (lambda big: B.relu_capacity(big, 3, 2), "context_size = about 10^400"),
    (lambda big: B.cor2_accuracy(big, 2, 4, 5, 100), "heads = about 10^400"),
    (lambda big: B.cor2_accuracy(2, 2, 4, 5, big), "associations = about 10^400"),
    (lambda big: B.cor2_capacity_from_accuracy(0.5, big, 100), "vocab = about 10^400"),
    (lambda big: B.jl_constant(5, big), "dim = about 10^400"),
    (lambda big: B.thm2_lambda_bound(5, big, 0.5), "dim = about 10^400"),
    (lambda big: B.kim_param_count(2, 5, big), "associations = about 10^400"),
])
def test_integers_beyond_the_floats_are_refused_by_name(call, names: str) -> None:
    with pytest.raises(ValueError, match=f"cannot be evaluated in floats at .*{re.escape(names)}.*exceeds the largest float"):
        call(10 ** 400)
    with pytest.raises(ValueError, match=re.escape("associations must be a finite real number, got an integer of "
                                                   "about 10^400, too large for a float")):
        B.accuracy_from_memorized(1, 5, 10 ** 400)


def test_integer_formulas_stay_exact_for_huge_integers() -> None:
    big = 10 ** 400
    assert B.mha_capacity(big, 3, 3) == 2 * big + 1
    assert B.mahdavi_assoc_param_count(2, 5, big, 3, 2) == 3 * (2 + 10 + 8 * (big - 1))
