"""Tests for memcap.data: task shapes, ranges and seeds; look-up tables; entropy and KL."""
from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from memcap.data import (
    MemorizationTask,
    all_sequences,
    association_task,
    entropy,
    kl_divergence,
    lookup_noise_for_entropy,
    mahdavi_task,
    next_token_distribution,
    random_lookup_table,
    sinusoidal_positions,
)

F64 = torch.float64


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# ---------------------------------------------------------------------------------------------------
# positions and Mahdavi et al.'s task
# ---------------------------------------------------------------------------------------------------

def test_sinusoidal_positions_formula_and_rank():
    pos = sinusoidal_positions(6, 5, dtype=F64, device="cpu")
    assert pos.shape == (6, 5)
    for p in range(6):
        for i in range(5):
            angle = p / 10000 ** (2 * (i // 2) / 5)
            assert pos[p, i].item() == pytest.approx(math.sin(angle) if i % 2 == 0 else math.cos(angle), abs=1e-12)
    # n < d positions are linearly independent (the motivation of Assumption 2)
    assert torch.linalg.matrix_rank(sinusoidal_positions(16, 64, dtype=F64, device="cpu")).item() == 16
    with pytest.raises(ValueError, match="length must be a positive integer, got 0"):
        sinusoidal_positions(0, 4)


@pytest.mark.parametrize("shared", [True, False])
def test_mahdavi_classification_shapes_ranges(shared):
    task = mahdavi_task(50, 4, 8, shared=shared, classes=7, generator=_gen(1), device="cpu")
    assert task.contexts.shape == ((4, 8) if shared else (50, 4, 8))
    assert task.queries.shape == (50, 8) and task.labels.shape == (50,)
    assert task.labels.dtype == torch.int64 and task.classes == 7 and task.out_dim == 7
    assert 0 <= int(task.labels.min()) and int(task.labels.max()) < 7
    for t in (task.contexts, task.queries):
        assert t.dtype == torch.get_default_dtype() and bool((t >= 0).all()) and bool((t < 1).all())
    assert (task.examples, task.context_size, task.dim, task.shared) == (50, 4, 8, shared)


def test_mahdavi_regression_and_seed():
    a = mahdavi_task(20, 3, 6, task="regression", out_dim=2, generator=_gen(5), dtype=F64, device="cpu")
    b = mahdavi_task(20, 3, 6, task="regression", out_dim=2, generator=_gen(5), dtype=F64, device="cpu")
    c = mahdavi_task(20, 3, 6, task="regression", out_dim=2, generator=_gen(6), dtype=F64, device="cpu")
    assert a.labels.shape == (20, 2) and a.labels.dtype == F64 and a.classes is None and a.out_dim == 2
    assert bool((a.labels >= 0).all()) and bool((a.labels < 1).all())
    assert all(torch.equal(x, y) for x, y in ((a.contexts, b.contexts), (a.queries, b.queries), (a.labels, b.labels)))
    assert not torch.equal(a.queries, c.queries)
    # float32 and float64 tasks from one seed hold the same numbers up to rounding
    f32 = mahdavi_task(20, 3, 6, task="regression", out_dim=2, generator=_gen(5), dtype=torch.float32, device="cpu")
    torch.testing.assert_close(f32.queries.double(), a.queries, atol=1e-7, rtol=0)


def test_memorization_task_to():
    task = mahdavi_task(5, 2, 3, classes=4, generator=_gen(0), device="cpu").to(dtype=F64)
    assert task.queries.dtype == F64 and task.contexts.dtype == F64 and task.labels.dtype == torch.int64


def test_mahdavi_task_errors():
    with pytest.raises(ValueError, match="examples must be a positive integer, got 0"):
        mahdavi_task(0, 2, 3, generator=_gen())
    with pytest.raises(ValueError, match="task must be 'classification' or 'regression', got 'ranking'"):
        mahdavi_task(2, 2, 3, task="ranking", generator=_gen())
    # generator=None means a fresh generator seeded with 0, as everywhere in memcap
    default = mahdavi_task(2, 2, 3, generator=None, device="cpu")
    assert torch.equal(default.queries, mahdavi_task(2, 2, 3, generator=_gen(0), device="cpu").queries)
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        mahdavi_task(2, 2, 3, generator=3)
    with pytest.raises(TypeError, match="shared must be a bool"):
        mahdavi_task(2, 2, 3, shared="yes", generator=_gen())
    with pytest.raises(ValueError, match="classes must be a positive integer, got 0"):
        mahdavi_task(2, 2, 3, classes=0, generator=_gen())


def test_memorization_task_errors():
    ctx, q = torch.rand(3, 4), torch.rand(5, 4)
    labels = torch.zeros(5, dtype=torch.int64)
    with pytest.raises(ValueError, match=r"contexts must have shape \(T, n, d\) = \(5, \*, 4\), got \(4, 3, 4\)"):
        MemorizationTask(torch.rand(4, 3, 4), q, labels, classes=2)
    with pytest.raises(ValueError, match=r"contexts must have shape shared \(n, d\) = \(\*, 4\), got \(3, 3\)"):
        MemorizationTask(torch.rand(3, 3), q, labels, classes=2)
    with pytest.raises(ValueError, match=r"or shared \(n, d\)"):
        MemorizationTask(torch.rand(4), q, labels, classes=2)
    with pytest.raises(ValueError, match=r"queries must have shape \(T, d\)"):
        MemorizationTask(ctx, torch.rand(5), labels, classes=2)
    with pytest.raises(ValueError, match=r"labels must lie in \[0, C\) = \[0, 2\), got 2"):
        MemorizationTask(ctx, q, labels + 2, classes=2)
    with pytest.raises(ValueError, match=r"labels must have shape \(T,\) = \(5,?\), got \(4,\)"):
        MemorizationTask(ctx, q, labels[:4], classes=2)
    with pytest.raises(TypeError, match="labels of a classification task must have dtype torch.int64"):
        MemorizationTask(ctx, q, labels.int(), classes=2)
    with pytest.raises(TypeError, match="labels of a regression task must have the queries' dtype"):
        MemorizationTask(ctx, q, torch.rand(5, 1, dtype=F64))
    with pytest.raises(ValueError, match=r"labels must have shape \(T, d_out\) = \(5, \*\), got \(5,\)"):
        MemorizationTask(ctx, q, torch.rand(5))
    with pytest.raises(ValueError, match="queries has dtype torch.float64 but contexts has dtype torch.float32"):
        MemorizationTask(ctx, q.double(), labels, classes=2)
    with pytest.raises(TypeError, match="contexts must have a floating-point dtype"):
        MemorizationTask(ctx.long(), q, labels, classes=2)
    with pytest.raises(ValueError, match="classes must be a positive integer, got 0"):
        MemorizationTask(ctx, q, labels, classes=0)


# ---------------------------------------------------------------------------------------------------
# Dana et al.: tables and associations
# ---------------------------------------------------------------------------------------------------

def test_all_sequences_lexicographic():
    seqs = all_sequences(3, 2, device="cpu")
    assert seqs.tolist() == [[a, b] for a in range(3) for b in range(3)]
    assert seqs.dtype == torch.int64
    assert all_sequences(4, 1, device="cpu").tolist() == [[0], [1], [2], [3]]
    with pytest.raises(ValueError, match=r"N\^S = 10\^8 = 100000000 sequences exceed the enumeration limit"):
        all_sequences(10, 8)


def test_random_lookup_table_shape_range_seed():
    table = random_lookup_table(6, 2, generator=_gen(2), device="cpu")
    assert table.shape == (6, 6) and table.dtype == torch.int64
    assert 0 <= int(table.min()) and int(table.max()) < 6
    assert torch.equal(table, random_lookup_table(6, 2, generator=_gen(2), device="cpu"))
    assert not torch.equal(table, random_lookup_table(6, 2, generator=_gen(3), device="cpu"))
    assert torch.equal(random_lookup_table(6, 2, device="cpu"),
                       random_lookup_table(6, 2, generator=_gen(0), device="cpu"))


def test_association_task_all_and_subset():
    table = random_lookup_table(5, 3, generator=_gen(0), device="cpu")
    tokens, targets = association_task(5, 3, table=table)
    assert tokens.shape == (125, 3) and targets.shape == (125,)
    assert torch.equal(tokens, all_sequences(5, 3, device="cpu"))
    for seq, target in zip(tokens.tolist(), targets.tolist()):
        assert table[tuple(seq)].item() == target
    sub, sub_targets = association_task(5, 3, count=40, table=table, generator=_gen(1))
    assert sub.shape == (40, 3)
    assert len({tuple(s) for s in sub.tolist()}) == 40               # distinct sequences
    assert torch.equal(sub_targets, table[tuple(sub.T)])
    again, _ = association_task(5, 3, count=40, table=table, generator=_gen(1))
    assert torch.equal(sub, again)
    drawn, drawn_targets = association_task(5, 3, generator=_gen(7))  # table drawn from the generator
    assert torch.equal(drawn_targets, random_lookup_table(5, 3, generator=_gen(7), device=drawn.device).flatten())


def test_association_task_errors():
    table = random_lookup_table(4, 2, generator=_gen(0), device="cpu")
    with pytest.raises(ValueError, match=r"count must be at most N\^S = 16 distinct sequences, got 17"):
        association_task(4, 2, count=17, table=table, generator=_gen())
    for got, want in zip(association_task(4, 2, count=3, table=table),
                         association_task(4, 2, count=3, table=table, generator=_gen(0))):
        assert torch.equal(got, want)   # generator=None: a fresh generator seeded with 0
    assert torch.equal(association_task(4, 2, device="cpu")[1],
                       association_task(4, 2, generator=_gen(0), device="cpu")[1])
    with pytest.raises(ValueError, match=r"table must have shape \(N,\)\*S = \(4, 4\), got \(4, 3\)"):
        association_task(4, 2, table=table[:, :3])
    with pytest.raises(ValueError, match=r"table must lie in \[0, N\) = \[0, 4\), got -4"):
        association_task(4, 2, table=table - 4)
    with pytest.raises(TypeError, match="table must have an integer dtype"):
        association_task(4, 2, table=table.double())
    with pytest.raises(ValueError, match="count must be a positive integer, got 0"):
        association_task(4, 2, count=0, table=table, generator=_gen())


# ---------------------------------------------------------------------------------------------------
# noisy look-up tables, entropy, KL
# ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("target", [0.0, 1e-4, 0.3, 1.0, 2.0, math.log(10) - 1e-9, math.log(10)])
def test_next_token_distribution_entropy(target):
    table = random_lookup_table(10, 2, generator=_gen(4), device="cpu")
    probs = next_token_distribution(10, 2, entropy=target, table=table)
    assert probs.shape == (100, 10) and probs.dtype == F64
    torch.testing.assert_close(probs.sum(1), torch.ones(100, dtype=F64))
    assert torch.allclose(entropy(probs), torch.full((100,), target, dtype=F64), atol=1e-6, rtol=0)
    if target < math.log(10) - 1e-6:   # the table's token keeps the largest mass
        assert torch.equal(probs.argmax(1), table.flatten())


@settings(max_examples=30, deadline=None)
@given(vocab=st.integers(2, 60), fraction=st.floats(0.0, 1.0))
def test_lookup_noise_solves_entropy(vocab, fraction):
    target = fraction * math.log(vocab)
    eta = lookup_noise_for_entropy(vocab, target)
    assert 0.0 <= eta <= 1.0 - 1.0 / vocab
    row = torch.full((1, vocab), eta / (vocab - 1), dtype=F64)
    row[0, 0] = 1 - eta
    assert abs(entropy(row).item() - target) < 1e-6


def test_next_token_distribution_seed_and_errors():
    a = next_token_distribution(4, 2, entropy=0.5, generator=_gen(3), device="cpu")
    b = next_token_distribution(4, 2, entropy=0.5, generator=_gen(3), device="cpu")
    assert torch.equal(a, b)
    one = next_token_distribution(1, 3, entropy=0.0, generator=_gen(0), device="cpu")
    assert one.shape == (1, 1) and one.item() == 1.0
    with pytest.raises(ValueError, match=r"entropy must lie in \[0, log N\] = \[0, 1.38629\] nats, got 1.5"):
        next_token_distribution(4, 2, entropy=1.5, generator=_gen())
    with pytest.raises(ValueError, match=r"entropy must lie in \[0, log N\]"):
        lookup_noise_for_entropy(4, -0.1)
    with pytest.raises(TypeError, match="entropy must be a real number"):
        lookup_noise_for_entropy(4, "1")
    assert torch.equal(next_token_distribution(4, 2, entropy=0.5, device="cpu"),
                       next_token_distribution(4, 2, entropy=0.5, generator=_gen(0), device="cpu"))


def test_entropy_values_and_errors():
    probs = torch.tensor([[0.25] * 4, [1.0, 0.0, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0]], dtype=F64)
    torch.testing.assert_close(entropy(probs), torch.tensor([math.log(4), 0.0, math.log(2)], dtype=F64))
    with pytest.raises(ValueError, match="probs rows must sum to 1 .*row 1 sums to 0.9"):
        entropy(torch.tensor([[0.5, 0.5], [0.4, 0.5]], dtype=F64))
    with pytest.raises(ValueError, match=r"probs must hold probabilities \(finite entries >= 0\), row 0 does not"):
        entropy(torch.tensor([[1.5, -0.5]], dtype=F64))
    with pytest.raises(ValueError, match=r"probs must have shape \(rows, N\)"):
        entropy(torch.tensor([0.5, 0.5]))
    with pytest.raises(TypeError, match="probs must have a floating-point dtype"):
        entropy(torch.tensor([[1, 0]]))


def test_kl_values_and_stability():
    p = torch.tensor([[0.2, 0.3, 0.5], [1.0, 0.0, 0.0]], dtype=F64)
    logits = torch.tensor([[0.0, 1.0, -1.0], [2.0, 0.0, 0.0]], dtype=F64)
    q = torch.softmax(logits, dim=1)
    expected = [sum(p[r, j].item() * math.log(p[r, j].item() / q[r, j].item()) for j in range(3) if p[r, j] > 0)
                for r in range(2)]
    torch.testing.assert_close(kl_divergence(p, logits), torch.tensor(expected, dtype=F64))
    # the target's own log-probabilities (up to a shift) give zero divergence
    torch.testing.assert_close(kl_divergence(p[:1], torch.log(p[:1]) + 7.0), torch.zeros(1, dtype=F64))
    # huge logits: log_softmax keeps it finite; non-finite logits are refused like every non-finite input
    big = kl_divergence(p, 1e4 * logits)
    assert bool(torch.isfinite(big).all())
    masked = torch.tensor([[0.0, -math.inf, -math.inf]], dtype=F64)
    with pytest.raises(ValueError, match=r"logits must be finite \(no NaN or inf\): it holds -inf at index \(0, 1\)"):
        kl_divergence(p[1:], masked)


def test_kl_errors():
    p = torch.tensor([[0.5, 0.5]], dtype=F64)
    with pytest.raises(ValueError, match=r"logits must have shape \(rows, N\) = \(1, 2\), got \(1, 3\)"):
        kl_divergence(p, torch.zeros(1, 3, dtype=F64))
    with pytest.raises(ValueError, match="logits has dtype torch.float32 but p has dtype torch.float64"):
        kl_divergence(p, torch.zeros(1, 2))
    with pytest.raises(ValueError, match="p rows must sum to 1"):
        kl_divergence(2 * p, torch.zeros(1, 2, dtype=F64))
    with pytest.raises(TypeError, match="logits must have a floating-point dtype"):
        kl_divergence(p, torch.zeros(1, 2, dtype=torch.int64))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2 ** 31 - 1), rows=st.integers(1, 5), vocab=st.integers(1, 8),
       scale=st.sampled_from([0.1, 1.0, 10.0, 100.0]))
def test_kl_nonnegative_and_zero_at_target(seed, rows, vocab, scale):
    g = _gen(seed)
    p = torch.softmax(scale * torch.randn(rows, vocab, generator=g, dtype=F64), dim=1)
    logits = scale * torch.randn(rows, vocab, generator=g, dtype=F64)
    assert bool((kl_divergence(p, logits) >= -1e-12).all())
    assert bool((kl_divergence(p, torch.log(p)).abs() <= 1e-9).all())
    h = entropy(p)
    assert bool((h >= -1e-12).all()) and bool((h <= math.log(vocab) + 1e-12).all())
