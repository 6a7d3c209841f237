"""The ``marginal`` kind through the API, the wizard and the pages."""

import csv
import io
import json

import pytest

from releases.models import Release
from releases.services.datasets import dataset_schema_update
from tests.conftest import CLINIC_SCHEMA, statistics_formset

TABLE = {"kind": "marginal", "columns": ["sex", "visits"]}


@pytest.fixture
def tabled(dataset, curator):
    """The clinic dataset with visits declared categorical too."""
    schema = {
        **CLINIC_SCHEMA,
        "columns": {
            **CLINIC_SCHEMA["columns"],
            "visits": {"kind": "categorical", "categories": ["0", "1", "2"], "other": "3+"},
        },
    }
    return dataset_schema_update(dataset=dataset, user=curator, schema=schema)


def body(dataset_id: int, *queries: dict) -> dict:
    return {
        "dataset": dataset_id,
        "title": "Visits by sex",
        "definition": {"kind": "pure_dp", "epsilon": 0.5},
        "queries": list(queries),
    }


def test_a_table_is_previewed_published_shown_and_downloadable(
    curator_client, anonymous_client, tabled, django_capture_on_commit_callbacks
):
    # given
    created = curator_client.post("/api/v1/releases/", body(tabled.pk, TABLE), format="json")
    assert created.status_code == 201, created.json()
    preview = created.json()["preview"][0]
    assert (preview["kind"], preview["columns"], preview["sensitivity"]) == (
        "marginal",
        ["sex", "visits"],
        1,
    )

    # when
    with django_capture_on_commit_callbacks(execute=True):
        curator_client.post(f"/api/v1/releases/{created.json()['id']}/submit/")

    # then: 2 × 4 cells, 2 + 4 + 1 totals, in published order, consistent
    release = Release.objects.get(pk=created.json()["id"])
    assert release.status == "published", release.failure_reason
    version = anonymous_client.get(f"/api/v1/catalog/{release.series.slug}/versions/1/").json()
    (statistic,) = version["statistics"]
    labels = [tuple(json.loads(label)) for label in statistic["cells"]]
    assert labels[:2] == [("F", "0"), ("F", "1")]
    assert labels[-1] == (None, None)
    assert len(labels) == 2 * 4 + 2 + 4 + 1
    value = {tuple(json.loads(k)): v for k, v in statistic["value"].items()}
    assert value[None, None] == sum(v for k, v in value.items() if None not in k)
    page = anonymous_client.get(f"/catalog/{release.series.slug}/v1/")
    assert page.status_code == 200
    files = {f["format"]: f for f in version["files"]}
    rows = list(
        csv.DictReader(
            io.StringIO(
                b"".join(anonymous_client.get(files["csv"]["url"]).streaming_content).decode()
            )
        )
    )
    assert len(rows) == len(labels)


def test_the_wizard_keeps_a_tables_second_column(client, curator, tabled):
    # given
    from releases.services.releases import release_draft_create

    release = release_draft_create(
        user=curator,
        dataset=tabled,
        title="Visits by sex",
        definition={"kind": "pure_dp", "epsilon": 0.5},
        queries=[TABLE],
    )
    client.force_login(curator)

    # when the statistics step is saved as shown
    page = client.get(f"/releases/{release.pk}/statistics/").content.decode()
    saved = client.post(
        f"/releases/{release.pk}/statistics/",
        statistics_formset({"kind": "marginal", "column": "sex", "second_column": "visits"}),
    )

    # then
    assert '<option value="visits" selected>' in page
    assert saved.status_code == 302
    release.refresh_from_db()
    assert release.queries == [TABLE]
    preview = client.get(f"/releases/{release.pk}/preview/").content.decode()
    assert "each published cell of the table is within ±" in preview


def test_a_tables_csv_rows_name_both_columns(
    curator_client, anonymous_client, tabled, django_capture_on_commit_callbacks
):
    # given a published table
    created = curator_client.post("/api/v1/releases/", body(tabled.pk, TABLE), format="json")
    with django_capture_on_commit_callbacks(execute=True):
        curator_client.post(f"/api/v1/releases/{created.json()['id']}/submit/")
    release = Release.objects.get(pk=created.json()["id"])
    version = anonymous_client.get(f"/api/v1/catalog/{release.series.slug}/versions/1/").json()
    csv_file = next(f for f in version["files"] if f["format"] == "csv")

    # when
    text = b"".join(anonymous_client.get(csv_file["url"]).streaming_content).decode()

    # then
    assert {row["column"] for row in csv.DictReader(io.StringIO(text))} == {"sex, visits"}


def test_a_long_column_name_is_not_echoed_whole(curator_client, tabled):
    response = curator_client.post(
        "/api/v1/releases/",
        body(tabled.pk, {"kind": "marginal", "columns": ["sex", "x" * 100_000]}),
        format="json",
    )

    assert response.status_code == 400
    assert len(response.json()["errors"]["queries.0.columns"][0]) < 200


def test_the_wizard_bins_a_tables_numeric_column_and_keeps_its_edges(client, curator, dataset):
    # given a draft, and the statistics step saved with a table of sex across binned ages
    from releases.services.releases import release_draft_create

    release = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Visits",
        definition={"kind": "pure_dp", "epsilon": 0.5},
        queries=[{"kind": "count"}],
    )
    client.force_login(curator)
    form = statistics_formset({"kind": "marginal", "column": "sex", "second_column": "age"})

    # when the edges are given, and when they are not
    saved = client.post(
        f"/releases/{release.pk}/statistics/", {**form, "stat-0-bins": "0, 50, 100"}
    )
    release.refresh_from_db()
    kept = client.get(f"/releases/{release.pk}/statistics/").content.decode()
    missing = client.post(f"/releases/{release.pk}/statistics/", form).content.decode()

    # then the edges cut the numeric column, are shown again, and their absence is named
    assert saved.status_code == 302
    assert release.queries[0]["bins"] == {"age": [0.0, 50.0, 100.0]}
    assert 'value="0, 50, 100"' in kept
    assert "give bin edges for the numeric column" in missing
