"""Fast previews compute exactly what the slow ones did.

Calibrations are memoized (mechanisms.py), the accuracy chart plans identical statistics once per
ε and ``split_epsilon`` keeps a running exact sum (release.py). Each shortcut is checked against
the construction it replaced, kept here as the reference: equal floats, not approximately equal
ones, with one exception. The Gaussian's scale is no longer OpenDP's binary search over σ but ρ
solved directly and checked with OpenDP's map: it must agree with the search to a few units in
the last place and pass the map; the chart's estimated Gaussians (unchecked) agree with the
checked ones just as closely. Counting calibrations checks that the shortcut is taken; no
assertion is timed (bench/preview.py prints the latencies).
"""

import dataclasses
import math
from decimal import Decimal, localcontext
from typing import Any

import opendp.prelude as dp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privacy_engine import (
    GaussianMechanism,
    GeometricMechanism,
    Histogram,
    LaplaceMechanism,
    accuracy,
    accuracy_curve,
    mechanisms,
    plan_release,
    release,
    split_epsilon,
)
from privacy_engine.release import release_statistic

dp.enable_features("contrib")

SCHEMA = {
    "columns": {
        "age": {"kind": "numeric", "lower": 0, "upper": 100},
        "income": {"kind": "numeric", "lower": -50, "upper": 2000},
        "sex": {"kind": "categorical", "categories": ["F", "M"], "other": "other"},
    },
    "declared_size": 1000,
}
QUERIES = [
    {"kind": "count"},
    {"kind": "histogram", "column": "sex"},
    {"kind": "histogram", "column": "age", "bins": [0, 30, 60, 100]},
    {"kind": "sum", "column": "income"},
    {"kind": "sum", "columns": ["age", "income"]},
    {"kind": "mean", "column": "age"},
]
BLOWFISH_POLICY = {"graph": "distance_threshold", "column": "age", "theta": 5}


def definition(kind: str, epsilon: float) -> dict[str, Any]:
    if kind == "approx_dp":
        return {"kind": kind, "epsilon": epsilon, "delta": 1e-6}
    if kind == "blowfish":
        return {"kind": kind, "epsilon": epsilon, "policy": BLOWFISH_POLICY}
    return {"kind": kind, "epsilon": epsilon}


# --- the constructions the shortcuts replaced ------------------------------------------------


def reference_split_epsilon(total: float, weights: list[float]) -> list[float]:
    """split_epsilon as it was: the exact sum taken afresh after every nudge."""
    weight_sum = math.fsum(weights)
    shares = [total * w / weight_sum for w in weights]
    with localcontext() as ctx:
        ctx.prec = 200
        cap = min(Decimal(total), Decimal(repr(total)))
        while sum(Decimal(s) for s in shares) > cap:
            largest = max(range(len(shares)), key=shares.__getitem__)
            shares[largest] = math.nextafter(shares[largest], 0.0)
    return shares


def reference_gaussian(
    sensitivity: float, epsilon: float, delta: float, *, integer: bool, vector: bool = False
) -> tuple[float, float, float]:
    """GaussianMechanism's calibration as it was, OpenDP's binary search over σ (each step a
    fixed-δ map, itself a search): (σ, ε spent, δ spent)."""
    if integer:
        d_in: Any = int(sensitivity)
        space = (dp.vector_domain(dp.atom_domain(T=dp.i64)), dp.l2_distance(T=dp.i64))
    elif vector:
        d_in = float(sensitivity)
        space = (dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l2_distance(T=float))
    else:
        d_in = float(sensitivity)
        space = (dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float))

    def build(scale: float) -> Any:
        gaussian = dp.m.make_gaussian(*space, scale=scale)
        return dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(gaussian), delta)

    log_inverse_delta = math.log(1.0 / delta)
    rho_low = (math.sqrt(log_inverse_delta + epsilon) - math.sqrt(log_inverse_delta)) ** 2
    lower = float(sensitivity) / math.sqrt(2.0 * epsilon)
    upper = float(sensitivity) / math.sqrt(2.0 * rho_low * 0.99)
    for _ in range(64):
        if build(lower).map(d_in)[0] > epsilon:
            break
        lower /= 2.0
    scale = float(
        dp.binary_search_param(build, d_in=d_in, d_out=(epsilon, delta), bounds=(lower, upper))
    )
    spent_epsilon, spent_delta = build(scale).map(d_in)
    return scale, float(spent_epsilon), float(spent_delta)


def reference_laplace(sensitivity: float, epsilon: float, *, space: str) -> tuple[float, float]:
    """The Laplace and geometric calibration as it was: (b, ε spent)."""
    if space == "integer":
        pair = (dp.vector_domain(dp.atom_domain(T=dp.i64)), dp.l1_distance(T=dp.i64))
    elif space == "vector":
        pair = (dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float))
    else:
        pair = (dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float))
    scale = sensitivity / epsilon
    measurement = dp.m.make_laplace(*pair, scale=scale)
    while measurement.map(sensitivity) > epsilon:
        scale = math.nextafter(scale, math.inf)
        measurement = dp.m.make_laplace(*pair, scale=scale)
    return scale, float(measurement.map(sensitivity))


def reference_accuracy_curve(*, schema, definition, queries, epsilons) -> list[dict[str, Any]]:
    """accuracy_curve as it was: the whole release planned afresh at every ε."""
    plan = plan_release(schema=schema, definition=definition, queries=queries)
    curve = []
    for epsilon in epsilons:
        varied = dataclasses.replace(plan.definition, epsilon=float(epsilon))
        entries = plan_release(
            schema=plan.schema, definition=varied, queries=[s.query for s in plan.statistics]
        )
        curve.append(
            {
                "epsilon": float(epsilon),
                "errors": [s.expected_abs_error for s in entries.statistics],
            }
        )
    return curve


def without_shortcuts(patch: pytest.MonkeyPatch) -> None:
    """Every memoized function replaced by the function it wraps, and split_epsilon by the
    reference, so that a plan is computed as before."""
    patch.setattr(mechanisms, "gaussian_calibration", mechanisms.gaussian_calibration.__wrapped__)
    patch.setattr(mechanisms, "laplace_calibration", mechanisms.laplace_calibration.__wrapped__)
    patch.setattr(mechanisms, "_gaussian_expected_abs_error", accuracy.gaussian_expected_abs_error)
    patch.setattr(mechanisms, "_gaussian_halfwidth", accuracy.gaussian_halfwidth)
    patch.setattr(release, "split_epsilon", reference_split_epsilon)


@pytest.fixture
def calibrations():
    """Gaussian calibrations counted from empty caches: ``checked()`` those OpenDP's map verifies
    (a plan that may draw noise), ``solved()`` the distinct (ε, δ) whose ρ was solved."""
    mechanisms.gaussian_calibration.cache_clear()
    mechanisms.zcdp_rho_for.cache_clear()

    class Counts:
        @staticmethod
        def checked() -> int:
            return mechanisms.gaussian_calibration.cache_info().misses

        @staticmethod
        def solved() -> int:
            return mechanisms.zcdp_rho_for.cache_info().misses

    return Counts


def same_numbers(ours: Any, reference: Any, *, close: bool) -> bool:
    """Equal, or with ``close`` equal to 1e-12 relative (estimated against checked Gaussians)."""
    if isinstance(ours, dict):
        return ours.keys() == reference.keys() and all(
            same_numbers(ours[k], reference[k], close=close) for k in ours
        )
    if isinstance(ours, list | tuple):
        return len(ours) == len(reference) and all(
            same_numbers(a, b, close=close) for a, b in zip(ours, reference, strict=True)
        )
    if close and isinstance(ours, float) and isinstance(reference, float):
        return math.isclose(ours, reference, rel_tol=1e-12)
    return ours == reference


class RecordingNoise:
    """Returns the exact answer and records which measurement each draw used."""

    def __init__(self) -> None:
        self.measurements: list = []

    def sample(self, measurement, value):
        self.measurements.append(measurement)
        return value


# --- split_epsilon -----------------------------------------------------------------------------


@given(
    total=st.one_of(
        st.floats(min_value=1e-4, max_value=20.0),
        st.floats(min_value=1e-300, max_value=1e-6),  # δ, down to where sums need all digits
    ),
    weights=st.one_of(
        st.lists(st.floats(min_value=1e-3, max_value=1e3), min_size=1, max_size=100),
        st.lists(st.sampled_from([1.0, 2.0, 0.5, 3.0]), min_size=1, max_size=100),
    ),
)
def test_split_epsilon_gives_the_shares_of_the_sum_taken_afresh_after_each_nudge(total, weights):
    # when
    shares = split_epsilon(total, weights)

    # then
    assert shares == reference_split_epsilon(total, weights)


def test_split_epsilon_of_100_equal_weights_nudges_like_the_sum_taken_afresh():
    # given: 100 shares of 0.37 whose float sum exceeds 0.37
    weights = [1.0] * 100

    # when
    shares = split_epsilon(0.37, weights)

    # then
    assert shares == reference_split_epsilon(0.37, weights)
    assert len(set(shares)) == 2


@pytest.mark.parametrize("total", [0.1, 0.37, 1.0, 7.3, 20.0, 1e-6, 3e-9, 1e-290])
@pytest.mark.parametrize(
    "weights",
    [[1.0] * 100, [1.0, 2.0, 0.5] * 33, [0.001] + [1000.0] * 99, [3.0] * 7 + [0.0] * 3],
    ids=["equal", "mixed", "extremes", "some-public"],
)
def test_split_epsilon_of_many_weights_gives_the_shares_of_the_sum_taken_afresh(total, weights):
    # when
    shares = split_epsilon(total, weights)

    # then
    assert shares == reference_split_epsilon(total, weights)


# --- calibrations --------------------------------------------------------------------------


@settings(max_examples=12, deadline=None)
@given(
    sensitivity=st.sampled_from([1, 2, 3, 7]),
    epsilon=st.floats(min_value=0.01, max_value=10.0),
    delta=st.sampled_from([1e-10, 1e-7, 1e-5, 0.01]),
    shape=st.sampled_from(["integer", "vector", "scalar"]),
)
def test_gaussian_mechanism_agrees_with_a_fresh_search_and_passes_opendps_map(
    sensitivity, epsilon, delta, shape
):
    # given
    expected_scale, _, _ = reference_gaussian(
        sensitivity, epsilon, delta, integer=shape == "integer", vector=shape == "vector"
    )

    # when: built twice, the second time from the cache
    first, second = (
        GaussianMechanism(
            sensitivity=sensitivity,
            epsilon=epsilon,
            delta=delta,
            integer=shape == "integer",
            vector=shape == "vector",
        )
        for _ in range(2)
    )

    # then: the search's σ to a few units in the last place, within (ε, δ) by OpenDP's own map
    for mechanism in (first, second):
        assert math.isclose(mechanism.scale, expected_scale, rel_tol=1e-14)
        spent = mechanism.measurement.map(mechanism.sensitivity)
        assert spent == (mechanism.epsilon_spent, mechanism.delta_spent)
        assert spent[0] <= epsilon
        assert spent[1] <= delta
    assert first.expected_abs_error == accuracy.gaussian_expected_abs_error(
        first.scale, integer=shape == "integer"
    )
    assert first.halfwidth(0.975) == accuracy.gaussian_halfwidth(
        first.scale, 0.975, integer=shape == "integer"
    )


@settings(max_examples=40, deadline=None)
@given(
    epsilon=st.floats(min_value=1e-4, max_value=20.0),
    delta=st.floats(min_value=1e-30, max_value=0.05),
)
def test_the_solved_rho_is_the_largest_opendps_conversion_allows(epsilon, delta):
    # given: OpenDP's zCDP-to-(ε, δ) profile of a Gaussian with ρ = d²/2σ² at d = 1
    def opendp_delta(rho: float) -> float:
        gaussian = dp.m.make_gaussian(
            dp.atom_domain(T=float, nan=False),
            dp.absolute_distance(T=float),
            scale=1.0 / math.sqrt(2.0 * rho),
        )
        return dp.c.make_zCDP_to_approxDP(gaussian).map(1.0).delta(epsilon)

    # when
    rho = mechanisms.zcdp_rho_for(epsilon, delta)

    # then: a hair below ρ* is within δ, a hair above is not
    assert opendp_delta(rho * (1 - 1e-9)) <= delta < opendp_delta(rho * (1 + 1e-9))


def test_an_estimated_gaussian_reads_like_the_checked_one_and_draws_no_noise():
    # given
    checked = GaussianMechanism(sensitivity=3, epsilon=0.3, delta=1e-9, integer=True)

    # when
    estimated = GaussianMechanism(
        sensitivity=3, epsilon=0.3, delta=1e-9, integer=True, estimate=True
    )

    # then
    assert math.isclose(estimated.scale, checked.scale, rel_tol=1e-14)
    assert (estimated.epsilon_spent, estimated.delta_spent) == (0.3, 1e-9)
    with pytest.raises(RuntimeError, match="draws no noise"):
        estimated.release([10])


@given(
    sensitivity=st.sampled_from([1, 2, 5, 100]),
    epsilon=st.floats(min_value=1e-4, max_value=20.0),
    shape=st.sampled_from(["integer", "vector", "scalar"]),
)
def test_laplace_and_geometric_mechanisms_have_the_scale_and_map_of_a_fresh_calibration(
    sensitivity, epsilon, shape
):
    # given
    d_in = sensitivity if shape == "integer" else float(sensitivity)
    expected = reference_laplace(d_in, epsilon, space=shape)

    # when
    if shape == "integer":
        mechanism = GeometricMechanism(sensitivity=sensitivity, epsilon=epsilon)
    else:
        mechanism = LaplaceMechanism(
            sensitivity=sensitivity, epsilon=epsilon, vector=shape == "vector"
        )

    # then
    assert (mechanism.scale, mechanism.epsilon_spent) == expected
    assert mechanism.measurement.map(d_in) == expected[1]


def test_a_plan_of_100_identical_gaussian_statistics_calibrates_once(calibrations):
    # given: 100 × 2⁻⁷ and 100 × 2⁻²⁰ split into 100 equal, exact shares
    queries = [{"kind": "count"}] * 100
    approx = {"kind": "approx_dp", "epsilon": 100 * 2.0**-7, "delta": 100 * 2.0**-20}

    # when
    plan = plan_release(schema={**SCHEMA, "declared_size": 100}, definition=approx, queries=queries)

    # then
    assert {(s.epsilon, s.delta) for s in plan.statistics} == {(2.0**-7, 2.0**-20)}
    assert calibrations.checked() == 1


def test_the_chart_solves_once_per_distinct_share_and_checks_only_the_drafts_plan(calibrations):
    # given: 100 identical counts (equal weights can still give shares one float apart)
    queries = [{"kind": "count"}] * 100
    approx = definition("approx_dp", 1.0)
    epsilons = [0.3, 0.7, 1.0, 2.5, 6.0]
    weights = [1.0] * 100
    distinct = {
        pair
        for epsilon in epsilons
        for pair in zip(split_epsilon(epsilon, weights), split_epsilon(1e-6, weights), strict=True)
    }

    drafts_own = set(zip(split_epsilon(1.0, weights), split_epsilon(1e-6, weights), strict=True))

    # when
    first = accuracy_curve(schema=SCHEMA, definition=approx, queries=queries, epsilons=epsilons)
    solved, checked = calibrations.solved(), calibrations.checked()
    second = accuracy_curve(schema=SCHEMA, definition=approx, queries=queries, epsilons=epsilons)

    # then: the plan at ε = 1 is one of the points; only the draft's own plan is checked
    assert solved == len(distinct)
    assert checked == len(drafts_own)
    assert (calibrations.solved(), calibrations.checked()) == (solved, checked)
    assert second == first


# --- plans and previews -----------------------------------------------------------------------


@settings(max_examples=12, deadline=None)
@given(
    kind=st.sampled_from(["pure_dp", "approx_dp", "blowfish"]),
    epsilon=st.floats(min_value=0.05, max_value=5.0),
    picks=st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=len(QUERIES) - 1),
            st.sampled_from([1.0, 1.0, 2.0, 0.5]),
        ),
        min_size=1,
        max_size=3,
    ),
)
def test_preview_and_chart_equal_those_computed_without_any_shortcut(kind, epsilon, picks):
    # given
    queries = [{**QUERIES[index], "weight": weight} for index, weight in picks]
    spec = definition(kind, epsilon)
    epsilons = [epsilon / 3, min(20.0, epsilon * 3)]

    # when
    plan = plan_release(schema=SCHEMA, definition=spec, queries=queries)
    entries = plan.preview()
    curve = accuracy_curve(schema=SCHEMA, definition=spec, queries=queries, epsilons=epsilons)
    with pytest.MonkeyPatch.context() as patch:
        without_shortcuts(patch)
        reference_plan = plan_release(schema=SCHEMA, definition=spec, queries=queries)
        reference_entries = reference_plan.preview()
        reference_curve = reference_accuracy_curve(
            schema=SCHEMA, definition=spec, queries=queries, epsilons=epsilons
        )

    # then: equal, except the chart's estimated Gaussians, equal to 1e-12
    assert entries == reference_entries
    assert same_numbers(curve, reference_curve, close=kind == "approx_dp")
    assert (plan.epsilon_spent, plan.delta_spent) == (
        reference_plan.epsilon_spent,
        reference_plan.delta_spent,
    )
    assert [
        (m.scale, m.epsilon_spent, m.delta_spent) for s in plan.statistics for m in s.mechanisms
    ] == [
        (m.scale, m.epsilon_spent, m.delta_spent)
        for s in reference_plan.statistics
        for m in s.mechanisms
    ]


def test_identical_statistics_keep_their_own_mechanisms_and_draw_their_own_noise():
    # given: two identical Gaussian counts, calibrated once
    plan = plan_release(
        schema=SCHEMA,
        definition=definition("approx_dp", 1.0),
        queries=[{"kind": "count"}, {"kind": "count"}],
    )
    first, second = plan.statistics
    noise = RecordingNoise()

    # when
    for statistic in plan.statistics:
        (mechanism,) = statistic.mechanisms
        mechanism.noise = noise
        release_statistic(statistic, 500, plan.schema)

    # then
    assert first.noise_scale == second.noise_scale
    assert first.mechanisms[0] is not second.mechanisms[0]
    assert len(noise.measurements) == 2
    assert noise.measurements[0] is not noise.measurements[1]


def test_the_chart_of_a_draft_with_an_unhashable_query_equals_the_reference():
    # given: a histogram built by hand with a list of bins (query_from_dict makes tuples)
    queries = [Histogram(column="age", bins=[0, 50, 100]), {"kind": "count"}]
    spec = definition("pure_dp", 1.0)

    # when
    curve = accuracy_curve(schema=SCHEMA, definition=spec, queries=queries, epsilons=[0.5, 2.0])

    # then
    assert curve == reference_accuracy_curve(
        schema=SCHEMA, definition=spec, queries=queries, epsilons=[0.5, 2.0]
    )
