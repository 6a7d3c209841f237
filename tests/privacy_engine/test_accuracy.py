"""Accuracy formulas of the noise distributions (DESIGN.md, "Formulas from the seeds").

The closed forms are pinned, then cross-checked against independent computations: a direct
summation of the discrete Laplace pmf (1 − α)/(1 + α)·α^|k|, and scipy's distributions.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from privacy_engine import (
    accuracy,
    geometric_expected_abs_error,
    geometric_halfwidth,
    geometric_tail,
    laplace_expected_abs_error,
    laplace_halfwidth,
    laplace_tail,
)
from privacy_engine.accuracy import geometric_alpha

LN_20 = 2.995732273553990993435223576142540775677
SCALES = [0.25, 0.5, 1.0, 2.0, 4.0, 10.0, 40.0]


def discrete_laplace_pmf(k: int, alpha: float) -> float:
    return (1.0 - alpha) / (1.0 + alpha) * alpha ** abs(k)


def support_until_negligible(alpha: float) -> range:
    """All k ≥ 1 whose mass α^k exceeds 10⁻²⁰ (the rest cannot move a double)."""
    return range(1, math.ceil(20 * math.log(10) / -math.log(alpha)) + 2)


# --- Laplace ------------------------------------------------------------------------------


@pytest.mark.parametrize("scale", SCALES)
def test_laplace_95_percent_halfwidth_is_scale_times_ln_20(scale):
    # when
    halfwidth = laplace_halfwidth(scale)

    # then
    assert halfwidth == pytest.approx(scale * LN_20, rel=1e-15)


def test_laplace_halfwidth_at_other_coverage_is_scale_times_ln_of_one_over_miss():
    # when
    halfwidth = laplace_halfwidth(3.0, coverage=0.9)

    # then
    assert halfwidth == pytest.approx(3.0 * math.log(10.0), rel=1e-15)


@pytest.mark.parametrize("scale", SCALES)
def test_laplace_tail_is_e_to_the_minus_t_over_b(scale):
    # given
    threshold = 1.7

    # when
    tail = laplace_tail(threshold, scale)

    # then
    assert tail == pytest.approx(math.exp(-threshold / scale), rel=1e-15)


@pytest.mark.parametrize("scale", SCALES)
def test_laplace_tail_matches_scipy_two_sided_survival(scale):
    # given
    threshold = 2.5 * scale

    # when
    tail = laplace_tail(threshold, scale)

    # then
    assert tail == pytest.approx(2 * stats.laplace.sf(threshold, scale=scale), rel=1e-12)


@pytest.mark.parametrize("scale", SCALES)
def test_laplace_tail_at_the_95_percent_halfwidth_is_5_percent(scale):
    # when
    tail = laplace_tail(laplace_halfwidth(scale), scale)

    # then
    assert tail == pytest.approx(0.05, rel=1e-14)


@pytest.mark.parametrize("scale", SCALES)
def test_laplace_expected_abs_error_is_the_scale(scale):
    # when
    error = laplace_expected_abs_error(scale)

    # then
    assert error == scale
    assert error == pytest.approx(stats.laplace.expect(abs, scale=scale), rel=1e-9)


# --- geometric (discrete Laplace): closed forms ----------------------------------------------


@pytest.mark.parametrize("scale", SCALES)
def test_geometric_alpha_is_e_to_the_minus_one_over_scale(scale):
    # when
    alpha = geometric_alpha(scale)

    # then
    assert alpha == pytest.approx(math.exp(-1.0 / scale), rel=1e-15)


def test_geometric_alpha_of_epsilon_1_sensitivity_1_is_1_over_e():
    # when
    alpha = geometric_alpha(1.0)

    # then
    assert alpha == pytest.approx(0.36787944117144233, rel=1e-15)


@pytest.mark.parametrize("scale", SCALES)
def test_geometric_expected_abs_error_is_2_alpha_over_1_minus_alpha_squared(scale):
    # given
    alpha = math.exp(-1.0 / scale)

    # when
    error = geometric_expected_abs_error(scale)

    # then
    assert error == pytest.approx(2 * alpha / (1 - alpha**2), rel=1e-13)


def test_geometric_expected_abs_error_at_scale_1_is_pinned():
    # when
    error = geometric_expected_abs_error(1.0)

    # then: 2e⁻¹/(1 − e⁻²) = 1/sinh(1)
    assert error == pytest.approx(0.85091812823932154513384276328717528418, rel=1e-14)


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("threshold", [1, 2, 3, 7, 20])
def test_geometric_tail_is_2_alpha_to_the_t_over_1_plus_alpha(scale, threshold):
    # given
    alpha = math.exp(-1.0 / scale)

    # when
    tail = geometric_tail(threshold, scale)

    # then
    assert tail == pytest.approx(2 * alpha**threshold / (1 + alpha), rel=1e-13)


@pytest.mark.parametrize("threshold", [0, -3])
def test_geometric_tail_below_1_is_certain(threshold):
    # when
    tail = geometric_tail(threshold, 2.0)

    # then
    assert tail == 1.0


# --- geometric: cross-checked against the pmf -----------------------------------------------


@pytest.mark.parametrize("scale", SCALES)
def test_discrete_laplace_pmf_used_for_cross_checks_sums_to_1(scale):
    # given
    alpha = math.exp(-1.0 / scale)

    # when
    total = discrete_laplace_pmf(0, alpha) + math.fsum(
        2 * discrete_laplace_pmf(k, alpha) for k in support_until_negligible(alpha)
    )

    # then
    assert total == pytest.approx(1.0, abs=1e-14)


@pytest.mark.parametrize("scale", SCALES)
def test_geometric_expected_abs_error_matches_a_direct_sum_over_the_pmf(scale):
    # given
    alpha = math.exp(-1.0 / scale)

    # when
    direct = math.fsum(
        2 * k * discrete_laplace_pmf(k, alpha) for k in support_until_negligible(alpha)
    )

    # then
    assert geometric_expected_abs_error(scale) == pytest.approx(direct, rel=1e-12)


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("threshold", [1, 2, 5, 13])
def test_geometric_tail_matches_a_direct_sum_over_the_pmf(scale, threshold):
    # given
    alpha = math.exp(-1.0 / scale)

    # when
    direct = math.fsum(
        2 * discrete_laplace_pmf(k, alpha)
        for k in support_until_negligible(alpha)
        if k >= threshold
    )

    # then
    assert geometric_tail(threshold, scale) == pytest.approx(direct, rel=1e-12)


@pytest.mark.parametrize("scale", SCALES)
def test_geometric_formulas_match_scipy_dlaplace(scale):
    # given: scipy's dlaplace has pmf tanh(a/2)·e^{−a|k|}, i.e. α = e^{−a} with a = 1/scale
    distribution = stats.dlaplace(1.0 / scale)

    thresholds = np.arange(1, support_until_negligible(math.exp(-1.0 / scale)).stop)

    # when
    tail_3 = geometric_tail(3, scale)
    error = geometric_expected_abs_error(scale)

    # then: E|K| = Σ_{t ≥ 1} P(|K| ≥ t), and P(|K| ≥ t) = P(K ≥ t) + P(K ≤ −t)
    assert tail_3 == pytest.approx(distribution.sf(2) + distribution.cdf(-3), rel=1e-10)
    tails = distribution.sf(thresholds - 1) + distribution.cdf(-thresholds)
    assert error == pytest.approx(math.fsum(tails.tolist()), rel=1e-10)


def test_geometric_formulas_differ_from_the_continuous_ones():
    # given: at scale 1 the discrete and continuous answers are far apart
    scale = 1.0

    # when / then
    assert geometric_expected_abs_error(scale) != pytest.approx(laplace_expected_abs_error(scale))
    assert geometric_halfwidth(scale) == 3
    assert laplace_halfwidth(scale) == pytest.approx(LN_20, rel=1e-15)


# --- geometric 95% half-width ------------------------------------------------------------


@pytest.mark.parametrize(
    ("scale", "halfwidth"),
    [(0.25, 0), (0.5, 1), (1.0, 3), (2.0, 6), (4.0, 12), (10.0, 30), (40.0, 120)],
)
def test_geometric_95_percent_halfwidth_is_pinned(scale, halfwidth):
    # when / then
    assert geometric_halfwidth(scale) == halfwidth


@given(scale=st.floats(min_value=0.05, max_value=2000.0))
def test_geometric_halfwidth_is_the_smallest_h_with_tail_at_h_plus_1_at_most_5_percent(scale):
    # when
    halfwidth = geometric_halfwidth(scale)

    # then
    assert isinstance(halfwidth, int)
    assert halfwidth >= 0
    assert geometric_tail(halfwidth + 1, scale) <= 0.05
    if halfwidth > 0:
        assert geometric_tail(halfwidth, scale) > 0.05


@pytest.mark.parametrize("scale", SCALES)
def test_geometric_halfwidth_covers_95_percent_by_direct_pmf_sum(scale):
    # given
    alpha = math.exp(-1.0 / scale)
    halfwidth = geometric_halfwidth(scale)

    # when
    def coverage(h: int) -> float:
        return discrete_laplace_pmf(0, alpha) + math.fsum(
            2 * discrete_laplace_pmf(k, alpha) for k in range(1, h + 1)
        )

    # then
    assert coverage(halfwidth) >= 0.95
    if halfwidth > 0:
        assert coverage(halfwidth - 1) < 0.95


@given(
    scale=st.floats(min_value=0.05, max_value=500.0),
    coverage=st.floats(min_value=0.5, max_value=0.999),
)
def test_geometric_halfwidth_at_any_coverage_is_the_smallest_sufficient_integer(scale, coverage):
    # when
    halfwidth = geometric_halfwidth(scale, coverage)

    # then
    miss = 1.0 - coverage
    assert geometric_tail(halfwidth + 1, scale) <= miss
    if halfwidth > 0:
        assert geometric_tail(halfwidth, scale) > miss


def test_geometric_halfwidth_of_a_vanishing_scale_is_0():
    # given: α underflows to 0, so the noise is 0 with probability 1
    scale = 1e-3

    # when / then
    assert geometric_alpha(scale) == 0.0
    assert geometric_halfwidth(scale) == 0


@settings(max_examples=200)
@given(scale=st.floats(min_value=20.0, max_value=1999.0))
def test_the_discrete_gaussian_error_expansion_equals_the_sum_over_the_support(scale):
    # given: E|noise| summed over the whole support, term by term
    support = range(int(scale * 10) + 2)
    weights = [math.exp(-(k * k) / (2.0 * scale * scale)) for k in support]
    total = weights[0] + 2.0 * math.fsum(weights[1:])
    summed = 2.0 * math.fsum(k * w for k, w in zip(support, weights, strict=True)) / total

    # when
    expanded = accuracy.gaussian_expected_abs_error(scale, integer=True)

    # then
    assert math.isclose(expanded, summed, rel_tol=1e-14)
