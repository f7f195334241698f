"""Stacked forward passes: m models of one family evaluated at once, with a leading model axis.

These are the training engine's fast paths: per-model keys and values of a shared context computed
once; a softmax and a cross-entropy with hand-written backward passes for short rows; attention over
scalar values (d_v = 1) with a hand-written backward, on short rows with the tokens on an outer axis;
zero-padding masks; for AoTs on two tokens a closed form over the N^2 possible sequences, whose mixture
of heads and thin products have hand-written backward passes too. The readable definitions of the two
models are :func:`memcap.models.mha_forward` and :func:`memcap.models.aot_forward`;
``tests/test_train.py`` checks that model i of a stack equals them on its slice, gradients included.
"""
from __future__ import annotations

import math
from typing import Sequence

import torch
import torch.nn.functional as F

from memcap._checks import check_shape, check_tensor, float_input, id_tensor, same_device_dtype

SHORT_ROW = 16
"""Rows shorter than this go through :class:`_ShortSoftmax`; longer ones through ``torch.softmax``. Measured
on the reference CPU (one thread, forward and backward): for rows of 8 and of 12 entries torch's kernel took
3.8 and 4.4 times as long as the hand-written one; for rows of 16 to 32 it took 0.45 to 0.75 times as long
(its vector kernel fills a row from 16 entries on)."""


class _ShortSoftmax(torch.autograd.Function):
    """Softmax over the last axis of short rows, with the backward pass written out:
    d scores = theta * (g - sum(g * theta)). Two to three times faster than letting autograd differentiate
    the exp/sum/div of a written-out softmax, which also differentiates the shift by the row maximum."""

    @staticmethod
    def forward(ctx, scores: torch.Tensor) -> torch.Tensor:
        weights = (scores - scores.amax(-1, keepdim=True)).exp_()             # -inf entries (padding) give 0
        weights = weights.div_(weights.sum(-1, keepdim=True))
        ctx.save_for_backward(weights)
        return weights

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        (weights,) = ctx.saved_tensors
        weighted = grad * weights
        return weighted.sub_(weights * weighted.sum(-1, keepdim=True))


class _ScalarValueAttention(torch.autograd.Function):
    """p = sum_j softmax(s)_j v_j along axis ``axis`` of the scores for scalar values (d_v = 1, Mahdavi et al.),
    one value row per head shared by the batch. Two layouts: scores (m, B, H, n) with ``axis`` -1 and
    values (m, 1, H, n), or scores (m, n, H, B) with ``axis`` 1 and values (m, n, H, 1). Returns
    (p, theta): p with the scores' shape but 1 on ``axis``, theta the attention in the scores' layout.

    The backward pass is written out: with w = g theta, d scores = w (v - p) and d values = sum_B w, four
    passes over the scores where autograd through the softmax and the product takes seven. The second
    layout puts the n tokens on an outer axis, so the sums over them add whole contiguous slices: for rows
    of n = 8 it ran forward and backward in about half the time of the first on the reference CPU (one
    thread; (16, 128, 8, 8) scores, 0.42 ms against 0.80), while for n = 32 torch's softmax over the
    last axis is faster (``SHORT_ROW``)."""

    @staticmethod
    def forward(ctx, scores: torch.Tensor, values: torch.Tensor, axis: int) -> tuple[torch.Tensor, torch.Tensor]:
        if axis == -1 and scores.shape[-1] >= SHORT_ROW:
            theta = torch.softmax(scores, -1)
        else:
            theta = (scores - scores.amax(axis, keepdim=True)).exp_()       # -inf entries (padding) give 0
            theta = theta.div_(theta.sum(axis, keepdim=True))
        p = (theta * values).sum(axis, keepdim=True)
        ctx.save_for_backward(theta, values, p)
        ctx.mark_non_differentiable(theta)
        return p, theta

    @staticmethod
    def backward(ctx, grad: torch.Tensor, _unused: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, None]:
        theta, values, p = ctx.saved_tensors
        weighted = theta * grad                                               # w = g theta, the scores' shape
        return weighted * (values - p), weighted.sum_to_size(values.shape), None


class _Project(torch.autograd.Function):
    """x @ w for x (m, R, d) and w (m, d, K) with few columns d: the backward computes d x as
    (w g^T)^T, an output with R columns, where autograd's g w^T has d columns (MKL on one thread took
    1.3 to 2.3 times as long on the projections and unembeddings of dana_fig1a, fig2b and fig3), then
    copies it into x's layout: left transposed, it slowed the gather's and the MLP's backward passes
    after it (dana_fig3's first paper job 10 % slower a step than without this function)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, w)
        return torch.bmm(x, w)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, w = ctx.saved_tensors
        return torch.bmm(w, grad.transpose(1, 2)).transpose(1, 2).contiguous(), torch.bmm(x.transpose(1, 2), grad)


class _HeadMix(torch.autograd.Function):
    """The heads' mixture of the two-token closed form (:func:`aot_pair_residuals`): from the logits
    l (m, H, t_1, t_2) of a = sigmoid(l) and the heads' outputs O_1, O_2 (m, N, H, d), the sums over
    heads via_1 = sum_h a O_h,1(t_1) as (m, t_1, d, t_2) and via_2 = sum_h a O_h,2(t_2) as (m, t_2, d, t_1).

    Each product needs a in its own layout, (t_1, H, t_2) or (t_2, H, t_1). The backward pass applies the
    sigmoid's derivative to each gradient of a in its product's layout (contiguous) and adds the two into
    the logits' layout in one pass; autograd added them first, one of them transposed, and then ran the
    sigmoid's backward on the strided sum (0.27 + 0.25 + 0.14 ms a step on dana_fig1a's larger stack)."""

    @staticmethod
    def forward(ctx, logits: torch.Tensor, o1: torch.Tensor, o2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a = torch.sigmoid(logits)
        a1, a2 = a.permute(0, 2, 1, 3).contiguous(), a.permute(0, 3, 1, 2).contiguous()   # (m, t_1, H, t_2), (m, t_2, H, t_1)
        ctx.save_for_backward(a1, a2, o1, o2)
        return torch.matmul(o1.transpose(2, 3), a1), torch.matmul(o2.transpose(2, 3), a2)

    @staticmethod
    def backward(ctx, g1: torch.Tensor, g2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        a1, a2 = ctx.saved_tensors[:2]
        o1, o2 = ctx.saved_tensors[2:]
        d1 = torch.ops.aten.sigmoid_backward(torch.matmul(o1, g1), a1)       # (m, t_1, H, t_2): d l via via_1
        d2 = torch.ops.aten.sigmoid_backward(torch.matmul(o2, g2), a2)       # (m, t_2, H, t_1): d l via via_2
        m, t1, H, t2 = d1.shape
        if torch.compiler.is_compiling():   # Inductor lays out an out= tensor its own way (a later view fails)
            grad = (d1.permute(0, 2, 1, 3) + d2.permute(0, 2, 3, 1)).contiguous()
        else:
            grad = torch.add(d1.permute(0, 2, 1, 3), d2.permute(0, 2, 3, 1),
                             out=torch.empty((m, H, t1, t2), dtype=d1.dtype, device=d1.device))
        return grad, torch.matmul(g1, a1.transpose(2, 3)).transpose(2, 3), \
            torch.matmul(g2, a2.transpose(2, 3)).transpose(2, 3)


def _softmax(scores: torch.Tensor) -> torch.Tensor:
    """Softmax over the last axis: a hand-written backward for rows shorter than :data:`SHORT_ROW`, torch's
    kernel otherwise (see there for the measurements)."""
    if scores.shape[-1] < SHORT_ROW:
        return _ShortSoftmax.apply(scores)
    return torch.softmax(scores, -1)


FEW_CLASSES = 32
"""Rows of fewer classes than this go through :class:`_FewClassCrossEntropy`, longer ones through torch's
kernel. Measured on the reference CPU (one thread, forward and backward): on 10 classes torch's kernel
took 2.2 to 3.2 times as long as the hand-written one (dana_fig4's rows), on 20 classes 0.65 times and on
50 to 100 classes 0.6 to 0.9 times as long. So the crossing lies between 10 and 20 classes: rows of 20 to
31 classes would gain from a lower threshold. Left at 32 for now: lowering it changes the float32 rounding
of models with 16 to 31 classes (the quick dana_fig3, the bench's aot), whose build verdicts must then be
checked again."""


class _FewClassCrossEntropy(torch.autograd.Function):
    """Cross-entropy per row with the backward pass written out: d logits = g (softmax - one-hot)."""

    @staticmethod
    def forward(ctx, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        top = logits.amax(-1, keepdim=True)                                    # the shift does not change the value
        exps = (logits - top).exp_()
        total = exps.sum(-1, keepdim=True)
        loss = (top + total.log() - logits.gather(-1, labels[..., None])).squeeze(-1)
        ctx.save_for_backward(exps.div_(total), labels)
        return loss

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        probs, labels = ctx.saved_tensors
        out = probs * grad[..., None]
        return out.scatter_add_(-1, labels[..., None], -grad[..., None]), None


def cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Cross-entropy (...,) of ``logits`` (..., C) at class ``labels`` (...,), one value per row: written out
    with its backward below :data:`FEW_CLASSES` classes, torch's kernel from there on."""
    if logits.shape[-1] < FEW_CLASSES:
        return _FewClassCrossEntropy.apply(logits, labels)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                           reduction="none").view(labels.shape)


def _mha_core(params: dict[str, torch.Tensor], contexts: torch.Tensor, queries: torch.Tensor,
              scale: float, token_bias: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Eqs. (1)-(5) for a stack, without validation: returns (o (m, B, d), theta (m, B, H, n)).

    ``contexts``: shared (m, n, d) or per example (m, B, n, d); ``queries``: (m, B, d). For a shared
    context the keys K_h = E W_K,h and values V_h = E W_V,h are computed once per model, not per
    example (Mahdavi et al.'s code recomputes them for every example). ``token_bias`` (m, n): 0 for a
    context token, -inf for padding, so padded tokens get attention exactly 0.
    """
    m, B, _ = queries.shape
    if contexts.ndim == 3:
        keys = torch.einsum("mnd,mhdk->mhnk", contexts, params["W_K"])      # (m, H, n, d_h), once
        values = torch.einsum("mnd,mhdv->mhnv", contexts, params["W_V"])    # (m, H, n, d_v), once
        d, n, d_h = queries.shape[2], keys.shape[2], keys.shape[3]
        through_M = d * n * (d_h + B) < B * d_h * (d + n)   # fewer operations through M_h = W_Q,h K_h^T (d, n)
        if through_M and values.shape[3] == 1 and n < SHORT_ROW:   # Mahdavi et al.'s d_v = 1, short rows:
            M = torch.matmul(params["W_Q"], keys.transpose(2, 3))              # (m, H, d, n), once
            M = scale * M.permute(0, 3, 1, 2).reshape(m, -1, d)              # (m, n H, d)
            scores = torch.bmm(M, queries.transpose(1, 2)).view(m, n, -1, B)   # (m, n, H, B), Eq. (1)
            if token_bias is not None:
                scores = scores + token_bias[:, :, None, None]
            p, theta = _ScalarValueAttention.apply(scores, values.permute(0, 2, 1, 3), 1)   # Eqs. (2)-(4)
            o = torch.bmm(p[:, 0].transpose(1, 2), params["W_O"])              # (m, B, H) @ (m, H, d), Eq. (5)
            return o, theta.permute(0, 3, 2, 1)                                 # theta as (m, B, H, n)
        if through_M:
            M = torch.matmul(params["W_Q"], keys.transpose(2, 3))              # (m, H, d, n), once
            M = scale * M.permute(0, 2, 1, 3).reshape(m, d, -1)              # (m, d, H n)
            scores = torch.bmm(queries, M).view(m, B, -1, n)                 # (m, B, H, n), Eq. (1)
        else:
            q = torch.einsum("mhdk,mbd->mbhk", params["W_Q"], queries)      # (m, B, H, d_h)
            scores = scale * torch.einsum("mhnk,mbhk->mbhn", keys, q)       # (m, B, H, n), Eq. (1)
        if token_bias is not None:
            scores = scores + token_bias[:, None, None, :]
        if values.shape[3] == 1:   # d_v = 1 (Mahdavi et al.): Eqs. (2)-(4) in one function, no copy of theta
            p, theta = _ScalarValueAttention.apply(scores, values[..., 0][:, None], -1)   # p (m, B, H, 1)
        else:
            theta = _softmax(scores)                                          # Eq. (2)
            p = torch.einsum("mbhn,mhnv->mbhv", theta, values)              # (m, B, H, d_v), Eqs. (3)-(4)
    else:
        q = torch.einsum("mhdk,mbd->mbhk", params["W_Q"], queries)          # (m, B, H, d_h)
        u = torch.einsum("mhdk,mbhk->mbhd", params["W_K"], q)               # (m, B, H, d): W_K,h W_Q,h^T e
        scores = scale * torch.einsum("mbnd,mbhd->mbhn", contexts, u)   # (m, B, H, n), Eq. (1)
        if token_bias is not None:
            scores = scores + token_bias[:, None, None, :]
        theta = _softmax(scores)                                              # Eq. (2)
        z = torch.einsum("mbhn,mbnd->mbhd", theta, contexts)                # (m, B, H, d), Eq. (3)
        p = torch.einsum("mbhd,mhdv->mbhv", z, params["W_V"])               # (m, B, H, d_v), Eq. (4)
    o = torch.bmm(p.reshape(m, B, -1), params["W_O"])                       # (m, B, H*d_v) @ (m, H*d_v, d), Eq. (5)
    return o, theta


def _mahdavi_embed(params: dict[str, torch.Tensor], contexts: torch.Tensor, queries: torch.Tensor,
                   positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Embedding of raw tokens, x W_E + b_E + pos, query at position 0, context token i at position i."""
    W_E, b_E = params["W_E"], params["b_E"]
    e = torch.einsum("mbi,mid->mbd", queries, W_E) + b_E[:, None, :] + positions[0]   # (m, B, d)
    if contexts.ndim == 3:
        E = torch.einsum("mni,mid->mnd", contexts, W_E) + b_E[:, None, :]              # (m, n, d)
    else:
        E = torch.einsum("mbni,mid->mbnd", contexts, W_E) + b_E[:, None, None, :]     # (m, B, n, d)
    return E + positions[1:], e


def mha_outputs(params: dict[str, torch.Tensor], contexts: torch.Tensor, queries: torch.Tensor,
                 positions: torch.Tensor | None,
                 token_bias: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """y_hat (m, B, d_out) and theta (m, B, H, n) of a stack of MHA models, without validation."""
    if positions is None:
        o, theta = _mha_core(params, contexts, queries, 1.0, token_bias)
        return torch.bmm(o, params["W_D"]), theta                            # Eq. (6)
    E, e = _mahdavi_embed(params, contexts, queries, positions)
    o, theta = _mha_core(params, E, e, 1.0 / math.sqrt(e.shape[-1]), token_bias)
    return torch.baddbmm(params["b_D"][:, None, :], o, params["W_D"]), theta   # o W_D + b_D, one pass


def aot_pair_residuals(params: dict[str, torch.Tensor]) -> torch.Tensor:
    """The residual stream r (m, N*N, d) at the last position of every sequence (t_1, t_2) of length S = 2.

    A closed form of Eqs. (1)-(2) for S = 2, exact up to rounding. A sequence has N^2 possible values,
    so every projection is computed once per token and position (m, N, ...), not once per example,
    and the softmax over two positions is a sigmoid, a_h(t_1, t_2) = sigmoid(s_h,1 - s_h,2) with
    s_h,s = (W_Q^h z_2) . (W_K^h z_s). With O_h,s(t) = W_O^h W_V^h z_s(t) (z: the tokens, or W_C x):

        r(t_1, t_2) = x_2(t_2) + sum_h O_h,2(t_2) + sum_h a_h(t_1, t_2) (O_h,1(t_1) - O_h,2(t_2)).

    Row t_1 N + t_2 of the result is the sequence (t_1, t_2). Padded heads (zero weights) get a = 1/2
    and O = 0: they add nothing, exactly as in :func:`aot_outputs`.
    """
    E, P = params["token_embedding"], params["positional_embedding"]         # (m, N, d), (m, 2, d)
    m, N, d = E.shape
    x1, x2 = E + P[:, :1], E + P[:, 1:]                                       # (m, N, d): token at position 1, 2
    z1, z2 = x1, x2
    if "W_C" in params and params["W_C"].shape[1] > 0:                       # shared compression: z = W_C x
        W_C = params["W_C"].transpose(1, 2)                                   # (m, d, d_h)
        z1, z2 = torch.bmm(x1, W_C), torch.bmm(x2, W_C)
    H, d_h, d_in = params["W_Q"].shape[1:]
    q = _Project.apply(z2, params["W_Q"].reshape(m, H * d_h, d_in).transpose(1, 2)).view(m, N, H, d_h)
    W_K = params["W_K"].reshape(m, H * d_h, d_in).transpose(1, 2)            # (m, d_in, H d_h)
    k1, k2 = _Project.apply(z1, W_K).view(m, N, H, d_h), _Project.apply(z2, W_K).view(m, N, H, d_h)
    s2 = (q * k2).sum(-1)                                                     # (m, N, H): s_h,2(t_2)
    s1 = _Project.apply(k1.permute(0, 2, 1, 3).reshape(m * H, N, d_h),
                        q.permute(0, 2, 3, 1).reshape(m * H, d_h, N)).view(m, H, N, N)   # s_h,1(t_1, t_2)
    logits = s1 - s2.transpose(1, 2)[:, :, None, :]                         # (m, H, t_1, t_2): a = sigmoid
    W_OV = torch.matmul(params["W_O"], params["W_V"])                        # (m, H, d, d_in)
    W_OV = W_OV.permute(0, 3, 1, 2).reshape(m, d_in, H * d)
    o1 = _Project.apply(z1, W_OV).view(m, N, H, d)                           # O_h,1(t_1)
    o2 = _Project.apply(z2, W_OV).view(m, N, H, d)                           # O_h,2(t_2)
    # the sums over heads as products with d rows and N columns: (d x H)(H x N); the other way round,
    # (N x H)(H x d), leaves d = 10 columns and took 3.3 times as long (one thread, dana_fig1a's sizes)
    via1, via2 = _HeadMix.apply(logits, o1, o2)   # (m, t_1, d, t_2), (m, t_2, d, t_1): sum_h a O_h,1, sum_h a O_h,2
    base = x2 + o2.sum(2)                                                     # (m, t_2, d)
    r = base[:, None] + via1.transpose(2, 3) - via2.permute(0, 3, 1, 2)       # (m, t_1, t_2, d)
    return r.reshape(m, N * N, d)


def aot_head(params: dict[str, torch.Tensor], r: torch.Tensor) -> torch.Tensor:
    """Logits W_U (W_2 GELU(W_1 r) + I_d) r of residuals ``r`` (m, B, d) (no MLP when w = 0): (m, B, N)."""
    if "W_1" in params and params["W_1"].shape[1] > 0:
        hidden = F.gelu(torch.bmm(r, params["W_1"].transpose(1, 2)))         # (m, B, w)
        r = r + torch.bmm(hidden, params["W_2"].transpose(1, 2))
    return _Project.apply(r, params["W_U"].transpose(1, 2))                  # (m, B, N)


def aot_outputs(params: dict[str, torch.Tensor], tokens: torch.Tensor) -> torch.Tensor:
    """Logits (m, B, N) of a stack of AoTs (Dana et al., Eqs. (1)-(2)), MLP of Section 4.2.1 if present.

    S = 2 goes through the closed form :func:`aot_pair_residuals` (rows gathered per example), any other
    S through :func:`aot_outputs_general`.
    """
    if tokens.shape[-1] != 2:
        return aot_outputs_general(params, tokens)
    N = params["token_embedding"].shape[1]
    return aot_pair_outputs(params, tokens[..., 0] * N + tokens[..., 1])


def aot_pair_outputs(params: dict[str, torch.Tensor], pairs: torch.Tensor) -> torch.Tensor:
    """Logits (m, B, N) of the S = 2 sequences given by their rows ``pairs`` (m, B), t_1 N + t_2, through the
    closed form :func:`aot_pair_residuals` (the rows of the examples gathered)."""
    r = aot_pair_residuals(params)
    d = r.shape[-1]
    return aot_head(params, torch.gather(r, 1, pairs[..., None].expand(-1, -1, d)))


def aot_outputs_general(params: dict[str, torch.Tensor], tokens: torch.Tensor) -> torch.Tensor:
    """Logits (m, B, N) of a stack of AoTs for any S, example by example (Eqs. (1)-(2), MLP if present)."""
    m = tokens.shape[0]
    rows = torch.arange(m, device=tokens.device)[:, None, None]
    x = params["token_embedding"][rows, tokens] + params["positional_embedding"][:, None, :, :]   # (m, B, S, d)
    x_last = x[:, :, -1, :]                                                  # (m, B, d)
    heads_in = x                                                             # (m, B, S, d_in), d_in = d
    if "W_C" in params and params["W_C"].shape[1] > 0:                       # shared compression, d_in = d_h
        heads_in = torch.einsum("mkd,mbsd->mbsk", params["W_C"], x)
    q = torch.einsum("mhkd,mbd->mbhk", params["W_Q"], heads_in[:, :, -1, :])  # (m, B, H, d_h)
    u = torch.einsum("mhkd,mbhk->mbhd", params["W_K"], q)                    # (m, B, H, d_in)
    a = _softmax(torch.einsum("mbsd,mbhd->mbhs", heads_in, u))               # (m, B, H, S)
    A = torch.einsum("mbhs,mbsd->mbhd", a, heads_in)                         # (m, B, H, d_in)
    v = torch.einsum("mhkd,mbhd->mbhk", params["W_V"], A)                    # (m, B, H, d_h)
    r = x_last + torch.einsum("mhek,mbhk->mbe", params["W_O"], v)            # (m, B, d)
    if "W_1" in params and params["W_1"].shape[1] > 0:
        hidden = F.gelu(torch.einsum("mwd,mbd->mbw", params["W_1"], r))      # (m, B, w)
        r = r + torch.einsum("mdw,mbw->mbd", params["W_2"], hidden)          # (W_2 GELU(W_1 r) + I_d) r
    return torch.einsum("mnd,mbd->mbn", params["W_U"], r)                    # (m, B, N)


def _check_stack(params: dict[str, torch.Tensor], required: Sequence[str]) -> int:
    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict of stacked tensors, got {type(params).__name__}")
    missing = [name for name in required if name not in params]
    if missing:
        raise ValueError(f"params lacks the stacked weights {missing}")
    first = check_tensor(f"params[{required[0]!r}]", params[required[0]])
    m = first.shape[0] if first.ndim else 0
    if m == 0:
        raise ValueError(f"params[{required[0]!r}] must have a model axis m >= 1 first, got {tuple(first.shape)}")
    for name, t in params.items():   # every weight on the first one's device, in its dtype
        float_input(f"params[{name!r}]", check_tensor(f"params[{name!r}]", t), first)
        if t.dtype != first.dtype:
            raise ValueError(f"params[{name!r}] has dtype {t.dtype} but params[{required[0]!r}] has dtype "
                             f"{first.dtype}: a stack computes in one dtype")
        if t.ndim == 0 or t.shape[0] != m:
            raise ValueError(f"params[{name!r}] must have the model axis m = {m} first, got {tuple(t.shape)}")
    return m


def _shape(params: dict[str, torch.Tensor], name: str, spec: tuple[int | None, ...], symbols: str, *,
           allow_empty: bool = False) -> torch.Tensor:
    """``params[name]`` checked against ``spec`` (see :func:`memcap._checks.check_shape`), named as such."""
    if name not in params:
        raise ValueError(f"params lacks the stacked weight {name!r} {symbols}")
    return check_shape(f"params[{name!r}]", params[name], spec, symbols, allow_empty=allow_empty)


def mha_forward_stacked(params: dict[str, torch.Tensor], contexts: torch.Tensor, queries: torch.Tensor,
                        positions: torch.Tensor | None = None) -> torch.Tensor:
    """y_hat of m MHA models at once (Mahdavi et al., Eqs. (1)-(6)); model i sees row i of every input.

    ``params``: W_K, W_Q (m, H, d, d_h), W_V (m, H, d, d_v), W_O (m, H*d_v, d), W_D (m, d, d_out), and with
    ``positions`` (n+1, d) also W_E (m, d, d), b_E (m, d), b_D (m, d_out) (Mahdavi et al.'s experimental
    model: embedding, positions, scores / sqrt(d)). ``contexts``: shared (m, n, d) or (m, B, n, d);
    ``queries``: (m, B, d). Returns (m, B, d_out). Without ``positions`` model i equals
    :func:`memcap.models.mha_forward` on its slice.
    """
    m = _check_stack(params, ("W_K", "W_Q", "W_V", "W_O", "W_D") + (("W_E", "b_E", "b_D") if positions is not None else ()))
    W_K = params["W_K"]
    if W_K.ndim != 4:
        raise ValueError(f"params['W_K'] must have shape (m, H, d, d_h), got {tuple(W_K.shape)}")
    _, H, d, d_h = W_K.shape
    _shape(params, "W_K", (m, H, d, d_h), "(m, H, d, d_h)")
    _shape(params, "W_Q", (m, H, d, d_h), "(m, H, d, d_h)")
    d_v = _shape(params, "W_V", (m, H, d, None), "(m, H, d, d_v)").shape[3]
    _shape(params, "W_O", (m, H * d_v, d), "(m, H*d_v, d)")
    d_out = _shape(params, "W_D", (m, d, None), "(m, d, d_out)").shape[2]
    d_raw = d   # the width of the raw tokens: d, or the embedding's input width
    if positions is not None:
        d_raw = _shape(params, "W_E", (m, None, d), "(m, d_in, d)").shape[1]
        _shape(params, "b_E", (m, d), "(m, d)")
        _shape(params, "b_D", (m, d_out), "(m, d_out)")
    queries = float_input("queries", queries, W_K)
    contexts = float_input("contexts", contexts, W_K)
    same_device_dtype(weights=W_K, queries=queries, contexts=contexts)
    check_shape("queries", queries, (m, None, d_raw), "(m, B, d)")
    B = queries.shape[1]
    if contexts.ndim == 3:
        check_shape("contexts", contexts, (m, None, d_raw), "shared (m, n, d)")
    else:
        check_shape("contexts", contexts, (m, B, None, d_raw), "(m, B, n, d)")
    if positions is not None:
        positions = float_input("positions", positions, W_K)
        check_shape("positions", positions, (contexts.shape[-2] + 1, d), "(n+1, d)")
    return mha_outputs(params, contexts, queries, positions)[0]


def aot_forward_stacked(params: dict[str, torch.Tensor], tokens: torch.Tensor) -> torch.Tensor:
    """Last-position logits of m AoTs at once (Dana et al., Eqs. (1)-(2); with W_1, W_2 their Section 4.2.1).

    ``params``: token_embedding (m, N, d), positional_embedding (m, S, d), W_Q, W_K, W_V (m, H, d_h, d),
    W_O (m, H, d, d_h), W_U (m, N, d), optionally W_1 (m, w, d), W_2 (m, d, w), and W_C (m, d_h, d) for
    the shared-compression variant (then W_Q, W_K, W_V are (m, H, d_h, d_h)). ``tokens``: (m, B, S) ids.
    Returns (m, B, N). Without W_1 and W_C model i equals :func:`memcap.models.aot_forward` on its slice.
    """
    m = _check_stack(params, ("token_embedding", "positional_embedding", "W_Q", "W_K", "W_V", "W_O", "W_U"))
    N, d = _shape(params, "token_embedding", (m, None, None), "(m, N, d)").shape[1:]
    S = _shape(params, "positional_embedding", (m, None, d), "(m, S, d)").shape[1]
    tokens = id_tensor("tokens", tokens, device=params["token_embedding"].device)
    check_shape("tokens", tokens, (m, None, S), "(m, B, S)")
    d_in = d
    if "W_C" in params:   # shared compression (W_C of shape (m, 0, d) when absent): heads act on z in R^{d_h}
        if _shape(params, "W_C", (m, None, d), "(m, d_h, d)", allow_empty=True).shape[1] > 0:
            d_in = params["W_C"].shape[1]
    if params["W_Q"].ndim != 4:
        raise ValueError(f"params['W_Q'] must have shape (m, H, d_h, d), got {tuple(params['W_Q'].shape)}")
    H, d_h = params["W_Q"].shape[1:3]
    for name in ("W_Q", "W_K", "W_V"):
        _shape(params, name, (m, H, d_h, d_in), f"(m, H, d_h, {'d_h' if d_in != d else 'd'})")
    _shape(params, "W_O", (m, H, d, d_h), "(m, H, d, d_h)")
    _shape(params, "W_U", (m, N, d), "(m, N, d)")
    if "W_1" in params or "W_2" in params:   # the MLP of Section 4.2.1 (width w = 0: none)
        w = _shape(params, "W_1", (m, None, d), "(m, w, d)", allow_empty=True).shape[1]
        _shape(params, "W_2", (m, d, w), "(m, d, w)", allow_empty=True)
    low, high = int(tokens.min()), int(tokens.max())
    if low < 0 or high >= N:
        raise ValueError(f"tokens must be ids in [0, N) = [0, {N}), got {low if low < 0 else high}")
    return aot_outputs(params, tokens)
