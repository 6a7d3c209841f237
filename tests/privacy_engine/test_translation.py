"""Plain-language translations of ε (DESIGN.md, "Formulas from the seeds").

Reference values were computed with 40-digit Decimal arithmetic, independently of the engine.
"""

import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from privacy_engine import (
    epsilon_to_truth_probability,
    group_privacy,
    posterior_bound,
    truth_probability_to_epsilon,
)

# 1 / (1 + e^{-ε}) to 40 digits.
TRUTH_PROBABILITY_AT_0_1 = 0.5249791874789399860991931826041421598213
TRUTH_PROBABILITY_AT_0_01 = 0.5024999791668749978918864360710925604041
# e^{0.2}·0.1 / (0.9 + e^{0.2}·0.1) to 40 digits.
POSTERIOR_Q10_EPS02 = 0.1194946317113933647624100848907400537378
# 3·e^{0.2}·10⁻⁶ to 40 digits.
GROUP_DELTA_C3_EPS01 = 0.000003664208274480509501763215983919022510924

reasonable_epsilons = st.floats(min_value=0.0, max_value=10.0)
reasonable_probabilities = st.floats(min_value=0.5, max_value=0.9999)


# --- ε → probability of a truthful answer ---------------------------------------------------


def test_epsilon_0_1_answers_truthfully_with_probability_0_52498():
    # given
    epsilon = 0.1

    # when
    probability = epsilon_to_truth_probability(epsilon)

    # then
    assert probability == pytest.approx(0.52497918747894, abs=1e-14)
    assert probability == pytest.approx(TRUTH_PROBABILITY_AT_0_1, abs=1e-15)


def test_epsilon_0_01_answers_truthfully_with_probability_0_50250():
    # given
    epsilon = 0.01

    # when
    probability = epsilon_to_truth_probability(epsilon)

    # then
    assert probability == pytest.approx(0.50249997916687, abs=1e-14)
    assert probability == pytest.approx(TRUTH_PROBABILITY_AT_0_01, abs=1e-15)


def test_epsilon_0_is_a_coin_flip():
    # when
    probability = epsilon_to_truth_probability(0.0)

    # then
    assert probability == 0.5


def test_large_epsilon_approaches_certainty_without_overflow():
    # when
    probability = epsilon_to_truth_probability(1000.0)

    # then
    assert probability == 1.0


# --- probability of a truthful answer → ε ---------------------------------------------------


def test_truth_probability_0_52498_is_epsilon_0_1():
    # when
    epsilon = truth_probability_to_epsilon(TRUTH_PROBABILITY_AT_0_1)

    # then
    assert epsilon == pytest.approx(0.1, abs=1e-14)


def test_truth_probability_0_50250_is_epsilon_0_01():
    # when
    epsilon = truth_probability_to_epsilon(TRUTH_PROBABILITY_AT_0_01)

    # then
    assert epsilon == pytest.approx(0.01, abs=1e-14)


def test_truth_probability_three_quarters_is_epsilon_ln_3():
    # when
    epsilon = truth_probability_to_epsilon(0.75)

    # then
    assert epsilon == pytest.approx(1.098612288668109691395245236922525704647, abs=1e-15)


def test_truth_probability_one_half_is_epsilon_0():
    # when
    epsilon = truth_probability_to_epsilon(0.5)

    # then
    assert epsilon == 0.0


@given(epsilon=reasonable_epsilons)
def test_epsilon_survives_a_round_trip_through_the_truth_probability(epsilon):
    # when
    back = truth_probability_to_epsilon(epsilon_to_truth_probability(epsilon))

    # then
    assert back == pytest.approx(epsilon, abs=1e-10)


@given(probability=reasonable_probabilities)
def test_truth_probability_survives_a_round_trip_through_epsilon(probability):
    # when
    back = epsilon_to_truth_probability(truth_probability_to_epsilon(probability))

    # then
    assert back == pytest.approx(probability, abs=1e-14)


@given(smaller=reasonable_epsilons, larger=reasonable_epsilons)
def test_more_epsilon_means_a_strictly_more_truthful_answer(smaller, larger):
    # given: far enough apart for the difference to survive float rounding
    assume(larger - smaller > 1e-9)

    # when
    low, high = epsilon_to_truth_probability(smaller), epsilon_to_truth_probability(larger)

    # then
    assert 0.5 <= low < high < 1.0


@given(smaller=reasonable_probabilities, larger=reasonable_probabilities)
def test_a_more_truthful_answer_means_strictly_more_epsilon(smaller, larger):
    # given
    assume(larger - smaller > 1e-12)

    # when
    low, high = truth_probability_to_epsilon(smaller), truth_probability_to_epsilon(larger)

    # then
    assert 0.0 <= low < high


@pytest.mark.parametrize("epsilon", [-0.1, -1e-300, math.inf, math.nan])
def test_epsilon_to_truth_probability_refuses_a_negative_or_non_finite_epsilon(epsilon):
    # when / then
    with pytest.raises(ValueError, match="epsilon must be a finite number"):
        epsilon_to_truth_probability(epsilon)


@pytest.mark.parametrize("probability", [0.4999, 0.0, 1.0, 1.5, -0.5, math.nan, math.inf])
def test_truth_probability_to_epsilon_refuses_probabilities_outside_one_half_to_one(probability):
    # when / then
    with pytest.raises(ValueError, match=r"must be in \[0\.5, 1\)"):
        truth_probability_to_epsilon(probability)


# --- odds view ---------------------------------------------------------------------------


def test_posterior_from_a_10_percent_prior_after_epsilon_0_2_is_at_most_11_95_percent():
    # given
    prior, epsilon = 0.1, 0.2

    # when
    posterior = posterior_bound(prior=prior, epsilon=epsilon)

    # then
    factor = math.exp(0.2)
    assert posterior == pytest.approx(factor * 0.1 / (0.9 + factor * 0.1), abs=1e-12)
    assert posterior == pytest.approx(POSTERIOR_Q10_EPS02, abs=1e-15)
    assert f"{posterior:.2%}" == "11.95%"


@given(
    prior=st.floats(min_value=0.001, max_value=0.999),
    epsilon=st.floats(min_value=0.0, max_value=10.0),
)
def test_posterior_odds_are_the_prior_odds_times_e_to_the_epsilon(prior, epsilon):
    # when
    posterior = posterior_bound(prior=prior, epsilon=epsilon)

    # then: the posterior is the probability whose odds are e^ε times the prior's (compared as
    # probabilities: odds recomputed from a posterior near 1 lose digits to 1 − posterior, which
    # failed for q = 0.999, ε = 10 although the posterior was right to the last digits)
    odds = math.exp(epsilon) * prior / (1.0 - prior)
    assert posterior == pytest.approx(odds / (1.0 + odds), rel=1e-12)
    assert prior <= posterior <= 1.0


@pytest.mark.parametrize("prior", [0.0, 0.25, 1.0])
def test_epsilon_0_leaves_the_prior_unchanged(prior):
    # when
    posterior = posterior_bound(prior=prior, epsilon=0.0)

    # then
    assert posterior == prior


@pytest.mark.parametrize("prior", [0.0, 1.0])
def test_certain_priors_stay_certain(prior):
    # when
    posterior = posterior_bound(prior=prior, epsilon=3.0)

    # then
    assert posterior == prior


@pytest.mark.parametrize("prior", [-0.01, 1.01, math.nan])
def test_posterior_bound_refuses_a_prior_outside_0_to_1(prior):
    # when / then
    with pytest.raises(ValueError, match=r"prior must be in \[0, 1\]"):
        posterior_bound(prior=prior, epsilon=0.2)


@pytest.mark.parametrize("epsilon", [-1.0, math.nan, math.inf])
def test_posterior_bound_refuses_a_negative_or_non_finite_epsilon(epsilon):
    # when / then
    with pytest.raises(ValueError, match="epsilon"):
        posterior_bound(prior=0.1, epsilon=epsilon)


def test_posterior_bound_of_a_huge_finite_epsilon_is_certainty():
    # when
    posterior = posterior_bound(prior=0.1, epsilon=1000.0)

    # then
    assert posterior == 1.0


# --- group privacy -------------------------------------------------------------------------


def test_a_group_of_three_is_protected_at_three_epsilon_and_inflated_delta():
    # when
    epsilon, delta = group_privacy(group_size=3, epsilon=0.1, delta=1e-6)

    # then
    assert epsilon == pytest.approx(0.3, rel=1e-15)
    assert delta == pytest.approx(3 * math.exp(0.2) * 1e-6, rel=1e-15)
    assert delta == pytest.approx(GROUP_DELTA_C3_EPS01, rel=1e-14)


def test_a_group_of_three_under_pure_dp_keeps_delta_0():
    # when
    guarantee = group_privacy(group_size=3, epsilon=0.1)

    # then
    assert guarantee == (pytest.approx(0.3, rel=1e-15), 0.0)


def test_a_group_of_one_is_the_individual_guarantee():
    # when
    guarantee = group_privacy(group_size=1, epsilon=0.7, delta=1e-6)

    # then
    assert guarantee == (0.7, 1e-6)


@pytest.mark.parametrize("group_size", [0, -2])
def test_group_privacy_refuses_groups_smaller_than_one(group_size):
    # when / then
    with pytest.raises(ValueError, match="group size must be a whole number ≥ 1"):
        group_privacy(group_size=group_size, epsilon=0.1)


@pytest.mark.parametrize(
    ("group_size", "epsilon", "delta"),
    [(2, -1.0, 0.0), (2, 0.1, -1e-6), (2.5, 0.1, 0.0), (2, math.nan, 0.0)],
)
def test_group_privacy_refuses_negative_parameters_and_fractional_groups(
    group_size, epsilon, delta
):
    # when / then
    with pytest.raises(ValueError):  # noqa: PT011 - any field may be named
        group_privacy(group_size=group_size, epsilon=epsilon, delta=delta)
