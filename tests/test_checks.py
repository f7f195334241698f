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


def test_same_device_dtype():
    a, b = torch.zeros(2, dtype=torch.float32), torch.zeros(2, dtype=torch.float64)
    with pytest.raises(ValueError, match="b has dtype torch.float64 but a has dtype torch.float32"):
        _checks.same_device_dtype(a=a, b=b)


def test_real_tensor_converts_array_likes_once_and_refuses_bad_input():
    t = _checks.real_tensor("x", [[1, 2], [3, 4]])
    assert t.dtype == torch.float64 and t.tolist() == [[1.0, 2.0], [3.0, 4.0]]   # integers: exact in float64
    assert _checks.real_tensor("x", np.ones(2, dtype=np.float32)).dtype == torch.float32
    with pytest.raises(TypeError, match=r"x must be a tensor \(a torch.Tensor, a NumPy array"):
        _checks.real_tensor("x", {"a": 1})
    with pytest.raises(TypeError, match="x must be a tensor, array or \\(rectangular\\) nested list"):
        _checks.real_tensor("x", [[1.0], [1.0, 2.0]])
    with pytest.raises(TypeError, match="x must hold real numbers, got dtype torch.complex64"):
        _checks.real_tensor("x", torch.ones(2, dtype=torch.complex64))
    with pytest.raises(TypeError, match="x has dtype torch.float16: memcap computes in float32 or float64"):
        _checks.real_tensor("x", np.ones(2, dtype=np.float16))
    with pytest.raises(ValueError, match=r"x must be finite \(no NaN or inf\): it holds -inf at index \(1,\)"):
        _checks.real_tensor("x", [0.0, -float("inf")])
    with pytest.raises(ValueError, match="x is on cpu but the other inputs are on meta"):
        _checks.real_tensor("x", torch.ones(2), device="meta")


def test_id_tensor_and_float_input():
    assert _checks.id_tensor("tokens", [[0, 1]]).dtype == torch.int64
    with pytest.raises(TypeError, match="tokens must have an integer dtype"):
        _checks.id_tensor("tokens", torch.zeros(2))
    like = torch.zeros(1, dtype=torch.float32)
    assert _checks.float_input("q", [[1, 2]], like).dtype == torch.float32   # an array takes like's dtype
    with pytest.raises(TypeError, match="q must have a floating-point dtype"):
        _checks.float_input("q", torch.ones(2, dtype=torch.int64))


def test_check_shape_refuses_empty_axes_unless_allowed():
    with pytest.raises(ValueError, match=r"T must not be empty: shape \(T, d\) = \(0, 3\) has an axis of length 0"):
        _checks.check_shape("T", torch.zeros(0, 3), (None, 3), "(T, d)")
    assert _checks.check_shape("W", torch.zeros(2, 0), (2, None), allow_empty=True).shape == (2, 0)


def test_finite_reals():
    assert _checks.finite_real("c", -2) == -2.0
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="c must be a finite real number"):
            _checks.finite_real("c", bad)
    with pytest.raises(ValueError, match="tol must be a finite real number >= 0"):
        _checks.nonnegative_real("tol", -1e-3)


def test_module_input_converts_arrays_and_refuses_a_foreign_dtype():
    weight = torch.zeros(3, 2)  # float32 parameters
    converted = _checks.module_input("x", np.ones((4, 2)), weight)
    assert converted.dtype == torch.float32 and converted.device == weight.device
    with pytest.raises(ValueError,
                       match=r"x has dtype torch.float64 but the model's parameters have dtype torch.float32"):
        _checks.module_input("x", torch.ones(4, 2, dtype=torch.float64), weight)
    with pytest.raises(ValueError, match="x must be finite"):
        _checks.module_input("x", torch.full((4, 2), float("nan")), weight)


def test_listed_refuses_one_item_where_a_list_is_expected():
    assert _checks.listed("specs", [1, 2], "specs") == (1, 2) and _checks.listed("specs", iter([3]), "specs") == (3,)
    with pytest.raises(TypeError, match=r"names must be a list of experiment names, got 'dana_fig4': put it in a"):
        _checks.listed("names", "dana_fig4", "experiment names")
    with pytest.raises(TypeError, match="grid must be a list of grid points, got one dict"):
        _checks.listed("grid", {"vocab": 2}, "grid points")
    with pytest.raises(TypeError, match="specs must be a list of specs, got one float"):
        _checks.listed("specs", 0.5, "specs")


# --- devices (issue 34): a tensor elsewhere is refused naming it, before any of its values is read ---------

META = torch.device("meta")   # shapes without values: the second device of a CPU-only machine


def test_a_tensor_holding_no_values_is_refused_naming_it():
    on_meta = torch.ones(2, device=META)
    for check in (lambda: _checks.real_tensor("x", on_meta), lambda: _checks.float_input("x", on_meta),
                  lambda: _checks.check_finite("x", on_meta), lambda: _checks.holds_values("x", on_meta),
                  lambda: _checks.id_tensor("x", torch.ones(2, dtype=torch.int64, device=META)),
                  lambda: _checks.ids_in_range("x", torch.ones(2, dtype=torch.int64, device=META), 3)):
        with pytest.raises(ValueError, match="x is on the meta device, which holds no values"):
            check()
    assert _checks.holds_values("x", torch.ones(2)).shape == (2,)


def test_a_tensor_on_another_device_than_the_call_is_refused_as_a_mix_first():
    """The device comparison comes before the values are read: a mix is reported as a mix."""
    cpu, elsewhere = torch.ones(2), torch.ones(2, device=META)
    with pytest.raises(ValueError, match="q is on meta but the other inputs are on cpu"):
        _checks.float_input("q", elsewhere, cpu)
    with pytest.raises(ValueError, match="x is on meta but the model's parameters are on cpu"):
        _checks.module_input("x", elsewhere, cpu)
    with pytest.raises(ValueError, match="t is on meta but the other inputs are on cpu"):
        _checks.id_tensor("t", torch.ones(2, dtype=torch.int64, device=META), device="cpu")
    with pytest.raises(ValueError, match="x is on cpu but the other inputs are on meta"):
        _checks.on_device("x", cpu, META)
    assert _checks.on_device("x", cpu, "cpu:0") is cpu   # one device, two names
    assert _checks.float_input("q", cpu, torch.zeros(1, dtype=torch.float64)) is cpu   # dtypes: same_device_dtype


def test_host_array_brings_tensors_to_the_cpu_for_numpy_and_matplotlib():
    grad = torch.ones(3, requires_grad=True)                  # np.asarray refuses it as it is
    assert _checks.host_array(grad).tolist() == [1.0, 1.0, 1.0]
    scalars = [torch.tensor(1.5), 2, torch.tensor(3)]         # 0-d results, as a GPU loop collects them
    assert _checks.host_array(scalars, dtype=float).tolist() == [1.5, 2.0, 3.0]
    assert _checks.host_array([[1, 2]]).shape == (1, 2)
    with pytest.raises(ValueError, match="holds no values"):
        _checks.host_array(torch.ones(2, device=META))
