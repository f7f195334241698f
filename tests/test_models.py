"""Tests for memcap.models: both models against hand computations with plain loops, and every check."""
from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from memcap.models import (
    AoTParams,
    MHAParams,
    aot_attention,
    aot_embed,
    aot_forward,
    aot_head_inputs,
    aot_param_count,
    aot_parameter_names,
    aot_sequence_embedding,
    init_aot,
    init_mha,
    mha_attention,
    mha_features,
    mha_features_from_attention,
    mha_forward,
    mha_param_count,
    mha_parameter_names,
    mha_scores,
)

F64 = torch.float64
H, N_CTX, D, D_H, D_V, D_OUT, T = 2, 3, 4, 3, 2, 2, 5


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@pytest.fixture
def mha() -> MHAParams:
    return init_mha(H, D, D_H, D_V, D_OUT, generator=_gen(1), dtype=F64, device="cpu")


@pytest.fixture
def inputs() -> tuple[torch.Tensor, torch.Tensor]:
    g = _gen(2)
    contexts = torch.randn(T, N_CTX, D, generator=g, dtype=F64)
    queries = torch.randn(T, D, generator=g, dtype=F64)
    return contexts, queries


def _loop_mha(params: MHAParams, contexts: torch.Tensor, queries: torch.Tensor):
    """Eqs. (1)-(6) of Mahdavi et al. for one example at a time, with scalar Python loops."""
    E, e = contexts.tolist(), queries.tolist()
    WK, WQ, WV = params.W_K.tolist(), params.W_Q.tolist(), params.W_V.tolist()
    WO, WD = params.W_O.tolist(), params.W_D.tolist()
    Hh, d, d_h, d_v, d_out = params.heads, params.dim, params.head_dim, params.value_dim, params.out_dim
    all_alpha, all_theta, all_z, all_y = [], [], [], []
    for t in range(len(e)):
        alphas, thetas, zs, ps = [], [], [], []
        for h in range(Hh):
            # alpha_i = e_i^T W_K,h W_Q,h^T e
            q = [sum(WQ[h][a][k] * e[t][a] for a in range(d)) for k in range(d_h)]
            alpha = [sum(E[t][i][a] * WK[h][a][k] * q[k] for a in range(d) for k in range(d_h))
                     for i in range(len(E[t]))]
            top = max(alpha)
            w = [math.exp(x - top) for x in alpha]
            theta = [x / sum(w) for x in w]
            z = [sum(theta[i] * E[t][i][a] for i in range(len(E[t]))) for a in range(d)]
            p = [sum(WV[h][a][v] * z[a] for a in range(d)) for v in range(d_v)]
            alphas.append(alpha)
            thetas.append(theta)
            zs.extend(z)
            ps.extend(p)
        o = [sum(WO[r][c] * ps[r] for r in range(Hh * d_v)) for c in range(d)]
        if params.skip:
            o = [o[c] + e[t][c] for c in range(d)]
        y = [sum(WD[c][j] * o[c] for c in range(d)) for j in range(d_out)]
        all_alpha.append(alphas)
        all_theta.append(thetas)
        all_z.append(zs)
        all_y.append(y)
    as_t = lambda x: torch.tensor(x, dtype=F64)  # noqa: E731
    return as_t(all_alpha), as_t(all_theta), as_t(all_z), as_t(all_y)


# ---------------------------------------------------------------------------------------------------
# MHA: values
# ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("skip", [False, True])
def test_mha_matches_loops(mha, inputs, skip):
    contexts, queries = inputs
    params = MHAParams(*mha.parameters(), skip=skip)
    alpha, theta, z, y = _loop_mha(params, contexts, queries)
    torch.testing.assert_close(mha_scores(params.W_K, params.W_Q, contexts, queries), alpha)
    torch.testing.assert_close(mha_attention(params.W_K, params.W_Q, contexts, queries), theta)
    torch.testing.assert_close(mha_features(params.W_K, params.W_Q, contexts, queries), z)
    torch.testing.assert_close(mha_forward(params, contexts, queries), y)


def test_mha_shared_context_equals_copies(mha, inputs):
    _, queries = inputs
    shared = inputs[0][0]                                  # (n, d)
    copies = shared.expand(T, N_CTX, D).contiguous()       # (T, n, d)
    for fn in (mha_scores, mha_attention, mha_features):
        torch.testing.assert_close(fn(mha.W_K, mha.W_Q, shared, queries), fn(mha.W_K, mha.W_Q, copies, queries))
    torch.testing.assert_close(mha_forward(mha, shared, queries), mha_forward(mha, copies, queries))
    theta = mha_attention(mha.W_K, mha.W_Q, shared, queries)
    torch.testing.assert_close(mha_features_from_attention(theta, shared),
                               mha_features_from_attention(theta, copies))


def test_skip_adds_readout_of_query(mha, inputs):
    contexts, queries = inputs
    with_skip = MHAParams(*mha.parameters(), skip=True)
    difference = mha_forward(with_skip, contexts, queries) - mha_forward(mha, contexts, queries)
    torch.testing.assert_close(difference, queries @ mha.W_D)   # W_D^T e for every example


def test_features_head_major_and_from_attention(mha, inputs):
    contexts, queries = inputs
    theta = mha_attention(mha.W_K, mha.W_Q, contexts, queries)
    Z = mha_features(mha.W_K, mha.W_Q, contexts, queries)
    torch.testing.assert_close(mha_features_from_attention(theta, contexts), Z)
    for h in range(H):
        torch.testing.assert_close(Z[:, h * D:(h + 1) * D], torch.einsum("tn,tnd->td", theta[:, h], contexts))


def test_forward_is_eq8(mha, inputs):
    """y_hat = Z diag(W_V,1, ..., W_V,H) W_O W_D (Mahdavi et al., Eq. (8))."""
    contexts, queries = inputs
    Z = mha_features(mha.W_K, mha.W_Q, contexts, queries)
    block = torch.block_diag(*mha.W_V)                     # (H*d, H*d_v)
    torch.testing.assert_close(mha_forward(mha, contexts, queries), Z @ block @ mha.W_O @ mha.W_D)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2 ** 31 - 1), heads=st.integers(1, 3), n=st.integers(1, 5), d=st.integers(1, 6),
       d_h=st.integers(1, 4), shared=st.booleans(), scale=st.sampled_from([0.1, 1.0, 30.0]))
def test_features_in_convex_hull(seed, heads, n, d, d_h, shared, scale):
    """theta_h lies on the simplex and each z_h is a convex combination of the context rows."""
    g = _gen(seed)
    W_K = scale * torch.randn(heads, d, d_h, generator=g, dtype=F64)
    W_Q = torch.randn(heads, d, d_h, generator=g, dtype=F64)
    contexts = torch.randn(*(() if shared else (4,)), n, d, generator=g, dtype=F64)
    queries = torch.randn(4, d, generator=g, dtype=F64)
    theta = mha_attention(W_K, W_Q, contexts, queries)
    assert theta.shape == (4, heads, n)
    assert bool((theta >= 0).all())
    torch.testing.assert_close(theta.sum(-1), torch.ones(4, heads, dtype=F64))
    z = mha_features(W_K, W_Q, contexts, queries).reshape(4, heads, d)
    # a convex combination never exceeds the context's extremes along any direction w
    w = torch.randn(7, d, generator=g, dtype=F64)
    ctx = contexts.expand(4, n, d)
    proj_ctx = torch.einsum("tnd,kd->tkn", ctx, w)         # (T, 7, n)
    proj_z = torch.einsum("thd,kd->thk", z, w)             # (T, H, 7)
    slack = 1e-9 * (1 + proj_ctx.abs().amax())
    assert bool((proj_z <= proj_ctx.amax(-1)[:, None, :] + slack).all())
    assert bool((proj_z >= proj_ctx.amin(-1)[:, None, :] - slack).all())


def test_mha_params_to_and_parameters(mha):
    assert [t.data_ptr() for t in mha.parameters()] == [getattr(mha, n).data_ptr() for n in mha_parameter_names]
    cast = mha.to(dtype=torch.float32)
    assert cast.dtype == torch.float32 and cast.skip == mha.skip and cast.device == mha.device
    assert [t.shape for t in cast.parameters()] == [t.shape for t in mha.parameters()]
    assert mha.dtype == F64   # the original is untouched (frozen)
    assert (mha.heads, mha.dim, mha.head_dim, mha.value_dim, mha.out_dim) == (H, D, D_H, D_V, D_OUT)


def test_init_mha_seeded_and_scaled():
    a = init_mha(3, 50, 40, 30, 20, generator=_gen(5), dtype=F64, device="cpu")
    b = init_mha(3, 50, 40, 30, 20, generator=_gen(5), dtype=F64, device="cpu")
    c = init_mha(3, 50, 40, 30, 20, generator=_gen(6), dtype=F64, device="cpu")
    assert all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters()))
    assert not torch.equal(a.W_K, c.W_K)
    assert init_mha(1, 2, 1, 1, 1, device="cpu").dtype == torch.get_default_dtype()
    # variance 1/fan_in: fan_in = d for W_K, H*d_v for W_O
    assert abs(a.W_K.var().item() * 50 - 1) < 0.1
    assert abs(a.W_O.var().item() * 90 - 1) < 0.1


def test_mha_param_count_matches_tensors(mha):
    """The paper's count 2 H d d_h + H d d_v + d d_out leaves out the H d_v d entries of W_O."""
    for params in (mha, init_mha(4, 8, 5, 3, 7, device="cpu")):
        sizes = (params.heads, params.dim, params.head_dim, params.value_dim, params.out_dim)
        numel = sum(t.numel() for t in params.parameters())
        assert mha_param_count(*sizes) == numel - params.W_O.numel()
    assert mha_param_count(4, 8, 5, 3, 7) == 2 * 4 * 8 * 5 + 4 * 8 * 3 + 8 * 7


# ---------------------------------------------------------------------------------------------------
# MHA: validation messages
# ---------------------------------------------------------------------------------------------------

def test_mha_input_errors(mha, inputs):
    contexts, queries = inputs
    W_K, W_Q = mha.W_K, mha.W_Q
    with pytest.raises(ValueError, match=r"queries must have shape \(T, d\) = \(\*, 4\), got \(5, 3\)"):
        mha_scores(W_K, W_Q, contexts, queries[:, :3])
    with pytest.raises(ValueError, match=r"contexts must have shape \(T, n, d\) = \(5, \*, 4\), got \(4, 3, 4\)"):
        mha_scores(W_K, W_Q, contexts[:4], queries)
    with pytest.raises(ValueError, match=r"contexts must have shape shared \(n, d\) = \(\*, 4\), got \(3, 5\)"):
        mha_scores(W_K, W_Q, torch.zeros(3, 5, dtype=F64), queries)
    with pytest.raises(ValueError, match=r"contexts must have shape \(T, n, d\) = \(5, \*, 4\) or shared"):
        mha_scores(W_K, W_Q, contexts[None], queries)
    with pytest.raises(ValueError, match=r"at least one token \(n >= 1\)"):
        mha_scores(W_K, W_Q, contexts[:, :0], queries)
    with pytest.raises(ValueError, match=r"W_Q must have shape \(H, d, d_h\) = \(2, 4, 3\), got \(2, 4, 2\)"):
        mha_scores(W_K, W_Q[..., :2], contexts, queries)
    with pytest.raises(ValueError, match=r"W_K must have shape \(H, d, d_h\)"):
        mha_scores(W_K[0], W_Q, contexts, queries)
    with pytest.raises(ValueError, match="queries has dtype torch.float32 but contexts has dtype torch.float64"):
        mha_scores(W_K, W_Q, contexts, queries.float())
    with pytest.raises(ValueError, match="W_K has dtype torch.float32 but contexts has dtype torch.float64"):
        mha_scores(W_K.float(), W_Q.float(), contexts, queries)
    with pytest.raises(TypeError, match="contexts must have a floating-point dtype"):
        mha_scores(W_K, W_Q, contexts.long(), queries)
    # array-likes are converted once, to the weights' device and dtype; other objects are refused
    assert torch.equal(mha_scores(W_K, W_Q, contexts, queries.tolist()), mha_scores(W_K, W_Q, contexts, queries))
    assert torch.equal(mha_scores(W_K, W_Q, contexts.numpy(), queries), mha_scores(W_K, W_Q, contexts, queries))
    with pytest.raises(TypeError, match=r"queries must be a tensor \(a torch.Tensor, a NumPy array or a nested "
                                        r"list of numbers\), got str"):
        mha_scores(W_K, W_Q, contexts, "abc")
    with pytest.raises(ValueError, match=r"queries must be finite \(no NaN or inf\): it holds nan at index \(1, 2\)"):
        bad = queries.clone()
        bad[1, 2] = float("nan")
        mha_scores(W_K, W_Q, contexts, bad)
    with pytest.raises(TypeError, match="contexts has dtype torch.float16: memcap computes in float32 or float64"):
        mha_scores(W_K, W_Q, contexts.half(), queries)
    with pytest.raises(TypeError, match="params must be MHAParams"):
        mha_forward((W_K, W_Q), contexts, queries)
    with pytest.raises(ValueError, match=r"queries must have shape \(T, d\)"):
        mha_forward(mha, contexts, queries[0])


def test_attention_input_errors(mha, inputs):
    contexts, queries = inputs
    theta = mha_attention(mha.W_K, mha.W_Q, contexts, queries)
    with pytest.raises(ValueError, match=r"theta must have shape \(T, H, n\), got \(2, 3\)"):
        mha_features_from_attention(theta[0], contexts)
    with pytest.raises(ValueError, match=r"contexts must have shape \(T, n, d\) = \(5, 3, \*\), got \(5, 2, 4\)"):
        mha_features_from_attention(theta, contexts[:, :2])
    with pytest.raises(ValueError, match=r"contexts must have shape shared \(n, d\) = \(3, \*\), got \(2, 4\)"):
        mha_features_from_attention(theta, contexts[0, :2])
    with pytest.raises(ValueError, match=r"or shared \(n, d\)"):
        mha_features_from_attention(theta, contexts[0, 0])
    with pytest.raises(ValueError, match="contexts has dtype torch.float32 but theta has dtype torch.float64"):
        mha_features_from_attention(theta, contexts.float())


def test_mha_params_errors(mha):
    W_K, W_Q, W_V, W_O, W_D = mha.parameters()
    with pytest.raises(ValueError, match=r"W_O must have shape \(H\*d_v, d\) = \(4, 4\), got \(3, 4\)"):
        MHAParams(W_K, W_Q, W_V, W_O[:3], W_D)
    with pytest.raises(ValueError, match=r"W_Q must have shape \(H, d, d_h\) = \(2, 4, 3\), got \(1, 4, 3\)"):
        MHAParams(W_K, W_Q[:1], W_V, W_O, W_D)
    with pytest.raises(ValueError, match=r"W_V must have shape \(H, d, d_v\) = \(2, 4, \*\), got \(2, 3, 2\)"):
        MHAParams(W_K, W_Q, W_V[:, :3], W_O, W_D)
    with pytest.raises(ValueError, match=r"W_D must have shape \(d, d_out\) = \(4, \*\), got \(3, 2\)"):
        MHAParams(W_K, W_Q, W_V, W_O, W_D[:3])
    with pytest.raises(ValueError, match=r"W_K must have shape \(H, d, d_h\), got \(4, 3\)"):
        MHAParams(W_K[0], W_Q, W_V, W_O, W_D)
    with pytest.raises(ValueError, match=r"W_K must have positive sizes"):
        MHAParams(W_K[:, :, :0], W_Q[:, :, :0], W_V, W_O, W_D)
    with pytest.raises(ValueError, match="W_V must have a positive value dimension"):
        MHAParams(W_K, W_Q, W_V[..., :0], W_O[:0], W_D)
    with pytest.raises(ValueError, match="W_D must have a positive output dimension"):
        MHAParams(W_K, W_Q, W_V, W_O, W_D[:, :0])
    with pytest.raises(ValueError, match="W_D has dtype torch.float32 but W_K has dtype torch.float64"):
        MHAParams(W_K, W_Q, W_V, W_O, W_D.float())
    with pytest.raises(TypeError, match="W_V must have a floating-point dtype"):
        MHAParams(W_K, W_Q, W_V.long(), W_O, W_D)
    with pytest.raises(TypeError, match="skip must be a bool"):
        MHAParams(W_K, W_Q, W_V, W_O, W_D, skip=1)


def test_init_and_count_errors():
    with pytest.raises(ValueError, match="heads must be a positive integer, got 0"):
        init_mha(0, 4, 3, 2, 1)
    with pytest.raises(TypeError, match="head_dim must be a positive integer"):
        init_mha(1, 4, 2.5, 2, 1)
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        init_mha(1, 4, 3, 2, 1, generator=0)
    with pytest.raises(TypeError, match="dtype must be a floating-point torch.dtype"):
        init_mha(1, 4, 3, 2, 1, dtype=torch.int64)
    with pytest.raises(ValueError, match="out_dim must be a positive integer, got -1"):
        mha_param_count(1, 4, 3, 2, -1)
    with pytest.raises(ValueError, match="vocab must be a positive integer, got 0"):
        init_aot(0, 2, 4, 1, 1)
    with pytest.raises(ValueError, match="seq_len must be a positive integer, got 0"):
        aot_param_count(5, 0, 4, 1, 1)


# ---------------------------------------------------------------------------------------------------
# AoT
# ---------------------------------------------------------------------------------------------------

VOCAB, SEQ, DIM, HEADS, HDIM, BATCH = 5, 3, 4, 2, 2, 6


@pytest.fixture
def aot() -> AoTParams:
    return init_aot(VOCAB, SEQ, DIM, HEADS, HDIM, generator=_gen(3), dtype=F64, device="cpu")


@pytest.fixture
def tokens() -> torch.Tensor:
    return torch.randint(VOCAB, (BATCH, SEQ), generator=_gen(4))


def _loop_aot(params: AoTParams, tokens: torch.Tensor):
    """Dana et al., Eqs. (1)-(2), one sequence at a time with scalar Python loops."""
    emb, pos = params.token_embedding.tolist(), params.positional_embedding.tolist()
    WQ, WK, WV, WO, WU = (t.tolist() for t in (params.W_Q, params.W_K, params.W_V, params.W_O, params.W_U))
    d, d_h, Hh, S = params.dim, params.head_dim, params.heads, params.seq_len
    all_a, all_A, all_logits = [], [], []
    for seq in tokens.tolist():
        x = [[emb[seq[s]][c] + pos[s][c] for c in range(d)] for s in range(S)]
        resid = list(x[-1])
        a_heads, A_heads = [], []
        for h in range(Hh):
            q = [sum(WQ[h][k][c] * x[-1][c] for c in range(d)) for k in range(d_h)]
            score = [sum(q[k] * WK[h][k][c] * x[s][c] for k in range(d_h) for c in range(d)) for s in range(S)]
            w = [math.exp(v - max(score)) for v in score]
            a = [v / sum(w) for v in w]
            A = [sum(a[s] * x[s][c] for s in range(S)) for c in range(d)]
            v = [sum(WV[h][k][c] * A[c] for c in range(d)) for k in range(d_h)]
            for c in range(d):
                resid[c] += sum(WO[h][c][k] * v[k] for k in range(d_h))
            a_heads.append(a)
            A_heads.append(A)
        all_a.append(a_heads)
        all_A.append(A_heads)
        all_logits.append([sum(WU[j][c] * resid[c] for c in range(d)) for j in range(len(WU))])
    as_t = lambda x: torch.tensor(x, dtype=F64)  # noqa: E731
    return as_t(all_a), as_t(all_A), as_t(all_logits)


def test_aot_matches_loops(aot, tokens):
    a, A, logits = _loop_aot(aot, tokens)
    torch.testing.assert_close(aot_attention(aot, tokens), a)
    torch.testing.assert_close(aot_head_inputs(aot, tokens), A)
    torch.testing.assert_close(aot_forward(aot, tokens), logits)
    torch.testing.assert_close(aot_sequence_embedding(aot, tokens) @ aot.W_U.T, logits)
    assert aot_forward(aot, tokens).shape == (BATCH, VOCAB)


def test_aot_embed_and_attention_rows(aot, tokens):
    X = aot_embed(aot, tokens)
    assert X.shape == (BATCH, SEQ, DIM)
    torch.testing.assert_close(X[2, 1], aot.token_embedding[tokens[2, 1]] + aot.positional_embedding[1])
    a = aot_attention(aot, tokens)
    assert a.shape == (BATCH, HEADS, SEQ) and bool((a >= 0).all())
    torch.testing.assert_close(a.sum(-1), torch.ones(BATCH, HEADS, dtype=F64))


def test_aot_without_heads_contribution_is_unembedded_last_token(aot, tokens):
    """With W_O = 0 the AoT reads out the residual stream only: W_U (e(t_S) + pos_S)."""
    silent = AoTParams(*aot.parameters()[:5], torch.zeros_like(aot.W_O), aot.W_U)
    x_last = aot.token_embedding[tokens[:, -1]] + aot.positional_embedding[-1]
    torch.testing.assert_close(aot_forward(silent, tokens), x_last @ aot.W_U.T)


def test_aot_params_to_parameters_and_count(aot):
    assert tuple(aot_parameter_names) == ("token_embedding", "positional_embedding", "W_Q", "W_K", "W_V",
                                          "W_O", "W_U")
    rebuilt = AoTParams(*aot.parameters())
    assert all(torch.equal(x, y) for x, y in zip(rebuilt.parameters(), aot.parameters()))
    cast = aot.to(dtype=torch.float32)
    assert cast.dtype == torch.float32 and aot.dtype == F64
    assert (aot.vocab, aot.seq_len, aot.dim, aot.heads, aot.head_dim) == (VOCAB, SEQ, DIM, HEADS, HDIM)
    numel = sum(t.numel() for t in aot.parameters())
    assert aot_param_count(VOCAB, SEQ, DIM, HEADS, HDIM) == numel == DIM * (SEQ + 2 * VOCAB + 4 * HDIM * HEADS)


def test_init_aot_seeded():
    a = init_aot(6, 2, 3, 2, 2, generator=_gen(9), dtype=F64, device="cpu")
    b = init_aot(6, 2, 3, 2, 2, generator=_gen(9), dtype=F64, device="cpu")
    assert all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters()))


def test_aot_token_errors(aot, tokens):
    with pytest.raises(TypeError, match="tokens must have an integer dtype"):
        aot_forward(aot, tokens.double())
    with pytest.raises(TypeError, match="tokens must have an integer dtype"):
        aot_forward(aot, tokens > 2)
    with pytest.raises(ValueError, match=r"tokens must be ids in \[0, N\) = \[0, 5\), got 5"):
        aot_forward(aot, torch.full((2, SEQ), 5))
    with pytest.raises(ValueError, match=r"tokens must be ids in \[0, N\) = \[0, 5\), got -1"):
        aot_attention(aot, torch.full((2, SEQ), -1))
    with pytest.raises(ValueError, match=r"tokens must have shape \(B, S\) = \(\*, 3\), got \(6, 2\)"):
        aot_embed(aot, tokens[:, :2])
    with pytest.raises(ValueError, match=r"tokens must have shape \(B, S\)"):
        aot_head_inputs(aot, tokens[0])
    with pytest.raises(TypeError, match="params must be AoTParams"):
        aot_forward(None, tokens)
    assert torch.equal(aot_sequence_embedding(aot, tokens.tolist()), aot_sequence_embedding(aot, tokens))
    with pytest.raises(TypeError, match="tokens must have an integer dtype"):
        aot_sequence_embedding(aot, tokens.double())


def test_aot_params_errors(aot):
    e, pos, W_Q, W_K, W_V, W_O, W_U = aot.parameters()
    with pytest.raises(ValueError, match=r"W_O must have shape \(H, d, d_h\) = \(2, 4, 2\), got \(2, 2, 4\)"):
        AoTParams(e, pos, W_Q, W_K, W_V, W_O.transpose(1, 2), W_U)
    with pytest.raises(ValueError, match=r"W_U must have shape \(N, d\) = \(5, 4\), got \(4, 4\)"):
        AoTParams(e, pos, W_Q, W_K, W_V, W_O, W_U[:4])
    with pytest.raises(ValueError, match=r"positional_embedding must have shape \(S, d\) = \(\*, 4\), got \(3, 3\)"):
        AoTParams(e, pos[:, :3], W_Q, W_K, W_V, W_O, W_U)
    with pytest.raises(ValueError, match="positive sequence length S"):
        AoTParams(e, pos[:0], W_Q, W_K, W_V, W_O, W_U)
    with pytest.raises(ValueError, match=r"token_embedding must have shape \(N, d\)"):
        AoTParams(e[0], pos, W_Q, W_K, W_V, W_O, W_U)
    with pytest.raises(ValueError, match=r"W_Q must have shape \(H, d_h, d\) with positive sizes"):
        AoTParams(e, pos, W_Q[0], W_K, W_V, W_O, W_U)
    with pytest.raises(ValueError, match=r"W_K must have shape \(H, d_h, d\) = \(2, 2, 4\), got \(1, 2, 4\)"):
        AoTParams(e, pos, W_Q, W_K[:1], W_V, W_O, W_U)
    with pytest.raises(ValueError, match=r"W_V must have shape \(H, d_h, d\)"):
        AoTParams(e, pos, W_Q, W_K, W_V[:, :1], W_O, W_U)
    with pytest.raises(ValueError, match="W_U has dtype torch.float32 but token_embedding has dtype torch.float64"):
        AoTParams(e, pos, W_Q, W_K, W_V, W_O, W_U.float())
    with pytest.raises(TypeError, match="token_embedding must have a floating-point dtype"):
        AoTParams(e.long(), pos, W_Q, W_K, W_V, W_O, W_U)


def test_empty_batches_are_refused_naming_the_argument(mha, aot):
    """An empty batch is refused like every empty input (one rule for every public function)."""
    shared, no_queries = torch.rand(N_CTX, D, dtype=F64), torch.zeros(0, D, dtype=F64)
    with pytest.raises(ValueError, match=r"queries must not be empty: shape \(T, d\) = \(0, 4\)"):
        mha_forward(mha, shared, no_queries)
    with pytest.raises(ValueError, match="queries must not be empty"):
        mha_features(mha.W_K, mha.W_Q, shared, no_queries)
    with pytest.raises(ValueError, match="tokens must not be empty"):
        aot_forward(aot, torch.zeros(0, SEQ, dtype=torch.int64))
