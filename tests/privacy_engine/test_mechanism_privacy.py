"""Statistical privacy audit of the real mechanisms (DESIGN.md, "Verified on this kind of machine").

For neighbouring inputs D1 (with the record) and D2 (without it) and an output event E, ε-DP
demands P(E | D1) ≤ e^ε · P(E | D2). From 200,000 draws per side with OpenDP's own samplers, a
Clopper–Pearson lower confidence bound on that ratio must not exceed e^ε. The events are the tight
ones (output ≥ the larger input, output ≤ the smaller one), where a correct mechanism's ratio is
exactly e^ε, so the audit has as much power as the sample allows. Each audit has a negative
control: a mechanism with half the noise scale, audited against the claimed ε, must be caught.

Noise cannot be seeded (it comes from a cryptographic source), so each check is calibrated to a
false-alarm probability of about 10⁻⁶ per run; the controls show the power that is left.
"""

import math
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import opendp.prelude as dp
import pytest
from binomial_bounds import clopper_pearson_lower, clopper_pearson_upper
from scipy import stats

from privacy_engine import (
    GeometricMechanism,
    LaplaceMechanism,
    OpenDPNoise,
    geometric_expected_abs_error,
)

pytestmark = pytest.mark.statistical

EPSILON = 1.0
DRAWS = 200_000
# Power only grows with the sample, so a control caught with fewer draws is caught with DRAWS too.
CONTROL_DRAWS = 50_000
# Chance that a correct mechanism fails one audit (two events) or one scale check.
FALSE_ALARM = 1e-6
# Two-sided normal quantile for FALSE_ALARM: |z| > 4.89 has probability 10⁻⁶.
Z_LIMIT = float(stats.norm.isf(FALSE_ALARM / 2))
SUM_SENSITIVITY = 100.0
# OpenDP's samplers release the GIL while they draw, so chunks run in parallel on threads.
WORKERS = min(8, os.cpu_count() or 1)

dp.enable_features("contrib")


# --- the audit --------------------------------------------------------------------------


@dataclass(frozen=True)
class EventAudit:
    """P(E | D_more) / P(E | D_less) ≥ ratio_lower_bound, with the chosen confidence."""

    event: str
    ratio_lower_bound: float
    allowed: float

    @property
    def violation(self) -> bool:
        return self.ratio_lower_bound > self.allowed


def audit_event(
    event: str, in_more: np.ndarray, in_less: np.ndarray, *, epsilon: float, miss: float
) -> EventAudit:
    """Lower-bound P(E | one side) / P(E | other side) from indicator samples of E.

    Each bound may be wrong with probability ``miss / 2``, so by the union bound the ratio's lower
    bound is wrong with probability at most ``miss``.
    """
    lower = clopper_pearson_lower(int(in_more.sum()), in_more.size, miss / 2)
    upper = clopper_pearson_upper(int(in_less.sum()), in_less.size, miss / 2)
    return EventAudit(event=event, ratio_lower_bound=lower / upper, allowed=math.exp(epsilon))


@dataclass(frozen=True)
class Draws:
    """Outputs of one mechanism on neighbouring inputs: ``with_record`` ↔ ``without_record``."""

    value_with: float
    value_without: float
    with_record: np.ndarray
    without_record: np.ndarray

    @property
    def noise(self) -> np.ndarray:
        return np.concatenate(
            [self.with_record - self.value_with, self.without_record - self.value_without]
        )


def audit(draws: Draws, *, epsilon: float) -> list[EventAudit]:
    """Both tight events: output ≥ the larger input (favours D1) and output ≤ the smaller
    input (favours D2). Each audit's false-alarm budget is half of FALSE_ALARM."""
    high, low = draws.value_with, draws.value_without
    return [
        audit_event(
            f"output >= {high:g}",
            draws.with_record >= high,
            draws.without_record >= high,
            epsilon=epsilon,
            miss=FALSE_ALARM / 2,
        ),
        audit_event(
            f"output <= {low:g}",
            draws.without_record <= low,
            draws.with_record <= low,
            epsilon=epsilon,
            miss=FALSE_ALARM / 2,
        ),
    ]


def mean_abs_error_z(noise: np.ndarray, expected: float) -> float:
    """How many standard errors the empirical E|noise| lies from ``expected``."""
    magnitudes = np.abs(noise.astype(float))
    standard_error = magnitudes.std(ddof=1) / math.sqrt(magnitudes.size)
    return float((magnitudes.mean() - expected) / standard_error)


# --- drawing from the real samplers ----------------------------------------------------------


def draw_in_parallel(draw: Callable[[int], list], total: int) -> np.ndarray:
    sizes = [total // WORKERS + (i < total % WORKERS) for i in range(WORKERS)]
    with ThreadPoolExecutor(WORKERS) as pool:
        return np.concatenate([np.asarray(chunk) for chunk in pool.map(draw, sizes)])


def geometric_draws(mechanism: GeometricMechanism, draws: int) -> Draws:
    """Count of 1 (the record is there) vs 0, through the mechanism's own release path."""

    def sample(value: int) -> np.ndarray:
        return draw_in_parallel(lambda size: mechanism.release([value] * size), draws)

    return Draws(value_with=1, value_without=0, with_record=sample(1), without_record=sample(0))


def vector_laplace_like(mechanism: LaplaceMechanism) -> dp.Measurement:
    """The mechanism's scalar measurement, vectorised for speed: same sampler, same scale."""
    vector = dp.m.make_laplace(
        dp.vector_domain(dp.atom_domain(T=float, nan=False)),
        dp.l1_distance(T=float),
        scale=mechanism.scale,
    )
    assert vector.map(mechanism.sensitivity) == mechanism.measurement.map(mechanism.sensitivity)
    return vector


def laplace_draws(mechanism: LaplaceMechanism, draws: int) -> Draws:
    """Sum of 100 (one record at the upper bound) vs 0."""
    vector = vector_laplace_like(mechanism)

    def sample(value: float) -> np.ndarray:
        return draw_in_parallel(lambda size: vector([value] * size), draws)

    high = mechanism.sensitivity
    return Draws(
        value_with=high, value_without=0.0, with_record=sample(high), without_record=sample(0.0)
    )


@pytest.fixture(scope="module")
def geometric():
    return GeometricMechanism(sensitivity=1, epsilon=EPSILON)


@pytest.fixture(scope="module")
def geometric_samples(geometric):
    return geometric_draws(geometric, DRAWS)


@pytest.fixture(scope="module")
def half_noise_geometric_samples():
    return geometric_draws(GeometricMechanism(sensitivity=1, epsilon=2 * EPSILON), CONTROL_DRAWS)


@pytest.fixture(scope="module")
def slightly_less_noise_geometric_samples():
    # Half the audit's draws still leave the lower bound ~10 standard errors above e^ε.
    return geometric_draws(GeometricMechanism(sensitivity=1, epsilon=1.1 * EPSILON), DRAWS // 2)


@pytest.fixture(scope="module")
def laplace():
    return LaplaceMechanism(sensitivity=SUM_SENSITIVITY, epsilon=EPSILON)


@pytest.fixture(scope="module")
def laplace_samples(laplace):
    return laplace_draws(laplace, DRAWS)


@pytest.fixture(scope="module")
def half_noise_laplace_samples():
    return laplace_draws(
        LaplaceMechanism(sensitivity=SUM_SENSITIVITY, epsilon=2 * EPSILON), CONTROL_DRAWS
    )


# --- the mechanisms under test use the vetted sampler ------------------------------------


def test_mechanisms_draw_from_opendp_by_default(geometric, laplace):
    # then
    assert isinstance(geometric.noise, OpenDPNoise)
    assert isinstance(laplace.noise, OpenDPNoise)
    assert geometric.scale == 1.0
    assert laplace.scale == 100.0
    assert geometric.epsilon_spent == EPSILON
    assert laplace.epsilon_spent == EPSILON


# --- geometric mechanism (counts) ---------------------------------------------------------


def test_geometric_count_passes_the_privacy_audit(geometric_samples):
    # when
    audits = audit(geometric_samples, epsilon=EPSILON)

    # then
    assert [a.violation for a in audits] == [False, False], audits


def test_geometric_audit_catches_a_mechanism_with_half_the_noise(half_noise_geometric_samples):
    # when: claims ε = 1, actually ε = 2
    audits = audit(half_noise_geometric_samples, epsilon=EPSILON)

    # then
    assert [a.violation for a in audits] == [True, True], audits
    assert all(a.ratio_lower_bound > math.exp(1.5 * EPSILON) for a in audits), audits


def test_geometric_audit_catches_a_mechanism_with_ten_percent_less_noise(
    slightly_less_noise_geometric_samples,
):
    # when: claims ε = 1, actually ε = 1.1 (a subtle calibration slip, not a gross one)
    audits = audit(slightly_less_noise_geometric_samples, epsilon=EPSILON)

    # then
    assert [a.violation for a in audits] == [True, True], audits


def test_geometric_audit_of_the_half_noise_mechanism_at_its_true_epsilon_passes(
    half_noise_geometric_samples,
):
    # when: the audit is tight, not lopsided: the same draws pass at the ε they really give
    audits = audit(half_noise_geometric_samples, epsilon=2 * EPSILON)

    # then
    assert [a.violation for a in audits] == [False, False], audits


def test_geometric_noise_has_the_expected_mean_absolute_error(geometric_samples):
    # when
    z = mean_abs_error_z(geometric_samples.noise, geometric_expected_abs_error(1.0))

    # then
    assert abs(z) < Z_LIMIT


def test_geometric_scale_check_catches_half_the_noise(half_noise_geometric_samples):
    # when
    z_claimed = mean_abs_error_z(
        half_noise_geometric_samples.noise, geometric_expected_abs_error(1.0)
    )
    z_actual = mean_abs_error_z(
        half_noise_geometric_samples.noise, geometric_expected_abs_error(0.5)
    )

    # then
    assert z_claimed < -Z_LIMIT
    assert abs(z_actual) < Z_LIMIT


def test_geometric_noise_is_integer_and_centred(geometric_samples):
    # when
    noise = geometric_samples.noise

    # then: E[K] = 0, Var K = 2α/(1 − α)² with α = 1/e
    alpha = math.exp(-1.0)
    standard_error = math.sqrt(2 * alpha / (1 - alpha) ** 2 / noise.size)
    assert noise.dtype == np.int64
    assert abs(noise.mean()) < Z_LIMIT * standard_error


# --- Laplace mechanism (sums) -------------------------------------------------------------


def test_laplace_sum_passes_the_privacy_audit(laplace_samples):
    # when
    audits = audit(laplace_samples, epsilon=EPSILON)

    # then
    assert [a.violation for a in audits] == [False, False], audits


def test_laplace_audit_catches_a_mechanism_with_half_the_noise(half_noise_laplace_samples):
    # when: claims ε = 1, actually ε = 2
    audits = audit(half_noise_laplace_samples, epsilon=EPSILON)

    # then
    assert [a.violation for a in audits] == [True, True], audits
    assert all(a.ratio_lower_bound > math.exp(1.5 * EPSILON) for a in audits), audits


def test_laplace_audit_of_the_half_noise_mechanism_at_its_true_epsilon_passes(
    half_noise_laplace_samples,
):
    # when
    audits = audit(half_noise_laplace_samples, epsilon=2 * EPSILON)

    # then
    assert [a.violation for a in audits] == [False, False], audits


def test_laplace_noise_has_mean_absolute_error_equal_to_the_scale(laplace, laplace_samples):
    # when
    z = mean_abs_error_z(laplace_samples.noise, laplace.expected_abs_error)

    # then
    assert laplace.expected_abs_error == 100.0
    assert abs(z) < Z_LIMIT


def test_laplace_scale_check_catches_half_the_noise(laplace, half_noise_laplace_samples):
    # when
    z_claimed = mean_abs_error_z(half_noise_laplace_samples.noise, laplace.expected_abs_error)
    z_actual = mean_abs_error_z(half_noise_laplace_samples.noise, laplace.expected_abs_error / 2)

    # then
    assert z_claimed < -Z_LIMIT
    assert abs(z_actual) < Z_LIMIT


def test_laplace_release_path_draws_at_the_same_scale(laplace):
    # given: the scalar path the engine really uses (slower, so fewer draws)
    draws = 5_000

    # when
    noise = np.array([laplace.release(0.0) for _ in range(draws)])

    # then
    assert abs(mean_abs_error_z(noise, laplace.scale)) < Z_LIMIT
