"""memcap.construct.relu_exact: Proposition 3's residual bound in exact arithmetic."""
import math
import random
from fractions import Fraction

import pytest
import torch

from memcap.construct import mahdavi_limits as ml
from memcap.construct import relu_exact as rx


def _data(T, k, seed):
    x = rx.integer_points_in_general_position(T, k, seed=seed)
    rng = random.Random(seed + 100)
    return x, [rng.randint(-9, 9) for _ in range(T)]


@pytest.mark.parametrize("T, k", [(6, 1), (8, 2), (7, 3)])
def test_patterns_match_covers_count(T, k):
    x, _ = _data(T, k, seed=T + k)
    patterns = rx.exact_activation_patterns(x)
    assert len(patterns) == len(set(patterns)) == 2 * sum(math.comb(T - 1, i) for i in range(k + 1))


def test_patterns_are_cut_out_by_affine_functions():
    # every enumerated pattern is realized by some (w, b): check with a brute-force search on a grid
    x = [(0,), (1,), (3,), (4,), (7,)]
    patterns = set(rx.exact_activation_patterns(x))
    realized = set()
    for w in (-1, 1):
        for b2 in range(-20, 20):
            b = Fraction(b2, 2)
            realized.add(frozenset(t for t, (v,) in enumerate(x) if w * v + b > 0))
    assert patterns == realized


def test_exact_bound_agrees_with_the_floating_point_one():
    x, y = _data(9, 2, seed=1)
    exact = rx.exact_relu_residual_bound(x, y, 2)
    fl = ml.relu_residual_lower_bound(torch.tensor(x, dtype=torch.float64),
                                      torch.tensor(y, dtype=torch.float64)[:, None], 2)
    assert exact.patterns == fl["patterns"] and exact.tuples == fl["tuples"]
    assert exact.bound == pytest.approx(fl["bound"], rel=1e-9, abs=1e-12)
    assert isinstance(exact.squared, Fraction)


def test_no_relu_network_goes_below_the_bound():
    x, y = _data(9, 2, seed=2)
    bound = rx.exact_relu_residual_bound(x, y, 2).bound
    assert bound > 0
    X = torch.tensor(x, dtype=torch.float64)
    Y = torch.tensor(y, dtype=torch.float64)
    g = torch.Generator().manual_seed(0)
    for _ in range(200):
        W1, b1 = torch.randn(2, 2, generator=g, dtype=torch.float64), torch.randn(2, generator=g,
                                                                                   dtype=torch.float64)
        out = torch.relu(X @ W1 + 3 * b1)                                     # (T, m)
        design = torch.cat([out, torch.ones(len(x), 1, dtype=torch.float64)], dim=1)
        coef = torch.linalg.lstsq(design, Y[:, None]).solution                 # best W_2, b_2
        residual = float((design @ coef - Y[:, None]).norm())
        assert residual >= bound - 1e-9


def test_bound_shrinks_with_more_units_and_vanishes_when_units_suffice():
    x, y = _data(7, 1, seed=3)
    b1 = rx.exact_relu_residual_bound(x, y, 1).squared
    b2 = rx.exact_relu_residual_bound(x, y, 2).squared
    b3 = rx.exact_relu_residual_bound(x, y, 3).squared
    assert b1 >= b2 >= b3 >= 0
    # the relaxation has dimension m(k+1)+1: for T = 5 points on a line it fills R^5 with m = 2
    x5, y5 = _data(5, 1, seed=3)
    assert rx.exact_relu_residual_bound(x5, y5, 1).squared > 0
    assert rx.exact_relu_residual_bound(x5, y5, 2).squared == 0


def test_vector_labels_add_up_column_by_column():
    x, y = _data(8, 1, seed=4)
    z = [v * 2 - 1 for v in y]
    both = rx.exact_relu_residual_bound(x, list(zip(y, z)), 1).squared
    assert both >= rx.exact_relu_residual_bound(x, y, 1).squared
    assert both >= rx.exact_relu_residual_bound(x, z, 1).squared


def test_points_in_general_position_have_full_kruskal_rank():
    x = rx.integer_points_in_general_position(10, 2, seed=0)
    assert len(x) == 10 and all(isinstance(v, int) for p in x for v in p)
    for i in range(10):
        for j in range(i + 1, 10):
            assert x[i][0] * x[j][1] - x[i][1] * x[j][0] != 0


def test_refusals():
    with pytest.raises(ValueError, match="affine general position"):
        rx.exact_activation_patterns([(0, 0), (1, 1), (2, 2), (0, 1), (5, 3)])
    with pytest.raises(TypeError, match="exact numbers"):
        rx.exact_activation_patterns([(0.5,), (1,), (2,), (3,)])
    with pytest.raises(ValueError, match="more than k \\+ 1"):
        rx.exact_activation_patterns([(0,), (1,)])
    with pytest.raises(ValueError, match="max_tuples"):
        x, y = _data(8, 2, seed=5)
        rx.exact_relu_residual_bound(x, y, 3, max_tuples=10)
    with pytest.raises(ValueError, match="T = 6"):
        rx.exact_relu_residual_bound([(0,), (1,), (2,), (3,), (5,), (8,)], [1, 2], 1)
    with pytest.raises(ValueError, match="count must exceed"):
        rx.integer_points_in_general_position(3, 2, seed=0)


def test_integer_tensors_and_arrays_are_exact_inputs():
    import numpy as np
    import torch

    x = rx.integer_points_in_general_position(6, 1, seed=0)
    y = [1, -2, 3, 0, 2, -1]
    exact = rx.exact_relu_residual_bound(x, y, 1)
    assert rx.exact_relu_residual_bound(torch.tensor(x), torch.tensor(y), 1) == exact
    assert rx.exact_relu_residual_bound(np.array(x), np.array(y)[:, None], 1) == exact
    with pytest.raises(TypeError, match="points must hold integers or fractions.Fraction values"):
        rx.exact_activation_patterns(torch.tensor(x, dtype=torch.float64))
    with pytest.raises(TypeError, match=r"labels\[0\] must hold integers"):
        rx.exact_relu_residual_bound(x, [float("nan")] * 6, 1)
    with pytest.raises(ValueError, match=r"labels must have shape \(T,\) or \(T, d_out\)"):
        rx.exact_relu_residual_bound(x, torch.tensor(y)[:, None, None], 1)
    with pytest.raises(TypeError, match="points must be a non-empty sequence"):
        rx.exact_activation_patterns("0123")
