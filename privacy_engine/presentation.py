"""Numbers as people read them: ε and δ in a short notation, published values rounded to the
precision their 95% interval supports.

Post-processing only (DESIGN.md rule 5): rounding a published value, or writing a parameter in a
shorter form, changes nothing about the guarantee. These functions are for pages and for the CSV
files people open in a spreadsheet; the JSON files and the API keep every digit.

Every function takes a number as an ``int``, ``float``, ``Decimal`` or numeric text. A float is
read through its shortest round-trip form (``repr``), so 0.1 is the decimal 0.1 and not its
binary expansion; rounding is half away from zero, as people do it by hand.
"""

from collections.abc import Iterable
from decimal import (
    ROUND_CEILING,
    ROUND_FLOOR,
    ROUND_HALF_UP,
    Decimal,
    InvalidOperation,
    localcontext,
)
from typing import Any

# Significant digits kept when a value has no interval to round to (an exact count, a parameter
# such as a sensitivity): a float's artefacts sit in its 16th or 17th digit
# (6.000000000000001, 0.30000000000000004), so 12 drops them and keeps every meaningful one.
CLEAN_DIGITS = 12
# The most significant digits a published value keeps, however narrow its interval: a double
# holds 15 decimal digits exactly, so beyond them only binary noise would show.
MAX_PUBLISHED_DIGITS = 15
# ε is read in fixed notation from here up to EPSILON_FIXED_BELOW, δ from DELTA_FIXED_FROM up;
# smaller ones in scientific notation (5 × 10⁻⁵).
EPSILON_FIXED_FROM = Decimal("0.0001")
EPSILON_FIXED_BELOW = Decimal(10) ** 7
DELTA_FIXED_FROM = Decimal("0.001")
# The most significant digits ever used to tell values apart: more than a 30-place decimal or a
# double holds.
MAX_DIGITS = 60
# The most digits added to tell values shown side by side apart: values that agree to 12
# significant digits differ only by floating-point error, which a page must not show.
MAX_DISTINGUISHING_DIGITS = 12

# published_value's rounding directions: an interval's ends round outwards.
_ROUNDING = {"nearest": ROUND_HALF_UP, "down": ROUND_FLOOR, "up": ROUND_CEILING}

_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def to_decimal(value: Any) -> Decimal | None:
    """``value`` as an exact finite decimal (a float through its shortest round-trip text), or
    None when it is not a finite number (None, a bool, NaN, ∞, other text)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, Decimal):
        number = value
    elif isinstance(value, int):
        number = Decimal(value)
    elif isinstance(value, float):
        number = Decimal(repr(value))
    elif isinstance(value, str):
        try:
            number = Decimal(value.strip())
        except InvalidOperation:
            return None
    else:
        return None
    return number if number.is_finite() else None


def _exponent(number: Decimal) -> int:
    """The exponent of a finite decimal's last digit (Decimal("2.50") → −2)."""
    exponent = number.as_tuple().exponent
    assert isinstance(exponent, int), number  # only NaN and ∞ have a letter here
    return exponent


def _normalized(number: Decimal) -> Decimal:
    """``number`` without trailing zeros (2.50 → 2.5, 12300 → 1.23E+4), every digit kept."""
    with localcontext() as context:
        context.prec = len(number.as_tuple().digits) + 1
        return number.normalize()


def _quantize(number: Decimal, exponent: int, rounding: str = ROUND_HALF_UP) -> Decimal:
    """``number`` rounded to a multiple of 10**exponent, written with an exponent ≤ 0 (so that
    ``format(…, "f")`` never needs an exponent) and never as −0."""
    with localcontext() as context:
        # Room for every digit down to 10**exponent, and for a whole number's, up to 1e308.
        context.prec = abs(number.adjusted()) + abs(exponent) + MAX_DIGITS
        rounded = number.quantize(Decimal(1).scaleb(exponent), rounding=rounding)
        if _exponent(rounded) > 0:
            rounded = rounded.quantize(Decimal(1))
    return rounded.copy_abs() if rounded == 0 else rounded


def _significant(number: Decimal, digits: int) -> Decimal:
    """``number`` rounded to ``digits`` significant digits (0 stays 0)."""
    if number == 0:
        return Decimal(0)
    return _quantize(number, number.adjusted() - digits + 1)


def _plain(number: Decimal) -> str:
    """Fixed-point text without trailing zeros after the point ("2.5", "12300", "0")."""
    if number == 0:
        return "0"
    text = format(number, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _scientific(number: Decimal, digits: int = 0) -> str:
    """A number already rounded to the digits it should show, as "1.3 × 10⁻⁹"; with ``digits``
    above 2 the mantissa keeps that many, trailing zeros included, so that figures told apart
    by their third digit line up (1.00 × 10⁻⁶ beside 9.96 × 10⁻⁷)."""
    exponent = number.adjusted()
    mantissa = number.scaleb(-exponent)
    text = format(_quantize(mantissa, 1 - digits), "f") if digits > 2 else _plain(mantissa)
    return f"{text} × 10{str(exponent).translate(_SUPERSCRIPT)}"


def distinguishing_digits(values: Iterable[Any], *, minimum: int) -> int:
    """The fewest significant digits, at least ``minimum``, at which values that differ are
    still written differently once rounded (0.1 and 0.1001 need 4), up to 12: values that agree
    to 12 digits read alike. Values that are not numbers are ignored."""
    numbers = {n for n in (to_decimal(v) for v in values) if n is not None}
    digits = max(1, minimum)
    limit = max(digits, MAX_DISTINGUISHING_DIGITS)
    while digits < limit and len({_significant(n, digits) for n in numbers}) < len(numbers):
        digits += 1
    return digits


def format_epsilon(value: Any, *, significant: int = 4, among: Iterable[Any] = ()) -> str:
    """A privacy-loss parameter ε (a unitless natural-log bound, per statistic or per release as
    the caller's value is) written short: ``significant`` digits without trailing zeros (0.25,
    1.5, 0.0125, 0.3333), in scientific notation below 10⁻⁴ (5 × 10⁻⁵). ``among`` lists values
    shown beside it (a budget's total, spent and remaining): digits are added until values that
    differ read differently. Anything that is not a finite number is returned as text."""
    number = to_decimal(value)
    if number is None:
        return str(value)
    digits = distinguishing_digits([number, *among], minimum=significant)
    rounded = _significant(number, digits)
    if rounded == 0:
        return "0"
    if EPSILON_FIXED_FROM <= abs(rounded) < EPSILON_FIXED_BELOW:
        return _plain(rounded)
    return _scientific(rounded)


def format_delta(value: Any, *, significant: int = 2, among: Iterable[Any] = ()) -> str:
    """A failure probability δ of (ε, δ)-differential privacy (a probability, per statistic or
    per release as the caller's value is) in scientific notation with ``significant`` digits:
    1.2755102040816327e-09 → "1.3 × 10⁻⁹", 10⁻⁶ → "1 × 10⁻⁶"; from 0.001 up in fixed notation
    (0.01); 0 → "0". ``among`` as in :func:`format_epsilon`: a δ budget of 10⁻⁶ with 9.96 × 10⁻⁷
    spent reads "1.00 × 10⁻⁶" and "9.96 × 10⁻⁷", not "1 × 10⁻⁶" twice."""
    number = to_decimal(value)
    if number is None:
        return str(value)
    digits = distinguishing_digits([number, *among], minimum=significant)
    rounded = _significant(number, digits)
    if rounded == 0:
        return "0"
    if abs(rounded) >= DELTA_FIXED_FROM:
        return _plain(rounded)
    return _scientific(rounded, digits)


def format_significant(value: Any, *, significant: int = 2, grouped: bool = False) -> str:
    """A magnitude people read at a glance (an expected error, a 95% half-width, a noise
    scale, in the statistic's own units): ``significant`` digits without trailing zeros after
    the point (60000 rather than 60000.000, 0.16, 16), thousands separated by commas when
    ``grouped``. Anything that is not a finite number is returned as text."""
    number = to_decimal(value)
    if number is None:
        return str(value)
    rounded = _significant(number, significant)
    return _grouped(_plain(rounded)) if grouped else _plain(rounded)


def _grouped(text: str) -> str:
    sign, digits = ("-", text[1:]) if text.startswith("-") else ("", text)
    whole, point, fraction = digits.partition(".")
    return f"{sign}{int(whole):,}{point}{fraction}"


def interval_halfwidth(low: Any, high: Any) -> float | None:
    """Half the width of a 95% interval [low, high] (in the value's units), or None when either
    end is missing or not a number, or the interval is empty."""
    lower, upper = to_decimal(low), to_decimal(high)
    if lower is None or upper is None or upper < lower:
        return None
    return float((upper - lower) / 2)


def interval_exponent(halfwidth: Any) -> int | None:
    """The decimal place of the last digit worth publishing for a value whose 95% half-width is
    ``halfwidth`` (in the value's units): that of the half-width's second significant digit
    (±16 → units, 0; ±0.16 → hundredths, −2; ±1600 → hundreds, 2). None when there is no
    noise to round to (a half-width of 0, None or not a finite number)."""
    width = to_decimal(halfwidth)
    if width is None or width <= 0:
        return None
    return width.adjusted() - 1


def published_value(
    value: Any, *, halfwidth: Any = None, rounding: str = "nearest"
) -> Decimal | None:
    """A published number (a noisy count, sum, mean, coordinate, or an end of its interval)
    rounded to the precision its 95% half-width supports (:func:`interval_exponent`), never
    with more digits than the value has (a count stays whole: 6 and not 6.0; 2.5 and not
    2.5000), and without a float's artefacts (6.000000000000001 → 6). Without a half-width (an
    exact answer, a quantile whose accuracy is in ranks) it keeps ``CLEAN_DIGITS`` significant
    digits. ``rounding`` is "nearest" (half away from zero), or "down" or "up" for the ends of
    an interval, which round outwards so that it never narrows. None when ``value`` is not a
    finite number. Rounding is post-processing: it never weakens the guarantee."""
    number = to_decimal(value)
    if number is None:
        return None
    if number == 0:
        return Decimal(0)
    exponent = interval_exponent(halfwidth)
    if exponent is None:
        exponent = number.adjusted() - CLEAN_DIGITS + 1
    # Never more digits than the value has, nor than a double holds exactly.
    shortest = _exponent(_normalized(number))
    exponent = max(exponent, shortest, number.adjusted() - MAX_PUBLISHED_DIGITS + 1)
    rounded = _quantize(number, exponent, _ROUNDING[rounding])
    # Trailing zeros after the point carry no information the interval does not already give.
    if rounded == 0:
        return Decimal(0)
    return _quantize(rounded, min(0, _exponent(_normalized(rounded))))


def published_interval(low: Any, high: Any) -> tuple[Decimal | None, Decimal | None]:
    """A 95% interval [low, high] as published: each end rounded outwards (low down, high up)
    to the precision its half-width supports, so the rounded interval holds the original."""
    halfwidth = interval_halfwidth(low, high)
    return (
        published_value(low, halfwidth=halfwidth, rounding="down"),
        published_value(high, halfwidth=halfwidth, rounding="up"),
    )


def format_published(value: Any, *, halfwidth: Any = None, rounding: str = "nearest") -> str:
    """:func:`published_value` as text in fixed notation ("28013", "-3.5", "0.0042"); anything
    that is not a finite number is returned as text."""
    rounded = published_value(value, halfwidth=halfwidth, rounding=rounding)
    return str(value) if rounded is None else format(rounded, "f")
