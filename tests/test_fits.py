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


@pytest.mark.parametrize("dof", [1, 2, 3, 4, 5, 7, 10, 30, 101, 1000])
@pytest.mark.parametrize("level", [0.5, 0.9, fits.LEVEL, 0.99])
def test_t_margin_is_students_quantile(dof, level):
    # SciPy comes with scikit-learn (memcap's extras); memcap itself needs none
    from scipy import stats

    assert fits.t_margin(dof, level) == pytest.approx(stats.t.ppf((1 + level) / 2, dof), rel=1e-9)


def test_t_margin_beyond_a_thousand_is_cautious_and_refuses_bad_input():
    assert fits.t_margin(10**6) == fits.t_margin(1000) == pytest.approx(1.9623, abs=1e-4)   # > 1.95996
    assert fits.margin(None) == fits.SIGNIFICANT_SE and fits.margin(1) == fits.t_margin(1)
    for dof, match in ((0, "dof must be a positive integer"), (2.0, "dof must be a positive integer"),
                       (True, "dof must be a positive integer")):
        with pytest.raises(ValueError, match=match):
            fits.t_margin(dof)
    for level in (0.0, 1.0, float("nan")):
        with pytest.raises(ValueError, match="level must"):
            fits.t_margin(3, level)


def test_fits_know_their_residual_degrees_of_freedom_and_clearly_apart_uses_them():
    assert fits.poly_fit([1, 2, 3], [1, 2, 5], 2).dof == 0 and fits.linear_fit([1, 2, 3, 5], [1, 2, 2, 4]).dof == 2
    # 4 standard errors from 0: apart by the normal rule and with 3 residual degrees of freedom (t = 3.18),
    # not with 1 or 2 (t = 12.71, 4.30)
    assert fits.clearly_apart(0.4, 0.1) and fits.clearly_apart(0.4, 0.1, dof=3)
    assert not fits.clearly_apart(0.4, 0.1, dof=1) and not fits.clearly_apart(0.4, 0.1, dof=2)
    assert fits.clearly_apart(1.3, 0.1, dof=1)          # 13 errors > 12.71
    assert not fits.clearly_apart(5.0, 0.1, dof=0)      # no point to spare: never told apart
    with pytest.raises(ValueError, match="dof must be None or an integer >= 0"):
        fits.clearly_apart(1.0, 0.1, dof=-1)

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


@pytest.mark.parametrize("c", [1e-200, 1.0, 1e200])
def test_r_squared_does_not_depend_on_the_units_of_y(c):
    """R² of c y against c ŷ is R² of y against ŷ: near 1e200 the squares overflowed and near 1e-200 they
    underflowed, and either way y looked constant (R² = 1 for [1, 2] fitted by [2, 1], whose R² is -3)."""
    y, y_hat = np.array([1.0, 2.0, 3.0, 4.0]), np.array([1.1, 1.9, 3.2, 3.7])
    assert fits.r_squared(c * y, c * y_hat) == pytest.approx(fits.r_squared(y, y_hat), rel=1e-12)
    assert fits.r_squared(c * np.array([1.0, 2.0]), c * np.array([2.0, 1.0])) == pytest.approx(-3.0)
    assert fits.r_squared(c * np.array([1.0, 2.0, 3.0]), c * np.array([3.0, 1.0, 2.0])) == pytest.approx(-2.0)
    assert fits.r_squared(c * np.array([5.0, 5.0]), c * np.array([5.0, 5.0])) == 1.0     # constant, fitted


@pytest.mark.parametrize("c", [1e-100, 1.0, 1e100])
def test_fits_do_not_depend_on_the_units_of_x(c):
    """A fit on c x has the coefficients of the fit on x divided by c**k, the same standard errors so
    divided and the same R² (the fit used to run on the raw x, whose powers overflow or underflow)."""
    x = np.arange(1.0, 8.0)
    y = 2 - 0.5 * x + 0.25 * x**2 + np.array([0.1, -0.2, 0.1, 0.0, 0.2, -0.1, -0.1])
    ref, fit = fits.poly_fit(x, y, 2), fits.poly_fit(c * x, y, 2)
    assert fit.coef == pytest.approx([a / c**k for k, a in enumerate(ref.coef)], rel=1e-9)
    assert fit.stderr == pytest.approx([s / c**k for k, s in enumerate(ref.stderr)], rel=1e-9)
    assert fit.r2 == pytest.approx(ref.r2, rel=1e-12) and 0.9 < fit.r2 < 1
    line = fits.linear_fit(c * x, 3 + 2 * x)
    assert line.coef == pytest.approx((3.0, 2.0 / c), rel=1e-12) and line.r2 == pytest.approx(1.0)
    quadratic = fits.poly_fit(c * x, 1 - x + 0.5 * x**2, 2)
    assert quadratic.coef == pytest.approx((1.0, -1.0 / c, 0.5 / c**2), rel=1e-9)
    assert quadratic(c * x) == pytest.approx(1 - x + 0.5 * x**2, rel=1e-9)


def test_fits_on_huge_x_are_exact_or_refused_naming_x():
    line = fits.linear_fit([1e160, 2e160, 3e160], [1, 2, 3.5])   # slope 1.25e-160, not 0
    assert line.coef == pytest.approx((-1 / 3, 1.25e-160), rel=1e-12)
    assert line.slope == pytest.approx(1.25e-160, rel=1e-12) and line.r2 == pytest.approx(75 / 76)
    # y = (x / 1e200)**2: its coefficient 1e-400 is not a float, so the fit is refused (was LinAlgError)
    with pytest.raises(ValueError, match=r"x reaches \|x\| = 4e\+200: the fit's coefficient of x\*\*2"):
        fits.poly_fit([1e200, 2e200, 3e200, 4e200], [1, 4, 9, 16], 2)
    with pytest.raises(ValueError, match=r"coefficient of x\*\*2"):      # 1/x**2 of 1e200: overflows
        fits.poly_fit([1e-200, 2e-200, 3e-200, 4e-200], [1, 4, 9, 16], 2)
