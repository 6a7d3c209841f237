"""No input crashes or exhausts the engine (issue 7, points 8 and 9): each hostile value is a
validation error naming its field, or is handled by a stated rule, never an overflow, a NaN or a
cost that grows with a declared number."""

import math
import time

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privacy_engine import (
    EngineValidationError,
    epsilon_for_accuracy,
    epsilon_to_truth_probability,
    group_privacy,
    plan_release,
    posterior_bound,
    run_queries,
    schema_from_dict,
)
from privacy_engine.guidance import simulated_preview, suggest_starting_point
from privacy_engine.queries import bin_labels
from privacy_engine.schema import MAX_BOUND, MAX_CATEGORIES, MAX_ROWS

PURE_DP = {"kind": "pure_dp", "epsilon": 1.0}
COLUMNS = {
    "age": {"kind": "numeric", "lower": 0, "upper": 100},
    "sex": {"kind": "categorical", "categories": ["F", "M"], "other": "X"},
}
EVERY_KIND = [
    {"kind": "count"},
    {"kind": "histogram", "column": "sex"},
    {"kind": "histogram", "column": "age", "bins": [0, 50, 100]},
    {"kind": "sum", "column": "age"},
    {"kind": "sum", "columns": ["age"]},
    {"kind": "mean", "column": "age"},
]


class ZeroNoise:
    def sample(self, measurement, value):
        return value


def errors_of(call, **arguments) -> dict[str, list[str]]:
    with pytest.raises(EngineValidationError) as caught:
        call(**arguments)
    return caught.value.errors


# --- declared size ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "definition",
    [PURE_DP, {"kind": "approx_dp", "epsilon": 1.0}],
    ids=["pure-dp", "approx-dp"],
)
def test_simulated_preview_of_the_largest_declared_size_is_fast(definition):
    # given
    schema = {"columns": COLUMNS, "declared_size": MAX_ROWS}

    # when
    started = time.perf_counter()
    entries = simulated_preview(schema=schema, definition=definition, queries=EVERY_KIND)
    elapsed = time.perf_counter() - started

    # then nothing of the declared size was built, and the shape is unchanged
    assert elapsed < 2.0
    keys = ["ci95", "column", "kind", "noisy", "simulated"]
    labelled = sorted([*keys, "typical_values"])  # sums and means say which value they used
    assert [sorted(e) for e in entries] == [keys] * 3 + [
        labelled,
        sorted([*labelled, "columns"]),
        labelled,
    ]
    count, sexes, bins, total, totals, mean = entries
    assert count["simulated"] == 10**10
    assert sexes["simulated"] == {"F": 5 * 10**9, "M": 5 * 10**9, "X": 0}
    assert bins["simulated"] == {"[0, 50)": 5 * 10**9, "[50, 100]": 5 * 10**9}
    assert total["simulated"] == 50.0 * 10**10
    assert totals["simulated"] == {"age": 50.0 * 10**10}
    assert mean["simulated"] == 50.0
    assert set(sexes["noisy"]) == {"F", "M", "X"}
    assert all(math.isfinite(low) and math.isfinite(high) for low, high in sexes["ci95"].values())
    assert 0 <= mean["noisy"] <= 100


def test_simulated_preview_draws_noise_on_the_simulated_answers():
    # when
    entries = simulated_preview(
        schema={"columns": COLUMNS, "declared_size": 10},
        definition={"kind": "blowfish", "epsilon": 1.0, "policy": {"graph": "full_domain"}},
        queries=[{"kind": "count"}],
    )

    # then the count is public under Blowfish: published exactly
    assert entries == [
        {"kind": "count", "column": None, "simulated": 10, "noisy": 10, "ci95": [10, 10]}
    ]


@pytest.mark.parametrize(
    "declared_size", [MAX_ROWS + 1, 10**12, pytest.param(10**4999, id="5000-digits")]
)
def test_a_declared_size_above_the_cap_is_refused_naming_it(declared_size):
    # when
    errors = errors_of(schema_from_dict, spec={"columns": COLUMNS, "declared_size": declared_size})

    # then
    assert errors == {
        "declared_size": ["must be at most 10,000,000,000, the largest table the engine answers"]
    }


@pytest.mark.parametrize("declared_size", [0, -1, 2.5, True, "10"])
def test_a_declared_size_that_is_not_a_positive_whole_number_is_refused_naming_it(declared_size):
    # when
    errors = errors_of(schema_from_dict, spec={"columns": COLUMNS, "declared_size": declared_size})

    # then
    assert errors == {"declared_size": ["must be a positive whole number"]}


@pytest.mark.parametrize(
    "declared_size", [0, MAX_ROWS + 1, pytest.param(10**4999, id="5000-digits")]
)
def test_the_starting_point_refuses_a_declared_size_it_cannot_use_naming_it(declared_size):
    # when
    errors = errors_of(
        suggest_starting_point, harm="low", releases="once", declared_size=declared_size
    )

    # then
    assert list(errors) == ["declared_size"]


def test_a_plan_names_the_schemas_declared_size():
    # when
    errors = errors_of(
        plan_release,
        schema={"columns": COLUMNS, "declared_size": 10**12},
        definition=PURE_DP,
        queries=[{"kind": "count"}],
    )

    # then
    assert list(errors) == ["schema.declared_size"]


# --- bounds and their products --------------------------------------------------------------


@pytest.mark.parametrize(
    ("column", "fields"),
    [
        ({"lower": -1e308, "upper": 1e308}, ["lower", "upper"]),
        ({"lower": 0, "upper": 1e16}, ["upper"]),
        pytest.param({"lower": -(10**400), "upper": 0}, ["lower"], id="int-beyond-floats"),
        pytest.param({"lower": 0, "upper": 10**400}, ["upper"], id="int-beyond-floats-upper"),
    ],
)
def test_bounds_beyond_the_cap_are_refused_naming_each(column, fields):
    # when
    errors = errors_of(schema_from_dict, spec={"columns": {"x": {"kind": "numeric", **column}}})

    # then
    assert sorted(errors) == [f"columns.x.{field}" for field in fields]


def test_the_bound_cap_itself_is_allowed():
    # when
    schema = schema_from_dict(
        {"columns": {"x": {"kind": "numeric", "lower": -MAX_BOUND, "upper": MAX_BOUND}}}
    )

    # then
    assert schema.column("x").width == 2e15


@pytest.mark.parametrize("definition_kind", ["pure_dp", "approx_dp"])
@pytest.mark.parametrize(
    ("epsilon", "rows_per_person"), [(0.0001, 1000), (20.0, 1)], ids=["most-noise", "least-noise"]
)
def test_sensitivities_scales_and_intervals_stay_finite_at_every_extreme(
    definition_kind, epsilon, rows_per_person
):
    # given the widest bounds, the most rows per person and, with the smallest ε, the smallest
    # share of it: weight 0.001 beside statistics of weight 1000
    schema = {
        "columns": {
            "x": {"kind": "numeric", "lower": -MAX_BOUND, "upper": MAX_BOUND},
            "y": {"kind": "numeric", "lower": -MAX_BOUND, "upper": MAX_BOUND},
            "id": {"kind": "identifier"},
        },
        "declared_size": 1,
        "person_key": "id",
        "max_rows_per_person": rows_per_person,
    }
    queries = [
        {"kind": "sum", "columns": ["x", "y"], "weight": 0.001},
        {"kind": "mean", "column": "x", "weight": 0.001},
        *[{"kind": "count", "weight": 1000}] * 8,
    ]
    definition = {"kind": definition_kind, "epsilon": epsilon}
    if definition_kind == "approx_dp":
        definition["delta"] = 1e-30

    # when
    entries = plan_release(schema=schema, definition=definition, queries=queries).preview()

    # then
    numbers = [
        entry[key]
        for entry in entries
        for key in ("sensitivity", "noise_scale", "expected_abs_error", "ci95_halfwidth")
    ]
    assert all(math.isfinite(number) for number in numbers)
    norm = 2 if definition_kind == "pure_dp" else math.sqrt(2)  # L1, or L2 for the Gaussian
    # max(|lower|, |upper|) rounded up to the grid (2³¹ here): at most 2.2·10⁻⁶ more
    assert entries[0]["sensitivity"] == pytest.approx(norm * 1e15 * rows_per_person, rel=2.2e-6)


HUGE = 10**400  # a JSON whole number beyond every float


@pytest.mark.parametrize(
    ("definition", "queries", "field"),
    [
        ({"kind": "pure_dp", "epsilon": HUGE}, [{"kind": "count"}], "definition.epsilon"),
        (
            {"kind": "approx_dp", "epsilon": 1, "delta": HUGE},
            [{"kind": "count"}],
            "definition.delta",
        ),
        (
            {
                "kind": "blowfish",
                "epsilon": 1,
                "policy": {"graph": "distance_threshold", "column": "age", "theta": HUGE},
            },
            [{"kind": "count"}],
            "definition.policy.theta",
        ),
        (
            {
                "kind": "blowfish",
                "epsilon": 1,
                "policy": {"graph": "partition", "column": "age", "width": HUGE},
            },
            [{"kind": "count"}],
            "definition.policy.width",
        ),
        (PURE_DP, [{"kind": "histogram", "column": "age", "bins": [0, HUGE]}], "queries.0.bins"),
        (PURE_DP, [{"kind": "count", "weight": HUGE}], "queries.0.weight"),
    ],
    ids=["epsilon", "delta", "theta", "width", "bins", "weight"],
)
def test_whole_numbers_beyond_every_float_are_refused_naming_the_field(definition, queries, field):
    # when
    errors = errors_of(
        plan_release, schema={"columns": COLUMNS}, definition=definition, queries=queries
    )

    # then
    assert list(errors) == [field]


def test_the_smallest_positive_delta_is_refused_naming_it():
    # when
    errors = errors_of(
        plan_release,
        schema={"columns": COLUMNS},
        definition={"kind": "approx_dp", "epsilon": 1.0, "delta": 5e-324},
        queries=[{"kind": "count"}],
    )

    # then
    assert errors == {
        "definition.delta": [
            "must be at least 1e-30; for a smaller δ choose ε-differential privacy (pure_dp), "
            "which has no δ at all"
        ]
    }


def test_a_category_list_beyond_the_cap_is_refused_naming_it():
    # given
    categories = [f"c{i}" for i in range(MAX_CATEGORIES + 1)]

    # when
    errors = errors_of(
        schema_from_dict,
        spec={"columns": {"x": {"kind": "categorical", "categories": categories}}},
    )

    # then
    assert errors == {"columns.x.categories": ["declare at most 10,000 categories"]}


# --- accuracy first and translations ----------------------------------------------------------


@pytest.mark.parametrize(
    "halfwidth",
    [math.inf, pytest.param(10**400, id="10^400"), math.nan, -1.0, "5", True, None],
)
def test_an_unusable_target_halfwidth_is_refused_naming_it(halfwidth):
    # when
    errors = errors_of(
        epsilon_for_accuracy,
        schema={"columns": COLUMNS},
        definition=PURE_DP,
        query={"kind": "sum", "column": "age"},
        ci95_halfwidth=halfwidth,
    )

    # then
    assert errors == {"ci95_halfwidth": ["must be a finite number ≥ 0"]}


def test_a_huge_finite_target_halfwidth_needs_the_smallest_epsilon():
    # when
    epsilon = epsilon_for_accuracy(
        schema={"columns": COLUMNS},
        definition=PURE_DP,
        query={"kind": "sum", "column": "age"},
        ci95_halfwidth=1e300,
    )

    # then
    assert epsilon == 0.0001


def test_translations_of_a_huge_epsilon_are_finite_and_correct():
    # when
    values = (
        epsilon_to_truth_probability(1e308),
        posterior_bound(prior=0.1, epsilon=1e308),
        posterior_bound(prior=0.0, epsilon=1e308),
    )

    # then
    assert values == (1.0, 1.0, 0.0)


@pytest.mark.parametrize(
    ("call", "arguments", "message"),
    [
        (epsilon_to_truth_probability, {"epsilon": 10**400}, "epsilon must be a finite number"),
        (posterior_bound, {"prior": 0.1, "epsilon": 10**400}, "epsilon must be a finite number"),
        (group_privacy, {"group_size": 10**400, "epsilon": 0.1}, "group size × ε is beyond"),
        (group_privacy, {"group_size": 2, "epsilon": 1e308}, "group size × ε is beyond"),
        (
            group_privacy,
            {"group_size": 10**6, "epsilon": 1.0, "delta": 1e-6},
            r"the group's δ, c·e\^\{\(c−1\)ε\}·δ, is beyond any finite number",
        ),
    ],
)
def test_translations_that_would_overflow_raise_a_value_error_saying_so(call, arguments, message):
    # when / then
    with pytest.raises(ValueError, match=message):
        call(**arguments)


def test_group_privacy_with_a_factor_beyond_floats_but_a_finite_product_is_computed():
    # when: e^{(c−1)ε} alone overflows, c·e^{(c−1)ε}·δ does not
    epsilon, delta = group_privacy(group_size=801, epsilon=1.0, delta=1e-300)

    # then
    assert epsilon == 801.0
    assert delta == pytest.approx(801 * math.exp(800 - 300 * math.log(10)), rel=1e-9)


# --- values that would overflow during a release -------------------------------------------


def test_values_beyond_any_float_are_clamped_before_any_arithmetic():
    # given values far beyond the bounds, one beyond every float
    frame = pd.DataFrame({"x": ["1e307", "1e400", "inf", "-1e400", "5", "nan", "abc", None]})
    schema = {"columns": {"x": {"kind": "numeric", "lower": 0, "upper": 100}}}

    # when
    result = run_queries(
        frame,
        schema=schema,
        definition=PURE_DP,
        queries=[
            {"kind": "sum", "column": "x"},
            {"kind": "mean", "column": "x"},
            {"kind": "histogram", "column": "x", "bins": [0, 50, 100]},
        ],
        noise=ZeroNoise(),
    )

    # then 1e307, 1e400 and inf count as 100, -1e400 as 0; nan, abc and None are missing
    total, mean, bins = result.statistics
    assert total.value == 100 + 100 + 100 + 0 + 5
    assert mean.value == 305 / 5
    assert bins.value == {"[0, 50)": 2, "[50, 100]": 3}


# --- histogram bin labels (point 9) -------------------------------------------------------


def test_bins_a_hair_apart_publish_one_cell_each():
    # given
    edges = [0, 1.0000001, 1.0000002, 1.0000003, 100]
    frame = pd.DataFrame({"x": ["0.5", "1.00000015", "1.00000025", "50"]})

    # when
    result = run_queries(
        frame,
        schema={"columns": {"x": {"kind": "numeric", "lower": 0, "upper": 100}}},
        definition=PURE_DP,
        queries=[{"kind": "histogram", "column": "x", "bins": edges}],
        noise=ZeroNoise(),
    )

    # then
    assert result.statistics[0].value == {
        "[0, 1.0000001)": 1,
        "[1.0000001, 1.0000002)": 1,
        "[1.0000002, 1.0000003)": 1,
        "[1.0000003, 100]": 1,
    }


def test_bin_labels_stay_short_for_ordinary_edges():
    # when
    labels = bin_labels((0.0, 10.0, 2.5, 1e15, 1234567.0, -3.0))

    # then
    assert labels == ("[0, 10)", "[10, 2.5)", "[2.5, 1e+15)", "[1e+15, 1234567)", "[1234567, -3]")


@settings(max_examples=300)
@given(
    st.lists(
        st.floats(allow_nan=False, allow_infinity=False), min_size=2, max_size=40, unique=True
    ).map(sorted)
)
def test_bin_labels_are_distinct_for_any_distinct_edges(edges):
    # given strictly increasing edges (0.0 and -0.0 are one edge)
    edges = [edge for i, edge in enumerate(edges) if i == 0 or edge > edges[i - 1]]
    if len(edges) < 2:
        return

    # when
    labels = bin_labels(tuple(edges))

    # then one label per bin, each reading back as exactly its edges
    assert len(set(labels)) == len(edges) - 1
    for label, low, high in zip(labels, edges, edges[1:], strict=False):
        left, right = label[1:-1].split(", ")
        assert (float(left), float(right)) == (low, high)
