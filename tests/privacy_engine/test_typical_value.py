"""A numeric column's optional public typical value (issue 13, point 6): declared like the bounds,
refused outside them, and used by the simulated preview instead of the midpoint of the bounds,
which is otherwise labelled as such. It never changes the noise."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privacy_engine import EngineValidationError, preview
from privacy_engine.guidance import MIDPOINT_BASIS, TYPICAL_BASIS, simulated_preview
from privacy_engine.schema import NumericColumn, column_from_dict, schema_from_dict

PURE = {"kind": "pure_dp", "epsilon": 1.0}


def survey(wage: dict) -> dict:
    return {
        "columns": {
            "wage": {"kind": "numeric", "lower": 0, "upper": 5000, **wage},
            "region": {"kind": "categorical", "categories": ["north", "south"]},
        },
        "declared_size": 1000,
    }


@pytest.mark.parametrize("typical", [-1, 5000.5, 1e15])
def test_a_typical_value_outside_the_bounds_is_refused_naming_the_field(typical):
    # when
    with pytest.raises(EngineValidationError) as refused:
        schema_from_dict(survey({"typical": typical}))

    # then
    assert refused.value.errors == {
        "columns.wage.typical": ["the typical value must lie within the bounds"]
    }


@pytest.mark.parametrize("typical", ["2100", True, [2100], float("inf")])
def test_a_typical_value_that_is_not_a_finite_number_is_refused_naming_the_field(typical):
    # when
    with pytest.raises(EngineValidationError) as refused:
        column_from_dict({"kind": "numeric", "lower": 0, "upper": 5000, "typical": typical})

    # then
    assert list(refused.value.errors) == ["typical"]


@pytest.mark.parametrize("typical", [0, 2100, 5000])
def test_a_typical_value_within_the_bounds_is_kept_and_written_back(typical):
    # when
    schema = schema_from_dict(survey({"typical": typical}))

    # then
    assert schema.column("wage") == NumericColumn(lower=0, upper=5000, typical=typical)
    assert schema.to_dict()["columns"]["wage"] == {
        "kind": "numeric",
        "lower": 0,
        "upper": 5000,
        "typical": typical,
    }


def test_a_column_without_a_typical_value_writes_none_back():
    # when
    written = schema_from_dict(survey({})).to_dict()

    # then
    assert written["columns"]["wage"] == {"kind": "numeric", "lower": 0, "upper": 5000}


def test_simulated_mean_and_sum_use_the_declared_typical_value_and_say_so():
    # when
    mean, total = simulated_preview(
        schema=survey({"typical": 2100}),
        definition=PURE,
        queries=[{"kind": "mean", "column": "wage"}, {"kind": "sum", "column": "wage"}],
    )

    # then
    assert mean["simulated"] == 2100
    assert total["simulated"] == 2100 * 1000
    label = [{"column": "wage", "value": 2100, "basis": TYPICAL_BASIS}]
    assert mean["typical_values"] == label
    assert total["typical_values"] == label


def test_simulated_mean_without_a_typical_value_is_the_midpoint_labelled_as_such():
    # when
    (mean,) = simulated_preview(
        schema=survey({}), definition=PURE, queries=[{"kind": "mean", "column": "wage"}]
    )

    # then
    assert mean["simulated"] == 2500
    assert mean["typical_values"] == [{"column": "wage", "value": 2500, "basis": MIDPOINT_BASIS}]
    assert MIDPOINT_BASIS == "midpoint of the bounds"


def test_a_vector_sum_labels_each_column_and_a_group_restriction_keeps_the_label():
    # given
    schema = survey({"typical": 2100})
    schema["columns"]["hours"] = {"kind": "numeric", "lower": 0, "upper": 80}

    # when
    vector, restricted = simulated_preview(
        schema=schema,
        definition=PURE,
        queries=[
            {"kind": "sum", "columns": ["wage", "hours"]},
            {"kind": "mean", "column": "wage", "where": {"column": "region", "in": ["north"]}},
        ],
    )

    # then
    assert vector["simulated"] == {"wage": 2100 * 1000, "hours": 40 * 1000}
    assert vector["typical_values"] == [
        {"column": "wage", "value": 2100, "basis": TYPICAL_BASIS},
        {"column": "hours", "value": 40, "basis": MIDPOINT_BASIS},
    ]
    assert restricted["simulated"] == 2100
    assert restricted["typical_values"] == [
        {"column": "wage", "value": 2100, "basis": TYPICAL_BASIS}
    ]


def test_statistics_that_use_no_single_value_carry_no_label():
    # when
    count, histogram = simulated_preview(
        schema=survey({"typical": 2100}),
        definition=PURE,
        queries=[{"kind": "count"}, {"kind": "histogram", "column": "region"}],
    )

    # then
    assert "typical_values" not in count
    assert "typical_values" not in histogram


def test_a_typical_value_changes_no_sensitivity_noise_or_accuracy():
    # given
    queries = [{"kind": "mean", "column": "wage"}, {"kind": "sum", "column": "wage"}]

    # when
    with_typical = preview(schema=survey({"typical": 10}), definition=PURE, queries=queries)
    without = preview(schema=survey({}), definition=PURE, queries=queries)

    # then
    assert with_typical == without


NUMBERS = st.floats(min_value=-1e15, max_value=1e15, allow_nan=False)


# Catches: a typical value outside the bounds accepted (a preview off the declared range), or one
# inside them refused or changed on the way through the JSON shape.
@settings(max_examples=300, deadline=None)
@given(bounds=st.lists(NUMBERS, min_size=2, max_size=2, unique=True).map(sorted), typical=NUMBERS)
def test_any_typical_value_is_kept_exactly_within_the_bounds_and_refused_outside(bounds, typical):
    # given
    lower, upper = bounds
    spec = {"columns": {"wage": {"kind": "numeric", "lower": lower, "upper": upper}}}
    spec["columns"]["wage"]["typical"] = typical

    # when, then: refused exactly when outside the bounds, naming the field
    if not lower <= typical <= upper:
        with pytest.raises(EngineValidationError) as refused:
            schema_from_dict(spec)
        assert refused.value.errors == {
            "columns.wage.typical": ["the typical value must lie within the bounds"]
        }
        return
    schema = schema_from_dict(spec)
    assert schema.to_dict()["columns"]["wage"]["typical"] == typical
    assert schema_from_dict(schema.to_dict()) == schema
