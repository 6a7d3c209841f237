"""Statistical privacy audit of a sum under a small Blowfish θ (issue 7, point 2).

The neighbouring tables are the worst case for rounding: under G^{L1,θ} with θ = 201 on bounds
[0, 10⁶] one value moves by 200.99 < θ, and the sums the engine computes move by 202, more than
θ (test_exact_sums.py). The audit draws the released sum on both tables through the engine's own
answers and the mechanism it plans, and checks P(E | D1) ≤ e^ε·P(E | D2) on the tight events, as
test_mechanism_privacy.py does. Negative controls: the same audit catches the sum as computed
before the fix under θ = 10⁻⁸ (neighbouring float sums one ulp of 10¹⁰ apart, noise for θ), and
a mechanism with half the noise at θ = 201.
"""

import math

import numpy as np
import opendp.prelude as dp
import pandas as pd
import pytest
from test_mechanism_privacy import Draws, audit, draw_in_parallel

from privacy_engine import LaplaceMechanism, plan_release, run_queries

pytestmark = pytest.mark.statistical

EPSILON = 1.0
DRAWS = 100_000
CONTROL_DRAWS = 20_000
SCHEMA = {"columns": {"income": {"kind": "numeric", "lower": 0, "upper": 1e6, "fill": 0}}}
SUM = {"kind": "sum", "column": "income"}
THETA = 201.0
DEFINITION = {
    "kind": "blowfish",
    "epsilon": EPSILON,
    "policy": {"graph": "distance_threshold", "column": "income", "theta": THETA},
}
# Three values of 10⁶ and x, or x moved by 200.99 < θ: from just below a rounding midpoint of
# the grid (2) to just above another.
ROWS = [1e6, 1e6, 1e6]
LOW_X = 1 - 2.0**-20
HIGH_X = LOW_X + 200.99


class Capture:
    def __init__(self) -> None:
        self.calls: list = []

    def sample(self, measurement, value):
        self.calls.append(value)
        return value


def engine_answer(values: list[float]) -> float:
    """The exact sum the engine hands to the sum's mechanism for a table of ``values``."""
    capture = Capture()
    run_queries(
        pd.DataFrame({"income": [repr(v) for v in values]}),
        schema=SCHEMA,
        definition=DEFINITION,
        queries=[SUM],
        noise=capture,
    )
    (answer,) = capture.calls
    return answer


def laplace_draws(mechanism: LaplaceMechanism, low: float, high: float, draws: int) -> Draws:
    """The mechanism's noise on both answers, vectorised: same sampler, same scale, same map."""
    vector = dp.m.make_laplace(
        dp.vector_domain(dp.atom_domain(T=float, nan=False)),
        dp.l1_distance(T=float),
        scale=mechanism.scale,
    )
    assert vector.map(mechanism.sensitivity) == mechanism.measurement.map(mechanism.sensitivity)

    def sample(value: float) -> np.ndarray:
        return draw_in_parallel(lambda size: vector([value] * size), draws)

    return Draws(
        value_with=high, value_without=low, with_record=sample(high), without_record=sample(low)
    )


@pytest.fixture(scope="module")
def answers() -> tuple[float, float]:
    return engine_answer([*ROWS, LOW_X]), engine_answer([*ROWS, HIGH_X])


@pytest.fixture(scope="module")
def planned_mechanism() -> LaplaceMechanism:
    (statistic,) = plan_release(schema=SCHEMA, definition=DEFINITION, queries=[SUM]).statistics
    (mechanism,) = statistic.mechanisms
    return mechanism


def test_the_neighbours_are_the_rounding_worst_case(answers, planned_mechanism):
    # then the answers move by more than θ, and by exactly the sensitivity the noise is for
    assert answers == (3e6, 3e6 + 202)
    assert planned_mechanism.sensitivity == 202
    assert planned_mechanism.epsilon_spent == EPSILON


def test_a_sum_under_a_small_theta_passes_the_privacy_audit(answers, planned_mechanism):
    # given
    samples = laplace_draws(planned_mechanism, *answers, DRAWS)

    # when
    audits = audit(samples, epsilon=EPSILON)

    # then
    assert [a.violation for a in audits] == [False, False], audits


def test_the_audit_catches_the_same_sum_with_half_the_noise(answers):
    # given noise for 2ε claimed at ε
    cheater = LaplaceMechanism(sensitivity=202, epsilon=2 * EPSILON)
    samples = laplace_draws(cheater, *answers, CONTROL_DRAWS)

    # when
    audits = audit(samples, epsilon=EPSILON)

    # then
    assert [a.violation for a in audits] == [True, True], audits


def test_the_audit_catches_the_float_sum_under_a_tiny_theta_as_published_before_the_fix():
    # given the sums as the engine computed them before (math.fsum of the clamped values) for
    # x and x + 9·10⁻⁹ beside 10,000 values of 10⁶, and noise for the published θ = 10⁻⁸
    rows = [1e6] * 10_000
    x = 2.0**-20 - 4e-9
    low, high = math.fsum([*rows, x]), math.fsum([*rows, x + 9e-9])
    before = LaplaceMechanism(sensitivity=1e-8, epsilon=EPSILON)
    samples = laplace_draws(before, low, high, CONTROL_DRAWS)

    # when
    audits = audit(samples, epsilon=EPSILON)

    # then
    assert high - low == 2.0**-19
    assert [a.violation for a in audits] == [True, True], audits
