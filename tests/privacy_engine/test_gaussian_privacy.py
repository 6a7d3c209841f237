"""The Gaussian mechanism of (ε, δ)-DP: its accuracy formulas, and a statistical privacy audit of
the real discrete Gaussian (DESIGN.md, "Formulas from the seeds" and "Verified on this kind of
machine").

(ε, δ)-DP demands P(E | D1) ≤ e^ε · P(E | D2) + δ for neighbouring D1, D2 and every event E. For a
count of 1 (D1, the record is there) vs 0 (D2) and the events "output ≥ t" (favours D1) and
"output ≤ 1 − t" (favours D2), 200,000 draws per side give Clopper–Pearson bounds; the lower bound
of (P(E | favoured) − δ) / P(E | other) must not exceed e^ε. δ = 10⁻³ keeps σ small (≈ 2.9) so the
events have mass and the audit has power. Negative controls: a Gaussian built for 4ε, and one built
for 2ε, audited at the claimed ε, must be caught.

Noise comes from a cryptographic source and cannot be seeded; each audit is calibrated to a
false-alarm probability of about 10⁻⁶ per run.
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

from privacy_engine import GaussianMechanism, OpenDPNoise
from privacy_engine.accuracy import gaussian_expected_abs_error, gaussian_halfwidth

pytestmark = pytest.mark.statistical

EPSILON = 1.0
DELTA = 1e-3
DRAWS = 200_000
# Power only grows with the sample, so a control caught with fewer draws is caught with DRAWS too.
CONTROL_DRAWS = 50_000
# Two thresholds, each in both directions: four events share the false-alarm budget.
THRESHOLDS = (3, 5)
FALSE_ALARM = 1e-6
EVENT_MISS = FALSE_ALARM / (2 * len(THRESHOLDS))
Z_LIMIT = float(stats.norm.isf(FALSE_ALARM / 2))
Z_975 = 1.959963984540054
WORKERS = min(8, os.cpu_count() or 1)

dp.enable_features("contrib")


# --- exact distributions to compare against --------------------------------------------------


def discrete_gaussian_pmf(scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Support −K..K and probabilities ∝ e^{−k²/2σ²}, summed directly over both signs."""
    bound = math.ceil(12 * scale) + 10
    support = np.arange(-bound, bound + 1, dtype=float)
    weights = np.exp(-(support**2) / (2 * scale * scale))
    return support, weights / weights.sum()


def direct_expected_abs(scale: float) -> float:
    support, pmf = discrete_gaussian_pmf(scale)
    return float(np.sum(np.abs(support) * pmf))


def direct_halfwidth(scale: float, coverage: float = 0.95) -> int:
    """Smallest whole h with P(|K| ≤ h) ≥ coverage."""
    support, pmf = discrete_gaussian_pmf(scale)
    centre = len(support) // 2
    within = np.cumsum(np.concatenate([[pmf[centre]], pmf[centre + 1 :] + pmf[centre - 1 :: -1]]))
    return int(np.argmax(within >= coverage))


# --- the audit --------------------------------------------------------------------------------


@dataclass(frozen=True)
class EventAudit:
    """(P(E | favoured) − δ) / P(E | other) ≥ bound, with the chosen confidence."""

    event: str
    bound: float
    allowed: float

    @property
    def violation(self) -> bool:
        return self.bound > self.allowed


def audit_event(
    event: str, favoured: np.ndarray, other: np.ndarray, *, epsilon: float, delta: float
) -> EventAudit:
    """Each Clopper–Pearson bound may be wrong with probability EVENT_MISS / 2."""
    lower = clopper_pearson_lower(int(favoured.sum()), favoured.size, EVENT_MISS / 2)
    upper = clopper_pearson_upper(int(other.sum()), other.size, EVENT_MISS / 2)
    return EventAudit(event=event, bound=(lower - delta) / upper, allowed=math.exp(epsilon))


@dataclass(frozen=True)
class Draws:
    """Outputs on a count of 1 (``with_record``) and of 0 (``without_record``)."""

    with_record: np.ndarray
    without_record: np.ndarray

    @property
    def noise(self) -> np.ndarray:
        return np.concatenate([self.with_record - 1, self.without_record])


def audit(draws: Draws, *, epsilon: float, delta: float) -> dict[str, EventAudit]:
    audits = {}
    for t in THRESHOLDS:
        audits[f">= {t}"] = audit_event(
            f"output >= {t}",
            draws.with_record >= t,
            draws.without_record >= t,
            epsilon=epsilon,
            delta=delta,
        )
        audits[f"<= {1 - t}"] = audit_event(
            f"output <= {1 - t}",
            draws.without_record <= 1 - t,
            draws.with_record <= 1 - t,
            epsilon=epsilon,
            delta=delta,
        )
    return audits


def violations(audits: dict[str, EventAudit]) -> list[str]:
    return [name for name, a in audits.items() if a.violation]


def mean_abs_error_z(noise: np.ndarray, expected: float) -> float:
    magnitudes = np.abs(noise.astype(float))
    standard_error = magnitudes.std(ddof=1) / math.sqrt(magnitudes.size)
    return float((magnitudes.mean() - expected) / standard_error)


def draw_in_parallel(draw: Callable[[int], np.ndarray], total: int) -> np.ndarray:
    sizes = [total // WORKERS + (i < total % WORKERS) for i in range(WORKERS)]
    with ThreadPoolExecutor(WORKERS) as pool:
        return np.concatenate([np.asarray(chunk) for chunk in pool.map(draw, sizes)])


def gaussian_draws(mechanism: GaussianMechanism, draws: int) -> Draws:
    """Through the mechanism's own release path (OpenDP's discrete Gaussian sampler)."""

    def sample(value: int) -> np.ndarray:
        return draw_in_parallel(lambda size: mechanism.release([value] * size), draws)

    return Draws(with_record=sample(1), without_record=sample(0))


def gaussian(epsilon: float) -> GaussianMechanism:
    return GaussianMechanism(sensitivity=1, epsilon=epsilon, delta=DELTA, integer=True)


@pytest.fixture(scope="module")
def mechanism():
    return gaussian(EPSILON)


@pytest.fixture(scope="module")
def samples(mechanism):
    return gaussian_draws(mechanism, DRAWS)


@pytest.fixture(scope="module")
def four_epsilon_samples():
    return gaussian_draws(gaussian(4 * EPSILON), CONTROL_DRAWS)


@pytest.fixture(scope="module")
def two_epsilon_samples():
    return gaussian_draws(gaussian(2 * EPSILON), DRAWS)


# --- accuracy formulas ------------------------------------------------------------------------

SCALES = [0.3, 0.9, 2.9, 10.0, 57.5, 400.0]


@pytest.mark.parametrize("scale", [0.5, 1.0, 2.9, 100.0, 12345.0])
def test_continuous_gaussian_expected_abs_error_is_sigma_root_2_over_pi(scale):
    # when
    value = gaussian_expected_abs_error(scale)

    # then
    assert value == scale * math.sqrt(2 / math.pi)
    assert value == pytest.approx(float(stats.halfnorm.mean(scale=scale)), rel=1e-14)


@pytest.mark.parametrize("scale", [0.5, 1.0, 2.9, 100.0, 12345.0])
def test_continuous_gaussian_95_percent_halfwidth_is_1_959964_sigma(scale):
    # when
    halfwidth = gaussian_halfwidth(scale)

    # then
    assert halfwidth == pytest.approx(Z_975 * scale, rel=1e-14)
    assert stats.norm.cdf(halfwidth, scale=scale) == pytest.approx(0.975, abs=1e-14)


def test_continuous_gaussian_halfwidth_at_90_percent_is_1_644854_sigma():
    # when
    halfwidth = gaussian_halfwidth(3.0, coverage=0.9)

    # then
    assert halfwidth == pytest.approx(3.0 * 1.6448536269514722, rel=1e-14)


@pytest.mark.parametrize("scale", SCALES)
def test_discrete_gaussian_expected_abs_error_matches_a_direct_sum(scale):
    # when
    value = gaussian_expected_abs_error(scale, integer=True)

    # then
    assert value == pytest.approx(direct_expected_abs(scale), rel=1e-12)


@pytest.mark.parametrize("scale", SCALES)
def test_discrete_gaussian_halfwidth_is_the_smallest_whole_number_covering_95_percent(scale):
    # when
    halfwidth = gaussian_halfwidth(scale, integer=True)

    # then
    assert halfwidth == direct_halfwidth(scale)
    assert halfwidth == int(halfwidth)


def test_discrete_gaussian_with_tiny_scale_is_almost_surely_exact():
    # when / then: σ = 0.3 puts 99.6% of the mass on 0
    assert gaussian_halfwidth(0.3, integer=True) == 0
    assert gaussian_expected_abs_error(0.3, integer=True) == pytest.approx(
        direct_expected_abs(0.3), rel=1e-12
    )


def test_discrete_and_continuous_gaussian_differ_at_small_scales():
    # when / then: the discrete formulas are not the continuous ones
    assert gaussian_expected_abs_error(0.9, integer=True) != pytest.approx(
        gaussian_expected_abs_error(0.9), rel=1e-3
    )
    assert gaussian_halfwidth(0.9, integer=True) == 2.0


@pytest.mark.parametrize(
    ("scale", "expected"), [(2000.0, 3920), (3000.0, 5880), (10_000.0, 19_600)]
)
def test_discrete_gaussian_halfwidth_above_the_exact_sum_limit_is_still_a_covering_whole_number(
    scale, expected
):
    # when: beyond the exact-sum limit the continuous 1.96σ is used, but a count's interval
    # must stay a whole number that covers 95% (3919.93 truncated to 3919 covers 94.997%)
    halfwidth = gaussian_halfwidth(scale, integer=True)

    # then
    assert halfwidth == direct_halfwidth(scale) == expected


# --- the mechanism's own accounting -------------------------------------------------------------


def test_gaussian_draws_from_opendp_and_spends_exactly_what_was_asked(mechanism):
    # then
    assert isinstance(mechanism.noise, OpenDPNoise)
    assert mechanism.name == "gaussian"
    assert (mechanism.epsilon_spent, mechanism.delta_spent) == (EPSILON, DELTA)
    assert 2.8 < mechanism.scale < 3.0
    assert mechanism.expected_abs_error == gaussian_expected_abs_error(
        mechanism.scale, integer=True
    )


def test_gaussian_scale_is_the_smallest_that_keeps_epsilon(mechanism):
    # given the same measurement with 1% less noise
    space = (dp.vector_domain(dp.atom_domain(T=dp.i64)), dp.l2_distance(T=dp.i64))
    smaller = dp.c.make_fix_delta(
        dp.c.make_zCDP_to_approxDP(dp.m.make_gaussian(*space, scale=mechanism.scale * 0.99)),
        DELTA,
    )

    # when
    epsilon, delta = smaller.map(1)

    # then
    assert epsilon > EPSILON
    assert delta == DELTA


def test_four_epsilon_gaussian_has_much_less_noise():
    # when
    control = gaussian(4 * EPSILON)

    # then
    assert (control.epsilon_spent, control.delta_spent) == (4 * EPSILON, DELTA)
    assert control.scale < gaussian(EPSILON).scale / 3


# --- the audit ----------------------------------------------------------------------------------


def test_gaussian_count_passes_the_approx_dp_audit(samples):
    # when
    audits = audit(samples, epsilon=EPSILON, delta=DELTA)

    # then
    assert violations(audits) == [], audits


def test_audit_catches_a_gaussian_built_for_four_times_epsilon(four_epsilon_samples):
    # when: claims (1, 10⁻³), actually (4, 10⁻³)
    audits = audit(four_epsilon_samples, epsilon=EPSILON, delta=DELTA)

    # then: the events at t = 3 have the mass to show it, far above e^ε
    assert {">= 3", "<= -2"} <= set(violations(audits)), audits
    assert audits[">= 3"].bound > 2 * math.exp(EPSILON), audits
    assert audits["<= -2"].bound > 2 * math.exp(EPSILON), audits


def test_audit_catches_a_gaussian_built_for_twice_epsilon(two_epsilon_samples):
    # when: claims (1, 10⁻³), actually (2, 10⁻³): a subtler slip
    audits = audit(two_epsilon_samples, epsilon=EPSILON, delta=DELTA)

    # then
    assert {">= 5", "<= -4"} <= set(violations(audits)), audits


def test_audit_of_the_four_epsilon_gaussian_at_its_true_epsilon_passes(four_epsilon_samples):
    # when: the audit is not lopsided: the same draws pass at the ε they really give
    audits = audit(four_epsilon_samples, epsilon=4 * EPSILON, delta=DELTA)

    # then
    assert violations(audits) == [], audits


def test_gaussian_noise_has_the_expected_mean_absolute_error(mechanism, samples):
    # when
    z = mean_abs_error_z(samples.noise, mechanism.expected_abs_error)

    # then
    assert abs(z) < Z_LIMIT


def test_gaussian_noise_is_integer_and_centred(mechanism, samples):
    # when
    noise = samples.noise

    # then
    standard_error = mechanism.scale / math.sqrt(noise.size)
    assert noise.dtype == np.int64
    assert abs(noise.mean()) < Z_LIMIT * standard_error


def test_scale_check_catches_the_four_epsilon_gaussian(mechanism, four_epsilon_samples):
    # when
    z = mean_abs_error_z(four_epsilon_samples.noise, mechanism.expected_abs_error)

    # then
    assert z < -Z_LIMIT


def test_gaussian_noise_matches_the_exact_coverage_of_the_published_halfwidth(mechanism, samples):
    # given
    halfwidth = int(mechanism.halfwidth())
    support, pmf = discrete_gaussian_pmf(mechanism.scale)
    exact = float(pmf[np.abs(support) <= halfwidth].sum())
    inside = int((np.abs(samples.noise) <= halfwidth).sum())

    # when
    low = clopper_pearson_lower(inside, samples.noise.size, FALSE_ALARM / 2)
    high = clopper_pearson_upper(inside, samples.noise.size, FALSE_ALARM / 2)

    # then: the sampler draws the discrete Gaussian the formulas describe
    assert exact >= 0.95
    assert float(pmf[np.abs(support) <= halfwidth - 1].sum()) < 0.95
    assert low <= exact <= high
