"""Planning, previewing and running a release.

Previews are pinned against the accuracy formulas. The data pipeline of ``run_queries`` is checked
exactly by injecting deterministic noise sources (DESIGN.md rule 1: clamping, other bucket,
missing values; rule 5: post-processing), so no assertion here depends on random bits.
"""

import math
from decimal import Decimal, Inexact, localcontext

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from privacy_engine import (
    Count,
    EngineValidationError,
    Histogram,
    Mean,
    NumericColumn,
    PureDP,
    Schema,
    Sum,
    geometric_expected_abs_error,
    geometric_halfwidth,
    laplace_halfwidth,
    plan_release,
    preview,
    run_queries,
    split_epsilon,
)

LN_20 = 2.995732273553990993435223576142540775677
LN_40 = 3.688879454113936
PREVIEW_KEYS = [
    "kind",
    "column",
    "weight",
    "mechanism",
    "epsilon",
    "delta",
    "sensitivity",
    "noise_scale",
    "expected_abs_error",
    "ci95_halfwidth",
]
AGE = {"kind": "numeric", "lower": 0, "upper": 100}
SEX = {"kind": "categorical", "categories": ["F", "M"], "other": "other"}
SCHEMA = {
    "columns": {"name": {"kind": "identifier"}, "age": AGE, "sex": SEX},
    "declared_size": 1000,
}


def pure_dp(epsilon: float = 1.0) -> dict:
    return {"kind": "pure_dp", "epsilon": epsilon}


class ZeroNoise:
    """Returns the exact answer unchanged and records what each mechanism was asked."""

    def __init__(self) -> None:
        self.calls: list = []

    def sample(self, measurement, value):
        self.calls.append(value)
        return value


class ShiftNoise:
    """Adds fixed offsets: ``counts`` to every integer cell, ``sums`` to every real answer."""

    def __init__(self, *, counts: int = 0, sums: float = 0.0) -> None:
        self.counts = counts
        self.sums = sums

    def sample(self, measurement, value):
        if isinstance(value, list):
            return [v + self.counts for v in value]
        return value + self.sums


def table(**columns: list) -> pd.DataFrame:
    """A table as the web app loads it: every cell a string, or None when absent."""
    return pd.DataFrame(columns, dtype=str)


def release_one(frame, column, query, *, noise=None, epsilon=1.0):
    """Run a single statistic on column ``x`` and return its result."""
    result = run_queries(
        frame,
        schema={"columns": {"x": column}},
        definition=pure_dp(epsilon),
        queries=[query],
        noise=noise or ZeroNoise(),
    )
    (statistic,) = result.statistics
    return statistic


def exact_sum(values) -> Decimal:
    """Σ of floats in exact decimal arithmetic: any rounding raises instead of hiding."""
    with localcontext() as ctx:
        ctx.prec = 5000
        ctx.traps[Inexact] = True
        return sum((Decimal(v) for v in values), Decimal(0))


# --- preview ------------------------------------------------------------------------------


def test_preview_entries_carry_the_api_keys_in_order():
    # when
    entries = preview(
        schema=SCHEMA,
        definition=pure_dp(),
        queries=[{"kind": "count"}, {"kind": "sum", "column": "age"}],
    )

    # then
    assert [list(entry) for entry in entries] == [PREVIEW_KEYS, PREVIEW_KEYS]


def test_preview_entries_follow_query_order():
    # given
    queries = [
        {"kind": "sum", "column": "age"},
        {"kind": "count"},
        {"kind": "histogram", "column": "sex"},
        {"kind": "mean", "column": "age"},
    ]

    # when
    entries = preview(schema=SCHEMA, definition=pure_dp(), queries=queries)

    # then
    assert [(e["kind"], e["column"], e["mechanism"]) for e in entries] == [
        ("sum", "age", "laplace"),
        ("count", None, "geometric"),
        ("histogram", "sex", "geometric"),
        ("mean", "age", "laplace+geometric"),
    ]


def test_preview_of_a_count_at_epsilon_1_is_pinned():
    # when
    (entry,) = preview(schema=SCHEMA, definition=pure_dp(1.0), queries=[{"kind": "count"}])

    # then
    assert entry == {
        "kind": "count",
        "column": None,
        "weight": 1.0,
        "mechanism": "geometric",
        "epsilon": 1.0,
        "delta": 0.0,
        "sensitivity": 1,
        "noise_scale": 1.0,
        "expected_abs_error": pytest.approx(0.8509181282393215, rel=1e-14),
        "ci95_halfwidth": 3,
    }


def test_preview_splits_epsilon_by_weight():
    # given: weights 1 and 3 of ε = 1
    queries = [{"kind": "count"}, {"kind": "sum", "column": "age", "weight": 3}]

    # when
    entries = preview(schema=SCHEMA, definition=pure_dp(1.0), queries=queries)

    # then
    assert [e["epsilon"] for e in entries] == [0.25, 0.75]
    assert [e["weight"] for e in entries] == [1.0, 3.0]


def test_preview_noise_scale_is_sensitivity_over_the_epsilon_share():
    # given
    queries = [
        {"kind": "count"},
        {"kind": "histogram", "column": "sex", "weight": 2},
        {"kind": "sum", "column": "age", "weight": 3},
    ]

    # when
    entries = preview(schema=SCHEMA, definition=pure_dp(0.6), queries=queries)

    # then: shares 0.1, 0.2, 0.3
    assert [e["sensitivity"] for e in entries] == [1, 1, 100.0]
    assert entries[0]["noise_scale"] == pytest.approx(1 / 0.1, rel=1e-9)
    assert entries[1]["noise_scale"] == pytest.approx(1 / 0.2, rel=1e-9)
    assert entries[2]["noise_scale"] == pytest.approx(100 / 0.3, rel=1e-9)
    assert all(e["noise_scale"] >= e["sensitivity"] / e["epsilon"] for e in entries)


def test_preview_of_a_sum_has_laplace_accuracy():
    # when
    (entry,) = preview(
        schema=SCHEMA, definition=pure_dp(0.5), queries=[{"kind": "sum", "column": "age"}]
    )

    # then
    assert entry["noise_scale"] == pytest.approx(200.0, rel=1e-9)
    assert entry["expected_abs_error"] == entry["noise_scale"]
    assert entry["ci95_halfwidth"] == pytest.approx(entry["noise_scale"] * LN_20, rel=1e-14)


@pytest.mark.parametrize(
    "query", [{"kind": "count"}, {"kind": "histogram", "column": "sex"}], ids=["count", "histogram"]
)
@pytest.mark.parametrize("epsilon", [0.05, 0.3, 1.0, 4.0])
def test_preview_of_integer_answers_has_geometric_accuracy(query, epsilon):
    # when
    (entry,) = preview(schema=SCHEMA, definition=pure_dp(epsilon), queries=[query])

    # then
    scale = entry["noise_scale"]
    assert entry["ci95_halfwidth"] == geometric_halfwidth(scale)
    assert isinstance(entry["ci95_halfwidth"], int)
    assert entry["expected_abs_error"] == pytest.approx(
        geometric_expected_abs_error(scale), rel=1e-14
    )


def test_preview_of_a_mean_uses_the_declared_size_and_both_parts():
    # given: ε = 1 split evenly between a Laplace sum (b = 200) and a geometric count (b = 2)
    queries = [{"kind": "mean", "column": "age"}]

    # when
    (entry,) = preview(schema=SCHEMA, definition=pure_dp(1.0), queries=queries)

    # then: each part's interval at 97.5%, so both hold together with probability ≥ 95%
    assert entry["epsilon"] == 1.0
    assert entry["sensitivity"] == 100.0
    assert entry["noise_scale"] == pytest.approx(200.0, rel=1e-9)
    assert entry["expected_abs_error"] == pytest.approx(
        (200.0 + 100 * geometric_expected_abs_error(2.0)) / 1000, rel=1e-9
    )
    assert geometric_halfwidth(2.0, 0.975) == 7
    assert entry["ci95_halfwidth"] == pytest.approx((200.0 * LN_40 + 100 * 7) / 1000, rel=1e-9)


def test_preview_of_a_mean_is_capped_at_the_width_of_the_bounds():
    # given: a tiny declared table, where the noise would swamp any mean
    schema = {**SCHEMA, "declared_size": 2}

    # when
    (entry,) = preview(
        schema=schema, definition=pure_dp(0.1), queries=[{"kind": "mean", "column": "age"}]
    )

    # then
    assert entry["expected_abs_error"] == 100.0
    assert entry["ci95_halfwidth"] == 100.0


def test_preview_of_a_mean_without_a_declared_size_has_no_accuracy_rather_than_using_n():
    # given
    schema = {"columns": {"age": AGE}}

    # when
    (entry,) = preview(
        schema=schema, definition=pure_dp(1.0), queries=[{"kind": "mean", "column": "age"}]
    )

    # then
    assert entry["expected_abs_error"] is None
    assert entry["ci95_halfwidth"] is None


def test_preview_from_typed_objects_equals_preview_from_json():
    # given
    typed = {
        "schema": Schema(columns={"age": NumericColumn(lower=0, upper=100)}, declared_size=1000),
        "definition": PureDP(epsilon=0.8),
        "queries": [Count(), Sum(column="age", weight=2.0), Mean(column="age")],
    }
    json = {
        "schema": {"columns": {"age": AGE}, "declared_size": 1000},
        "definition": pure_dp(0.8),
        "queries": [
            {"kind": "count"},
            {"kind": "sum", "column": "age", "weight": 2},
            {"kind": "mean", "column": "age"},
        ],
    }

    # when / then
    assert preview(**typed) == preview(**json)


# --- ε split and accounting ---------------------------------------------------------------


def test_split_epsilon_by_weights_1_and_3():
    # when
    shares = split_epsilon(1.0, [1.0, 3.0])

    # then
    assert shares == [0.25, 0.75]


def test_split_epsilon_nudges_a_share_down_when_float_division_rounds_up():
    # given: 0.1·3/10 and 0.1·7/10 as floats add up to more than the float 0.1
    assert exact_sum([0.1 * 3 / 10, 0.1 * 7 / 10]) > Decimal.from_float(0.1)

    # when
    shares = split_epsilon(0.1, [3.0, 7.0])

    # then
    assert shares == [0.030000000000000006, 0.06999999999999999]
    assert exact_sum(shares) <= Decimal.from_float(0.1)


@given(
    total=st.floats(min_value=1e-3, max_value=20.0),
    weights=st.lists(st.floats(min_value=1e-3, max_value=1e3), min_size=1, max_size=12),
)
def test_split_epsilon_never_exceeds_the_total_in_exact_arithmetic(total, weights):
    # when
    shares = split_epsilon(total, weights)

    # then
    assert len(shares) == len(weights)
    assert exact_sum(shares) <= Decimal(total)
    weight_sum = math.fsum(weights)
    for share, weight in zip(shares, weights, strict=True):
        assert share > 0
        assert share == pytest.approx(total * weight / weight_sum, rel=1e-12)


@given(
    total=st.floats(min_value=1e-3, max_value=20.0),
    weights=st.lists(st.integers(min_value=1, max_value=5), min_size=1, max_size=6),
)
def test_plan_charges_at_least_what_the_mechanisms_own_maps_report(total, weights):
    # given
    queries = [
        {"kind": ("count", "sum", "mean")[i % 3], "column": "age", "weight": w}
        for i, w in enumerate(weights)
    ]

    # when
    plan = plan_release(schema=SCHEMA, definition=pure_dp(total), queries=queries)

    # then: never under-charged, and over-charged by less than one ledger unit (10⁻¹²)
    maps = [m.epsilon_spent for s in plan.statistics for m in s.mechanisms]
    assert plan.epsilon_spent >= exact_sum(maps)
    assert plan.epsilon_spent - exact_sum(maps) < Decimal("1e-12")
    assert exact_sum(maps) <= Decimal(total)
    assert plan.delta_spent == Decimal(0)


@pytest.mark.parametrize("total", [0.25, 0.5, 0.75, 1.0, 2.0, 3.0])
def test_plan_charge_of_a_dyadic_total_is_exactly_that_total(total):
    # given
    queries = [
        {"kind": "count"},
        {"kind": "sum", "column": "age"},
        {"kind": "mean", "column": "age"},
    ]

    # when
    plan = plan_release(schema=SCHEMA, definition=pure_dp(total), queries=queries)

    # then
    assert plan.epsilon_spent <= Decimal(str(total))
    assert plan.epsilon_spent == Decimal(str(total)).quantize(Decimal("1e-12"))


@pytest.mark.parametrize("total", [0.1, 0.2, 1.1])
def test_plan_never_charges_more_than_the_decimal_epsilon_the_curator_chose(total):
    # given
    queries = [{"kind": "count"}]

    # when
    plan = plan_release(schema=SCHEMA, definition=pure_dp(total), queries=queries)

    # then
    assert plan.epsilon_spent <= Decimal(str(total))


def test_planning_draws_no_noise():
    # given
    noise = ZeroNoise()

    # when
    plan_release(
        schema=SCHEMA,
        definition=pure_dp(),
        queries=[{"kind": "count"}, {"kind": "mean", "column": "age"}],
        noise=noise,
    )

    # then
    assert noise.calls == []


# --- run_queries: the data pipeline, with zero noise ----------------------------------------


def test_count_is_the_number_of_rows_including_rows_with_missing_values():
    # given
    frame = table(x=["1", "", None, "n/a", "5"])

    # when
    result = release_one(frame, AGE, {"kind": "count"})

    # then: b = 1 at ε = 1, so the 95% half-width is 3
    assert result.value == 5
    assert result.ci95 == [2, 8]
    assert result.rule is None


def test_sum_clamps_values_to_the_declared_bounds():
    # given
    frame = table(x=["10", "20", "150", "-5", "100", "0"])

    # when
    result = release_one(frame, AGE, {"kind": "sum", "column": "x"})

    # then: 10 + 20 + 100 + 0 + 100 + 0
    assert result.value == 230.0


def test_sum_drops_missing_and_non_numeric_values_without_fill():
    # given
    frame = table(x=["10", "", None, "n/a", " 12 ", "nan"])

    # when
    result = release_one(frame, AGE, {"kind": "sum", "column": "x"})

    # then
    assert result.value == 22.0


def test_sum_replaces_missing_and_non_numeric_values_by_the_declared_fill():
    # given
    frame = table(x=["10", "", None, "n/a"])
    column = {**AGE, "fill": 50}

    # when
    result = release_one(frame, column, {"kind": "sum", "column": "x"})

    # then
    assert result.value == 160.0


def test_sum_over_bounds_straddling_zero_clamps_both_ways():
    # given
    frame = table(x=["-80", "10", "30", "-3.5"])
    column = {"kind": "numeric", "lower": -50, "upper": 20}

    # when
    result = release_one(frame, column, {"kind": "sum", "column": "x"})

    # then: −50 + 10 + 20 − 3.5
    assert result.value == -23.5
    assert result.sensitivity == 50.0
    assert result.ci95 == [
        pytest.approx(-23.5 - 50 * LN_20, rel=1e-12),
        pytest.approx(-23.5 + 50 * LN_20, rel=1e-12),
    ]


def test_sum_interval_is_the_answer_plus_minus_the_laplace_halfwidth_clipped_at_0():
    # given: a non-negative column, so the lower end is post-processed to 0
    frame = table(x=["10", "20", "100"])

    # when
    result = release_one(frame, AGE, {"kind": "sum", "column": "x"})

    # then
    assert result.value == 130.0
    assert result.ci95 == [0.0, pytest.approx(130 + 100 * LN_20, rel=1e-12)]


def test_categorical_histogram_sends_unknown_values_to_the_other_bucket():
    # given: "m" is not "M"; surrounding spaces are ignored; blanks are missing
    frame = table(x=["F", "M", "X", "F ", " ", "", None, "m"])

    # when
    result = release_one(frame, SEX, {"kind": "histogram", "column": "x"})

    # then
    assert result.value == {"F": 2, "M": 1, "other": 2}
    assert list(result.value) == ["F", "M", "other"]


def test_categorical_histogram_drops_unknown_values_without_an_other_bucket():
    # given
    frame = table(x=["F", "M", "X", "F ", "", None, "m"])
    column = {"kind": "categorical", "categories": ["F", "M"]}

    # when
    result = release_one(frame, column, {"kind": "histogram", "column": "x"})

    # then
    assert result.value == {"F": 2, "M": 1}


def test_categorical_histogram_replaces_missing_values_by_the_declared_fill():
    # given
    frame = table(x=["F", "X", "  ", "", None])
    column = {"kind": "categorical", "categories": ["F", "M"], "other": "other", "fill": "M"}

    # when
    result = release_one(frame, column, {"kind": "histogram", "column": "x"})

    # then
    assert result.value == {"F": 1, "M": 3, "other": 1}


def test_categorical_histogram_may_fill_missing_values_into_the_other_bucket():
    # given
    frame = table(x=["F", "X", ""])
    column = {"kind": "categorical", "categories": ["F", "M"], "other": "other", "fill": "other"}

    # when
    result = release_one(frame, column, {"kind": "histogram", "column": "x"})

    # then
    assert result.value == {"F": 1, "M": 0, "other": 2}


def test_categorical_histogram_intervals_are_per_cell():
    # given
    frame = table(x=["F", "F", "M"])

    # when
    result = release_one(frame, SEX, {"kind": "histogram", "column": "x"})

    # then: b = 1, half-width 3, lower ends clipped at 0
    assert result.ci95 == {"F": [0, 5], "M": [0, 4], "other": [0, 3]}


def test_numeric_histogram_counts_clamped_values_in_half_open_bins_with_a_closed_last_bin():
    # given
    frame = table(x=["0", "49.9", "50", "100", "150", "-3", "", "abc"])
    query = {"kind": "histogram", "column": "x", "bins": [0, 50, 100]}

    # when
    result = release_one(frame, AGE, query)

    # then: [0, 50) holds 0, 49.9, −3→0; [50, 100] holds 50, 100, 150→100
    assert result.value == {"[0, 50)": 3, "[50, 100]": 3}


def test_numeric_histogram_puts_filled_missing_values_in_the_fill_bin():
    # given
    frame = table(x=["10", "", None])
    column = {**AGE, "fill": 75}
    query = {"kind": "histogram", "column": "x", "bins": [0, 25, 50, 75, 100]}

    # when
    result = release_one(frame, column, query)

    # then
    assert result.value == {"[0, 25)": 1, "[25, 50)": 0, "[50, 75)": 0, "[75, 100]": 2}


def test_mean_is_the_clamped_sum_over_the_count_of_kept_values():
    # given
    frame = table(x=["10", "20", "150", "-5", "", "n/a"])

    # when
    result = release_one(frame, AGE, {"kind": "mean", "column": "x"})

    # then: (10 + 20 + 100 + 0) / 4
    assert result.value == 32.5


def test_mean_counts_filled_values():
    # given
    frame = table(x=["10", "20", ""])

    # when
    result = release_one(frame, {**AGE, "fill": 60}, {"kind": "mean", "column": "x"})

    # then
    assert result.value == 30.0


def test_mean_interval_combines_both_parts_at_97_5_percent():
    # given: ε = 1 → sum part b = 200, count part b = 2 (97.5% half-width 7)
    frame = table(x=[str(v) for v in range(0, 100, 1)])

    # when
    result = release_one(frame, AGE, {"kind": "mean", "column": "x"})

    # then
    spread = (200 * LN_40 + 100 * 7) / 100
    assert result.value == 49.5
    assert result.ci95 == [
        pytest.approx(49.5 - spread, rel=1e-12),
        pytest.approx(49.5 + spread, rel=1e-12),
    ]
    assert result.mechanism == "laplace+geometric"
    assert result.epsilon == 1.0


def test_each_statistic_draws_its_noise_once_and_a_histogram_in_one_vector():
    # given
    frame = table(age=["10", "200", ""], sex=["F", "X", "M"])
    noise = ZeroNoise()
    queries = [
        {"kind": "count"},
        {"kind": "histogram", "column": "sex"},
        {"kind": "sum", "column": "age"},
        {"kind": "mean", "column": "age"},
    ]

    # when
    run_queries(frame, schema=SCHEMA, definition=pure_dp(), queries=queries, noise=noise)

    # then: count, the histogram's cells, the sum, the mean's sum then its count
    assert noise.calls == [[3], [1, 1, 1], 110.0, 110.0, [2]]


def test_run_queries_accepts_typed_objects():
    # given
    frame = table(age=["10", "200", ""])
    schema = Schema(columns={"age": NumericColumn(lower=0, upper=100)})

    # when
    result = run_queries(
        frame,
        schema=schema,
        definition=PureDP(epsilon=1.0),
        queries=[Count(), Histogram(column="age", bins=(0.0, 50.0, 100.0)), Sum(column="age")],
        noise=ZeroNoise(),
    )

    # then
    assert [s.value for s in result.statistics] == [3, {"[0, 50)": 1, "[50, 100]": 1}, 110.0]


# --- run_queries: published metadata -------------------------------------------------------


def test_result_publishes_mechanism_epsilon_sensitivity_and_noise_scale():
    # given
    frame = table(age=["10"])
    queries = [{"kind": "count"}, {"kind": "sum", "column": "age", "weight": 3}]

    # when
    result = run_queries(
        frame, schema=SCHEMA, definition=pure_dp(1.0), queries=queries, noise=ZeroNoise()
    )

    # then
    count, total = result.statistics
    assert count.to_dict() == {
        "kind": "count",
        "column": None,
        "value": 1,
        "ci95": [0, 1 + geometric_halfwidth(4.0)],
        "mechanism": "geometric",
        "epsilon": 0.25,
        "delta": 0.0,
        "sensitivity": 1,
        "noise_scale": 4.0,
        "rule": None,
    }
    assert (total.kind, total.column, total.mechanism) == ("sum", "age", "laplace")
    assert (total.epsilon, total.delta, total.sensitivity) == (0.75, 0.0, 100.0)
    assert total.noise_scale == pytest.approx(100 / 0.75, rel=1e-9)
    assert total.ci95[1] - total.value == pytest.approx(laplace_halfwidth(total.noise_scale))
    assert result.epsilon_spent == Decimal("1.000000000000")
    assert result.delta_spent == Decimal(0)


@pytest.mark.parametrize(
    ("column", "query", "rule"),
    [
        (
            AGE,
            {"kind": "sum", "column": "x"},
            "values clamped to [0, 100]; missing or non-numeric values dropped",
        ),
        (
            {**AGE, "fill": 50},
            {"kind": "mean", "column": "x"},
            "values clamped to [0, 100]; missing or non-numeric values replaced by 50",
        ),
        (
            {**AGE, "fill": 50},
            {"kind": "histogram", "column": "x", "bins": [0, 50, 100]},
            "values clamped to [0, 100]; missing or non-numeric values replaced by 50",
        ),
        (
            SEX,
            {"kind": "histogram", "column": "x"},
            "values outside the declared categories counted as 'other'; missing values dropped",
        ),
        (
            {"kind": "categorical", "categories": ["F", "M"], "fill": "F"},
            {"kind": "histogram", "column": "x"},
            "values outside the declared categories dropped; missing values replaced by 'F'",
        ),
    ],
    ids=["sum", "mean-with-fill", "numeric-histogram", "categorical-other", "categorical-fill"],
)
def test_rule_states_the_declared_handling_and_never_how_many_rows_it_touched(column, query, rule):
    # given: the same column, untouched by any rule vs. 7 clamped/unknown and 3 missing rows
    clean = table(x=["10", "20", "F", "M"] if column["kind"] == "categorical" else ["10", "20"])
    dirty = table(x=["999", "-999", "Q", "Z", "W", "V", "U", "", "", None, "F", "10"])

    # when
    clean_rule = release_one(clean, column, query).rule
    dirty_rule = release_one(dirty, column, query).rule

    # then
    assert clean_rule == rule
    assert dirty_rule == rule
    assert "7" not in dirty_rule
    assert "3" not in dirty_rule


# --- run_queries: post-processing of noisy answers ----------------------------------------


def test_count_pushed_below_zero_by_noise_is_published_as_zero():
    # given
    frame = table(x=["1", "2"])

    # when
    result = release_one(frame, AGE, {"kind": "count"}, noise=ShiftNoise(counts=-1000))

    # then
    assert result.value == 0
    assert result.ci95 == [0, 3]


def test_histogram_cells_pushed_below_zero_by_noise_are_published_as_zero():
    # given
    frame = table(x=["F", "M", "M"])

    # when
    result = release_one(
        frame, SEX, {"kind": "histogram", "column": "x"}, noise=ShiftNoise(counts=-2)
    )

    # then
    assert result.value == {"F": 0, "M": 0, "other": 0}


def test_sum_of_a_non_negative_column_pushed_below_zero_is_published_as_zero():
    # given
    frame = table(x=["10", "20"])

    # when
    result = release_one(frame, AGE, {"kind": "sum", "column": "x"}, noise=ShiftNoise(sums=-1e6))

    # then
    assert result.value == 0.0
    assert result.ci95 == [0.0, 0.0]


def test_sum_of_a_non_positive_column_pushed_above_zero_is_published_as_zero():
    # given
    frame = table(x=["-10", "-20"])
    column = {"kind": "numeric", "lower": -100, "upper": -10}

    # when
    result = release_one(frame, column, {"kind": "sum", "column": "x"}, noise=ShiftNoise(sums=1e6))

    # then
    assert result.value == 0.0
    assert result.ci95 == [0.0, 0.0]


def test_mean_with_a_noisy_count_below_one_divides_by_one_and_clamps_to_the_bounds():
    # given
    frame = table(x=["10", "20"])

    # when
    result = release_one(
        frame, AGE, {"kind": "mean", "column": "x"}, noise=ShiftNoise(counts=-1000, sums=500.0)
    )

    # then: (30 + 500) / max(1, 2 − 1000) = 530 → clamped to the upper bound
    assert result.value == 100.0
    assert result.ci95 == [0.0, 100.0]


def test_mean_pushed_below_the_lower_bound_is_clamped_to_it():
    # given
    frame = table(x=["10", "20"])

    # when
    result = release_one(frame, AGE, {"kind": "mean", "column": "x"}, noise=ShiftNoise(sums=-1e6))

    # then
    assert result.value == 0.0
    assert result.ci95[0] == 0.0


def test_mean_pushed_above_the_upper_bound_is_clamped_to_it():
    # given
    frame = table(x=["10", "20"])

    # when
    result = release_one(frame, AGE, {"kind": "mean", "column": "x"}, noise=ShiftNoise(sums=1e6))

    # then
    assert result.value == 100.0
    assert result.ci95[1] == 100.0


# --- validation ---------------------------------------------------------------------------


def test_invalid_query_errors_are_rooted_at_their_index():
    # when
    with pytest.raises(EngineValidationError) as caught:
        preview(
            schema=SCHEMA,
            definition=pure_dp(),
            queries=[{"kind": "count"}, {"kind": "sum", "column": "salary"}],
        )

    # then
    assert caught.value.errors == {"queries.1.column": ["no such column in the schema"]}


def test_invalid_definition_errors_are_rooted_at_definition():
    # when
    with pytest.raises(EngineValidationError) as caught:
        preview(schema=SCHEMA, definition=pure_dp(-1.0), queries=[{"kind": "count"}])

    # then
    assert caught.value.errors == {"definition.epsilon": ["must be a number greater than 0"]}


def test_definition_and_query_errors_are_reported_together():
    # when
    with pytest.raises(EngineValidationError) as caught:
        plan_release(
            schema=SCHEMA,
            definition={"kind": "pure_dp", "epsilon": 50},
            queries=[
                {"kind": "histogram", "column": "age"},
                {"kind": "count"},
                {"kind": "mean", "column": "sex", "weight": -1},
            ],
        )

    # then
    assert caught.value.errors == {
        "definition.epsilon": ["must be from 0.0001 to 20"],
        "queries.0.bins": ["a numeric histogram needs bin edges"],
        "queries.2.weight": ["must be a number from 0.001 to 1000"],
    }


@pytest.mark.parametrize("queries", [[], (), "count"], ids=["empty-list", "empty-tuple", "string"])
def test_a_release_needs_at_least_one_statistic(queries):
    # when
    with pytest.raises(EngineValidationError) as caught:
        preview(schema=SCHEMA, definition=pure_dp(), queries=queries)

    # then
    assert caught.value.errors == {"queries": ["choose at least one statistic"]}


def test_invalid_schema_errors_are_rooted_at_schema():
    # given
    schema = {"columns": {"age": {"kind": "numeric", "lower": 5, "upper": 1}}}

    # when
    with pytest.raises(EngineValidationError) as caught:
        preview(schema=schema, definition=pure_dp(), queries=[{"kind": "count"}])

    # then
    assert caught.value.errors == {
        "schema.columns.age.upper": ["upper bound must be greater than lower"]
    }


def test_run_queries_refuses_a_table_without_a_declared_column_before_drawing_noise():
    # given
    frame = table(name=["Ann Secret"], years=["42"])
    noise = ZeroNoise()

    # when
    with pytest.raises(EngineValidationError) as caught:
        run_queries(
            frame,
            schema=SCHEMA,
            definition=pure_dp(),
            queries=[{"kind": "count"}, {"kind": "sum", "column": "age"}],
            noise=noise,
        )

    # then
    assert caught.value.errors == {"columns": ["the table lacks declared columns"]}
    assert noise.calls == []
    assert "Ann" not in str(caught.value)


def test_run_queries_validates_like_preview():
    # when
    with pytest.raises(EngineValidationError) as caught:
        run_queries(
            table(age=["1"]),
            schema=SCHEMA,
            definition=pure_dp(),
            queries=[{"kind": "count"}, {"kind": "sum", "column": "name"}],
            noise=ZeroNoise(),
        )

    # then
    assert caught.value.errors == {"queries.1.column": ["a sum needs a numeric column"]}


def test_a_weight_too_small_to_give_finite_noise_is_a_validation_error():
    # when
    with pytest.raises(EngineValidationError) as caught:
        preview(
            schema=SCHEMA,
            definition=pure_dp(),
            queries=[{"kind": "count"}, {"kind": "sum", "column": "age", "weight": 5e-324}],
        )

    # then
    assert list(caught.value.errors) == ["queries.1.weight"]
