import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memcap import fits


@settings(max_examples=25, deadline=None)
@given(a=st.floats(-5, 5), b=st.floats(-5, 5))
def test_linear_fit_recovers_an_exact_line(a, b):
    x = np.arange(6.0)
    fit = fits.linear_fit(x, a + b * x)
    assert fit.coef[0] == pytest.approx(a, abs=1e-9) and fit.slope == pytest.approx(b, abs=1e-9)
    assert fit.r2 == pytest.approx(1.0, abs=1e-9)


def test_quadratic_fit_and_r2_below_one_with_noise():
    x = np.arange(1.0, 11.0)
    y = 2 + 0.5 * x**2
    fit = fits.poly_fit(x, y, 2)
    assert fit.coef == pytest.approx((2.0, 0.0, 0.5), abs=1e-8)
    noisy = y + np.array([0.3, -0.3] * 5)
    assert 0.9 < fits.poly_fit(x, noisy, 2).r2 < 1.0
    assert fits.linear_fit(x, y).r2 < fits.poly_fit(x, y, 2).r2



def test_standard_errors_are_the_textbook_ones():
    """sqrt(s² (XᵀX)⁻¹_kk), s² = RSS / (n - p), written out with the normal equations; the same on x in the
    thousands (where XᵀX is badly scaled); 0 for exact data with points to spare; NaN with none to spare."""
    rng = np.random.default_rng(0)
    for x, degree in ((np.repeat(np.arange(1.0, 11.0), 5), 2), (np.linspace(100.0, 10_000.0, 20), 1)):
        y = 0.1 + 0.02 * x + 0.005 * x**2 + rng.normal(0, 0.02 * x.max(), x.size)
        X = np.vander(x, degree + 1, increasing=True)
        beta = np.linalg.solve(X.T @ X, X.T @ y)
        residual = y - X @ beta
        cov = residual @ residual / (x.size - degree - 1) * np.linalg.inv(X.T @ X)
        assert fits.poly_fit(x, y, degree).stderr == pytest.approx(np.sqrt(np.diag(cov)), rel=1e-6)
    assert fits.poly_fit(np.arange(6.0), 1 + np.arange(6.0) ** 2, 2).stderr == pytest.approx((0, 0, 0), abs=1e-7)
    assert all(np.isnan(fits.poly_fit([1, 2, 3], [1, 2, 5], 2).stderr))


def test_clearly_apart_counts_standard_errors_of_the_difference():
    assert fits.clearly_apart(0.5, 0.2) and not fits.clearly_apart(0.4, 0.2)        # 2.5 and 2 errors from 0
    assert fits.clearly_apart(-0.5, 0.2) and not fits.clearly_apart(0.0, 0.0)
    assert not fits.clearly_apart(1.0, 0.3, 0.2, 0.4)   # 0.8 apart, hypot(0.3, 0.4) = 0.5: 1.6 errors
    assert fits.clearly_apart(1.0, 0.3, -0.2, 0.4)      # 1.2 apart: 2.4 errors
    assert not fits.clearly_apart(5.0, float("nan"))     # unknown error: never told apart
    for bad, match in ((dict(se_a=-0.1), "se_a must be a finite standard error >= 0"),
                       (dict(se_a=float("inf")), "se_a must be a finite standard error"),
                       (dict(se_a="0.1"), "se_a must be a real number"),
                       (dict(se_a=0.1, a=float("nan")), "a must be a finite real number"),
                       # a bad se_b is refused even beside an unknown se_a
                       (dict(se_a=float("nan"), se_b=-1.0), "se_b must be a finite standard error")):
        with pytest.raises((TypeError, ValueError), match=match):
            fits.clearly_apart(**{"a": 1.0, **bad})

def test_r_squared_of_the_mean_is_zero():
    y = np.array([1.0, 2.0, 3.0])
    assert fits.r_squared(y, np.full(3, 2.0)) == pytest.approx(0.0)


def test_non_saturated_keeps_the_rise_and_the_first_saturated_point():
    x, y = fits.non_saturated([4, 1, 2, 3, 5], [1.0, 0.2, 0.5, 0.8, 1.0], ceiling=0.99)
    assert list(x) == [1, 2, 3, 4] and list(y) == [0.2, 0.5, 0.8, 1.0]
    x, _ = fits.non_saturated([1, 2, 3], [0.01, 0.5, 0.7], floor=0.05)
    assert list(x) == [2, 3]


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="same length"):
        fits.linear_fit([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="at least 3 points"):
        fits.poly_fit([1, 2], [1, 2], 2)
    with pytest.raises(ValueError, match="finite"):
        fits.linear_fit([1, 2, np.nan], [1, 2, 3])
    with pytest.raises(ValueError, match="degree must be a non-negative integer"):
        fits.poly_fit([1, 2], [1, 2], -1)


def test_careless_fits_are_refused_naming_the_argument():
    with pytest.raises(ValueError, match=r"x must have at least degree \+ 1 = 2 distinct values.*x = 3 for every"):
        fits.linear_fit([3, 3, 3], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="x must have at least degree \\+ 1 = 3 distinct values .* got 2"):
        fits.poly_fit([1, 2, 2, 1], [1.0, 2.0, 3.0, 4.0], 2)
    with pytest.raises(ValueError, match="floor must be below ceiling, got floor = 0.995 >= ceiling = 0.99"):
        fits.non_saturated([1, 2, 3], [0.1, 0.5, 1.0], floor=0.995)
