"""Every version is also published as Parquet: the CSV's rows and fields, typed (numbers as
numbers, missing values as nulls, no text escaped), listed in `files` and verifiable by hash."""

import csv
import hashlib
import io

import pyarrow.parquet as pq

from releases.services.runs import csv_cell, csv_rounded, release_parquet, release_rows
from tests.conftest import publish_through_api

QUERIES = [
    {"kind": "count"},
    {"kind": "histogram", "column": "sex"},
    {"kind": "sum", "column": "age"},
    {"kind": "kmeans", "columns": ["age", "visits"], "k": 2, "iterations": 2},
]


def test_the_parquet_file_holds_the_csvs_rows_typed(
    curator_client, anonymous_client, dataset, django_capture_on_commit_callbacks
):
    body = {
        "dataset": dataset.pk,
        "title": "Clinic",
        "definition": {"kind": "pure_dp", "epsilon": 0.8},
        "queries": QUERIES,
    }
    release = publish_through_api(curator_client, django_capture_on_commit_callbacks, body)
    base = f"/api/v1/catalog/{release.series.slug}/versions/1/"
    files = {f["format"]: f for f in anonymous_client.get(base).json()["files"]}

    download = anonymous_client.get(base + "files/parquet/")
    content = b"".join(download)
    table = pq.read_table(io.BytesIO(content))
    csv_rows = list(
        csv.DictReader(io.StringIO(b"".join(anonymous_client.get(base + "files/csv/")).decode()))
    )

    assert download["Content-Type"] == "application/vnd.apache.parquet"
    assert hashlib.sha256(content).hexdigest() == files["parquet"]["sha256"]
    assert table.column_names == list(csv_rows[0])
    assert table.num_rows == len(csv_rows)
    assert str(table.schema.field("value").type) == "double"
    assert str(table.schema.field("epsilon").type) == "double"
    assert str(table.schema.field("statistic").type) == "int64"
    assert str(table.schema.field("category").type) == "string"
    for parquet_row, csv_row in zip(table.to_pylist(), csv_rows, strict=True):
        # The CSV writes numbers as people read them (csv_rounded); Parquet keeps every digit,
        # so the CSV's cells are exactly the Parquet row's numbers rounded that way.
        rounded = csv_rounded(parquet_row, table.column_names)
        for field, text in csv_row.items():
            value = parquet_row[field]
            if value is None:
                assert text == "", field
            elif isinstance(value, float):
                assert text == str(csv_cell(rounded[field])), field
            else:
                assert text in (str(value), "'" + str(value)), field  # the CSV escapes formulas


def test_text_that_looks_like_a_formula_is_not_escaped_in_parquet():
    statistic = {
        "kind": "histogram",
        "column": "=cmd",
        "value": {"-1": 3, "'x": 4},
        "ci95": {"-1": [1, 5], "'x": [2, 6]},
        "mechanism": "geometric",
        "epsilon": 1.0,
        "delta": 0.0,
        "sensitivity": 1,
        "noise_scale": 1.0,
        "rule": None,
    }

    rows = pq.read_table(io.BytesIO(release_parquet([statistic]))).to_pylist()

    assert [r["category"] for r in rows] == ["-1", "'x"]
    assert {r["column"] for r in rows} == {"=cmd"}
    assert rows[0]["rule"] is None
    assert release_rows([statistic])[0][:3] == ["statistic", "kind", "column"]
