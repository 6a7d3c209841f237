"""Consistency across published tables (privacy_engine/consistency.py, issue 9 point 2): every
published table agrees with the published totals and with the release's other tables and
histograms of its columns, no count is negative, and the widened intervals keep their coverage."""

import json

import numpy as np
import pandas as pd
import pytest
from binomial_bounds import clopper_pearson_lower, clopper_pearson_upper
from hypothesis import given, settings
from hypothesis import strategies as st

from privacy_engine import run_queries
from privacy_engine.consistency import NoisyTable, consensus, make_consistent, rake

# Every record lands in a bucket of every column (fills and other buckets), so a table's totals
# over a column and that column's histogram count the same records.
SCHEMA = {
    "columns": {
        "sex": {"kind": "categorical", "categories": ["F", "M"], "other": "X", "fill": "F"},
        "region": {"kind": "categorical", "categories": ["n", "s", "e"], "other": "o", "fill": "n"},
        "age": {"kind": "numeric", "lower": 0, "upper": 100, "fill": 40},
    }
}
ROWS = 240
FRAME = pd.DataFrame(
    {
        "sex": ["F", "M", "F"] * (ROWS // 3),
        "region": ["n", "s", "e", "n"] * (ROWS // 4),
        "age": [str(i % 100) for i in range(ROWS)],
    }
)
QUERIES = [
    {"kind": "marginal", "columns": ["sex", "region"]},
    {"kind": "marginal", "columns": ["sex", "age"], "bins": {"age": [0, 30, 100]}},
    {"kind": "histogram", "column": "sex"},
    {"kind": "histogram", "column": "age", "bins": [0, 30, 100]},
    {"kind": "count"},
]
PURE = {"kind": "pure_dp", "epsilon": 0.5}


def labelled(value: dict) -> dict:
    return {tuple(json.loads(k)): v for k, v in value.items()}


def exact_numbers() -> dict[tuple[int, object], float]:
    """Every published number's true value, by (statistic, label)."""

    class NoNoise:
        def sample(self, measurement, value):
            return value

    result = run_queries(FRAME, schema=SCHEMA, definition=PURE, queries=QUERIES, noise=NoNoise())
    return {
        (i, label): float(v)
        for i, s in enumerate(result.statistics[:4])
        for label, v in s.value.items()
    }


def test_the_release_agrees_on_every_shared_total_and_has_no_negative_count():
    # when: a release with real noise at a small ε
    result = run_queries(FRAME, schema=SCHEMA, definition=PURE, queries=QUERIES)
    by_region, by_age, sex, age = (s.value for s in result.statistics[:4])
    by_region, by_age = labelled(by_region), labelled(by_age)

    # then the sex totals of both tables and the sex histogram are one
    for category in ("F", "M", "X"):
        assert by_region[category, None] == pytest.approx(sex[category], abs=1e-6)
        assert by_age[category, None] == pytest.approx(sex[category], abs=1e-6)
    # the age bins of the table and the age histogram too, and both grand totals
    for band in ("[0, 30)", "[30, 100]"):
        assert by_age[None, band] == pytest.approx(age[band], abs=1e-6)
    assert by_region[None, None] == pytest.approx(by_age[None, None], abs=1e-6)
    # no published count is negative, and every total is the sum of its cells
    for value in (by_region, by_age):
        assert min(value.values()) >= 0
        assert value[None, None] == pytest.approx(
            sum(v for k, v in value.items() if None not in k), abs=1e-9
        )
    assert min(sex.values()) >= 0
    assert "made consistent with statistics 1, 2, 3, 4" in result.statistics[2].rule
    # a statistic sharing nothing keeps its own
    assert isinstance(result.statistics[4].value, int)


def test_a_histogram_sharing_no_column_is_left_as_it_was():
    result = run_queries(
        FRAME,
        schema=SCHEMA,
        definition=PURE,
        queries=[{"kind": "marginal", "columns": ["sex", "region"]}, QUERIES[3]],
    )

    assert all(isinstance(v, int) for v in result.statistics[1].value.values())
    assert "made consistent" not in result.statistics[1].rule


def table(cells, variables=("a", "b"), scale=2.0) -> NoisyTable:
    return NoisyTable(
        variables=variables,
        cells=np.asarray(cells),
        noise="geometric",
        scale=scale,
        publish=lambda c: (c, None),
    )


def test_the_consensus_weights_each_table_by_its_noise():
    # a 1-way table with little noise and one with much: the consensus leans to the first
    precise = table([100, 0], variables=("a",), scale=1.0)
    noisy = table([0, 100], variables=("a",), scale=10.0)

    grand, margins = consensus([precise, noisy])

    assert margins["a"][0] > 90
    assert grand == pytest.approx(100)


def test_raking_meets_margins_that_zero_cells_would_block():
    # the first row's noisy cells are all below 0, yet its total must be 10
    raked = rake(np.array([[-3, -1], [5, 5]]), np.array([10.0, 10.0]), np.array([8.0, 12.0]))

    np.testing.assert_allclose(raked.sum(axis=1), [10, 10], atol=1e-6)
    np.testing.assert_allclose(raked.sum(axis=0), [8, 12], atol=1e-6)
    assert raked.min() >= 0


@settings(max_examples=150, deadline=None)
@given(
    first=st.lists(st.integers(-40, 60), min_size=6, max_size=6),
    second=st.lists(st.integers(-40, 60), min_size=9, max_size=9),
    histogram=st.lists(st.integers(-40, 60), min_size=2, max_size=2),
)
def test_any_noisy_tables_become_consistent_and_non_negative(first, second, histogram):
    # two tables sharing the variable "a" (2 buckets), and a histogram of it
    tables = [
        table(np.reshape(first, (2, 3)), ("a", "b")),
        table(np.reshape(second, (3, 3)), ("c", "b")),
        table(histogram, ("a",), scale=1.0),
    ]

    one, two, hist = make_consistent(tables)

    assert min(one.min(), two.min(), hist.min()) >= 0
    np.testing.assert_allclose(one.sum(axis=1), hist, atol=1e-6)
    np.testing.assert_allclose(one.sum(axis=0), two.sum(axis=0), atol=1e-6)
    assert one.sum() == pytest.approx(two.sum(), abs=1e-6)


RELEASES = 150
FALSE_ALARM = 1e-6


def coverage(shrink: float) -> tuple[int, int]:
    """(numbers covered, numbers published) over RELEASES releases, intervals scaled about the
    published value by ``shrink``."""
    truth = exact_numbers()
    covered = total = 0
    for _ in range(RELEASES):
        result = run_queries(FRAME, schema=SCHEMA, definition=PURE, queries=QUERIES)
        for i, statistic in enumerate(result.statistics[:4]):
            for label, value in statistic.value.items():
                low, high = statistic.ci95[label]
                low, high = value - shrink * (value - low), value + shrink * (high - value)
                covered += low - 1e-9 <= truth[i, label] <= high + 1e-9
                total += 1
    return covered, total


@pytest.mark.statistical
def test_the_widened_intervals_cover_at_least_95_percent():
    covered, total = coverage(1.0)
    # then: the coverage is not below 95% beyond chance (per published number)
    assert clopper_pearson_upper(covered, total, FALSE_ALARM) >= 0.95


@pytest.mark.statistical
def test_negative_control_intervals_shrunk_to_a_quarter_are_caught():
    covered, total = coverage(0.25)
    assert clopper_pearson_upper(covered, total, FALSE_ALARM) < 0.95
    assert clopper_pearson_lower(covered, total, FALSE_ALARM) > 0


def test_totals_of_different_records_are_not_made_to_agree():
    # given: region drops a record it does not know (no other bucket), so the table of sex ×
    # region counts fewer records than the histogram of sex: their true totals differ
    schema = {
        "columns": {
            **SCHEMA["columns"],
            "region": {"kind": "categorical", "categories": ["n", "s"]},
        }
    }

    class NoNoise:
        def sample(self, measurement, value):
            return value

    queries = [{"kind": "marginal", "columns": ["sex", "region"]}, QUERIES[2]]

    # when: no noise, so any change would be consistency's
    table, histogram = run_queries(
        FRAME, schema=schema, definition=PURE, queries=queries, noise=NoNoise()
    ).statistics

    # then each keeps its own exact totals, and neither says it was made consistent
    rows = labelled(table.value)
    assert rows["F", None] == len(FRAME[(FRAME.sex == "F") & FRAME.region.isin(["n", "s"])])
    assert histogram.value["F"] == (FRAME.sex == "F").sum()
    assert rows["F", None] != histogram.value["F"]
    assert "made consistent" not in histogram.rule
