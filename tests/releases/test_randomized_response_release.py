"""A randomized record-level file through the API: planned, drawn by the worker's code, published
with its files (CSV and JSON of the reports in a random order), its estimated shares with
intervals on the page, and refused with a 400 naming the query where no analysis holds."""

import csv
import io
import json

import pyarrow.parquet as pq
import pytest

from releases.models import Release
from releases.services.datasets import dataset_create, dataset_schema_update
from tests.conftest import RELEASE_FILE_FORMATS, csv_upload, publish_through_api

SMOKERS = b"smoker,age\n" + b"".join(
    (b"yes" if i % 4 == 0 else b"no") + b",%d\n" % (20 + i % 50) for i in range(2_000)
)
SCHEMA = {
    "columns": {
        # Yes, else no: every record is in one of two buckets, none left out.
        "smoker": {"kind": "categorical", "categories": ["yes"], "other": "no", "fill": "no"},
        "age": {"kind": "numeric", "lower": 0, "upper": 100},
    },
    "declared_size": 2_000,
}
BLOWFISH = {"kind": "blowfish", "epsilon": 1.0986122886681098, "policy": {"graph": "full_domain"}}


@pytest.fixture
def smokers(curator):
    created = dataset_create(
        owner=curator, name="Smokers", upload=csv_upload(SMOKERS, "s.csv"), budget_epsilon="5"
    )
    return dataset_schema_update(dataset=created, user=curator, schema=SCHEMA)


def body(dataset_id: int, definition: dict, *queries: dict) -> dict:
    return {
        "dataset": dataset_id,
        "title": "Smokers",
        "definition": definition,
        "queries": list(queries),
    }


def draft(client, dataset_id: int, definition: dict, *queries: dict):
    return client.post("/api/v1/releases/", body(dataset_id, definition, *queries), format="json")


def publish(client, capture, dataset_id: int, definition: dict, *queries: dict) -> Release:
    return publish_through_api(client, capture, body(dataset_id, definition, *queries))


RR = {"kind": "randomized_response", "column": "smoker"}


def test_under_blowfish_the_file_has_a_row_per_record_and_shares_with_intervals(
    curator_client, anonymous_client, smokers, django_capture_on_commit_callbacks
):
    # given the two-coin procedure (ε = ln 3) under Blowfish, beside a count
    release = publish(
        curator_client,
        django_capture_on_commit_callbacks,
        smokers.pk,
        BLOWFISH,
        {"kind": "count"},
        RR,
    )
    base = f"/api/v1/catalog/{release.series.slug}/versions/1/"

    # when the public reads the version and downloads the records
    version = anonymous_client.get(base).json()
    formats = {f["format"] for f in version["files"]}
    records = anonymous_client.get(base + "files/microdata-1.csv/")
    document = json.loads(b"".join(anonymous_client.get(base + "files/microdata-1.json/")))
    typed = anonymous_client.get(base + "files/microdata-1.parquet/")

    # then the statistic discloses the exact two-coin mechanism and its unbiased estimate
    statistic = version["statistics"][1]
    assert statistic["mechanism"] == "randomized_response"
    microdata = statistic["microdata"]
    assert (microdata["keep_probability"], microdata["switch_probability"]) == (0.75, 0.25)
    yes_reports, no_reports = microdata["reports"]
    assert yes_reports + no_reports == 2_000 == microdata["rows"]
    assert statistic["value"]["yes"] == pytest.approx(2 * yes_reports / 2_000 - 0.5)
    # and its interval is the one the preview promised: ±1.96·√(3/16 / n)/(p − q), about ±0.038
    # (its coverage, over many releases, is the engine's tests')
    low, high = statistic["ci95"]["yes"]
    halfwidth = 1.959963984540054 * (3 / 16 / 2_000) ** 0.5 / 0.5
    share = statistic["value"]["yes"]
    assert (low, high) == pytest.approx((max(0, share - halfwidth), min(1, share + halfwidth)))
    # and both files hold exactly those reports, a row each, in a random order
    assert formats == RELEASE_FILE_FORMATS | {
        "microdata-1.csv",
        "microdata-1.json",
        "microdata-1.parquet",
    }
    assert records["Content-Type"] == "text/csv"
    rows = list(csv.reader(io.StringIO(b"".join(records).decode())))
    assert rows[0] == ["smoker"]
    assert [r[0] for r in rows[1:]].count("yes") == yes_reports
    assert len(rows) == 2_001
    assert document["records"].count("yes") == yes_reports
    assert document["records"] != sorted(document["records"])  # shuffled, not grouped
    # and the Parquet file holds the same rows in the same order, as typed text
    assert typed["Content-Type"] == "application/vnd.apache.parquet"
    table = pq.read_table(io.BytesIO(b"".join(typed)))
    assert table.column_names == ["smoker"]
    assert table.column("smoker").to_pylist() == document["records"]


def test_the_page_shows_estimated_shares_and_links_the_records(
    curator_client, anonymous_client, smokers, django_capture_on_commit_callbacks
):
    release = publish(curator_client, django_capture_on_commit_callbacks, smokers.pk, BLOWFISH, RR)

    html = anonymous_client.get(f"/catalog/{release.series.slug}/v1/").content.decode()

    assert "Download records of statistic 1 (CSV)" in html
    assert "Download the records of statistic 1 (JSON)" in html
    assert "2,000 rows in a random order" in html
    assert "estimated share of the records" in html
    assert "reports its own category with probability 0.75" in html


@pytest.mark.parametrize(
    ("definition", "query", "field", "message"),
    [
        (
            {"kind": "pure_dp", "epsilon": 1},
            RR,
            "queries.0.kind",
            "a record-level file shows how many records there are",
        ),
        (BLOWFISH, {**RR, "column": "age"}, "queries.0.column", "needs a categorical column"),
        (BLOWFISH, {**RR, "column": "nope"}, "queries.0.column", "no such column"),
    ],
)
def test_where_no_analysis_holds_the_query_is_refused_saying_why(
    curator_client, smokers, definition, query, field, message
):
    response = draft(curator_client, smokers.pk, definition, query)

    assert response.status_code == 400
    errors = response.json()["errors"]
    assert any(message in m for m in errors[field]), errors


def test_records_the_rules_leave_out_report_a_category_of_their_own(
    curator, curator_client, django_capture_on_commit_callbacks
):
    # given a column listing only "yes": every "no" is left out by its rules
    created = dataset_create(
        owner=curator, name="Gaps", upload=csv_upload(SMOKERS, "s.csv"), budget_epsilon="5"
    )
    schema = {
        **SCHEMA,
        "columns": {**SCHEMA["columns"], "smoker": {"kind": "categorical", "categories": ["yes"]}},
    }
    dataset_schema_update(dataset=created, user=curator, schema=schema)

    release = publish(curator_client, django_capture_on_commit_callbacks, created.pk, BLOWFISH, RR)

    # then under Blowfish every record still has its row (n is public), in a category of its own
    (statistic,) = release.answers.values_list("statistic", flat=True)
    assert statistic["microdata"]["categories"] == ["yes", "(missing or not listed)"]
    assert statistic["microdata"]["rows"] == 2_000
    assert statistic["value"]["(missing or not listed)"] == pytest.approx(0.75, abs=0.06)


def test_under_approximate_dp_the_file_is_padded_and_the_page_says_so(
    curator, curator_client, anonymous_client, django_capture_on_commit_callbacks
):
    created = dataset_create(
        owner=curator,
        name="Smokers",
        upload=csv_upload(SMOKERS, "s.csv"),
        budget_epsilon="5",
        budget_delta="0.00001",
    )
    dataset_schema_update(dataset=created, user=curator, schema=SCHEMA)
    definition = {"kind": "approx_dp", "epsilon": 1, "delta": 1e-6}

    release = publish(
        curator_client, django_capture_on_commit_callbacks, created.pk, definition, RR
    )

    base = f"/api/v1/catalog/{release.series.slug}/versions/1/"
    (statistic,) = anonymous_client.get(base).json()["statistics"]
    rows = b"".join(anonymous_client.get(base + "files/microdata-0.csv/")).decode().splitlines()
    assert len(rows) - 1 == statistic["microdata"]["rows"] > 2_000  # dummies are mixed in
    html = anonymous_client.get(f"/catalog/{release.series.slug}/v1/").content.decode()
    assert "dummy rows of random categories mixed in" in html


def test_switching_a_draft_with_records_to_epsilon_dp_is_refused_and_keeps_it(
    client, curator, smokers
):
    from releases.services.releases import release_draft_create

    draft = release_draft_create(
        user=curator, dataset=smokers, title="Smokers", definition=BLOWFISH, queries=[RR]
    )
    client.force_login(curator)

    # when the privacy step is saved with ε-DP
    response = client.post(
        f"/releases/{draft.pk}/privacy/",
        {"title": "Smokers", "definition_kind": "pure_dp", "epsilon": "1"},
    )

    # then the step says why, naming the statistic, and the draft keeps its records
    assert response.status_code == 200
    assert "Statistic 1: a record-level file shows how many records there are" in (
        response.content.decode().replace("&#x27;", "'")
    )
    draft.refresh_from_db()
    assert draft.queries == [RR]
    assert draft.definition["kind"] == "blowfish"


def test_at_most_three_record_files_per_release(curator_client, smokers):
    response = draft(curator_client, smokers.pk, BLOWFISH, *[RR] * 4)

    assert response.status_code == 400
    (message,) = response.json()["errors"]["queries"]
    assert message.startswith("choose at most 3 record-level files")
