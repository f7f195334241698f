import numpy as np
import pytest
import torch

from memcap import _checks


def test_positive_int_accepts_numpy_integers_and_rejects_bools_floats_and_zero():
    assert _checks.positive_int("heads", np.int64(3)) == 3
    with pytest.raises(TypeError, match="heads must be a positive integer"):
        _checks.positive_int("heads", True)
    with pytest.raises(TypeError, match="heads must be a positive integer"):
        _checks.positive_int("heads", 2.0)
    with pytest.raises(ValueError, match="heads must be a positive integer, got 0"):
        _checks.positive_int("heads", 0)


def test_nonnegative_int_and_positive_real():
    assert _checks.nonnegative_int("k", 0) == 0
    with pytest.raises(ValueError, match="k must be a non-negative integer, got -1"):
        _checks.nonnegative_int("k", -1)
    assert _checks.positive_real("lam", 2) == 2.0
    with pytest.raises(ValueError, match="lam must be a finite positive real"):
        _checks.positive_real("lam", float("inf"))


def test_check_shape_names_the_argument_and_the_symbols():
    t = torch.zeros(10, 32)
    assert _checks.check_shape("queries", t, (None, 32)) is t
    with pytest.raises(ValueError, match=r"queries must have shape \(T, d\) = \(\*, 64\), got \(10, 32\)"):
        _checks.check_shape("queries", t, (None, 64), "(T, d)")
    with pytest.raises(ValueError, match="must have shape"):
        _checks.check_shape("queries", t, (None, 32, None))
    with pytest.raises(TypeError, match="queries must be a torch.Tensor"):
        _checks.check_shape("queries", np.zeros((10, 32)), (None, 32))


def test_as_tensor_and_same_device_dtype():
    assert _checks.as_tensor("x", [[1.0, 2.0]], dtype=torch.float64).dtype == torch.float64
    with pytest.raises(TypeError, match="x must be a tensor"):
        _checks.as_tensor("x", "abc")
    a, b = torch.zeros(2, dtype=torch.float32), torch.zeros(2, dtype=torch.float64)
    with pytest.raises(ValueError, match="b has dtype torch.float64 but a has dtype torch.float32"):
        _checks.same_device_dtype(a=a, b=b)
