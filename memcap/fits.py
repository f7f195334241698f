"""Least-squares fits the experiment chapters report: lines with R², polynomials, the papers' models.

Mahdavi et al. fit a line to accuracy against the number of heads on its non-saturated part and report
R²; Dana et al. fit polynomials (quadratic in d_h, cubic models of the slope). One implementation here
serves every chapter. Inputs are 1-D sequences, NumPy arrays or tensors of finite real numbers; bool,
complex, non-numeric and non-finite input is refused naming the argument.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from memcap._checks import finite_real, holds_values

__all__ = ["PolyFit", "r_squared", "poly_fit", "linear_fit", "non_saturated", "SIGNIFICANT_SE", "LEVEL",
           "t_margin", "margin", "clearly_apart"]

SIGNIFICANT_SE = 2.0
"""Two fitted numbers are told apart when they differ by more than this many standard errors of their
difference (:func:`clearly_apart`): about a 95 % two-sided level for normal errors, used when the
fits' residual degrees of freedom are not given (:func:`margin`)."""

LEVEL = 0.95
"""The two-sided level of :func:`t_margin`, :data:`SIGNIFICANT_SE`'s level for normal errors."""

_T_EXACT_UP_TO = 1000
"""Degrees of freedom beyond which :func:`t_margin` uses its value at this many (within 0.2 % above the
exact one, so a little more cautious; the series below costs O(dof) per evaluation)."""


@dataclass(frozen=True)
class PolyFit:
    """A least-squares polynomial ``y ≈ sum_k coef[k] x**k`` (lowest degree first), its R² and the standard
    error of each coefficient (``stderr``, same order; NaN where the points leave no residual degree of
    freedom, i.e. no more points than coefficients)."""

    coef: tuple[float, ...]
    r2: float
    stderr: tuple[float, ...]
    dof: int
    """Residual degrees of freedom: points - coefficients (0: no point to spare)."""

    def __call__(self, x) -> np.ndarray:
        return np.polynomial.polynomial.polyval(np.asarray(x, dtype=float), self.coef)

    @property
    def slope(self) -> float:
        """The coefficient of ``x`` (for a line: its slope)."""
        return self.coef[1] if len(self.coef) > 1 else 0.0


def _points(name: str, values: Sequence[float]) -> np.ndarray:
    """``values`` as a finite 1-D float array, else an error naming ``name``."""
    if isinstance(values, torch.Tensor):   # its values, on the CPU (a NumPy fit: any device will do)
        values = holds_values(name, values).detach().cpu().numpy()
    try:
        raw = np.asarray(values)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be a 1-D sequence of real numbers: {err}") from None
    if raw.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {raw.dtype}")
    array = raw.astype(float)
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} must be finite (no NaN or inf), got {array[~np.isfinite(array)][0]}")
    return array


def _xy(x: Sequence[float], y: Sequence[float], at_least: int,
        names: tuple[str, str] = ("x", "y")) -> tuple[np.ndarray, np.ndarray]:
    xa, ya = _points(names[0], x), _points(names[1], y)
    if xa.shape != ya.shape:
        raise ValueError(f"{names[0]} and {names[1]} must have the same length, got {xa.size} and {ya.size}")
    if xa.size < at_least:
        raise ValueError(f"{names[0]} and {names[1]} need at least {at_least} points for this fit, got {xa.size}")
    return xa, ya


def r_squared(y: Sequence[float], y_hat: Sequence[float]) -> float:
    """Coefficient of determination 1 - SS_res / SS_tot (1.0 when y is constant and fitted exactly)."""
    ya, yh = _xy(y, y_hat, 1, ("y", "y_hat"))
    # in units of the largest |y| (R² does not depend on them): squares of y near 1e200 would overflow,
    # and the rounding threshold below would become inf
    unit = float(np.abs(ya).max()) or float(np.abs(yh).max()) or 1.0
    with np.errstate(over="ignore"):   # a y_hat far beyond y: SS_res = inf, R² = -inf (its float value)
        ya, yh = ya / unit, yh / unit
        ss_res = float(((ya - yh) ** 2).sum())
    ss_tot = float(((ya - ya.mean()) ** 2).sum())
    rounding = 1e-20 * (1.0 + float((ya**2).sum()))  # sums of squares below this are rounding noise
    if ss_tot <= rounding:  # constant y: R² is 1 for an exact fit, else 0
        return 1.0 if ss_res <= rounding else 0.0
    return 1.0 - ss_res / ss_tot


def poly_fit(x: Sequence[float], y: Sequence[float], degree: int) -> PolyFit:
    """Least-squares polynomial of the given degree; needs at least ``degree + 1`` distinct ``x``."""
    if isinstance(degree, bool) or not isinstance(degree, (int, np.integer)) or degree < 0:
        raise ValueError(f"degree must be a non-negative integer, got {degree!r}")
    xa, ya = _xy(x, y, int(degree) + 1)
    distinct = np.unique(xa).size
    if distinct < int(degree) + 1:
        raise ValueError(f"x must have at least degree + 1 = {int(degree) + 1} distinct values for a fit of "
                         f"degree {int(degree)}, got {distinct} (x = {xa[0]:g} for every point)"
                         if distinct == 1 else f"x must have at least degree + 1 = {int(degree) + 1} distinct "
                         f"values for a fit of degree {int(degree)}, got {distinct}")
    scale = _x_scale(xa)
    scaled = np.polynomial.polynomial.polyfit(xa / scale, ya, int(degree))   # coefficients of (x/scale)**k
    fitted = np.polynomial.polynomial.polyval(xa / scale, scaled)
    coef = _per_power(scaled, scale)
    # a term the fit needs (above 1e-9 of the fitted values where |x| is largest) must survive the
    # conversion to powers of x: neither overflow to inf nor underflow below the normal floats
    needed = np.abs(scaled) > 1e-9 * float(np.abs(fitted).max())
    lost = ~np.isfinite(coef) | (needed & (np.abs(coef) < np.finfo(float).tiny))
    if lost.any():
        k = int(np.nonzero(lost)[0][0])
        raise ValueError(f"x reaches |x| = {scale:.3g}: the fit's coefficient of x**{k}, {scaled[k]:.3g} / "
                         f"{scale:.3g}**{k}, is beyond the range of a float; fit x in other units "
                         f"(x / {scale:.3g}, say)")
    return PolyFit(tuple(float(c) for c in coef), r_squared(ya, fitted),
                   _stderr(xa, ya - fitted, int(degree)), int(xa.size) - int(degree) - 1)


def _x_scale(x: np.ndarray) -> float:
    """The largest |x| (1 when every x is 0): fits solve in x / scale, whose Vandermonde columns are of
    comparable size and whose powers neither overflow nor underflow."""
    return float(np.abs(x).max()) or 1.0


def _per_power(values: np.ndarray, scale: float) -> np.ndarray:
    """``values[k] / scale**k`` for every k (a coefficient or standard error of (x/scale)**k, per power of
    x), dividing k times: ``scale**k`` alone overflows or underflows where the quotient need not."""
    out = np.array(values, dtype=float)
    with np.errstate(over="ignore", under="ignore"):   # inf or 0 where the quotient is beyond a float
        for k in range(1, out.size):
            out[k:] /= scale
    return out


def _stderr(x: np.ndarray, residual: np.ndarray, degree: int) -> tuple[float, ...]:
    """Ordinary least-squares standard errors of a polynomial fit's coefficients (lowest degree first):
    sqrt(s² [(XᵀX)⁻¹]_kk) with X the Vandermonde matrix of ``x`` and s² = Σ residual² / (n - degree - 1)
    the residual variance (NaN for every coefficient when n = degree + 1). Computed through X = QR,
    (XᵀX)⁻¹ = R⁻¹R⁻ᵀ, without forming XᵀX."""
    dof = x.size - degree - 1
    if dof <= 0:
        return (float("nan"),) * (degree + 1)
    scale = _x_scale(x)   # columns of comparable size before the factorization
    r = np.linalg.qr(np.vander(x / scale, degree + 1, increasing=True), mode="r")
    r_inv = np.linalg.solve(r, np.eye(degree + 1))
    variance = float(residual @ residual) / dof
    return tuple(float(se) for se in _per_power([np.sqrt(variance * (row @ row)) for row in r_inv], scale))


def _t_within(cos: float, sin: float, dof: int) -> float:
    """P(abs(T) < t) for Student's t with ``dof`` (a positive integer) degrees of freedom, at the angle
    theta = atan(t / sqrt(dof)) given by its cosine and sine: the finite series of Abramowitz and Stegun,
    26.7.3 (odd dof) and 26.7.4 (even dof)."""
    c2, term, total = cos * cos, 1.0, 1.0
    if dof % 2 == 0:
        for k in range(1, dof // 2):          # 1 + c²/2 + 1·3 c⁴/(2·4) + ...
            term *= c2 * (2 * k - 1) / (2 * k)
            total += term
        return sin * total
    if dof == 1:
        return 2 / math.pi * math.atan2(sin, cos)
    term = total = cos                         # c + 2/3 c³ + 2·4/(3·5) c⁵ + ...
    for k in range(1, (dof - 1) // 2):
        term *= c2 * (2 * k) / (2 * k + 1)
        total += term
    return 2 / math.pi * (math.atan2(sin, cos) + sin * total)


def t_margin(dof: int, level: float = LEVEL) -> float:
    """The two-sided Student-t quantile: a t variable T with ``dof`` degrees of freedom has
    ``abs(T) < t_margin(dof, level)`` with probability ``level`` (12.71 for 1, 4.30 for 2, 2.23 for 10,
    1.96 in the limit, at 95 %). A fit's coefficient lies within this many of its standard errors of the
    truth at ``level`` when its residuals are independent and normal. Beyond 1000 degrees of freedom, the
    value at 1000."""
    if isinstance(dof, bool) or not isinstance(dof, (int, np.integer)) or dof < 1:
        raise ValueError(f"dof must be a positive integer (residual degrees of freedom), got {dof!r}")
    level = finite_real("level", level)
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    nu = min(int(dof), _T_EXACT_UP_TO)
    lo, hi = 0.0, math.pi / 2                  # bisect on theta = atan(t / sqrt(nu)): P rises with theta
    for _ in range(100):
        mid = (lo + hi) / 2
        if _t_within(math.cos(mid), math.sin(mid), nu) < level:
            lo = mid
        else:
            hi = mid
    return math.sqrt(nu) * math.tan((lo + hi) / 2)


def margin(dof: int | None = None) -> float:
    """How many standard errors tell two estimates apart (:func:`clearly_apart`): :func:`t_margin` at
    :data:`LEVEL` for ``dof`` residual degrees of freedom, or :data:`SIGNIFICANT_SE` when ``dof`` is None
    (unknown: the normal rule)."""
    return SIGNIFICANT_SE if dof is None else t_margin(dof)


def clearly_apart(a: float, se_a: float, b: float = 0.0, se_b: float = 0.0, *, dof: int | None = None) -> bool:
    """Whether the estimates ``a`` ± ``se_a`` and ``b`` ± ``se_b`` (standard errors, independent; ``b`` 0 with
    no error by default: is ``a`` clearly nonzero?) differ by more than :func:`margin` standard errors of
    ``a - b``: :data:`SIGNIFICANT_SE` when ``dof`` is None, else the Student-t quantile for ``dof``
    residual degrees of freedom (give the smaller of two fits' :attr:`PolyFit.dof`: a cautious choice).
    False when a standard error is NaN (unknown: a fit with no point to spare) or ``dof`` is 0."""
    a, b = finite_real("a", a), finite_real("b", b)
    errors = []
    for name, se in (("se_a", se_a), ("se_b", se_b)):
        if isinstance(se, bool) or not isinstance(se, (int, float, np.integer, np.floating)):
            raise TypeError(f"{name} must be a real number (a standard error), got {se!r}")
        if not math.isnan(se) and not 0 <= se < math.inf:
            raise ValueError(f"{name} must be a finite standard error >= 0 (or NaN: unknown), got {se}")
        errors.append(float(se))
    if dof is not None and (isinstance(dof, bool) or not isinstance(dof, (int, np.integer)) or dof < 0):
        raise ValueError(f"dof must be None or an integer >= 0 (residual degrees of freedom), got {dof!r}")
    if any(math.isnan(se) for se in errors) or dof == 0:   # checked only once both are valid
        return False
    return abs(a - b) > margin(dof) * math.hypot(*errors)


def linear_fit(x: Sequence[float], y: Sequence[float]) -> PolyFit:
    """Least-squares line ``y ≈ a + b x``; ``.slope`` is b and ``.r2`` its R²."""
    return poly_fit(x, y, 1)


def non_saturated(x: Sequence[float], y: Sequence[float], *, ceiling: float = 0.99,
                  floor: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The points up to and including the first where ``y`` reaches ``ceiling`` (e.g. 99 % accuracy),
    among those above ``floor`` (if given); ``x``, ``y`` 1-D of one length, returned sorted by ``x``.

    Mahdavi et al. fit their line only on this part of each accuracy curve: once a model memorizes
    everything, more heads cannot raise the accuracy and the curve flattens at 1.
    """
    xa, ya = _xy(x, y, 1)
    ceiling = finite_real("ceiling", ceiling)
    floor = None if floor is None else finite_real("floor", floor)
    if floor is not None and floor >= ceiling:
        raise ValueError(f"floor must be below ceiling, got floor = {floor:g} >= ceiling = {ceiling:g}")
    order = np.argsort(xa)
    xa, ya = xa[order], ya[order]
    reached = np.nonzero(ya >= ceiling)[0]
    stop = reached[0] + 1 if reached.size else ya.size  # keep the first saturated point
    keep = np.arange(ya.size) < stop
    if floor is not None:
        keep &= ya > floor
    return xa[keep], ya[keep]
