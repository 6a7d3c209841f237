"""Typed columns (issue 8, point 2): a release read from the stored columnar table gives exactly the
answers the string-based engine gave, reads only the columns its statistics use, and says how long
each step took."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privacy_engine import EngineValidationError, engines
from privacy_engine.aggregates import CleanedNumbers
from privacy_engine.columnar import TypedTable, write_frame
from privacy_engine.exact_sums import grid_sum, sum_grid
from privacy_engine.queries import Count, Histogram, Sum
from privacy_engine.release import (
    plan_release,
    release_statistic,
    release_stored_table,
    run_queries,
)
from privacy_engine.schema import CategoricalColumn


class NoNoise:
    """Returns each exact answer unchanged, so answers can be compared exactly."""

    def sample(self, measurement, value):
        return value


# --- the oracle: the string-based reading code as it was before typed columns ------------------


def oracle_clean_numeric(frame, name, column):
    values = pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    missing = np.isnan(values)
    values = np.where(missing, column.fill, values) if column.fill is not None else values[~missing]
    return np.clip(values, column.lower, column.upper)


def oracle_categorical_counts(frame, name, column):
    series = frame[name]
    missing = series.isna() | (series.astype(str).str.strip() == "")
    labels = series.astype(str).str.strip()
    labels = labels.where(~missing, column.fill) if column.fill is not None else labels[~missing]
    if column.other is not None:
        labels = labels.where(labels.isin(column.categories), column.other)
    counts = labels.value_counts()
    return [int(counts.get(bucket, 0)) for bucket in column.buckets]


def oracle_bound(frame, schema):
    if schema.person_key is None:
        return frame
    keys = frame[schema.person_key].astype(str).str.strip()
    kept = frame[keys != ""]
    return kept.groupby(keys[keys != ""], sort=False).head(schema.max_rows_per_person)


def oracle_exact(query, frame, schema):
    def column_sum(name):
        column = schema.column(name)
        return grid_sum(oracle_clean_numeric(frame, name, column), sum_grid(column.max_magnitude))

    if isinstance(query, Count):
        return len(frame)
    if isinstance(query, Sum) and query.columns:
        return [column_sum(name) for name in query.columns]
    column = schema.column(query.column)
    if isinstance(query, Histogram):
        if isinstance(column, CategoricalColumn):
            return oracle_categorical_counts(frame, query.column, column)
        counts, _ = np.histogram(
            oracle_clean_numeric(frame, query.column, column), bins=np.asarray(query.bins)
        )
        return [int(c) for c in counts]
    if isinstance(query, Sum):
        return column_sum(query.column)
    return column_sum(query.column), len(oracle_clean_numeric(frame, query.column, column))


def oracle_release(frame, *, schema, definition, queries):
    plan = plan_release(schema=schema, definition=definition, queries=queries, noise=NoNoise())
    bounded = oracle_bound(frame, plan.schema)
    return [
        release_statistic(planned, oracle_exact(planned.query, bounded, plan.schema), plan.schema)
        for planned in plan.statistics
    ]


# --- generated tables --------------------------------------------------------------------------

RAW_VALUES = st.sampled_from(
    ["", " ", "0", "1", " 2 ", "3.5", "-4", "7", "99", "1e400", "-inf", "nan", "x", "F", " M",
     "M ", "f", "other", "1_0", "\u00a0F\u00a0", "\t", "5e-324"]
)  # fmt: skip


@st.composite
def tables(draw):
    rows = draw(st.integers(min_value=0, max_value=25))
    column = st.lists(RAW_VALUES, min_size=rows, max_size=rows)
    frame = pd.DataFrame(
        {
            "key": draw(st.lists(st.sampled_from(["a", "b", " c", "", "d "]), min_size=rows,
                                 max_size=rows)),
            "n": draw(column),
            "m": draw(column),
            "cat": draw(column),
        },
        dtype=str,
    )  # fmt: skip
    fill_n = draw(st.sampled_from([None, 0.0, 5.0]))
    numeric_n = {"kind": "numeric", "lower": -1, "upper": 10}
    if fill_n is not None:
        numeric_n["fill"] = fill_n
    categorical = {"kind": "categorical", "categories": ["F", "M"]}
    if draw(st.booleans()):
        categorical["other"] = "other"
    fill_cat = draw(st.sampled_from([None, "F", "other"]))
    if fill_cat is not None and (fill_cat == "F" or "other" in categorical):
        categorical["fill"] = fill_cat
    schema = {
        "columns": {
            "n": numeric_n,
            "m": {"kind": "numeric", "lower": 0, "upper": 100},
            "cat": categorical,
        },
        "declared_size": 20,
    }
    if draw(st.booleans()):
        schema["person_key"] = "key"
        schema["max_rows_per_person"] = draw(st.integers(min_value=1, max_value=3))
    return frame, schema


QUERIES = [
    {"kind": "count"},
    {"kind": "sum", "column": "n"},
    {"kind": "sum", "columns": ["n", "m"]},
    {"kind": "mean", "column": "m"},
    {"kind": "histogram", "column": "cat"},
    {"kind": "histogram", "column": "n", "bins": [-1, 0, 2.5, 10]},
]


@settings(max_examples=150, deadline=None)
@given(tables())
def test_stored_table_and_frame_give_the_string_engines_exact_answers(table):
    # given
    frame, schema = table
    definition = {"kind": "pure_dp", "epsilon": 1.0}
    expected = [
        (s.value, s.ci95)
        for s in oracle_release(frame, schema=schema, definition=definition, queries=QUERIES)
    ]

    # when
    from_frame = run_queries(
        frame, schema=schema, definition=definition, queries=QUERIES, noise=NoNoise()
    )
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "t.parquet")
        write_frame(frame, path)
        stored = release_stored_table(
            path, schema=schema, definition=definition, queries=QUERIES, noise=NoNoise()
        )

    # then the same published values and intervals as the string engine, and the same
    # statistics (rules, mechanisms) whichever way the table was read
    assert [(s.value, s.ci95) for s in from_frame.statistics] == expected
    assert [s.to_dict() for s in stored.statistics] == [s.to_dict() for s in from_frame.statistics]


def test_a_broken_person_bound_is_caught_by_the_oracle(monkeypatch):
    # given a table where the key bounds contributions, and an engine that forgets to
    frame = pd.DataFrame({"key": ["a", "a", "b"], "n": ["1", "2", "3"], "m": ["1"] * 3,
                          "cat": ["F"] * 3}, dtype=str)  # fmt: skip
    schema = {"columns": {"n": {"kind": "numeric", "lower": 0, "upper": 10}},
              "person_key": "key", "max_rows_per_person": 1, "declared_size": 3}  # fmt: skip
    definition = {"kind": "pure_dp", "epsilon": 1.0}
    monkeypatch.setattr(engines, "bound_contributions", lambda table, key, per_person: table)

    # when
    broken = run_queries(
        frame, schema=schema, definition=definition, queries=[{"kind": "count"}], noise=NoNoise()
    )
    expected = oracle_release(frame, schema=schema, definition=definition,
                              queries=[{"kind": "count"}])  # fmt: skip

    # then the comparison above would fail: 3 rows counted where 2 persons are allowed
    assert broken.statistics[0].value == 3
    assert expected[0].value == 2


def test_a_release_reads_only_the_columns_its_statistics_use(tmp_path, monkeypatch):
    # given a stored table of four columns
    frame = pd.DataFrame({"key": ["a"], "n": ["1"], "m": ["2"], "cat": ["F"]}, dtype=str)
    path = tmp_path / "t.parquet"
    write_frame(frame, path)
    read: list[list[str]] = []
    real = pq.read_table

    def recording(source, *args, columns=None, **kwargs):
        read.append(list(columns))
        return real(source, *args, columns=columns, **kwargs)

    monkeypatch.setattr(pq, "read_table", recording)
    schema = {"columns": {"m": {"kind": "numeric", "lower": 0, "upper": 10},
                          "cat": {"kind": "categorical", "categories": ["F"]}}}  # fmt: skip

    # when
    release_stored_table(
        path,
        schema=schema,
        definition={"kind": "pure_dp", "epsilon": 1.0},
        queries=[{"kind": "sum", "column": "m"}],
    )

    # then only m's numbers (column 2 of the upload) were read: no text, no other column
    assert read == [["number:2"]]


def test_a_release_says_how_long_reading_computing_and_noise_took(tmp_path):
    # given
    frame = pd.DataFrame({"n": [str(i % 10) for i in range(1000)]}, dtype=str)
    path = tmp_path / "t.parquet"
    write_frame(frame, path)

    # when
    result = release_stored_table(
        path,
        schema={"columns": {"n": {"kind": "numeric", "lower": 0, "upper": 10}}},
        definition={"kind": "pure_dp", "epsilon": 1.0},
        queries=[{"kind": "sum", "column": "n"}, {"kind": "count"}],
    )

    # then
    assert set(result.timings) == {"read_s", "compute_s", "noise_s"}
    assert all(seconds >= 0 for seconds in result.timings.values())


def test_a_table_without_a_declared_column_is_refused_naming_columns(tmp_path):
    # given
    path = tmp_path / "t.parquet"
    write_frame(pd.DataFrame({"n": ["1"]}, dtype=str), path)

    # when / then
    with pytest.raises(EngineValidationError) as raised:
        release_stored_table(
            path,
            schema={"columns": {"m": {"kind": "numeric", "lower": 0, "upper": 1}}},
            definition={"kind": "pure_dp", "epsilon": 1.0},
            queries=[{"kind": "sum", "column": "m"}],
        )
    assert raised.value.errors == {"columns": ["the table lacks declared columns"]}


def test_numeric_column_cleaning_matches_the_declared_rules():
    # given
    request = CleanedNumbers(column="n", lower=0, upper=10, fill=5)
    table = TypedTable(row_count=4, numbers={"n": np.array([np.nan, -3.0, 4.0, np.inf])}, labels={})

    # when
    cleaned = request.cleaned(table)

    # then
    assert cleaned.tolist() == [5.0, 0.0, 4.0, 10.0]


NUMBERISH = st.text(
    alphabet=st.sampled_from(
        [*list(" \t\n\x0b\x0c\r\xa0+-.,_0123456789eEiInNfFaAtyxP１٣"), "\u2003"]
    ),
    max_size=12,
)


@settings(max_examples=1500, deadline=None)
@given(
    st.lists(st.one_of(NUMBERISH, st.text(max_size=8)), min_size=1, max_size=20),
    st.sampled_from([[], ["-12.5e3"] * 64, ["", "7", "0.25", ""] * 16]),
)
def test_numbers_are_read_exactly_as_pandas_to_numeric_reads_them(tail, head):
    # given: after a head of plain decimals (some missing), the whole column is first read by one
    # cast, then tested for plainness first; after none, for a number's start first
    import pyarrow as pa

    from privacy_engine.columnar import read_numbers

    raw = head + tail

    expected = pd.to_numeric(pd.Series(raw, dtype=object), errors="coerce").to_numpy(
        dtype=float, na_value=np.nan
    )

    # when
    numbers = read_numbers(pa.array(raw, type=pa.string()))

    # then
    np.testing.assert_array_equal(numbers, expected)


@pytest.mark.parametrize("head", [["1.5"] * 64, ["", "7"] * 32])
def test_a_signed_decimal_after_plain_ones_is_read_as_pandas_reads_it(head):
    # given: pandas reads "+…" with a parser that is not correctly rounded; Arrow's cast is
    import pyarrow as pa

    from privacy_engine.columnar import read_numbers

    raw = [*head, "+8.7901668940366315"]
    expected = pd.to_numeric(pd.Series(raw, dtype=object), errors="coerce").to_numpy(
        dtype=float, na_value=np.nan
    )

    # when
    numbers = read_numbers(pa.array(raw, type=pa.string()))

    # then
    np.testing.assert_array_equal(numbers, expected)


def test_a_number_filter_that_drops_numbers_is_caught(monkeypatch):
    # given a filter too strict for "+.5" (a deliberately broken one)
    import pyarrow as pa

    from privacy_engine import columnar

    monkeypatch.setattr(columnar, "NUMBER_START", r"^[0-9]")

    # when / then the comparison above would fail
    assert np.isnan(columnar.read_numbers(pa.array(["+.5"]))[0])
    assert pd.to_numeric(pd.Series(["+.5"], dtype=object), errors="coerce")[0] == 0.5


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.from_regex(r"-?([0-9]{1,25}\.?[0-9]{0,25}|\.[0-9]{1,25})([eE][+-]?[0-9]{1,3})?",
                      fullmatch=True),
        min_size=1, max_size=20,
    )
)  # fmt: skip
def test_plain_decimals_read_by_arrow_are_the_correctly_rounded_doubles(raw):
    # given
    import pyarrow as pa

    from privacy_engine.columnar import read_numbers

    # when
    numbers = read_numbers(pa.array(raw, type=pa.string()))

    # then Python's float() (correctly rounded) and pandas agree with it
    np.testing.assert_array_equal(numbers, [float(value) for value in raw])
    np.testing.assert_array_equal(
        numbers, pd.to_numeric(pd.Series(raw, dtype=object), errors="coerce").to_numpy(float)
    )


@settings(max_examples=1500, deadline=None)
@given(
    st.lists(st.one_of(NUMBERISH, st.text(max_size=8)), min_size=1, max_size=20),
    st.integers(0, 5),
    st.integers(0, 5),
)
def test_number_starts_read_from_first_bytes_are_the_pattern_s_matches(raw, before, after):
    # given the values in the middle of a longer array (a slice: its offsets do not start at 0)
    import pyarrow as pa
    import pyarrow.compute as pc

    from privacy_engine.columnar import NUMBER_START, _number_starts, read_numbers

    whole = pa.array(["7"] * before + raw + ["x"] * after, type=pa.string())
    strings = whole.slice(before, len(raw))

    # when
    starts = _number_starts(strings)
    numbers = read_numbers(strings)

    # then
    expected = pc.match_substring_regex(strings, NUMBER_START).to_numpy(zero_copy_only=False)
    np.testing.assert_array_equal(starts, expected)
    np.testing.assert_array_equal(
        numbers,
        pd.to_numeric(pd.Series(raw, dtype=object), errors="coerce").to_numpy(
            dtype=float, na_value=np.nan
        ),
    )


@pytest.mark.parametrize("batches", [1, 2])
def test_a_write_failing_in_the_background_is_raised_and_leaves_no_file(
    tmp_path, monkeypatch, batches
):
    # given a writer whose Parquet writes fail (in its background thread)
    from privacy_engine.columnar import ColumnarWriter

    path = tmp_path / "t.parquet"

    def full(*args, **kwargs):
        raise OSError("disk full")

    def write() -> None:
        with ColumnarWriter(path, ["a"]) as writer:
            monkeypatch.setattr(writer._writer, "write_batch", full)
            for _ in range(batches):
                writer.write([["1", "2"]])

    # when / then the failure is raised (by the next write, or on closing), and no file is left
    with pytest.raises(OSError, match="disk full"):
        write()
    assert not path.exists()


def test_an_error_while_writing_removes_the_file_and_is_the_one_raised(tmp_path):
    # given
    from privacy_engine.columnar import ColumnarWriter

    path = tmp_path / "t.parquet"

    def write() -> None:
        with ColumnarWriter(path, ["a"]) as writer:
            writer.write([["1", "2"]])
            raise KeyError("stop")

    # when / then
    with pytest.raises(KeyError, match="stop"):
        write()
    assert not path.exists()
