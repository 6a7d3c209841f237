"""PUT /api/v1/datasets/{id}/schema/ and POST /api/v1/releases/: field errors by path, nothing
stored on failure, schema frozen after submission, series versions."""

import re

import pytest

from audit.models import AuditEvent
from releases.models import Dataset, LedgerEntry, Release, ReleaseSeries
from releases.services.datasets import dataset_create
from releases.services.releases import release_draft_create, release_submit
from tests.conftest import CLINIC_CSV_CRLF, CLINIC_SCHEMA, csv_upload, draft_body


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def undeclared(curator) -> Dataset:
    """A curator1 dataset with no declared schema yet."""
    return dataset_create(
        owner=curator, name="Undeclared", upload=csv_upload(), budget_epsilon="1.0"
    )


def schema_url(dataset: Dataset) -> str:
    return f"/api/v1/datasets/{dataset.pk}/schema/"


def put_schema(client, dataset: Dataset, body):
    return client.put(schema_url(dataset), body, format="json")


# Schema


def test_valid_schema_is_stored_and_omitted_columns_become_identifiers(curator_client, undeclared):
    # when
    response = put_schema(
        curator_client,
        undeclared,
        {
            "columns": {
                "age": {"kind": "numeric", "lower": 0, "upper": 100},
                "sex": {"kind": "categorical", "categories": ["F", "M"], "other": "other"},
            }
        },
    )

    # then
    assert response.status_code == 200
    expected = {
        "columns": {
            "name": {"kind": "identifier"},
            "age": {"kind": "numeric", "lower": 0, "upper": 100},
            "sex": {"kind": "categorical", "categories": ["F", "M"], "other": "other"},
            "visits": {"kind": "identifier"},
        }
    }
    assert response.json() == expected
    undeclared.refresh_from_db()
    assert undeclared.schema == expected
    event = AuditEvent.objects.get(action="dataset.schema_changed")
    assert (event.actor, event.dataset_id) == ("curator1", undeclared.pk)
    # Names, kinds and marks only: declared values never enter the (unerasable) audit trail.
    assert event.details == {
        "columns": {
            "name": {"kind": "identifier", "from_data": False},
            "age": {"kind": "numeric", "from_data": False},
            "sex": {"kind": "categorical", "from_data": False},
            "visits": {"kind": "identifier", "from_data": False},
        },
        "declared_size": None,
    }


def test_schema_stores_a_numeric_columns_typical_value_and_the_preview_uses_it(
    curator_client, undeclared
):
    # given
    columns = {
        **CLINIC_SCHEMA["columns"],
        "age": {"kind": "numeric", "lower": 0, "upper": 100, "typical": 38},
    }

    # when
    response = put_schema(curator_client, undeclared, {**CLINIC_SCHEMA, "columns": columns})
    draft = curator_client.post(
        "/api/v1/releases/",
        {
            "dataset": undeclared.pk,
            "title": "Ages",
            "definition": {"kind": "pure_dp", "epsilon": 1},
            "queries": [{"kind": "mean", "column": "age"}, {"kind": "mean", "column": "visits"}],
        },
        format="json",
    ).json()
    simulated = curator_client.get(f"/api/v1/releases/{draft['id']}/simulated-preview/").json()

    # then
    assert response.status_code == 200
    assert response.json()["columns"]["age"] == {
        "kind": "numeric",
        "lower": 0,
        "upper": 100,
        "typical": 38,
    }
    undeclared.refresh_from_db()
    assert undeclared.schema["columns"]["age"]["typical"] == 38
    age, visits = simulated["results"]
    assert age["simulated"] == 38
    assert age["typical_values"] == [
        {"column": "age", "value": 38, "basis": "declared typical value"}
    ]
    assert visits["simulated"] == 5
    assert visits["typical_values"] == [
        {"column": "visits", "value": 5, "basis": "midpoint of the bounds"}
    ]


def test_schema_with_declared_size_updates_the_dataset(curator_client, undeclared):
    # when
    response = put_schema(curator_client, undeclared, CLINIC_SCHEMA)

    # then
    assert response.status_code == 200
    assert response.json()["declared_size"] == 5
    undeclared.refresh_from_db()
    assert undeclared.declared_size == 5


def test_schema_can_be_replaced_while_only_drafts_exist(curator_client, curator, dataset):
    # given a draft (not submitted)
    release_draft_create(
        user=curator,
        dataset=dataset,
        title="Draft",
        definition={"kind": "pure_dp", "epsilon": 0.1},
        queries=[{"kind": "count"}],
    )

    # when
    response = put_schema(
        curator_client,
        dataset,
        {
            "columns": {
                "age": {"kind": "numeric", "lower": 0, "upper": 120},
            }
        },
    )

    # then
    assert response.status_code == 200
    dataset.refresh_from_db()
    assert dataset.schema["columns"]["age"] == {"kind": "numeric", "lower": 0, "upper": 120}
    assert dataset.schema["columns"]["sex"] == {"kind": "identifier"}


@pytest.mark.parametrize(
    ("body", "errors"),
    [
        pytest.param(
            {"columns": {"nope": {"kind": "identifier"}}},
            {"columns.nope": ["no such column in the uploaded table"]},
            id="unknown-column",
        ),
        pytest.param(
            {"columns": {"age": {"kind": "numeric", "lower": 100, "upper": 0}}},
            {"columns.age.upper": ["upper bound must be greater than lower"]},
            id="lower-above-upper",
        ),
        pytest.param(
            {"columns": {"age": {"kind": "numeric", "lower": 5, "upper": 5}}},
            {"columns.age.upper": ["upper bound must be greater than lower"]},
            id="lower-equals-upper",
        ),
        pytest.param(
            {"columns": {"age": {"kind": "numeric"}}},
            {
                "columns.age.lower": ["numeric columns need public bounds"],
                "columns.age.upper": ["numeric columns need public bounds"],
            },
            id="numeric-without-bounds",
        ),
        pytest.param(
            {"columns": {"age": {"kind": "numeric", "lower": "0", "upper": 100}}},
            {"columns.age.lower": ["must be a number"]},
            id="string-bound",
        ),
        pytest.param(
            {"columns": {"age": {"kind": "numeric", "lower": 0, "upper": 10, "fill": 11}}},
            {"columns.age.fill": ["the fill value must lie within the bounds"]},
            id="fill-outside-bounds",
        ),
        pytest.param(
            {"columns": {"age": {"kind": "numeric", "lower": 0, "upper": 10, "typical": 11}}},
            {"columns.age.typical": ["the typical value must lie within the bounds"]},
            id="typical-outside-bounds",
        ),
        pytest.param(
            {"columns": {"age": {"kind": "numeric", "lower": 0, "upper": 10, "typical": "5"}}},
            {"columns.age.typical": ["must be a number"]},
            id="string-typical",
        ),
        pytest.param(
            {"columns": {"sex": {"kind": "categorical"}}},
            {"columns.sex.categories": ["must be a list of strings"]},
            id="categorical-without-categories",
        ),
        pytest.param(
            {"columns": {"sex": {"kind": "categorical", "categories": []}}},
            {"columns.sex.categories": ["declare at least one category"]},
            id="categorical-empty-categories",
        ),
        pytest.param(
            {"columns": {"sex": {"kind": "categorical", "categories": ["F", "F"]}}},
            {"columns.sex.categories": ["categories must be distinct"]},
            id="categorical-duplicate-categories",
        ),
        pytest.param(
            {"columns": {"age": {"kind": "ordinal"}}},
            {"columns.age.kind": ["must be one of numeric, categorical, identifier"]},
            id="unknown-kind",
        ),
        pytest.param(
            {"columns": {"age": "numeric"}},
            {"columns.age": ["must be an object"]},
            id="column-not-object",
        ),
        pytest.param(
            {"columns": ["age"]},
            {"columns": ["must be an object of column declarations"]},
            id="columns-not-object",
        ),
        pytest.param(
            {}, {"columns": ["must be an object of column declarations"]}, id="no-columns"
        ),
        pytest.param(
            ["age"], {"columns": ["must be an object of column declarations"]}, id="body-not-object"
        ),
        pytest.param(
            {"columns": {}, "declared_size": 0},
            {"declared_size": ["must be a positive whole number"]},
            id="zero-size",
        ),
        pytest.param(
            {
                "columns": {
                    "nope": {"kind": "identifier"},
                    "age": {"kind": "numeric", "lower": 1, "upper": 0},
                }
            },
            {
                "columns.nope": ["no such column in the uploaded table"],
                "columns.age.upper": ["upper bound must be greater than lower"],
            },
            id="several-errors",
        ),
    ],
)
def test_invalid_schema_is_400_naming_the_field_and_changes_nothing(
    curator_client, dataset, body, errors
):
    # given
    before = dataset.schema

    # when
    response = put_schema(curator_client, dataset, body)

    # then
    assert response.status_code == 400
    assert response.json() == {"detail": "Invalid input.", "errors": errors}
    dataset.refresh_from_db()
    assert dataset.schema == before
    assert AuditEvent.objects.filter(action="dataset.schema_changed").count() == 1  # the fixture's


def test_malformed_json_schema_is_400(curator_client, dataset):
    # when
    response = curator_client.put(
        schema_url(dataset), b"{not json", content_type="application/json"
    )

    # then
    assert response.status_code == 400
    assert response.json()["detail"] == "Invalid input."
    assert AuditEvent.objects.filter(action="dataset.schema_changed").count() == 1


def test_schema_is_409_once_a_release_was_submitted(curator_client, curator, dataset):
    # given a submitted release
    release = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Submitted",
        definition={"kind": "pure_dp", "epsilon": 0.1},
        queries=[{"kind": "count"}],
    )
    release_submit(release=release, user=curator)
    dataset.refresh_from_db()
    before = dataset.schema

    # when
    response = put_schema(
        curator_client,
        dataset,
        {
            "columns": {
                "age": {"kind": "numeric", "lower": 0, "upper": 50},
            }
        },
    )

    # then
    assert response.status_code == 409
    assert response.json() == {
        "detail": "The schema is fixed once a release of this dataset was submitted.",
    }
    dataset.refresh_from_db()
    assert dataset.schema == before
    assert AuditEvent.objects.filter(action="dataset.schema_changed").count() == 1


# Drafts


def post_draft(client, body):
    return client.post("/api/v1/releases/", body, format="json")


def assert_no_draft_created() -> None:
    assert Release.objects.count() == 0
    assert ReleaseSeries.objects.count() == 0
    assert not AuditEvent.objects.filter(action="release.drafted").exists()


def test_valid_draft_is_201_with_preview_and_spends_nothing(curator_client, dataset):
    # when
    response = post_draft(curator_client, draft_body(dataset.pk))

    # then
    assert response.status_code == 201
    body = response.json()
    release = Release.objects.get()
    assert body["id"] == release.pk
    assert body["status"] == "draft"
    assert body["progress"] == 0.0
    assert body["version"] is None
    assert body["failure_reason"] is None
    assert re.fullmatch(r"clinic-statistics-[0-9a-f]{8}", body["series"])
    assert body["definition"] == {"kind": "pure_dp", "epsilon": 0.5}
    assert [(p["kind"], p["column"]) for p in body["preview"]] == [
        ("count", None),
        ("histogram", "sex"),
        ("sum", "age"),
        ("mean", "age"),
    ]
    for item in body["preview"]:
        assert {
            "kind",
            "column",
            "epsilon",
            "sensitivity",
            "noise_scale",
            "expected_abs_error",
            "ci95_halfwidth",
        } <= set(item)
    assert LedgerEntry.objects.count() == 0
    event = AuditEvent.objects.get(action="release.drafted")
    assert (event.actor, event.object_id, event.dataset_id) == (
        "curator1",
        str(release.pk),
        dataset.pk,
    )


def _queries(*queries):
    return {"queries": list(queries)}


@pytest.mark.parametrize(
    ("change", "errors"),
    [
        pytest.param(
            {"definition": {"kind": "pure_dp", "epsilon": -1}},
            {"definition.epsilon": ["must be a number greater than 0"]},
            id="negative-epsilon",
        ),
        pytest.param(
            {"definition": {"kind": "pure_dp", "epsilon": 0}},
            {"definition.epsilon": ["must be a number greater than 0"]},
            id="zero-epsilon",
        ),
        pytest.param(
            {"definition": {"kind": "pure_dp", "epsilon": "0.5"}},
            {"definition.epsilon": ["must be a number greater than 0"]},
            id="string-epsilon",
        ),
        pytest.param(
            {"definition": {"kind": "pure_dp", "epsilon": True}},
            {"definition.epsilon": ["must be a number greater than 0"]},
            id="bool-epsilon",
        ),
        pytest.param(
            {"definition": {"kind": "pure_dp", "epsilon": 25}},
            {"definition.epsilon": ["must be from 0.0001 to 20"]},
            id="huge-epsilon",
        ),
        pytest.param(
            {"definition": {"kind": "pure_dp"}},
            {"definition.epsilon": ["must be a number greater than 0"]},
            id="missing-epsilon",
        ),
        pytest.param(
            {"definition": {"kind": "renyi_dp", "epsilon": 1}},
            {"definition.kind": ["must be one of: pure_dp, approx_dp, blowfish"]},
            id="unknown-definition",
        ),
        pytest.param(
            {"definition": None}, {"definition": ["must be an object"]}, id="missing-definition"
        ),
        pytest.param(
            _queries({"kind": "sum", "column": "nope"}),
            {"queries.0.column": ["no such column in the schema"]},
            id="unknown-column",
        ),
        pytest.param(
            _queries({"kind": "count"}, {"kind": "median", "column": "age"}),
            {
                "queries.1.kind": [
                    "must be one of: count, histogram, sum, mean, quantile, marginal, "
                    "range_histogram, kmeans, randomized_response, synthetic"
                ]
            },
            id="unknown-kind",
        ),
        pytest.param(
            _queries({"kind": "count"}, {"kind": "sum"}),
            {"queries.1.column": ["name the column this statistic uses"]},
            id="missing-column",
        ),
        pytest.param(
            _queries({"kind": "sum", "column": "name"}),
            {"queries.0.column": ["a sum needs a numeric column"]},
            id="sum-of-identifier",
        ),
        pytest.param(
            _queries({"kind": "mean", "column": "sex"}),
            {"queries.0.column": ["a mean needs a numeric column"]},
            id="mean-of-categorical",
        ),
        pytest.param(
            _queries({"kind": "histogram", "column": "name"}),
            {"queries.0.column": ["histograms need a categorical or numeric column"]},
            id="histogram-of-identifier",
        ),
        pytest.param(
            _queries({"kind": "histogram", "column": "age"}),
            {"queries.0.bins": ["a numeric histogram needs bin edges"]},
            id="numeric-histogram-without-bins",
        ),
        pytest.param(
            _queries({"kind": "histogram", "column": "age", "bins": [0, 50, 90]}),
            {"queries.0.bins": ["the first and last edges must be the column's declared bounds"]},
            id="bins-not-at-bounds",
        ),
        pytest.param(
            _queries({"kind": "count", "weight": 0}),
            {"queries.0.weight": ["must be a number from 0.001 to 1000"]},
            id="zero-weight",
        ),
        pytest.param(
            _queries(
                {"kind": "sum", "column": "age", "weight": 1e-300},
                {"kind": "count", "weight": 1e300},
            ),
            {
                "queries.0.weight": ["must be a number from 0.001 to 1000"],
                "queries.1.weight": ["must be a number from 0.001 to 1000"],
            },
            id="extreme-weights",
        ),
        pytest.param(
            _queries({"kind": "count", "weight": "2"}),
            {"queries.0.weight": ["must be a number from 0.001 to 1000"]},
            id="string-weight",
        ),
        pytest.param(
            _queries("count"), {"queries.0": ["must be an object"]}, id="query-not-object"
        ),
        pytest.param(
            {"queries": []}, {"queries": ["choose at least one statistic"]}, id="empty-queries"
        ),
        pytest.param(
            {"queries": None}, {"queries": ["choose at least one statistic"]}, id="missing-queries"
        ),
        pytest.param(
            {"queries": "count"},
            {"queries": ["choose at least one statistic"]},
            id="string-queries",
        ),
        pytest.param({"title": ""}, {"title": ["Give the release a title."]}, id="empty-title"),
        pytest.param({"title": "   "}, {"title": ["Give the release a title."]}, id="blank-title"),
        pytest.param(
            {"title": "t" * 201}, {"title": ["Use at most 200 characters."]}, id="long-title"
        ),
        pytest.param(
            {"series": "no-such-series"},
            {"series": ["No series with this slug for this dataset."]},
            id="unknown-series",
        ),
        pytest.param(
            {"dataset": "1"},
            {"dataset": ["must be the id of one of your datasets"]},
            id="string-dataset",
        ),
        pytest.param(
            {"dataset": True},
            {"dataset": ["must be the id of one of your datasets"]},
            id="bool-dataset",
        ),
        pytest.param(
            {"dataset": None},
            {"dataset": ["must be the id of one of your datasets"]},
            id="missing-dataset",
        ),
        pytest.param(
            {
                "title": "",
                "definition": {"kind": "pure_dp", "epsilon": -1},
                "queries": [{"kind": "count"}, {"kind": "sum", "column": "nope"}],
            },
            {
                "title": ["Give the release a title."],
                "definition.epsilon": ["must be a number greater than 0"],
                "queries.1.column": ["no such column in the schema"],
            },
            id="several-errors",
        ),
    ],
)
def test_malformed_draft_is_400_naming_each_field_and_creates_nothing(
    curator_client, dataset, change, errors
):
    # when
    response = post_draft(curator_client, {**draft_body(dataset.pk), **change})

    # then
    assert response.status_code == 400
    assert response.json() == {"detail": "Invalid input.", "errors": errors}
    assert_no_draft_created()


def test_draft_body_that_is_not_an_object_is_400_naming_dataset(curator_client, dataset):
    # when
    response = post_draft(curator_client, [draft_body(dataset.pk)])

    # then
    assert response.status_code == 400
    assert response.json()["errors"] == {"dataset": ["must be the id of one of your datasets"]}
    assert_no_draft_created()


@pytest.mark.parametrize(
    "title",
    [
        pytest.param(123, id="number"),
        pytest.param(["Clinic"], id="list"),
        pytest.param({"en": "Clinic"}, id="object"),
    ],
)
def test_non_string_title_is_400_naming_title(curator_client, dataset, title):
    # when
    response = post_draft(curator_client, draft_body(dataset.pk, title=title))

    # then
    assert response.status_code == 400
    assert response.json()["errors"] == {"title": ["Give the release a title."]}
    assert_no_draft_created()


@pytest.mark.parametrize(
    "epsilon",
    [pytest.param(1e-300, id="tiny-epsilon"), pytest.param(1e-320, id="subnormal-epsilon")],
)
def test_tiny_epsilon_is_400_not_500(curator_client, dataset, epsilon):
    # when
    response = post_draft(curator_client, draft_body(dataset.pk, epsilon=epsilon))

    # then
    assert response.status_code == 400
    assert list(response.json()["errors"]) == ["definition.epsilon"]
    assert_no_draft_created()


def test_draft_on_dataset_without_schema_is_400_naming_dataset(curator_client, undeclared):
    # when
    response = post_draft(curator_client, draft_body(undeclared.pk))

    # then
    assert response.status_code == 400
    assert response.json() == {
        "detail": "Invalid input.",
        "errors": {"dataset": ["Declare the dataset's schema (bounds and categories) first."]},
    }
    assert_no_draft_created()


def test_draft_on_another_curators_dataset_is_404(other_curator_client, dataset):
    # when
    response = post_draft(other_curator_client, draft_body(dataset.pk))

    # then
    assert response.status_code == 404
    assert set(response.json()) == {"detail"}
    assert_no_draft_created()


def test_draft_on_unknown_dataset_is_404(curator_client, dataset):
    # when
    response = post_draft(curator_client, draft_body(dataset.pk + 1000))

    # then
    assert response.status_code == 404
    assert_no_draft_created()


def test_same_title_without_series_starts_a_new_series(curator_client, dataset):
    # when
    first = post_draft(curator_client, draft_body(dataset.pk)).json()
    second = post_draft(curator_client, draft_body(dataset.pk)).json()

    # then
    assert first["series"] != second["series"]
    for series in (first["series"], second["series"]):
        assert re.fullmatch(r"clinic-statistics-[0-9a-f]{8}", series)
    assert ReleaseSeries.objects.count() == 2


def test_series_of_another_curator_cannot_be_extended(
    curator, curator_client, other_curator, other_curator_client, dataset
):
    # given curator1's series, and curator2 with a declared dataset of its own
    mine = post_draft(curator_client, draft_body(dataset.pk)).json()["series"]
    theirs = dataset_create(
        owner=other_curator,
        name="Theirs",
        upload=csv_upload(CLINIC_CSV_CRLF),
        budget_epsilon="1.0",
    )
    theirs.schema = CLINIC_SCHEMA
    theirs.save(update_fields=["schema"])

    # when
    response = post_draft(other_curator_client, draft_body(theirs.pk, series=mine))

    # then
    assert response.status_code == 400
    assert response.json()["errors"] == {"series": ["No series with this slug for this dataset."]}
    assert Release.objects.filter(created_by=other_curator).count() == 0


def test_series_slug_adds_versions_and_catalog_lists_newest_first(
    curator_client, anonymous_client, dataset, django_capture_on_commit_callbacks
):
    # given a first published version
    first = post_draft(curator_client, draft_body(dataset.pk, epsilon=0.3)).json()
    with django_capture_on_commit_callbacks(execute=True):
        assert curator_client.post(f"/api/v1/releases/{first['id']}/submit/").status_code == 202

    # when a second draft names the same series and is published
    second = post_draft(
        curator_client,
        draft_body(
            dataset.pk, epsilon=0.3, title="Clinic statistics, again", series=first["series"]
        ),
    )
    assert second.status_code == 201
    slug = first["series"]
    assert second.json()["series"] == slug
    with django_capture_on_commit_callbacks(execute=True):
        submitted = curator_client.post(f"/api/v1/releases/{second.json()['id']}/submit/")
    assert submitted.status_code == 202

    # then
    assert ReleaseSeries.objects.count() == 1
    catalog = anonymous_client.get("/api/v1/catalog/").json()
    assert catalog["count"] == 2
    assert [(e["slug"], e["version"], e["title"]) for e in catalog["results"]] == [
        (slug, 2, "Clinic statistics, again"),
        (slug, 1, "Clinic statistics"),
    ]
    for version in (1, 2):
        page = anonymous_client.get(f"/api/v1/catalog/{slug}/versions/{version}/")
        assert page.status_code == 200
        assert page.json()["version"] == version
    detail = curator_client.get(f"/api/v1/releases/{second.json()['id']}/").json()
    assert detail["version"] == 2
    assert detail["catalog_url"] == f"http://testserver/api/v1/catalog/{slug}/versions/2/"
