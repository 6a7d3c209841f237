"""The catalog's filters, on the page and in the API: a title or a statistic's column, the
privacy definition, publication dates; pages keep the filters; bad values are named, never a
5xx."""

import datetime
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.django import TestCase

from releases.models import Release
from releases.services import runs
from releases.services.datasets import dataset_create, dataset_schema_update
from tests.conftest import CLINIC_CSV_CRLF, CLINIC_SCHEMA, csv_upload, publish_through_api


def body(dataset_id, title, definition, queries):
    return {"dataset": dataset_id, "title": title, "definition": definition, "queries": queries}


@pytest.fixture
def catalog(curator, curator_client, dataset, django_capture_on_commit_callbacks, monkeypatch):
    """Three versions: a count under ε-DP (Jan 2026), a histogram of sex under ε-DP
    (Mar 2026) and a Blowfish count of another dataset (today). Each is published on its day
    (the publishing worker's clock set to it): a published version's date never changes after."""
    capture = django_capture_on_commit_callbacks
    other = dataset_schema_update(
        dataset=dataset_create(
            owner=curator, name="Other", upload=csv_upload(CLINIC_CSV_CRLF), budget_epsilon="1.0"
        ),
        user=curator,
        schema=CLINIC_SCHEMA,
    )
    pure = {"kind": "pure_dp", "epsilon": 0.1}

    def published_on(day, release_body):
        with monkeypatch.context() as patch:
            if day is not None:
                patch.setattr(runs, "timezone", SimpleNamespace(now=lambda: day))
            return publish_through_api(curator_client, capture, release_body)

    return [
        published_on(
            datetime.datetime(2026, 1, 15, 12, tzinfo=datetime.UTC),
            body(dataset.pk, "Visits", pure, [{"kind": "count"}]),
        ),
        published_on(
            datetime.datetime(2026, 3, 1, 0, 0, tzinfo=datetime.UTC),
            body(dataset.pk, "People", pure, [{"kind": "histogram", "column": "sex"}]),
        ),
        published_on(
            None,
            body(
                other.pk,
                "Policy",
                {"kind": "blowfish", "epsilon": 0.1, "policy": {"graph": "full_domain"}},
                [{"kind": "count"}],
            ),
        ),
    ]


SEX_HISTOGRAM = {"kind": "histogram", "column": "sex"}


def api_titles(client, **params):
    response = client.get("/api/v1/catalog/", params)
    assert response.status_code == 200, response.json()
    return [entry["title"] for entry in response.json()["results"]]


def test_the_api_filters_by_column_definition_and_dates(anonymous_client, catalog):
    assert api_titles(anonymous_client) == ["Policy", "People", "Visits"]
    assert api_titles(anonymous_client, search="sex") == ["People"]  # a statistic's column
    assert api_titles(anonymous_client, search="visit") == ["Visits"]  # a title
    # never the queries' JSON: keys, kinds and punctuation match nothing
    for syntax in ('"', "kind", "{", "count", "histogram", "weight"):
        assert api_titles(anonymous_client, search=syntax) == [], syntax
    assert api_titles(anonymous_client, kind="blowfish") == ["Policy"]
    assert api_titles(anonymous_client, kind="pure_dp") == ["People", "Visits"]
    assert api_titles(anonymous_client, since="2026-03-01") == ["Policy", "People"]
    assert api_titles(anonymous_client, until="2026-03-01") == ["People", "Visits"]
    assert api_titles(anonymous_client, since="2026-01-16", until="2026-03-01") == ["People"]
    assert api_titles(anonymous_client, until="9999-12-31") == ["Policy", "People", "Visits"]


@pytest.mark.parametrize(
    ("params", "field", "words"),
    [
        ({"kind": "dp"}, "kind", "must be one of: pure_dp, approx_dp, blowfish"),
        ({"since": "2026-13-01"}, "since", "must be a date"),
        ({"until": "yesterday"}, "until", "must be a date"),
        ({"since": "2026-01-01T00:00:00"}, "since", "must be a date"),
        ({"search": "x" * 201}, "search", "at most 200 characters"),
        ({"search": "a\x00"}, "search", "NUL"),
    ],
)
def test_the_api_names_a_bad_filter(anonymous_client, db, params, field, words):
    response = anonymous_client.get("/api/v1/catalog/", params)

    assert response.status_code == 400
    assert words in " ".join(response.json()["errors"][field])


def test_the_page_filters_keeps_them_across_pages_and_says_what_is_wrong(anonymous_client, catalog):
    page = anonymous_client.get("/catalog/", {"kind": "pure_dp", "since": "2026-01-01"})
    html = page.content.decode()
    assert "People" in html
    assert "Visits" in html
    assert "Policy</a>" not in html
    assert '<option value="pure_dp" selected>' in html
    assert 'name="since" value="2026-01-01"' in html

    refused = anonymous_client.get("/catalog/", {"until": "2026-02-30"}).content.decode()
    assert "The last day must be a date, e.g. 2026-11-25." in refused
    assert "Policy</a>" in refused  # the bad filter is left out, the others apply


class CatalogFilterFuzz(TestCase):
    @settings(max_examples=60, deadline=None)
    @given(
        st.dictionaries(
            st.sampled_from(["q", "kind", "since", "until", "page", "search"]),
            st.text(max_size=40),
            max_size=4,
        )
    )
    def test_no_filter_text_gives_a_server_error(self, params):
        from rest_framework.test import APIClient

        client = APIClient()
        page = client.get("/catalog/", params)
        api = client.get("/api/v1/catalog/", params)
        assert page.status_code == 200
        assert api.status_code in (200, 400, 404)


def test_the_pages_links_keep_the_filters(client, catalog, monkeypatch):
    from releases import views

    monkeypatch.setattr(views, "CATALOG_PAGE_SIZE", 1)
    client.force_login(catalog[0].created_by)  # signed in: never a cached page

    first = client.get("/catalog/", {"kind": "pure_dp", "since": "2026-01-01"}).content.decode()

    assert '<a href="?kind=pure_dp&amp;since=2026-01-01&amp;page=2">Older →</a>' in first
    assert "<span>Page 1 of 2</span>" in first


def test_the_migration_fills_the_column_names_of_releases_submitted_before_it(
    curator_client, dataset, django_capture_on_commit_callbacks
):
    import importlib

    from django.apps import apps

    # given two submitted releases (queued, not yet published: migration 0008 ran before
    # published versions became immutable) whose column names were never filled in
    pure = {"kind": "pure_dp", "epsilon": 0.1}
    submitted = []
    for title, queries in (("Visits", [{"kind": "count"}]), ("People", [SEX_HISTOGRAM])):
        created = curator_client.post(
            "/api/v1/releases/", body(dataset.pk, title, pure, queries), format="json"
        ).json()
        with django_capture_on_commit_callbacks(execute=False):
            curator_client.post(f"/api/v1/releases/{created['id']}/submit/")
        submitted.append(created["id"])
    Release.objects.filter(pk__in=submitted).update(columns_text="")
    migration = importlib.import_module("releases.migrations.0008_release_columns_text")

    # when
    migration.fill_columns_text(apps, None)

    # then
    assert Release.objects.get(pk=submitted[1]).columns_text == "sex"
    assert Release.objects.get(pk=submitted[0]).columns_text == ""  # a count uses no column
