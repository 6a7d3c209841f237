"""Numbers as people read them: published values rounded to their interval's precision in the
CSV file and on the pages, ε and δ written short, while the JSON file and the API keep every
digit."""

import csv
import hashlib
import io
import json
import re

import pytest

from privacy_engine.presentation import (
    format_published,
    interval_halfwidth,
    published_interval,
    published_value,
)
from releases.models import ReleaseFile
from releases.services.datasets import dataset_create, dataset_schema_update
from tests.conftest import CLINIC_SCHEMA, csv_upload, publish_through_api

DELTA = 1.2755102040816327e-09
QUERIES = [
    {"kind": "count"},
    {"kind": "histogram", "column": "sex"},
    {"kind": "sum", "column": "age"},
    {"kind": "mean", "column": "age"},
]
# A float written out with more digits than anyone reads (0.30000000000000004,
# 1.2755102040816327e-09), or a fixed number of decimals padded with zeros (60000.000, 0.1000).
LONG_FLOAT = re.compile(r"\d\.\d{6,}")
PADDED = re.compile(r"\d\.\d*0(?![\d.])")


@pytest.fixture
def approx_dataset(curator):
    created = dataset_create(
        owner=curator,
        name="Clinic",
        upload=csv_upload(),
        budget_epsilon="1.0",
        budget_delta="0.00001",
    )
    return dataset_schema_update(dataset=created, user=curator, schema=CLINIC_SCHEMA)


def body(dataset_id: int) -> dict:
    return {
        "dataset": dataset_id,
        "title": "Clinic",
        "definition": {"kind": "approx_dp", "epsilon": 0.5, "delta": DELTA},
        "queries": QUERIES,
    }


@pytest.fixture
def published(curator_client, approx_dataset, django_capture_on_commit_callbacks):
    return publish_through_api(
        curator_client, django_capture_on_commit_callbacks, body(approx_dataset.pk)
    )


def file_of(release, file_format: str) -> bytes:
    record = ReleaseFile.objects.get(release=release, format=file_format)
    with record.file.open("rb") as handle:
        content = handle.read()
    # The file is the one its hash (listed in the signed metadata) was computed from.
    assert hashlib.sha256(content).hexdigest() == record.sha256
    return content


def test_a_published_csv_has_rounded_values_while_json_keeps_every_digit(published):
    # given a published version (Gaussian noise: its sums and means are floats of 17 digits)
    document = json.loads(file_of(published, "json"))
    rows = list(csv.DictReader(io.StringIO(file_of(published, "csv").decode(), newline="")))

    # then each CSV value is the JSON value rounded to its interval's precision
    expected = []
    for index, stat in enumerate(document["statistics"]):
        cells = (
            [(stat["value"][c], stat["ci95"][c]) for c in stat["value"]]
            if isinstance(stat["value"], dict)
            else [(stat["value"], stat["ci95"])]
        )
        for value, (low, high) in cells:
            halfwidth = interval_halfwidth(low, high)
            expected.append(
                {
                    "statistic": str(index),
                    "value": str(published_value(value, halfwidth=halfwidth)),
                    "ci95_low": str(published_value(low, halfwidth=halfwidth, rounding="down")),
                    "ci95_high": str(published_value(high, halfwidth=halfwidth, rounding="up")),
                    "delta": str(published_value(stat["delta"])),
                }
            )
    assert [{k: row[k] for k in expected[0]} for row in rows] == expected
    # and the JSON keeps the noisy floats whole where the CSV has far fewer digits (the upper
    # end of the sum's interval: the noisy sum plus a multiple of σ), written outwards
    total = next(s for s in document["statistics"] if s["kind"] == "sum")
    total_row = next(row for row in rows if row["kind"] == "sum")
    assert len(repr(total["ci95"][1])) >= 15
    assert len(total_row["ci95_high"]) <= len(repr(total["ci95"][1])) - 8
    assert float(total_row["ci95_high"]) >= total["ci95"][1]
    for row in rows:
        assert not LONG_FLOAT.search(row["value"] + row["ci95_low"] + row["ci95_high"])
    # and the API gives the JSON file's numbers, every digit
    assert published.answers.get(position=2).statistic["ci95"] == total["ci95"]


def test_the_version_page_shows_no_long_float_and_rounds_values_to_their_intervals(
    anonymous_client, published
):
    # when
    page = anonymous_client.get(f"/catalog/{published.series.slug}/v1/").content.decode()

    # then δ is written as a person reads it, and no number carries a float's tail
    statistics = json.loads(file_of(published, "json"))["statistics"]
    assert "δ = 1.3 × 10⁻⁹" in page
    assert "δ = 3.2 × 10⁻¹⁰" in page
    shown = re.sub(r'<code class="hash">[0-9a-f]+</code>', "", page)
    assert not LONG_FLOAT.search(shown), LONG_FLOAT.findall(shown)
    # and the sum reads at its interval's precision, the interval's ends rounded outwards
    total = next(s for s in statistics if s["kind"] == "sum")
    halfwidth = interval_halfwidth(*total["ci95"])
    low, high = published_interval(*total["ci95"])
    assert (
        f"<strong>{format_published(total['value'], halfwidth=halfwidth)}</strong> (95% interval "
        f"{low} – {high})"
    ) in page


def test_the_release_card_and_status_page_show_no_long_float(
    anonymous_client, client, curator, published
):
    # when
    card = anonymous_client.get(f"/catalog/{published.series.slug}/v1/card/").content.decode()
    client.force_login(curator)
    status = client.get(f"/releases/{published.pk}/").content.decode()

    # then
    for page in (card, status):
        shown = re.sub(r"<code[^>]*>[^<]*</code>", "", page)
        assert not LONG_FLOAT.search(shown), LONG_FLOAT.findall(shown)
    assert "<td>1.3 × 10⁻⁹</td>" in card


def test_the_preview_shows_numbers_with_sensible_precision(
    client, curator, curator_client, approx_dataset
):
    # given a draft under (ε, δ)-DP
    created = curator_client.post("/api/v1/releases/", body(approx_dataset.pk), format="json")
    assert created.status_code == 201, created.json()
    client.force_login(curator)

    # when
    page = client.get(f"/releases/{created.json()['id']}/preview/").content.decode()

    # then no padded or long decimals in the table, δ in scientific notation, and each kind of
    # number said what it is
    table = page[page.index('<table id="preview">') : page.index("</table>")]
    technical = page[page.index('id="preview-technical"') :]
    technical = technical[: technical.index("</details>")]
    for shown in (table, technical):
        assert not LONG_FLOAT.search(shown), LONG_FLOAT.findall(shown)
        assert not PADDED.search(shown), PADDED.findall(shown)
    assert "<td>3.2 × 10⁻¹⁰</td>" in table
    assert "<td>0.125</td>" in table
    assert 'id="preview-terms"' in page
    assert "Noise scale: the spread of the random noise" in technical
