"""Global sensitivities under ε-DP (add/remove one record), through the facade
``sensitivity(query=..., schema=..., definition=...)`` with the API's JSON shapes and with the
engine's typed objects (DESIGN.md, "Neighbours" and "Sensitivity under add/remove")."""

import pytest

from privacy_engine import (
    CategoricalColumn,
    Count,
    EngineValidationError,
    Histogram,
    IdentifierColumn,
    Mean,
    NumericColumn,
    PureDP,
    Schema,
    Sum,
    sensitivity,
)

JSON_SCHEMA = {
    "columns": {
        "age": {"kind": "numeric", "lower": 0, "upper": 100},
        "balance": {"kind": "numeric", "lower": -50, "upper": 20},
        "debt": {"kind": "numeric", "lower": -100, "upper": -10},
        "sex": {"kind": "categorical", "categories": ["F", "M"], "other": "other"},
        "name": {"kind": "identifier"},
    }
}
TYPED_SCHEMA = Schema(
    columns={
        "age": NumericColumn(lower=0, upper=100),
        "balance": NumericColumn(lower=-50, upper=20),
        "debt": NumericColumn(lower=-100, upper=-10),
        "sex": CategoricalColumn(categories=("F", "M"), other="other"),
        "name": IdentifierColumn(),
    }
)
JSON_PURE_DP = {"kind": "pure_dp", "epsilon": 1.0}
TYPED_PURE_DP = PureDP(epsilon=1.0)

# (JSON query, the same query typed, expected sensitivity)
CASES = [
    ({"kind": "count"}, Count(), 1),
    ({"kind": "histogram", "column": "sex"}, Histogram(column="sex"), 1),
    (
        {"kind": "histogram", "column": "age", "bins": [0, 18, 65, 100]},
        Histogram(column="age", bins=(0.0, 18.0, 65.0, 100.0)),
        1,
    ),
    ({"kind": "sum", "column": "age"}, Sum(column="age"), 100),
    ({"kind": "sum", "column": "balance"}, Sum(column="balance"), 50),
    ({"kind": "sum", "column": "debt"}, Sum(column="debt"), 100),
    ({"kind": "mean", "column": "age"}, Mean(column="age"), 100),
    ({"kind": "mean", "column": "balance"}, Mean(column="balance"), 50),
]
CASE_IDS = [
    "count",
    "categorical-histogram",
    "numeric-histogram",
    "sum-0-to-100",
    "sum-minus-50-to-20",
    "sum-minus-100-to-minus-10",
    "mean-0-to-100",
    "mean-minus-50-to-20",
]


@pytest.mark.parametrize(("json_query", "typed_query", "expected"), CASES, ids=CASE_IDS)
def test_pure_dp_sensitivity_from_json_shapes(json_query, typed_query, expected):
    # when
    value = sensitivity(query=json_query, schema=JSON_SCHEMA, definition=JSON_PURE_DP)

    # then
    assert value == expected


@pytest.mark.parametrize(("json_query", "typed_query", "expected"), CASES, ids=CASE_IDS)
def test_pure_dp_sensitivity_from_typed_objects(json_query, typed_query, expected):
    # when
    value = sensitivity(query=typed_query, schema=TYPED_SCHEMA, definition=TYPED_PURE_DP)

    # then
    assert value == expected


@pytest.mark.parametrize(("json_query", "typed_query", "expected"), CASES, ids=CASE_IDS)
def test_json_and_typed_inputs_may_be_mixed(json_query, typed_query, expected):
    # when
    value = sensitivity(query=typed_query, schema=JSON_SCHEMA, definition=TYPED_PURE_DP)

    # then
    assert value == expected


def test_sum_sensitivity_is_the_largest_magnitude_of_the_declared_bounds_not_the_width():
    # given: width 2, but one added record can contribute 3
    schema = {"columns": {"x": {"kind": "numeric", "lower": 1, "upper": 3}}}

    # when
    value = sensitivity(
        query={"kind": "sum", "column": "x"}, schema=schema, definition=JSON_PURE_DP
    )

    # then
    assert value == 3


@pytest.mark.parametrize("epsilon", [0.01, 1.0, 20.0])
def test_sensitivity_does_not_depend_on_epsilon(epsilon):
    # given
    definition = {"kind": "pure_dp", "epsilon": epsilon}

    # when
    value = sensitivity(
        query={"kind": "sum", "column": "age"}, schema=JSON_SCHEMA, definition=definition
    )

    # then
    assert value == 100


def test_count_sensitivity_is_an_integer():
    # when
    value = sensitivity(query={"kind": "count"}, schema=JSON_SCHEMA, definition=JSON_PURE_DP)

    # then
    assert value == 1
    assert isinstance(value, int)


# --- validation: errors name the bad field -----------------------------------------------


@pytest.mark.parametrize(
    ("query", "errors"),
    [
        ({"kind": "sum", "column": "salary"}, {"column": ["no such column in the schema"]}),
        ({"kind": "sum"}, {"column": ["name the column this statistic uses"]}),
        ({"kind": "sum", "column": 7}, {"column": ["name the column this statistic uses"]}),
        ({"kind": "sum", "column": "sex"}, {"column": ["a sum needs a numeric column"]}),
        ({"kind": "mean", "column": "name"}, {"column": ["a mean needs a numeric column"]}),
        (
            {"kind": "histogram", "column": "name"},
            {"column": ["histograms need a categorical or numeric column"]},
        ),
        ({"kind": "histogram", "column": "age"}, {"bins": ["a numeric histogram needs bin edges"]}),
        (
            {"kind": "histogram", "column": "age", "bins": [0, 50, 50, 100]},
            {"bins": ["need at least two increasing edges"]},
        ),
        (
            {"kind": "histogram", "column": "age", "bins": [100]},
            {"bins": ["need at least two increasing edges"]},
        ),
        (
            {"kind": "histogram", "column": "age", "bins": [0, 50, 90]},
            {"bins": ["the first and last edges must be the column's declared bounds"]},
        ),
        (
            {"kind": "histogram", "column": "age", "bins": [0, "50", 100]},
            {"bins": ["must be a list of numbers"]},
        ),
        (
            {"kind": "histogram", "column": "sex", "bins": [0, 1]},
            {"bins": ["bins apply only to numeric columns"]},
        ),
        (
            {"kind": "median", "column": "age"},
            {
                "kind": [
                    "must be one of: count, histogram, sum, mean, quantile, marginal, "
                    "range_histogram, kmeans, randomized_response, synthetic"
                ]
            },
        ),
        ({"kind": "count", "weight": 0}, {"weight": ["must be a number from 0.001 to 1000"]}),
        ({"kind": "count", "weight": True}, {"weight": ["must be a number from 0.001 to 1000"]}),
        (
            {"kind": "count", "weight": float("inf")},
            {"weight": ["must be a number from 0.001 to 1000"]},
        ),
    ],
    ids=[
        "unknown-column",
        "missing-column",
        "column-not-a-string",
        "sum-of-categorical",
        "mean-of-identifier",
        "histogram-of-identifier",
        "numeric-histogram-without-bins",
        "bins-not-increasing",
        "single-edge",
        "bins-not-spanning-bounds",
        "bins-not-numbers",
        "bins-on-categorical",
        "unknown-kind",
        "zero-weight",
        "boolean-weight",
        "infinite-weight",
    ],
)
def test_invalid_query_names_the_bad_field(query, errors):
    # when
    with pytest.raises(EngineValidationError) as caught:
        sensitivity(query=query, schema=JSON_SCHEMA, definition=JSON_PURE_DP)

    # then
    assert caught.value.errors == errors


def test_invalid_typed_query_is_checked_against_the_schema_too():
    # when
    with pytest.raises(EngineValidationError) as caught:
        sensitivity(query=Sum(column="sex"), schema=TYPED_SCHEMA, definition=TYPED_PURE_DP)

    # then
    assert caught.value.errors == {"column": ["a sum needs a numeric column"]}


def test_unknown_query_kind_is_named_even_without_a_column():
    # when
    with pytest.raises(EngineValidationError) as caught:
        sensitivity(query={"kind": "medain"}, schema=JSON_SCHEMA, definition=JSON_PURE_DP)

    # then
    assert "kind" in caught.value.errors


@pytest.mark.parametrize(
    ("definition", "errors"),
    [
        ({"kind": "pure_dp", "epsilon": 0}, {"epsilon": ["must be a number greater than 0"]}),
        ({"kind": "pure_dp", "epsilon": -1.0}, {"epsilon": ["must be a number greater than 0"]}),
        ({"kind": "pure_dp", "epsilon": "1"}, {"epsilon": ["must be a number greater than 0"]}),
        ({"kind": "pure_dp"}, {"epsilon": ["must be a number greater than 0"]}),
        (
            {"kind": "pure_dp", "epsilon": float("nan")},
            {"epsilon": ["must be a number greater than 0"]},
        ),
        ({"kind": "pure_dp", "epsilon": 20.5}, {"epsilon": ["must be from 0.0001 to 20"]}),
        (
            {"kind": "renyi", "epsilon": 1.0},
            {"kind": ["must be one of: pure_dp, approx_dp, blowfish"]},
        ),
        ("pure_dp", {"": ["must be an object"]}),
    ],
    ids=["zero", "negative", "string", "missing", "nan", "too-large", "unknown-kind", "not-object"],
)
def test_invalid_definition_names_the_bad_field(definition, errors):
    # when
    with pytest.raises(EngineValidationError) as caught:
        sensitivity(query={"kind": "count"}, schema=JSON_SCHEMA, definition=definition)

    # then
    assert caught.value.errors == errors


@pytest.mark.parametrize(
    ("column", "errors"),
    [
        (
            {"kind": "numeric", "lower": 10, "upper": 10},
            {"columns.x.upper": ["upper bound must be greater than lower"]},
        ),
        (
            {"kind": "numeric"},
            {
                "columns.x.lower": ["numeric columns need public bounds"],
                "columns.x.upper": ["numeric columns need public bounds"],
            },
        ),
        ({"kind": "numeric", "lower": "0", "upper": 1}, {"columns.x.lower": ["must be a number"]}),
        (
            {"kind": "numeric", "lower": 0, "upper": float("inf")},
            {"columns.x.upper": ["must be a finite number"]},
        ),
        (
            {"kind": "numeric", "lower": 0, "upper": 1, "fill": 2},
            {"columns.x.fill": ["the fill value must lie within the bounds"]},
        ),
        (
            {"kind": "categorical", "categories": []},
            {"columns.x.categories": ["declare at least one category"]},
        ),
        (
            {"kind": "categorical", "categories": ["a", "a"]},
            {"columns.x.categories": ["categories must be distinct"]},
        ),
        (
            {"kind": "categorical", "categories": ["a"], "other": "a"},
            {"columns.x.other": ["the other bucket must not be a category"]},
        ),
        (
            {"kind": "categorical", "categories": ["a"], "fill": "b"},
            {"columns.x.fill": ["the fill value must be a declared category"]},
        ),
        (
            {"kind": "date"},
            {"columns.x.kind": ["must be one of numeric, categorical, identifier"]},
        ),
    ],
    ids=[
        "empty-bounds",
        "missing-bounds",
        "string-bound",
        "infinite-bound",
        "fill-outside-bounds",
        "no-categories",
        "duplicate-categories",
        "other-is-a-category",
        "fill-not-a-category",
        "unknown-kind",
    ],
)
def test_invalid_schema_names_the_bad_column_field(column, errors):
    # given
    schema = {"columns": {"x": column}}

    # when
    with pytest.raises(EngineValidationError) as caught:
        sensitivity(query={"kind": "count"}, schema=schema, definition=JSON_PURE_DP)

    # then
    assert caught.value.errors == errors


def test_validation_error_is_a_value_error_whose_message_lists_the_fields():
    # when
    with pytest.raises(EngineValidationError) as caught:
        sensitivity(
            query={"kind": "sum", "column": "salary"}, schema=JSON_SCHEMA, definition=JSON_PURE_DP
        )

    # then
    assert isinstance(caught.value, ValueError)
    assert str(caught.value) == "column: no such column in the schema"
