"""Numbers as people read them: ε and δ written short, published values rounded to their
interval's precision, never a float's artefacts."""

import math
import re
from decimal import Decimal

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from privacy_engine.presentation import (
    distinguishing_digits,
    format_delta,
    format_epsilon,
    format_published,
    format_significant,
    interval_exponent,
    interval_halfwidth,
    published_interval,
    published_value,
)

# What a float's binary tail looks like once written out in decimal, among a number's
# significant digits.
ARTEFACT = re.compile(r"0{8,}[1-9]|9{8,}")
SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")


def significant_digits(text: str) -> str:
    """The digits of a number from its first non-zero one ("-0.0012300" → "12300")."""
    return text.lstrip("-").replace(".", "").lstrip("0")


def read_back(text: str) -> float:
    """The number a "1.3 × 10⁻⁹" or "0.25" text stands for."""
    mantissa, _, power = text.partition(" × 10")
    return float(mantissa) * 10 ** int(power.translate(SUPERSCRIPT)) if power else float(text)


@pytest.mark.parametrize(
    ("delta", "text"),
    [
        (1.2755102040816327e-09, "1.3 × 10⁻⁹"),
        (1e-6, "1 × 10⁻⁶"),
        (4.251700680272109e-10, "4.3 × 10⁻¹⁰"),
        (Decimal("0.000001000000000000000000000000"), "1 × 10⁻⁶"),
        (Decimal("0.0000000012755102040816327"), "1.3 × 10⁻⁹"),
        (9.96e-7, "1 × 10⁻⁶"),
        (0.01, "0.01"),
        (0, "0"),
        (0.0, "0"),
    ],
)
def test_delta_is_written_in_scientific_notation_with_two_digits(delta, text):
    assert format_delta(delta) == text


def test_deltas_shown_side_by_side_get_the_digits_that_tell_them_apart():
    # given a δ budget of 10⁻⁶ of which 9.96 × 10⁻⁷ is spent
    budget = [Decimal("0.000001"), Decimal("0.000000996"), Decimal("0.000000004")]

    # when
    texts = [format_delta(value, among=budget) for value in budget]

    # then
    assert texts == ["1.00 × 10⁻⁶", "9.96 × 10⁻⁷", "4.00 × 10⁻⁹"]


@pytest.mark.parametrize(
    ("epsilon", "text"),
    [
        (0.25, "0.25"),
        (1.5, "1.5"),
        (0.0125, "0.0125"),
        (1 / 3, "0.3333"),
        (0.1 + 0.2, "0.3"),
        (Decimal("0.500000000000"), "0.5"),
        (10, "10"),
        (5e-5, "5 × 10⁻⁵"),
        (0, "0"),
        ("0.75", "0.75"),
    ],
)
def test_epsilon_is_written_short(epsilon, text):
    assert format_epsilon(epsilon) == text


def test_an_epsilon_beside_a_close_one_keeps_the_digits_that_tell_them_apart():
    # given a budget of 1 with 0.99995 spent
    figures = [Decimal("1.000000000000"), Decimal("0.999950000000"), Decimal("0.000050000000")]

    # then 4 digits alone would write 1 twice
    assert format_epsilon(figures[1]) == "1"
    assert [format_epsilon(value, among=figures) for value in figures] == [
        "1",
        "0.99995",
        "5 × 10⁻⁵",
    ]


def test_what_is_not_a_number_is_written_as_it_is():
    assert format_epsilon("n/a") == "n/a"
    assert format_delta(None) == "None"
    assert format_published(float("nan"), halfwidth=1) == "nan"
    assert published_value(True) is None


@pytest.mark.parametrize(
    ("halfwidth", "exponent"),
    [(16, 0), (16.4, 0), (0.16, -2), (1600, 2), (1.0, -1), (9.99, -1), (0, None), (None, None)],
)
def test_the_last_digit_published_is_the_half_widths_second(halfwidth, exponent):
    assert interval_exponent(halfwidth) == exponent


@pytest.mark.parametrize(
    ("value", "halfwidth", "text"),
    [
        (6.000000000000001, 0.016, "6"),  # a float's artefact, from the issue
        (6.000000000000001, None, "6"),  # no interval: artefacts go all the same
        (6, 3.2, "6"),  # a count stays whole
        (28013, 0.4, "28013"),  # never more digits than the value has
        (28013.4, 16, "28013"),
        (12345.67, 160, "12350"),
        (-3.5, 7, "-3.5"),
        (-0.3, 16, "0"),  # never "-0"
        (2.5, 0.0016, "2.5"),  # no trailing zeros
        (0.30000000000000004, 0.05, "0.3"),
        (0.00123456, 3.21e-5, "0.001235"),
        (37.5, None, "37.5"),
        (1e20, 1e15, "100000000000000000000"),
        (2.675, 0.5, "2.68"),  # the decimal the float stands for, rounded half up
    ],
)
def test_a_published_value_is_rounded_to_its_intervals_precision(value, halfwidth, text):
    assert format_published(value, halfwidth=halfwidth) == text


def test_a_published_value_is_an_exact_decimal_for_files():
    assert published_value(12345.67, halfwidth=160) == Decimal(12350)
    assert str(published_value(-10.5, halfwidth=7)) == "-10.5"
    assert interval_halfwidth(-10.5, 3.5) == 7
    assert interval_halfwidth(None, 3) is None
    assert interval_halfwidth(3, 1) is None


@pytest.mark.parametrize(
    ("value", "significant", "grouped", "text"),
    [
        (60000.0, 2, False, "60000"),
        (651013.6958229945, 2, True, "650,000"),
        (651013.6958229945, 3, True, "651,000"),
        (16.2, 2, True, "16"),
        (0.16123, 2, True, "0.16"),
        (-1234.5, 3, True, "-1,230"),
    ],
)
def test_a_magnitude_is_written_with_few_digits(value, significant, grouped, text):
    assert format_significant(value, significant=significant, grouped=grouped) == text


# Decimals as people mean them (up to 6 significant digits) and a half-width at most a million
# times smaller: what a release publishes.
meant = st.builds(
    lambda mantissa, exponent: Decimal(mantissa).scaleb(exponent),
    st.integers(min_value=-999_999, max_value=999_999),
    st.integers(min_value=-12, max_value=12),
)


@given(meant, st.integers(min_value=-3, max_value=3), st.floats(0.5, 9.9))
def test_a_float_artefact_never_reaches_a_published_value(number, ulps, scale):
    # given the float a computation gives for a decimal, a few units in the last place off
    value = float(number)
    for _ in range(abs(ulps)):
        value = math.nextafter(value, math.copysign(math.inf, ulps))
    assume(value != 0)
    halfwidth = abs(value) * scale * 10.0**-6
    assume(halfwidth > 0)

    # when
    text = format_published(value, halfwidth=halfwidth)

    # then no binary tail shows, and the text is the value rounded to the interval's precision
    assert not ARTEFACT.search(significant_digits(text)), text
    exponent = interval_exponent(halfwidth)
    assert abs(Decimal(text) - Decimal(repr(value))) <= Decimal(1).scaleb(exponent) / 2


@given(
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e15, max_value=1e15),
    st.floats(min_value=1e-12, max_value=1e12),
)
def test_rounding_stays_within_half_a_published_digit_and_keeps_the_interval(value, halfwidth):
    # when
    rounded = published_value(value, halfwidth=halfwidth)
    low = published_value(value - halfwidth, halfwidth=halfwidth)
    high = published_value(value + halfwidth, halfwidth=halfwidth)

    # then it reads back as the value to within half its last digit, with at most 15
    # significant digits, and the rounded interval still holds the rounded value
    assert rounded is not None
    assert low is not None
    assert high is not None
    step = Decimal(1).scaleb(
        max(interval_exponent(halfwidth), Decimal(repr(value)).adjusted() - 14)
    )
    assert abs(rounded - Decimal(repr(value))) <= step / 2
    assert len(significant_digits(format(rounded, "f")).rstrip("0")) <= 15
    assert low <= rounded <= high
    assert not str(rounded).startswith("-0") or rounded != 0


@given(st.floats(min_value=1e-15, max_value=1e-3), st.floats(min_value=1e-15, max_value=1e-3))
def test_distinct_deltas_side_by_side_are_written_differently(first, second):
    # given two different δ shown together (a budget's total and what is spent), different
    # within 12 significant digits (beyond, they differ by floating-point error only, which a
    # page must not show: they read alike)
    assume(f"{first:.11e}" != f"{second:.11e}")

    # when
    texts = {format_delta(first, among=[second]), format_delta(second, among=[first])}

    # then they read differently, and each reads back as itself to its digits
    assert len(texts) == 2
    for text, value in zip(
        (format_delta(first, among=[second]), format_delta(second, among=[first])),
        (first, second),
        strict=True,
    ):
        assert not ARTEFACT.search(significant_digits(text.split(" ")[0])), text
        assert read_back(text) == pytest.approx(value, rel=0.05)


@given(st.floats(min_value=1e-15, max_value=0.999))
def test_a_delta_alone_reads_back_within_its_two_digits(delta):
    # when
    text = format_delta(delta)

    # then at most two significant digits, within 5% of the value
    mantissa = text.split(" ")[0]
    assert len(mantissa.replace(".", "").replace("-", "").lstrip("0")) <= 2
    assert read_back(text) == pytest.approx(delta, rel=0.05)


@given(st.floats(min_value=1e-4, max_value=1e6))
def test_an_epsilon_reads_back_within_its_four_digits(epsilon):
    text = format_epsilon(epsilon)
    assert not ARTEFACT.search(significant_digits(text.split(" ")[0])), text
    assert read_back(text) == pytest.approx(epsilon, rel=5e-4)


def test_distinguishing_digits_grows_only_as_needed():
    assert distinguishing_digits([0.1, 0.2], minimum=2) == 2
    assert distinguishing_digits([0.1, 0.1001], minimum=2) == 4
    assert distinguishing_digits([0.1, 0.1, "text"], minimum=3) == 3


def test_an_interval_is_rounded_outwards():
    # a clamped sum's interval, and a symmetric one
    assert published_interval(0.0, 4121.076796958239) == (Decimal(0), Decimal(4200))
    assert published_interval(-10.25, 3.25) == (Decimal("-10.3"), Decimal("3.3"))
    assert published_interval(None, 3) == (None, Decimal(3))


@given(
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12),
    st.floats(min_value=1e-9, max_value=1e9),
)
def test_a_rounded_interval_holds_the_computed_one(low, width):
    high = low + width
    assume(high > low)
    rounded_low, rounded_high = published_interval(low, high)
    assert rounded_low <= Decimal(repr(low))
    assert rounded_high >= Decimal(repr(high))


def test_deltas_one_float_step_apart_read_alike_without_artefacts():
    # found by hypothesis: 0.001 and the float just below it, shown side by side
    texts = {
        format_delta(0.001, among=[0.0009999999999999998]),
        format_delta(0.0009999999999999998, among=[0.001]),
    }

    assert texts == {"0.001"}
