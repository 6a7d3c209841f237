"""Up to c rows per person: contributions bounded by a person key, sensitivities times c."""

import pandas as pd
import pytest

from privacy_engine import EngineValidationError, preview, run_queries, sensitivity

PURE_DP = {"kind": "pure_dp", "epsilon": 1.0}
SCHEMA = {
    "columns": {
        "visits": {"kind": "numeric", "lower": 0, "upper": 10},
        "ward": {"kind": "categorical", "categories": ["A", "B"]},
        "patient": {"kind": "identifier"},
    },
    "person_key": "patient",
    "max_rows_per_person": 3,
}


class ZeroNoise:
    def sample(self, measurement, value):
        return value


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"kind": "count"}, 3),
        ({"kind": "histogram", "column": "ward"}, 3),
        ({"kind": "sum", "column": "visits"}, 30.0),
    ],
)
def test_sensitivities_are_multiplied_by_the_rows_one_person_may_have(query, expected):
    # when
    value = sensitivity(query=query, schema=SCHEMA, definition=PURE_DP)

    # then
    assert value == expected


def test_without_a_person_key_one_row_is_the_unit():
    # given
    schema = {key: value for key, value in SCHEMA.items() if key != "person_key"}

    # when
    value = sensitivity(query={"kind": "count"}, schema=schema, definition=PURE_DP)

    # then
    assert value == 1


def test_rows_beyond_c_per_person_and_rows_without_a_key_are_dropped():
    # given patient a has 4 rows, b has 1, and one row has no key
    frame = pd.DataFrame(
        {
            "patient": ["a", "a", "a", "a", "b", ""],
            "visits": ["1", "2", "3", "4", "5", "6"],
            "ward": ["A", "A", "B", "B", "A", "B"],
        }
    )

    # when
    result = run_queries(
        frame,
        schema=SCHEMA,
        definition=PURE_DP,
        noise=ZeroNoise(),
        queries=[
            {"kind": "count"},
            {"kind": "sum", "column": "visits"},
            {"kind": "histogram", "column": "ward"},
        ],
    )

    # then a's first three rows and b's row remain
    count, total, wards = result.statistics
    assert count.value == 4
    assert total.value == 1 + 2 + 3 + 5
    assert wards.value == {"A": 3, "B": 1}
    assert count.rule.startswith("at most 3 rows per patient kept")


def test_noise_scale_grows_with_c():
    # when
    one = preview(
        schema={**SCHEMA, "max_rows_per_person": 1},
        definition=PURE_DP,
        queries=[{"kind": "sum", "column": "visits"}],
    )[0]
    three = preview(
        schema=SCHEMA, definition=PURE_DP, queries=[{"kind": "sum", "column": "visits"}]
    )[0]

    # then
    assert three["noise_scale"] == pytest.approx(3 * one["noise_scale"])


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"person_key": "visits"}, "person_key"),
        ({"max_rows_per_person": 0}, "max_rows_per_person"),
    ],
)
def test_bad_unit_of_protection_is_refused_naming_the_field(change, field):
    # when
    with pytest.raises(EngineValidationError) as caught:
        preview(schema={**SCHEMA, **change}, definition=PURE_DP, queries=[{"kind": "count"}])

    # then
    assert list(caught.value.errors) == [f"schema.{field}"]


def test_blowfish_is_refused_when_a_person_may_have_several_rows():
    # when
    with pytest.raises(EngineValidationError) as caught:
        preview(
            schema=SCHEMA,
            queries=[{"kind": "count"}],
            definition={"kind": "blowfish", "epsilon": 1, "policy": {"graph": "full_domain"}},
        )

    # then
    assert list(caught.value.errors) == ["definition.kind"]
