"""The ``marginal`` kind: a 2-way table whose totals agree with its cells, no negative count, the
histogram's sensitivity under every definition, and bad specs named."""

import json

import pandas as pd
import pytest

from privacy_engine import EngineValidationError, plan_release, run_queries

SCHEMA = {
    "columns": {
        "sex": {"kind": "categorical", "categories": ["F", "M"], "other": "other"},
        "region": {"kind": "categorical", "categories": ["north", "south"]},
        "age": {"kind": "numeric", "lower": 0, "upper": 100},
    },
    "declared_size": 100,
}
FRAME = pd.DataFrame(
    {
        "sex": ["F", "M", "F", "X", "", "M", "F"],
        "region": ["north", "south", "south", "north", "north", "east", "north"],
        "age": ["1"] * 7,
    }
)
TABLE = {"kind": "marginal", "columns": ["sex", "region"]}


class NoNoise:
    def sample(self, measurement, value):
        return value


class Minus:
    """Noise of −3 on every cell: some published counts would be negative."""

    def sample(self, measurement, value):
        return [v - 3 for v in value]


def cells(value: dict) -> dict[tuple, int]:
    return {tuple(json.loads(label)): count for label, count in value.items()}


def test_exact_cells_and_totals_follow_the_columns_rules():
    # when: no noise
    result = run_queries(
        FRAME,
        schema=SCHEMA,
        definition={"kind": "pure_dp", "epsilon": 1.0},
        queries=[TABLE],
        noise=NoNoise(),
    )

    # then: "X" goes to other, a missing sex and the region "east" (no other bucket) are dropped
    published = cells(result.statistics[0].value)
    assert {k: v for k, v in published.items() if None not in k} == {
        ("F", "north"): 2,
        ("F", "south"): 1,
        ("M", "north"): 0,
        ("M", "south"): 1,
        ("other", "north"): 1,
        ("other", "south"): 0,
    }
    assert published["F", None] == 3
    assert published[None, "north"] == 3
    assert published[None, None] == 5


def test_negative_cells_are_published_as_0_and_every_total_is_the_sum_of_its_cells():
    # when: noise that would make counts negative
    result = run_queries(
        FRAME,
        schema=SCHEMA,
        definition={"kind": "pure_dp", "epsilon": 1.0},
        queries=[TABLE],
        noise=Minus(),
    )

    # then
    statistic = result.statistics[0]
    published = cells(statistic.value)
    assert min(published.values()) == 0
    for row in ("F", "M", "other"):
        assert published[row, None] == sum(published[row, c] for c in ("north", "south"))
    for column in ("north", "south"):
        assert published[None, column] == sum(published[r, column] for r in ("F", "M", "other"))
    assert published[None, None] == sum(v for k, v in published.items() if None not in k)
    low, high = statistic.ci95[json.dumps([None, None])]
    assert low <= published[None, None] <= high


@pytest.mark.parametrize(
    ("definition", "schema", "sensitivity"),
    [
        ({"kind": "pure_dp", "epsilon": 1.0}, SCHEMA, 1),
        ({"kind": "approx_dp", "epsilon": 1.0, "delta": 1e-6}, SCHEMA, 1),
        ({"kind": "blowfish", "epsilon": 1.0, "policy": {"graph": "full_domain"}}, SCHEMA, 2),
        (
            {"kind": "pure_dp", "epsilon": 1.0},
            {
                **SCHEMA,
                "columns": {**SCHEMA["columns"], "id": {"kind": "identifier"}},
                "person_key": "id",
                "max_rows_per_person": 3,
            },
            3,
        ),
    ],
)
def test_a_table_has_the_sensitivity_of_a_histogram(definition, schema, sensitivity):
    plan = plan_release(schema=schema, definition=definition, queries=[TABLE])

    assert plan.statistics[0].sensitivity == sensitivity


@pytest.mark.parametrize(
    ("columns", "field", "message"),
    [
        (["sex"], "columns", "name two different columns"),
        (["sex", "sex"], "columns", "name two different columns"),
        ("sex", "columns", "name two different columns"),
        (["sex", "age"], "bins.age", "give bin edges for the numeric column 'age'"),
        (["sex", "nope"], "columns", "'nope' is neither a categorical nor a numeric column"),
    ],
)
def test_a_bad_table_is_refused_naming_its_columns(columns, field, message):
    with pytest.raises(EngineValidationError) as refused:
        plan_release(
            schema=SCHEMA,
            definition={"kind": "pure_dp", "epsilon": 1.0},
            queries=[{"kind": "marginal", "columns": columns}],
        )

    assert any(message in m for m in refused.value.errors[f"queries.0.{field}"])


@pytest.mark.parametrize(
    ("bins", "field", "message"),
    [
        ({"age": [0, 50, 100]}, None, None),
        ({"sex": [0, 1]}, "bins.sex", "'sex' is categorical: no bins"),
        (
            {"age": [0, 150]},
            "bins.age",
            "the first and last edges must be the column's declared bounds",
        ),
        ({"age": [0, 50, 50, 100]}, "bins.age", "need at least two increasing edges"),
        ({"age": ["a"]}, "bins.age", "must be a list of numbers"),
        ({"other": [0, 1]}, "bins", "map a numeric column to its edges"),
        ([0, 50, 100], "bins", "map a numeric column to its edges"),
        ({}, "bins", "map a numeric column to its edges"),
    ],
)
def test_a_numeric_column_is_binned_by_edges_that_are_checked(bins, field, message):
    # Each column's edges are refused under their own field, the mapping as a whole under bins.
    query = {"kind": "marginal", "columns": ["sex", "age"], "bins": bins}
    if message is None:
        (planned,) = plan_release(
            schema=SCHEMA, definition={"kind": "pure_dp", "epsilon": 1.0}, queries=[query]
        ).statistics
        assert planned.query.bins == (None, (0.0, 50.0, 100.0))
        return
    with pytest.raises(EngineValidationError) as refused:
        plan_release(schema=SCHEMA, definition={"kind": "pure_dp", "epsilon": 1.0}, queries=[query])
    assert any(message in m for m in refused.value.errors[f"queries.0.{field}"])


def test_binned_cells_follow_the_numeric_columns_rules():
    # given ages below, on and above the edges, beyond the bounds, and missing
    frame = pd.DataFrame(
        {
            "sex": ["F", "F", "M", "M", "F", "M", "F"],
            "region": ["north"] * 7,
            "age": ["-5", "50", "49.9", "100", "250", "", "abc"],
        }
    )
    query = {"kind": "marginal", "columns": ["age", "sex"], "bins": {"age": [0, 50, 100]}}

    # when: no noise
    result = run_queries(
        frame,
        schema=SCHEMA,
        definition={"kind": "pure_dp", "epsilon": 1.0},
        queries=[query],
        noise=NoNoise(),
    )

    # then: clamped into [0, 100], the upper bound in the last bin, missing values dropped
    published = cells(result.statistics[0].value)
    assert {k: v for k, v in published.items() if None not in k} == {
        ("[0, 50)", "F"): 1,
        ("[0, 50)", "M"): 1,
        ("[0, 50)", "other"): 0,
        ("[50, 100]", "F"): 2,
        ("[50, 100]", "M"): 1,
        ("[50, 100]", "other"): 0,
    }
