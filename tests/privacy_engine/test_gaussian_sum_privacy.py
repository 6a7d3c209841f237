"""Statistical privacy audit of the continuous Gaussian mechanism (sums under (ε, δ)-DP), with a
negative control: the same audit must catch a mechanism with far less noise than it claims."""

import math

import numpy as np
import opendp.prelude as dp
import pytest
from scipy import stats

from privacy_engine import GaussianMechanism

pytestmark = pytest.mark.statistical

EPSILON = 1.0
DELTA = 1e-3
SENSITIVITY = 100.0
# Continuous Gaussian draws cost ~80 µs each, so fewer than for integer noise: wider intervals
# only make the honest check easier to pass, and the control is caught by a wide margin.
DRAWS = 60_000
CONTROL_DRAWS = 20_000
MISS = 1e-7  # per one-sided Clopper–Pearson bound


def draws(mechanism: GaussianMechanism, value: float, count: int) -> np.ndarray:
    """Many draws at once through a vector measurement with the mechanism's own scale; its
    privacy map must equal the mechanism's, so it is the same noise."""
    vector = dp.c.make_fix_delta(
        dp.c.make_zCDP_to_approxDP(
            dp.m.make_gaussian(
                dp.vector_domain(dp.atom_domain(T=float, nan=False)),
                dp.l2_distance(T=float),
                scale=mechanism.scale,
            )
        ),
        DELTA,
    )
    assert vector.map(SENSITIVITY) == mechanism.measurement.map(SENSITIVITY)
    return np.asarray(vector([value] * count))


def lower_ratio_minus_delta(
    high: np.ndarray, low: np.ndarray, threshold: float, delta: float
) -> float:
    """Lower confidence bound on (P(out ≥ t | D1) − δ) / P(out ≥ t | D2)."""
    k1, k2 = int((high >= threshold).sum()), int((low >= threshold).sum())
    p1_low = stats.beta.ppf(MISS, k1, DRAWS - k1 + 1) if k1 else 0.0
    p2_high = stats.beta.ppf(1 - MISS, k2 + 1, DRAWS - k2) if k2 < DRAWS else 1.0
    return (p1_low - delta) / p2_high


def audit(mechanism: GaussianMechanism) -> float:
    high = draws(mechanism, SENSITIVITY, DRAWS)
    low = draws(mechanism, 0.0, DRAWS)
    return max(lower_ratio_minus_delta(high, low, t * SENSITIVITY, DELTA) for t in (1.0, 1.5))


def test_gaussian_sum_mechanism_respects_its_epsilon_delta():
    # given
    mechanism = GaussianMechanism(
        sensitivity=SENSITIVITY, epsilon=EPSILON, delta=DELTA, integer=False
    )

    # when
    ratio = audit(mechanism)

    # then
    assert ratio <= math.exp(EPSILON)


def test_audit_catches_a_gaussian_with_far_less_noise_than_claimed():
    # given a mechanism calibrated for 4ε but claimed at ε
    cheater = GaussianMechanism(
        sensitivity=SENSITIVITY, epsilon=4 * EPSILON, delta=DELTA, integer=False
    )

    # when
    ratio = audit(cheater)

    # then
    assert ratio > math.exp(EPSILON)


def test_published_noise_matches_the_promised_expected_error():
    # given
    mechanism = GaussianMechanism(
        sensitivity=SENSITIVITY, epsilon=EPSILON, delta=DELTA, integer=False
    )

    # when
    noise = draws(mechanism, 0.0, DRAWS)

    # then the mean absolute error is σ·√(2/π) within 5 standard errors
    standard_error = mechanism.scale * math.sqrt(1 - 2 / math.pi) / math.sqrt(DRAWS)
    assert abs(np.abs(noise).mean() - mechanism.expected_abs_error) < 5 * standard_error
