"""Category labels: every declared label can hold records other than missing ones."""

import pytest

from privacy_engine import EngineValidationError, schema_from_dict


@pytest.mark.parametrize(
    ("column", "field"),
    [
        ({"kind": "categorical", "categories": ["a", ""]}, "categories"),
        ({"kind": "categorical", "categories": ["a"], "other": ""}, "other"),
    ],
)
def test_an_empty_category_or_other_label_is_refused_naming_the_field(column, field):
    # (found by review: "" only ever counted missing values, or published an unnamed cell)
    with pytest.raises(EngineValidationError) as raised:
        schema_from_dict({"columns": {"c": column}})
    assert list(raised.value.errors) == [f"columns.c.{field}"]


def test_a_vector_sum_built_in_python_with_a_repeated_column_is_refused():
    # (found by review: Sum(columns=("a", "a")) planned with the sensitivity of one column)
    from privacy_engine import Sum, plan_release

    with pytest.raises(EngineValidationError) as raised:
        plan_release(
            schema={"columns": {"a": {"kind": "numeric", "lower": 0, "upper": 100}}},
            definition={"kind": "pure_dp", "epsilon": 1.0},
            queries=[Sum(columns=("a", "a"))],
        )
    assert "queries.0.columns" in raised.value.errors


@pytest.mark.parametrize(
    ("column", "field"),
    [
        ({"kind": "categorical", "categories": ["F", "x" * 201]}, "categories"),
        ({"kind": "categorical", "categories": ["F", "a\nb"]}, "categories"),
        ({"kind": "categorical", "categories": ["F"], "other": "\u202eother"}, "other"),
    ],
)
def test_a_label_too_long_or_with_control_characters_is_refused(column, field):
    # (found by review: one 1.9 MB category made a 285 MB public document)
    with pytest.raises(EngineValidationError) as raised:
        schema_from_dict({"columns": {"c": column}})
    assert list(raised.value.errors) == [f"columns.c.{field}"]
