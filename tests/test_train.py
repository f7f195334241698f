"""Tests of the stacked training engine (memcap/train/).

Tolerances: stacked and one-by-one runs execute the same float64 arithmetic except for the order of
batched reductions, so weights agree to ~1e-12; we assert 1e-9 after tens of Adam steps.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from memcap.models import AoTParams, MHAParams, aot_forward, mha_forward
from memcap.train import (
    AoTSpec,
    MHASpec,
    TrainConfig,
    aot_forward_stacked,
    capacity_search,
    group_by_shape,
    lr_factor,
    mha_forward_stacked,
    spec_from_dict,
    train_models,
    trained_attention,
)
from memcap.train.prepare import init_one
from memcap.train.stack import Stack

pytestmark = pytest.mark.usefixtures("one_thread")


def _stack_params(specs):
    inits = [init_one(s) for s in specs]
    return inits, {n: torch.stack([p[n] for p in inits]) for n in inits[0]}


@pytest.mark.parametrize("shared", [True, False])
def test_stacked_mha_equals_models_mha_forward(shared):
    specs = [MHASpec(heads=h, context_size=5, examples=7, dim=6, head_dim=3, value_dim=2, classes=4,
                     shared=shared, embedding=False, seed=s) for h, s in [(3, 0), (3, 1), (3, 2)]]
    inits, stacked = _stack_params(specs)
    gen = torch.Generator().manual_seed(0)
    ctx = torch.rand((3, 5, 6) if shared else (3, 7, 5, 6), generator=gen, dtype=torch.float64)
    qry = torch.rand(3, 7, 6, generator=gen, dtype=torch.float64)
    out = mha_forward_stacked(stacked, ctx, qry)
    assert out.shape == (3, 7, 4)
    for i, p in enumerate(inits):
        ref = mha_forward(MHAParams(**p), ctx[i], qry[i])
        assert torch.allclose(out[i], ref, atol=1e-10, rtol=0)


@pytest.mark.parametrize("mlp", [0, 5])
def test_stacked_aot_equals_models_aot_forward(mlp):
    specs = [AoTSpec(heads=3, head_dim=2, dim=4, vocab=6, seq_len=3, mlp_width=mlp, seed=s) for s in range(3)]
    inits, stacked = _stack_params(specs)
    tokens = torch.randint(6, (3, 9, 3), generator=torch.Generator().manual_seed(1))
    out = aot_forward_stacked(stacked, tokens)
    for i, p in enumerate(inits):
        assert p["W_C"].shape == (0, 4)                       # Eq. (2): no shared compression
        core = {k: v for k, v in p.items() if k not in ("W_1", "W_2", "W_C")}
        ref_r = aot_forward(AoTParams(**core), tokens[i]) if mlp == 0 else None
        if mlp == 0:
            assert torch.allclose(out[i], ref_r, atol=1e-10, rtol=0)
        else:   # with the MLP: W_U (W_2 GELU(W_1 r) + r), r the AoT's sequence embedding
            from memcap.models import aot_sequence_embedding
            r = aot_sequence_embedding(AoTParams(**core), tokens[i])
            r = r + torch.nn.functional.gelu(r @ p["W_1"].T) @ p["W_2"].T
            assert torch.allclose(out[i], r @ p["W_U"].T, atol=1e-10, rtol=0)


def test_shared_compression_is_eq2_with_heads_on_compressed_tokens():
    """The variant equals, by hand, x_S + sum_h W_O^h W_V^h sum_s a_s z_s with z = W_C x, a = softmax over s
    of (W_Q^h z_S) . (W_K^h z_s), and its init keeps Eq. (2)'s random stream for the shared weights."""
    spec = AoTSpec(heads=2, head_dim=2, dim=3, vocab=5, seq_len=3, seed=4, shared_compression=True)
    plain = init_one(AoTSpec(heads=2, head_dim=2, dim=3, vocab=5, seq_len=3, seed=4))
    p = init_one(spec)
    assert p["W_C"].shape == (2, 3) and p["W_Q"].shape == (2, 2, 2) and p["W_O"].shape == (2, 3, 2)
    for name in ("token_embedding", "positional_embedding", "W_O", "W_U"):
        assert torch.equal(p[name], plain[name])
    tokens = torch.randint(5, (1, 7, 3), generator=torch.Generator().manual_seed(0))
    out = aot_forward_stacked({k: v[None] for k, v in p.items()}, tokens)[0]
    x = p["token_embedding"][tokens[0]] + p["positional_embedding"]          # (B, S, d)
    z = x @ p["W_C"].T                                                       # (B, S, d_h)
    r = x[:, -1].clone()
    for h in range(2):
        q, k, v = z[:, -1] @ p["W_Q"][h].T, z @ p["W_K"][h].T, z @ p["W_V"][h].T
        a = torch.softmax(torch.einsum("bk,bsk->bs", q, k), dim=-1)
        r = r + torch.einsum("bs,bsk->bk", a, v) @ p["W_O"][h].T
    assert torch.allclose(out, r @ p["W_U"].T, atol=1e-10, rtol=0)
    bad = {k: v[None] for k, v in p.items()}
    bad["W_Q"] = torch.zeros(1, 2, 2, 3, dtype=torch.float64)                # (H, d_h, d) where d_h is needed
    with pytest.raises(ValueError, match="W_Q"):
        aot_forward_stacked(bad, tokens)


def test_shared_compression_trains_stacked_with_padding_as_one_by_one():
    cfg = TrainConfig(steps=25, batch_size=16, lr=1e-2, schedule="constant", early_stop=False, dtype="float64",
                      device="cpu")
    specs = [AoTSpec(heads=H, head_dim=dh, dim=3, vocab=5, seed=i, shared_compression=True)
             for i, (H, dh) in enumerate([(1, 1), (3, 3), (2, 2)])]
    stacked = train_models(specs, cfg, keep_params=True)
    for i, spec in enumerate(specs):
        alone = train_models([spec], cfg, keep_params=True)
        for name, w in alone.params[0].items():
            assert np.allclose(w, stacked.params[i][name], atol=1e-9, rtol=0), name


def test_shared_compression_is_its_own_stack_and_needs_d_h_at_most_d():
    specs = [AoTSpec(heads=1, head_dim=2, dim=3, vocab=4, shared_compression=c) for c in (False, True, False)]
    assert group_by_shape(specs) == [[0, 2], [1]]
    with pytest.raises(ValueError, match="head_dim must be at most dim"):
        AoTSpec(heads=1, head_dim=4, dim=3, shared_compression=True)
    with pytest.raises(TypeError, match="shared_compression"):
        AoTSpec(heads=1, head_dim=2, dim=3, shared_compression=1)


def test_mahdavi_embedding_model_is_mha_on_embedded_tokens():
    """The experimental model = Eqs. (1)-(6) on x W_E + b_E + pos with W_K scaled by 1/sqrt(d)."""
    from memcap.data import sinusoidal_positions
    spec = MHASpec(heads=2, context_size=4, examples=5, dim=6, classes=3, seed=3)
    (p,), stacked = _stack_params([spec])
    stacked["b_E"] = torch.rand(1, 6, dtype=torch.float64)
    stacked["b_D"] = torch.rand(1, 3, dtype=torch.float64)
    gen = torch.Generator().manual_seed(2)
    ctx, qry = torch.rand(1, 4, 6, generator=gen, dtype=torch.float64), torch.rand(1, 5, 6, generator=gen, dtype=torch.float64)
    pos = sinusoidal_positions(5, 6, dtype=torch.float64, device="cpu")
    out = mha_forward_stacked(stacked, ctx, qry, pos)[0]
    E = ctx[0] @ p["W_E"] + stacked["b_E"][0] + pos[1:]
    e = qry[0] @ p["W_E"] + stacked["b_E"][0] + pos[0]
    core = MHAParams(W_K=p["W_K"] / math.sqrt(6), W_Q=p["W_Q"], W_V=p["W_V"], W_O=p["W_O"], W_D=p["W_D"])
    assert torch.allclose(out, mha_forward(core, E, e) + stacked["b_D"][0], atol=1e-10, rtol=0)


def test_stacked_training_equals_one_by_one():
    cfg = TrainConfig(steps=40, batch_size=8, lr=1e-2, eval_every=10, early_stop=False, dtype="float64", device="cpu")
    # one stack mixing H, n, d_h and T: zero padding and masks must leave every model as if alone
    specs = [MHASpec(heads=H, context_size=n, examples=T, dim=4, head_dim=dh, classes=5, seed=s, data_seed=s % 2)
             for H, n, dh, T, s in [(2, 3, 4, 20, 0), (1, 3, 2, 12, 1), (3, 2, 4, 20, 2), (2, 4, 3, 30, 3)]]
    assert group_by_shape(specs) == [[0, 1, 2, 3]]
    stacked = train_models(specs, cfg, keep_params=True)
    for i, spec in enumerate(specs):
        alone = train_models([spec], cfg, keep_params=True)
        assert abs(alone.loss[0] - stacked.loss[i]) < 1e-9
        assert alone.accuracy[0] == stacked.accuracy[i]
        for name, w in alone.params[0].items():
            assert np.allclose(w, stacked.params[i][name], atol=1e-9, rtol=0), name


def test_adam_step_matches_torch_optim_adam():
    spec = AoTSpec(heads=2, head_dim=2, dim=3, vocab=4, seq_len=2, seed=5)
    cfg = TrainConfig(steps=15, batch_size=None, lr=3e-2, schedule="constant", early_stop=False,
                      dtype="float64", device="cpu")
    ours = train_models([spec], cfg, keep_params=True).params[0]
    stack = Stack([spec], torch.float64, torch.device("cpu"))
    flat = stack.flat.detach().clone().requires_grad_()
    opt = torch.optim.Adam([flat], lr=3e-2)
    idx = torch.arange(16)[None]
    for _ in range(15):
        opt.zero_grad()
        loss, _ = stack.losses(stack.views(flat), idx, torch.ones(1, 16, dtype=torch.float64))
        loss.sum().backward()
        opt.step()
    ref = stack.views(flat.detach())
    for name, w in ours.items():
        assert np.allclose(w, ref[name][0].numpy(), atol=1e-10, rtol=0), name


def test_early_stop_freezes_a_model_exactly():
    cfg = TrainConfig(steps=400, batch_size=None, lr=5e-2, schedule="constant", eval_every=5, dtype="float64",
                      device="cpu")
    easy = AoTSpec(heads=2, head_dim=4, dim=4, vocab=4, seq_len=1, seed=0)       # 4 associations: memorized fast
    hard = AoTSpec(heads=1, head_dim=1, dim=1, vocab=6, seq_len=2, seed=1)       # 36 associations, d = 1: cannot
    res = train_models([easy, hard], cfg, keep_params=True)
    assert res.memorized[0] and not res.memorized[1]
    stop = int(res.stop_step[0])
    assert 0 < stop < 400 and res.steps[0] == stop and res.steps[1] == 400
    # retraining the easy model for exactly `stop` steps without early stop gives the same weights
    again = train_models([easy], TrainConfig(**{**cfg.to_dict(), "steps": stop, "early_stop": False,
                                                "betas": cfg.betas}), keep_params=True)
    for name, w in again.params[0].items():
        assert np.array_equal(w, res.params[0][name]), name


def test_lr_factor_matches_torch_schedulers():
    total, warm = 200, 10
    p = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p], lr=1.0)
    sched = torch.optim.lr_scheduler.SequentialLR(opt, [
        torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.01, end_factor=1.0, total_iters=warm),
        torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total - warm)], milestones=[warm])
    ref = []
    for _ in range(total):
        ref.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    ours = lr_factor(torch.arange(total), total)
    assert np.allclose(ours.numpy(), ref, atol=1e-9)
    assert float(lr_factor(total, total)) == pytest.approx(0.0, abs=1e-12)
    assert torch.equal(lr_factor(torch.arange(5), 5, schedule="constant"), torch.ones(5, dtype=torch.float64))


def test_capacity_search_finds_known_threshold():
    """A stand-in trainer memorizes exactly when T <= 37: ladder + bisection must return 37."""
    class Fake:
        def __init__(self, specs):
            acc = np.array([1.0 if s.examples <= 37 else 37 / s.examples for s in specs])
            self.accuracy, self.memorized = acc, acc == 1.0

    calls = []

    def fake_train(specs, config):
        calls.append(len(specs))
        return Fake(specs)

    spec = MHASpec(heads=1, context_size=2, examples=1, dim=2, classes=2)
    (res,) = capacity_search([spec], [10, 20, 40, 80], rounds=10, points=3, train=fake_train)
    assert (res.capacity, res.upper) == (37, 38)
    assert calls[0] == 4      # the whole ladder ran as one stack


def test_capacity_search_on_a_tiny_real_model():
    """N = 3, S = 1: 3 associations; an AoT with d = 3 memorizes all of them (T0 = N^S = 3)."""
    cfg = TrainConfig(steps=300, batch_size=None, lr=5e-2, schedule="constant", eval_every=10, device="cpu")
    spec = AoTSpec(heads=1, head_dim=3, dim=3, vocab=3, seq_len=1)
    (res,) = capacity_search([spec], [1, 2, 3], cfg, rounds=0)
    assert res.capacity == 3 and res.upper is None
    assert [T for T, _ in res.tried] == [1, 2, 3]


def test_stacked_aot_training_with_padding_equals_one_by_one():
    cfg = TrainConfig(steps=30, batch_size=16, lr=1e-2, schedule="constant", early_stop=False, dtype="float64",
                      device="cpu")
    specs = [AoTSpec(heads=H, head_dim=dh, dim=d, vocab=5, mlp_width=w, seed=i)
             for i, (H, dh, d, w) in enumerate([(1, 2, 3, 0), (3, 1, 2, 0), (1, 3, 3, 8)])]
    stacked = train_models(specs, cfg, keep_params=True)
    for i, spec in enumerate(specs):
        alone = train_models([spec], cfg, keep_params=True)
        for name, w in alone.params[0].items():
            assert w.shape == stacked.params[i][name].shape
            assert np.allclose(w, stacked.params[i][name], atol=1e-9, rtol=0), name


def test_groups_split_only_on_what_cannot_be_padded_and_keep_order():
    specs = [MHASpec(heads=1, context_size=3, examples=10, dim=d, classes=3) for d in (4, 6, 4)]
    assert group_by_shape(specs) == [[0, 2], [1]]
    res = train_models(specs, TrainConfig(steps=5, batch_size=4, device="cpu"))
    assert [r["dim"] for r in res.records()] == [4, 6, 4]
    assert res.accuracy[0] == res.accuracy[2]        # same spec, same seeds: same numbers


def test_regression_reports_mse_and_no_accuracy():
    specs = [MHASpec(heads=2, context_size=3, examples=16, dim=4, classes=None, out_dim=2, shared=s) for s in (True, False)]
    res = train_models(specs, TrainConfig(steps=30, batch_size=8, lr=1e-2, device="cpu"))
    assert np.isnan(res.accuracy).all() and (res.loss > 0).all() and not res.memorized.any()
    assert res.records()[0]["accuracy"] is None


def test_trained_attention_rows_are_distributions():
    spec = MHASpec(heads=2, context_size=3, examples=6, dim=4, classes=3)
    res = train_models([spec], TrainConfig(steps=3, batch_size=2, device="cpu"), keep_params=True)
    theta = trained_attention(spec, res.params[0], device="cpu")
    assert theta.shape == (6, 2, 3) and np.allclose(theta.sum(-1), 1.0, atol=1e-6)


def test_spec_and_config_round_trip_through_dicts():
    spec = AoTSpec(heads=2, head_dim=3, dim=4, mlp_width=8, seed=3)
    assert spec_from_dict(spec.to_dict()) == spec
    cfg = TrainConfig(steps=7, epochs=3, betas=(0.8, 0.9))
    assert TrainConfig.from_dict(cfg.to_dict()) == cfg
    assert cfg.steps_for(1000) == max(7, 3 * 1000 // 256)


def test_error_messages_name_the_argument():
    with pytest.raises(ValueError, match="heads must be a positive integer, got 0"):
        MHASpec(heads=0, context_size=2, examples=3)
    with pytest.raises(ValueError, match="schedule must be one of"):
        TrainConfig(schedule="linear")
    with pytest.raises(ValueError, match=r"examples must be at most N\^S = 4"):
        AoTSpec(heads=1, head_dim=1, dim=1, vocab=2, seq_len=2, examples=5)
    with pytest.raises(ValueError, match="specs must hold at least one model"):
        train_models([])
    with pytest.raises(ValueError, match="regression model"):
        capacity_search([MHASpec(heads=1, context_size=2, examples=3, classes=None)], [2])
    with pytest.raises(ValueError, match="record has keys"):
        spec_from_dict({"model": "aot", "heads": 1, "head_dim": 1, "dim": 1, "colour": 2})
    with pytest.raises(ValueError, match=r"queries must have shape \(m, B, d\)"):
        mha_forward_stacked(_stack_params([MHASpec(heads=1, context_size=2, examples=3, dim=2, embedding=False)])[1],
                            torch.zeros(1, 2, 2, dtype=torch.float64), torch.zeros(2, 3, 2, dtype=torch.float64))


# ---------------------------------------------------------------------------------------------------
# the fast paths against the readable ones
# ---------------------------------------------------------------------------------------------------

def _padded_aot_stack(specs):
    """Stacked, zero-padded weights of AoT ``specs`` as the engine holds them."""
    stack = Stack(specs, torch.float64, torch.device("cpu"))
    return stack, {k: v.detach() for k, v in stack.views(stack.flat).items()}


@pytest.mark.parametrize("variant", [{}, {"mlp_width": 5}, {"shared_compression": True}])
def test_aot_closed_form_for_two_tokens_equals_the_general_forward(variant):
    """S = 2 closed form (aot_pair_residuals) = the example-by-example forward, with models padded in H,
    d_h and d (and w), and = memcap.models.aot_forward for a plain AoT."""
    from memcap.models import aot_forward
    from memcap.train.forward import aot_outputs, aot_outputs_general

    shapes = [(1, 1, 3), (3, 2, 4), (2, 2, 2)] if variant.get("shared_compression") else [(1, 1, 3), (3, 2, 4), (2, 3, 2)]
    specs = [AoTSpec(heads=H, head_dim=dh, dim=d, vocab=6, seed=i, **variant) for i, (H, dh, d) in enumerate(shapes)]
    _, params = _padded_aot_stack(specs)
    tokens = torch.randint(6, (3, 40, 2), generator=torch.Generator().manual_seed(2))
    fast, slow = aot_outputs(params, tokens), aot_outputs_general(params, tokens)
    assert fast.shape == (3, 40, 6) and torch.allclose(fast, slow, atol=1e-12, rtol=0)
    if not variant:
        for i, spec in enumerate(specs):
            p = init_one(spec)
            core = {k: v for k, v in p.items() if k not in ("W_1", "W_2", "W_C")}
            assert torch.allclose(fast[i], aot_forward(AoTParams(**core), tokens[i]), atol=1e-12, rtol=0)


@pytest.mark.parametrize("variant", [{}, {"mlp_width": 5}, {"shared_compression": True}])
def test_aot_closed_form_has_the_gradients_of_the_general_forward(variant):
    """The closed form's hand-written backward passes (the heads' mixture, the oriented products) give the
    gradients of the example-by-example forward differentiated by autograd, for every weight (float64),
    with models padded in H, d_h and d; and the two custom functions pass gradcheck on their own."""
    from memcap.train.forward import _HeadMix, _Project, aot_outputs, aot_outputs_general

    shapes = [(1, 1, 3), (3, 2, 4), (2, 2, 2)] if variant.get("shared_compression") else [(1, 1, 3), (3, 2, 4), (2, 3, 2)]
    specs = [AoTSpec(heads=H, head_dim=dh, dim=d, vocab=5, seed=i, **variant) for i, (H, dh, d) in enumerate(shapes)]
    stack, _ = _padded_aot_stack(specs)
    gen = torch.Generator().manual_seed(4)
    tokens = torch.randint(5, (3, 30, 2), generator=gen)
    weight = torch.randn(3, 30, 5, generator=gen, dtype=torch.float64)
    grads = []
    for forward in (aot_outputs, aot_outputs_general):
        flat = stack.flat.detach().clone().requires_grad_()
        grads.append(torch.autograd.grad((forward(stack.views(flat), tokens) * weight).sum(), [flat])[0])
    assert torch.allclose(grads[0], grads[1], atol=1e-12, rtol=0) and grads[0].abs().sum() > 0
    x = torch.randn(2, 4, 3, generator=gen, dtype=torch.float64, requires_grad=True)
    w = torch.randn(2, 3, 5, generator=gen, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(_Project.apply, (x, w))
    logits = torch.randn(2, 3, 4, 4, generator=gen, dtype=torch.float64, requires_grad=True)
    o1, o2 = (torch.randn(2, 4, 3, 2, generator=gen, dtype=torch.float64, requires_grad=True) for _ in range(2))
    assert torch.autograd.gradcheck(_HeadMix.apply, (logits, o1, o2))


def test_per_sequence_loss_equals_per_example_loss_and_gradient():
    """When the batch is at least N^2, the loss is computed once per sequence weighted by its count in the
    batch: the same loss and gradient as example by example."""
    specs = [AoTSpec(heads=H, head_dim=2, dim=3, vocab=4, examples=T, seed=i, data_seed=i)
             for i, (H, T) in enumerate([(1, 16), (3, 9)])]
    stack, _ = _padded_aot_stack(specs)
    idx = torch.stack([torch.randint(16, (20,), generator=torch.Generator().manual_seed(0)),
                       torch.randint(9, (20,), generator=torch.Generator().manual_seed(1))])
    weight = torch.ones(2, 20, dtype=torch.float64)
    grads = []
    for per_sequence in (True, False):
        flat = stack.flat.detach().clone().requires_grad_()
        loss, correct = stack.losses(stack.views(flat), idx, weight, count_correct=not per_sequence)
        assert (correct is None) == per_sequence
        grads.append((loss, torch.autograd.grad(loss.sum(), [flat])[0]))
    assert torch.allclose(grads[0][0], grads[1][0], atol=1e-12, rtol=0)
    assert torch.allclose(grads[0][1], grads[1][1], atol=1e-12, rtol=0) and grads[0][1].abs().sum() > 0


def test_a_stack_reads_each_model_s_own_examples_and_labels():
    """Models with different training sets (data_seed 0, 1, 0; T = 16, 9, 12) in one stack: each model's
    per-example loss in the stack equals its loss alone (a one-model stack), on the same example indices.
    The stack keeps each model's own rows t_1 N + t_2 and labels and picks them with torch.gather."""
    specs = [AoTSpec(heads=H, head_dim=2, dim=3, vocab=4, examples=T, seed=i, data_seed=k)
             for i, (H, T, k) in enumerate([(1, 16, 0), (3, 9, 1), (2, 12, 0)])]
    stack, params = _padded_aot_stack(specs)
    idx = torch.stack([torch.randint(T, (10,), generator=torch.Generator().manual_seed(i))
                       for i, T in enumerate((16, 9, 12))])
    weight = torch.ones(3, 10, dtype=torch.float64)
    together, right = stack.losses(params, idx, weight)
    for i, spec in enumerate(specs):
        alone, alone_params = _padded_aot_stack([spec])
        loss, correct = alone.losses(alone_params, idx[i:i + 1], weight[i:i + 1])
        torch.testing.assert_close(together[i:i + 1], loss, atol=1e-12, rtol=0)
        assert int(right[i]) == int(correct[0])
    assert len({round(float(v), 6) for v in together}) == 3


@pytest.mark.parametrize("classes", [2, 11, 31, 32, 50])
def test_cross_entropy_both_paths_equal_torch_with_their_gradients(classes):
    from memcap.train.forward import FEW_CLASSES, _FewClassCrossEntropy, cross_entropy

    logits = torch.randn(3, 7, classes, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 30
    labels = torch.randint(classes, (3, 7), generator=torch.Generator().manual_seed(1))
    ref = -torch.log_softmax(logits, -1).gather(-1, labels[..., None])[..., 0]
    out = cross_entropy(logits, labels)
    assert out.shape == (3, 7) and torch.allclose(out, ref, atol=1e-12, rtol=0)
    small = (logits / 30).requires_grad_()
    assert torch.autograd.gradcheck(lambda x: cross_entropy(x, labels), (small,))
    assert torch.autograd.gradcheck(lambda x: _FewClassCrossEntropy.apply(x, labels), (small,))
    assert (classes < FEW_CLASSES) == (cross_entropy(small, labels).grad_fn.name() == "_FewClassCrossEntropyBackward")


@pytest.mark.parametrize("n", [1, 2, 8, 15, 16, 33])
def test_softmax_both_paths_equal_torch_with_their_gradients_and_padding(n):
    """Short rows take the hand-written backward, long rows torch's kernel: both must be the softmax, with
    its gradient (gradcheck in float64), and padding entries (-inf) must get weight and gradient exactly 0."""
    from memcap.train.forward import SHORT_ROW, _ShortSoftmax, _softmax

    gen = torch.Generator().manual_seed(n)
    scores = (torch.randn(2, 3, 4, n, generator=gen, dtype=torch.float64) * 5).requires_grad_()
    assert torch.allclose(_softmax(scores), torch.softmax(scores, -1), atol=1e-14, rtol=0)
    assert torch.autograd.gradcheck(_softmax, (scores,))
    assert torch.autograd.gradcheck(_ShortSoftmax.apply, (scores,))   # the short path, whatever n
    if n >= 2:
        bias = torch.zeros(n, dtype=torch.float64)
        bias[-1] = float("-inf")
        theta = _softmax(scores + bias)
        (grad,) = torch.autograd.grad((theta * torch.randn(theta.shape, generator=gen, dtype=torch.float64)).sum(),
                                      scores)
        assert torch.all(theta[..., -1] == 0) and torch.all(grad[..., -1] == 0)
        assert torch.allclose(theta.sum(-1), torch.ones((), dtype=torch.float64), atol=1e-14, rtol=0)
    assert (n < SHORT_ROW) == (_softmax(scores).grad_fn.name() == "_ShortSoftmaxBackward")


@pytest.mark.parametrize("layout", ["tokens last", "tokens second"])
@pytest.mark.parametrize("n", [1, 3, 8, 16, 33])
def test_scalar_value_attention_is_softmax_times_values_with_its_gradients_and_padding(n, layout):
    """d_v = 1 (Mahdavi et al.): p = sum_j softmax(s)_j v_j with a hand-written backward, in both layouts
    (scores (m, B, H, n) and (m, n, H, B)), for short rows and long ones; gradcheck in float64 for scores
    and values, theta equal to the softmax, and a padding entry (-inf) with weight and score gradient
    exactly 0 and no gradient for its value."""
    from memcap.train.forward import _ScalarValueAttention

    gen = torch.Generator().manual_seed(n)
    scores = (torch.randn(2, 5, 3, n, generator=gen, dtype=torch.float64) * 4).requires_grad_()
    values = torch.randn(2, 3, n, generator=gen, dtype=torch.float64).requires_grad_()

    def attend(s, v):   # (p (m, B, H), theta (m, B, H, n)) through the layout under test
        if layout == "tokens last":
            p, theta = _ScalarValueAttention.apply(s, v[:, None], -1)
            return p[..., 0], theta
        p, theta = _ScalarValueAttention.apply(s.permute(0, 3, 2, 1), v.transpose(1, 2)[..., None], 1)
        return p[:, 0].transpose(1, 2), theta.permute(0, 3, 2, 1)

    p, theta = attend(scores, values)
    ref = torch.softmax(scores, -1)
    assert p.shape == (2, 5, 3) and torch.allclose(theta, ref, atol=1e-14, rtol=0)
    assert torch.allclose(p, (ref * values[:, None]).sum(-1), atol=1e-13, rtol=0)
    assert torch.autograd.gradcheck(lambda s, v: attend(s, v)[0], (scores, values))
    if n >= 2:
        bias = torch.zeros(n, dtype=torch.float64)
        bias[-1] = float("-inf")
        p, theta = attend(scores + bias, values)
        g_s, g_v = torch.autograd.grad((p * torch.randn(p.shape, generator=gen, dtype=torch.float64)).sum(),
                                       (scores, values))
        assert torch.all(theta[..., -1] == 0) and torch.all(g_s[..., -1] == 0) and torch.all(g_v[..., -1] == 0)


def test_stacked_mha_with_values_of_width_one_trains_like_the_readable_forward():
    """The fused attention of the d_v = 1 path gives the output and the gradients of the readable forward
    (memcap.models.mha_forward differentiated by autograd), with short rows and long ones."""
    specs = [MHASpec(heads=h, context_size=n, examples=7, dim=6, head_dim=5, value_dim=1, classes=None,
                     out_dim=2, embedding=False, seed=s) for h, n, s in [(1, 4, 0), (3, 20, 1)]]
    gen = torch.Generator().manual_seed(3)
    for spec in specs:
        (p,), stacked = _stack_params([spec])
        ctx = torch.rand(spec.context_size, 6, generator=gen, dtype=torch.float64)
        qry = torch.rand(9, 6, generator=gen, dtype=torch.float64)
        ours = {k: v.clone().requires_grad_() for k, v in stacked.items()}
        out = mha_forward_stacked(ours, ctx[None], qry[None])[0]
        ref_p = {k: torch.as_tensor(v, dtype=torch.float64).clone().requires_grad_() for k, v in p.items()}
        ref = mha_forward(MHAParams(**ref_p), ctx, qry)
        weight = torch.randn(out.shape, generator=gen, dtype=torch.float64)
        g_ours = torch.autograd.grad((out * weight).sum(), [ours[k] for k in ("W_K", "W_Q", "W_V")])
        g_ref = torch.autograd.grad((ref * weight).sum(), [ref_p[k] for k in ("W_K", "W_Q", "W_V")])
        assert torch.allclose(out, ref, atol=1e-12, rtol=0)
        for a, b in zip(g_ours, g_ref):
            assert torch.allclose(a[0], b, atol=1e-12, rtol=0)


def test_keep_freed_memory_stops_page_faults_on_memory_freed_and_taken_again():
    """Rounds of ten blocks of about 1 MiB, a little larger each round (as activations of growing stacks):
    by default glibc maps every block larger than any freed before afresh, so its pages fault in again at
    every round; after keep_freed_memory() the rounds reuse the heap and fault in about one round's pages."""
    import subprocess
    import sys as _sys

    if not _sys.platform.startswith("linux"):
        pytest.skip("glibc's mallopt: Linux only")
    code = ("import resource, sys, torch\n"
            "from memcap.train.memory import keep_freed_memory\n"
            "if sys.argv[1] == 'keep': assert keep_freed_memory() and keep_freed_memory()\n"
            "f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
            "for r in range(20):\n"
            "    blocks = [torch.ones((1 << 18) + r * 4096) for _ in range(10)]\n"
            "    del blocks\n"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)\n")
    faults = {mode: int(subprocess.run([_sys.executable, "-c", code, mode], capture_output=True, text=True,
                                       check=True).stdout) for mode in ("keep", "default")}
    pages = 10 * (1 << 20) // 4096                                    # one round: 10 blocks of 1 MiB
    assert faults["keep"] < 2 * pages and faults["default"] > 10 * pages, faults


def test_big_mha_models_of_different_h_are_split_small_ones_stacked_mlp_models_apart():
    from memcap.train.loop import split_group as split_by_heads

    big = [MHASpec(heads=H, context_size=32, examples=100, dim=64) for H in (1, 1, 30, 60)]
    assert split_by_heads(big, 256) == [[0, 1], [2], [3]]
    assert split_by_heads(big, 256, "cuda") == [[0, 1, 2, 3]]          # a GPU: one stack saves launches
    small = [MHASpec(heads=H, context_size=8, examples=100, dim=16) for H in (1, 8)]
    assert split_by_heads(small, 128) == [[0, 1]]                       # stacking pays: one padded stack
    even = [MHASpec(heads=H, context_size=32, examples=100, dim=64) for H in (50, 60)]
    assert split_by_heads(even, 256) == [[0, 1]]                        # padding wastes little
    aot = [AoTSpec(heads=H, head_dim=10, dim=10) for H in (1, 31)]
    assert split_by_heads(aot, 1024) == [[0, 1]]
    mixed = [AoTSpec(heads=H, head_dim=4, dim=4, mlp_width=w) for H, w in ((3, 0), (1, 16), (5, 0), (1, 8))]
    assert split_by_heads(mixed, 64) == [[0, 2], [1, 3]]


def test_mha_paths_for_values_of_width_one_and_scores_through_w_q_k_agree():
    """d_v = 1 and B large enough for the scores through M_h = W_Q,h K_h^T: equal to memcap.models."""
    specs = [MHASpec(heads=h, context_size=3, examples=7, dim=6, head_dim=5, value_dim=1, classes=4,
                     embedding=False, seed=s) for h, s in [(2, 0), (2, 1)]]
    inits, stacked = _stack_params(specs)
    gen = torch.Generator().manual_seed(0)
    ctx = torch.rand(2, 3, 6, generator=gen, dtype=torch.float64)
    qry = torch.rand(2, 40, 6, generator=gen, dtype=torch.float64)
    out = mha_forward_stacked(stacked, ctx, qry)
    for i, p in enumerate(inits):
        assert torch.allclose(out[i], mha_forward(MHAParams(**p), ctx[i], qry[i]), atol=1e-10, rtol=0)


def test_adam_in_place_path_gives_the_bits_of_the_masked_path_and_freezes_exactly():
    """Adam takes an in-place path when every model is active and a masked one otherwise: on the active
    rows both must give the same bits (float32, five steps), and an inactive row must not move at all."""
    from memcap.train.adam import adam_update

    gen = torch.Generator().manual_seed(0)
    flat0 = torch.randn(3, 50, generator=gen)
    grads = [torch.randn(3, 50, generator=gen) for _ in range(5)]
    lr = torch.tensor([1e-2, 3e-3, 1e-3])

    def run(active):
        flat = flat0.clone()
        state = {"t": torch.zeros(3, dtype=torch.long), "m": torch.zeros(3, 50), "v": torch.zeros(3, 50)}
        for g in grads:
            adam_update(flat, g, state, lr, active, (0.9, 0.999), 1e-8)
        return flat, state

    every, st_every = run(torch.tensor([True, True, True]))
    some, st_some = run(torch.tensor([True, True, False]))
    assert torch.equal(every[:2], some[:2]) and torch.equal(st_every["m"][:2], st_some["m"][:2])
    assert torch.equal(st_every["v"][:2], st_some["v"][:2])
    assert torch.equal(some[2], flat0[2]) and not torch.equal(every[2], flat0[2])
    assert st_some["t"].tolist() == [5, 5, 0] and torch.all(st_some["m"][2] == 0)


@pytest.mark.parametrize("family", ["mha", "aot"])
def test_stack_gradient_equals_the_gradient_of_the_whole_row(family):
    """Stack.gradient (autograd stopped at each weight's view, copied into its columns) gives exactly the
    numbers of torch.autograd.grad(loss, [flat]), padding columns included; a weight the loss does not use
    gets zeros in its columns, written over whatever the buffer held."""
    if family == "mha":
        specs = [MHASpec(heads=h, context_size=n, examples=12, dim=6, classes=5, seed=s)
                 for h, n, s in [(1, 3, 0), (3, 5, 1)]]
    else:
        specs = [AoTSpec(heads=h, head_dim=2, dim=3, vocab=5, mlp_width=w, seed=s)
                 for h, w, s in [(1, 4, 0), (3, 2, 1)]]
    stack = Stack(specs, torch.float64, torch.device("cpu"))
    idx = torch.randint(12 if family == "mha" else 25, (2, 7), generator=torch.Generator().manual_seed(0))
    weight = torch.ones(2, 7, dtype=torch.float64)
    views = stack.views(stack.flat)
    loss = stack.losses(views, idx, weight, count_correct=False)[0].sum()
    (whole,) = torch.autograd.grad(loss, [stack.flat], retain_graph=True)
    ours = stack.gradient(loss, views, torch.full_like(whole, float("nan")))
    assert torch.equal(ours, whole) and bool(whole.abs().sum() > 0)
    views = stack.views(stack.flat)
    first, _, a, b = stack.layout[0]
    partial = stack.gradient((views[first] ** 2).sum(), views, torch.full_like(whole, float("nan")))
    assert torch.equal(partial[:, a:b], 2 * stack.flat.detach()[:, a:b])
    assert torch.all(partial[:, :a] == 0) and torch.all(partial[:, b:] == 0)
