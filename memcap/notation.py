"""How the book writes a number in running text and labels: :func:`sci`.

``0.0078`` becomes :math:`7.8\\times 10^{-3}` (as LaTeX, for ``$...$``), not ``7.8e-03``. The chapters glue
such numbers with :func:`memcap.textbook.page.glue_sci`; the experiments' generated sentences and figure
labels call :func:`sci` directly.
"""
from __future__ import annotations

import math
import numbers

__all__ = ["sci"]


def sci(value: float, digits: int = 1) -> str:
    """``value`` as LaTeX for running text: ``0.0078 -> '7.8 \\times 10^{-3}'``, ``0.25 -> '0.25'``.

    Numbers whose magnitude is in [0.01, 10^4) once rounded for display are written plainly with
    ``digits + 1`` significant digits (all digits of the integer part are kept: ``1234.5 -> '1234'``;
    ``0.0999 -> '0.10'``, ``0.00999 -> '0.010'``); others as a mantissa with ``digits`` decimals times a
    power of ten (``9999.7 -> '10^{4}'``, not ``'10000'``). Zero is ``'0'``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"value must be a real number, got {value!r}")
    if isinstance(digits, bool) or not isinstance(digits, numbers.Integral) or digits < 0:
        raise ValueError(f"digits must be an integer >= 0, got {digits!r}")
    try:
        value = float(value)
    except OverflowError:   # an integer beyond float's range, 10**400
        raise ValueError("value must be finite, got an integer too large for a float") from None
    if not math.isfinite(value):
        raise ValueError(f"value must be finite, got {value}")
    if value == 0:
        return "0"
    mantissa, exponent = f"{value:.{digits}e}".split("e")
    exponent = int(exponent)   # of the value rounded to digits + 1 significant digits: 0.0999 -> 1.0e-1
    if -2 <= exponent <= 4:    # at least 0.01 once rounded: plain, unless that rounds to 10^4 (9999.7)
        plain = f"{value:.{max(0, digits - exponent)}f}"
        if abs(float(plain)) < 1e4:
            return plain
    if mantissa.lstrip("-") in ("1", "1." + "0" * digits):
        return f"{'-' if value < 0 else ''}10^{{{exponent}}}"
    return f"{mantissa} \\times 10^{{{exponent}}}"
