"""Sums and their published sensitivity, rounding included (issue 7, point 2; exact_sums.py).

A float sum carries rounding of about one ulp of its total. The published sensitivity must bound
the difference between the answers the engine really computes for neighbouring tables: these
tests capture the exact answer each mechanism is given and compare neighbours against it.
"""

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from privacy_engine import EngineValidationError, plan_release, run_queries, sensitivity
from privacy_engine.exact_sums import grid_sum, sum_grid

MILLION = {"kind": "numeric", "lower": 0, "upper": 1e6, "fill": 0}


class Capture:
    """Returns each exact answer unchanged and records it: what a mechanism was given."""

    def __init__(self) -> None:
        self.calls: list = []

    def sample(self, measurement, value):
        self.calls.append(value)
        return value


def blowfish(policy: dict) -> dict:
    return {"kind": "blowfish", "epsilon": 1.0, "policy": policy}


def theta(value: float, *columns: str) -> dict:
    if len(columns) == 1:
        return blowfish({"graph": "distance_threshold", "column": columns[0], "theta": value})
    return blowfish({"graph": "distance_threshold", "columns": list(columns), "theta": value})


def sum_input(values: list[float], schema: dict, definition: dict, query: dict | None = None):
    """The exact answer the statistic's (first) mechanism takes on a table of ``values``."""
    columns = list(schema["columns"])
    frame = pd.DataFrame({name: [repr(float(v)) for v in values] for name in columns[:1]})
    capture = Capture()
    run_queries(
        frame,
        schema=schema,
        definition=definition,
        queries=[query or {"kind": "sum", "column": columns[0]}],
        noise=capture,
    )
    return capture.calls[0]


def published_sensitivity(schema: dict, definition: dict, query: dict) -> float:
    (statistic,) = plan_release(schema=schema, definition=definition, queries=[query]).statistics
    return statistic.sensitivity


# --- the reproduction: θ = 1e-8 on bounds [0, 10⁶] ----------------------------------------


def test_float_sums_of_neighbours_differed_by_far_more_than_a_tiny_theta():
    # given 10,000 values of 10⁶ and one value x, and its neighbour under G^{L1,θ} with θ = 1e-8:
    # x moved by 9e-9 < θ, across the midpoint between two floats near 10¹⁰
    theta_value = 1e-8
    x = 2.0**-20 - 4e-9
    y = x + 9e-9
    assert Fraction(y) - Fraction(x) < Fraction(theta_value)
    rows = [1e6] * 10_000

    # when the sums are computed as the engine did before (math.fsum of the clamped floats)
    before = math.fsum([*rows, x]), math.fsum([*rows, y])

    # then they differ by one ulp of 10¹⁰, 190 times the published sensitivity θ
    assert before[1] - before[0] == 2.0**-19
    assert before[1] - before[0] > 190 * theta_value


@pytest.mark.parametrize("theta_value", [1e-8, 1e-300])
def test_a_theta_too_small_for_exact_sums_is_refused_naming_theta(theta_value):
    # given
    schema = {"columns": {"income": MILLION}}
    definition = theta(theta_value, "income")

    # when
    with pytest.raises(EngineValidationError) as planned:
        plan_release(
            schema=schema, definition=definition, queries=[{"kind": "sum", "column": "income"}]
        )
    with pytest.raises(EngineValidationError) as facade:
        sensitivity(
            query={"kind": "mean", "column": "income"}, schema=schema, definition=definition
        )

    # then
    assert list(planned.value.errors) == ["definition.policy.theta"]
    assert list(facade.value.errors) == ["policy.theta"]
    (message,) = planned.value.errors["definition.policy.theta"]
    assert message.startswith(f"θ ({theta_value:g}) is too small next to the column's bounds")
    assert "computed in steps of 2" in message
    assert message.endswith("Make it at least 200, declare bounds nearer 0, or choose ε-DP.")


def test_the_same_tiny_theta_is_allowed_when_no_sum_uses_the_column():
    # when: a histogram's sensitivity (2) does not depend on θ
    plan = plan_release(
        schema={"columns": {"income": MILLION}},
        definition=theta(1e-8, "income"),
        queries=[{"kind": "histogram", "column": "income", "bins": [0, 5e5, 1e6]}],
    )

    # then
    assert plan.statistics[0].sensitivity == 2


def test_a_width_too_small_for_exact_sums_is_refused_naming_the_width():
    # when
    with pytest.raises(EngineValidationError) as caught:
        plan_release(
            schema={"columns": {"income": MILLION}},
            definition=blowfish({"graph": "partition", "column": "income", "width": 1e-3}),
            queries=[{"kind": "sum", "column": "income"}],
        )

    # then
    assert list(caught.value.errors) == ["definition.policy.width"]
    assert caught.value.errors["definition.policy.width"][0].startswith("the width w (0.001)")


def test_a_range_too_narrow_for_its_magnitude_is_refused_naming_the_bound():
    # given a column in [10⁶, 10⁶ + 10⁻³] with a fill: one record moves its sum by ≤ 10⁻³
    schema = {
        "columns": {"reading": {"kind": "numeric", "lower": 1e6, "upper": 1e6 + 1e-3, "fill": 1e6}}
    }

    # when
    with pytest.raises(EngineValidationError) as caught:
        plan_release(
            schema=schema,
            definition=blowfish({"graph": "full_domain"}),
            queries=[{"kind": "sum", "column": "reading"}],
        )

    # then
    assert list(caught.value.errors) == ["schema.columns.reading.lower"]
    (message,) = caught.value.errors["schema.columns.reading.lower"]
    assert message.startswith("the range of reading (0.0010000000474974513) is too small")
    assert "Make it at least 200," in message


def test_the_same_narrow_range_is_fine_under_differential_privacy():
    # given
    schema = {"columns": {"reading": {"kind": "numeric", "lower": 1e6, "upper": 1e6 + 1e-3}}}

    # when
    value = sensitivity(
        query={"kind": "sum", "column": "reading"},
        schema=schema,
        definition={"kind": "pure_dp", "epsilon": 1.0},
    )

    # then max(|lower|, |upper|) on a grid of 2: the next multiple of 2
    assert value == 1e6 + 2


# --- an accepted small θ: the sensitivity covers the rounding ---------------------------


def test_worst_case_neighbours_under_a_small_theta_differ_by_exactly_the_published_sensitivity():
    # given bounds [0, 10⁶] (a grid of 2) and θ = 201: x moves by 200.99 < θ, from just below a
    # rounding midpoint to just above the next but hundredth
    schema = {"columns": {"income": MILLION}}
    definition = theta(201, "income")
    rows = [1e6, 1e6, 1e6]
    x = 1 - 2.0**-20
    y = x + 200.99
    assert Fraction(y) - Fraction(x) < 201

    # when
    answers = sum_input([*rows, x], schema, definition), sum_input([*rows, y], schema, definition)
    published = published_sensitivity(schema, definition, {"kind": "sum", "column": "income"})

    # then the computed answers differ by more than θ, and by no more than what is published
    assert answers == (3e6, 3e6 + 202)
    assert published == 202


def test_ordinary_parameters_keep_their_textbook_sensitivity():
    # given
    schema = {"columns": {"age": {"kind": "numeric", "lower": 0, "upper": 100, "fill": 0}}}
    query = {"kind": "sum", "column": "age"}

    # when
    values = [
        published_sensitivity(schema, {"kind": "pure_dp", "epsilon": 1.0}, query),
        published_sensitivity(schema, theta(5, "age"), query),
        published_sensitivity(schema, theta(0.25, "age"), query),
        published_sensitivity(
            schema, blowfish({"graph": "partition", "column": "age", "width": 10}), query
        ),
    ]

    # then
    assert values == [100, 5, 0.25, 10]


def test_a_published_sum_is_the_exact_sum_within_half_a_grid_step():
    # given values whose float sum is inexact
    values = ["0.1", "0.2", "0.3", "99.7"]

    # when
    answer = sum_input(
        [float(v) for v in values],
        {"columns": {"x": {"kind": "numeric", "lower": 0, "upper": 100}}},
        {"kind": "pure_dp", "epsilon": 1.0},
    )

    # then
    exact = sum(Fraction(float(v)) for v in values)
    assert abs(Fraction(answer) - exact) <= Fraction(sum_grid(100)) / 2
    assert Fraction(answer) % Fraction(sum_grid(100)) == 0


# --- the grid sum itself ---------------------------------------------------------------------

magnitudes = st.sampled_from([1.0, 100.0, 1e6, 123.456, 1e15, 1e-300])


@settings(max_examples=300, deadline=None)
@given(data=st.data(), magnitude=magnitudes)
def test_grid_sum_is_the_exact_sum_rounded_half_up_to_the_grid(data, magnitude):
    # given values within ±magnitude, some on and near the grid's midpoints
    grid = sum_grid(magnitude)
    free = st.floats(min_value=-magnitude, max_value=magnitude)
    near_grid = st.integers(-1000, 1000).map(
        lambda k: max(-magnitude, min(magnitude, (k + 0.5) * grid))
    )
    values = data.draw(st.lists(free | near_grid | st.just(2.0**-1074), max_size=30))

    # when
    answer = grid_sum(np.asarray(values), grid)

    # then
    step = Fraction(grid)
    expected = step * math.floor(sum(map(Fraction, values), Fraction(0)) / step + Fraction(1, 2))
    assert Fraction(answer) == expected


# --- neighbours never differ by more than the published sensitivity -----------------------

bounds = st.sampled_from(
    [(0.0, 100.0), (-50.0, 50.0), (0.0, 1e6), (1e6, 1e6 + 1000.0), (-0.1, 0.3)]
)


def values_within(lower: float, upper: float, size: int = 12):
    # Values beyond the bounds are clamped, so they are drawn too.
    inside = st.floats(min_value=lower, max_value=upper)
    near = st.sampled_from([lower, upper, (lower + upper) / 2]).map(
        lambda v: v + sum_grid(max(abs(lower), abs(upper))) / 2
    )
    return st.lists(inside | near | st.floats(allow_nan=False, allow_infinity=False), max_size=size)


def schema_of(lower: float, upper: float, fill: bool) -> dict:
    column = {"kind": "numeric", "lower": lower, "upper": upper}
    if fill:
        column["fill"] = lower
    return {"columns": {"x": column}}


@settings(max_examples=150, deadline=None)
@given(
    limits=bounds,
    data=st.data(),
    query=st.sampled_from([{"kind": "sum", "column": "x"}, {"kind": "mean", "column": "x"}]),
)
def test_adding_a_record_moves_the_computed_sum_by_at_most_the_dp_sensitivity(limits, data, query):
    # given a table and its neighbour with one more record
    lower, upper = limits
    schema = schema_of(lower, upper, fill=False)
    definition = {"kind": "pure_dp", "epsilon": 1.0}
    values = data.draw(values_within(lower, upper))
    extra = data.draw(st.floats(allow_nan=False))

    # when
    first = sum_input(values, schema, definition, query)
    second = sum_input([*values, extra], schema, definition, query)

    # then
    published = published_sensitivity(schema, definition, query)
    assert abs(Fraction(first) - Fraction(second)) <= Fraction(published)


@settings(max_examples=150, deadline=None)
@given(limits=bounds, data=st.data(), fill=st.booleans())
def test_replacing_a_record_moves_the_computed_sum_by_at_most_the_full_domain_sensitivity(
    limits, data, fill
):
    # given
    lower, upper = limits
    schema = schema_of(lower, upper, fill)
    definition = blowfish({"graph": "full_domain"})
    values = data.draw(values_within(lower, upper).filter(bool))
    index = data.draw(st.integers(0, len(values) - 1))
    replaced = [*values[:index], data.draw(st.floats(allow_nan=False)), *values[index + 1 :]]

    # when
    first, second = sum_input(values, schema, definition), sum_input(replaced, schema, definition)

    # then
    published = published_sensitivity(schema, definition, {"kind": "sum", "column": "x"})
    assert abs(Fraction(first) - Fraction(second)) <= Fraction(published)


@settings(max_examples=200, deadline=None)
@given(
    limits=bounds,
    data=st.data(),
    share=st.sampled_from([0.01, 0.1, 0.37, 1.0]),
    query=st.sampled_from([{"kind": "sum", "column": "x"}, {"kind": "mean", "column": "x"}]),
)
def test_moving_a_value_by_less_than_theta_moves_the_computed_sum_by_at_most_the_sensitivity(
    limits, data, share, query
):
    # given θ a share of the range (at least 100 grid steps, as accepted), and x moved by d < θ
    lower, upper = limits
    grid = sum_grid(max(abs(lower), abs(upper)))
    theta_value = max((upper - lower) * share, 100 * grid * 1.5)
    schema = schema_of(lower, upper, fill=True)
    definition = theta(theta_value, "x")
    values = data.draw(values_within(lower, upper).filter(bool))
    index = data.draw(st.integers(0, len(values) - 1))
    x = min(max(values[index], lower), upper)
    y = data.draw(st.floats(min_value=x - theta_value, max_value=x + theta_value))
    assume(abs(Fraction(y) - Fraction(x)) < Fraction(theta_value))
    moved = [*values[:index], y, *values[index + 1 :]]

    # when
    first, second = (
        sum_input(values, schema, definition, query),
        sum_input(moved, schema, definition, query),
    )

    # then
    published = published_sensitivity(schema, definition, query)
    assert abs(Fraction(first) - Fraction(second)) <= Fraction(published)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), width=st.sampled_from([7.0, 10.0, 0.3, 33.3]))
def test_moving_a_value_within_its_range_part_moves_the_computed_sum_by_at_most_w(data, width):
    # given
    schema = schema_of(0.0, 100.0, fill=True)
    definition = blowfish({"graph": "partition", "column": "x", "width": width})
    values = data.draw(values_within(0.0, 100.0).filter(bool))
    index = data.draw(st.integers(0, len(values) - 1))
    x = min(max(values[index], 0.0), 100.0)
    part = math.floor(Fraction(x) / Fraction(width))
    low, high = (
        float(part * Fraction(width)),
        float(min((part + 1) * Fraction(width), Fraction(100))),
    )
    y = data.draw(st.floats(min_value=low, max_value=high))
    assume(math.floor(Fraction(y) / Fraction(width)) == part or y == 100.0 == high)
    moved = [*values[:index], y, *values[index + 1 :]]

    # when
    first, second = sum_input(values, schema, definition), sum_input(moved, schema, definition)

    # then
    published = published_sensitivity(schema, definition, {"kind": "sum", "column": "x"})
    assert abs(Fraction(first) - Fraction(second)) <= Fraction(published)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), theta_value=st.sampled_from([5.0, 2.5, 7.3, 100.0, 2000.0]))
def test_a_vector_of_sums_moves_by_at_most_its_l1_sensitivity_under_an_l1_threshold(
    data, theta_value
):
    # given two columns with different grids and a record moved by an L1 distance below θ
    schema = {
        "columns": {
            "age": {"kind": "numeric", "lower": 0, "upper": 100, "fill": 0},
            "income": {"kind": "numeric", "lower": 0, "upper": 1000, "fill": 0},
        }
    }
    definition = theta(theta_value, "age", "income")
    query = {"kind": "sum", "columns": ["age", "income"]}
    rows = data.draw(
        st.lists(
            st.tuples(st.floats(0, 100), st.floats(0, 1000)),
            min_size=1,
            max_size=8,
        )
    )
    index = data.draw(st.integers(0, len(rows) - 1))
    age, income = rows[index]
    split = data.draw(st.floats(0, 1))
    new_age = data.draw(st.floats(age - theta_value * split, age + theta_value * split))
    new_income = data.draw(
        st.floats(income - theta_value * (1 - split), income + theta_value * (1 - split))
    )
    assume(
        abs(Fraction(new_age) - Fraction(age)) + abs(Fraction(new_income) - Fraction(income))
        < Fraction(theta_value)
    )
    moved = [*rows[:index], (new_age, new_income), *rows[index + 1 :]]

    def answer(table):
        capture = Capture()
        run_queries(
            pd.DataFrame(
                {"age": [repr(a) for a, _ in table], "income": [repr(i) for _, i in table]}
            ),
            schema=schema,
            definition=definition,
            queries=[query],
            noise=capture,
        )
        return capture.calls[0]

    # when
    first, second = answer(rows), answer(moved)

    # then
    published = published_sensitivity(schema, definition, query)
    moved_by = sum(abs(Fraction(a) - Fraction(b)) for a, b in zip(first, second, strict=True))
    assert moved_by <= Fraction(published)
