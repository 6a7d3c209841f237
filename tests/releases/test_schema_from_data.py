"""Values from the data are marked as such: bounds or categories filled in by "suggest from data"
and saved unchanged are stored with ``from_data: true`` (the service decides, not the client),
every release using them says so, and the audit trail names the columns, never the values."""

import json

import pytest

from audit.models import AuditEvent
from releases import selectors
from releases.models import Dataset, Release
from releases.services.datasets import dataset_create
from releases.services.suggestions import dataset_schema_suggest
from tests.conftest import csv_upload

NAMES = ("Ann", "Bob", "Cid", "Dee", "Eve")
# The observed extremes of CLINIC_CSV: what "suggest from data" reads.
AGE_SUGGESTED = {"kind": "numeric", "lower": 29.0, "upper": 120.0}
VISITS_SUGGESTED = {"kind": "numeric", "lower": 0.0, "upper": 5.0}
SEX_SUGGESTED = {"kind": "categorical", "categories": ["F", "M", "X"]}
FROM_DATA_BOUNDS = "bounds taken from the data: they are disclosed exactly"


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def bare(curator):
    return dataset_create(
        owner=curator, name="Bare", upload=csv_upload(), budget_epsilon="1", declared_size=5
    )


@pytest.fixture
def suggested(bare, curator):
    dataset_schema_suggest(dataset=bare, user=curator)
    bare.refresh_from_db()
    return bare


def put_schema(client, dataset, columns: dict):
    return client.put(f"/api/v1/datasets/{dataset.pk}/schema/", {"columns": columns}, format="json")


def test_suggest_stores_the_suggestion_on_the_dataset(bare, curator):
    # when
    suggestion = dataset_schema_suggest(dataset=bare, user=curator)

    # then
    bare.refresh_from_db()
    assert bare.schema_suggestion == suggestion
    assert suggestion == {
        "name": {"kind": "identifier"},
        "age": AGE_SUGGESTED,
        "sex": SEX_SUGGESTED,
        "visits": VISITS_SUGGESTED,
    }
    assert bare.schema == {}


def test_suggestion_saved_unchanged_on_the_page_is_marked_from_data(client, curator, suggested):
    # given the form as the suggestion filled it in
    client.force_login(curator)
    form = {
        "action": "save",
        "col0-kind": "identifier",
        "col1-kind": "numeric",
        "col1-lower": "29.0",
        "col1-upper": "120.0",
        "col2-kind": "categorical",
        "col2-categories": "F, M, X",
        "col3-kind": "numeric",
        "col3-lower": "0.0",
        "col3-upper": "5.0",
    }

    # when
    response = client.post(f"/datasets/{suggested.pk}/", form)

    # then
    assert response.status_code == 302
    suggested.refresh_from_db()
    assert suggested.schema["columns"] == {
        "name": {"kind": "identifier"},
        "age": {**AGE_SUGGESTED, "from_data": True},
        "sex": {**SEX_SUGGESTED, "from_data": True},
        "visits": {**VISITS_SUGGESTED, "from_data": True},
    }
    assert selectors.dataset_columns_from_data(dataset=suggested) == ["age", "sex", "visits"]
    page = client.get(response["Location"]).content.decode()
    assert (
        '<div class="warning" id="from-data-columns"><strong>Taken from the data:</strong> '
        "age, sex, visits." in page
    )


def test_client_cannot_clear_from_data_while_the_values_are_unchanged(curator_client, suggested):
    # when the API sends the suggested values with from_data false
    response = put_schema(
        curator_client,
        suggested,
        {
            "age": {**AGE_SUGGESTED, "from_data": False},
            "sex": {**SEX_SUGGESTED, "categories": ["X", "M", "F"], "from_data": False},
        },
    )

    # then
    assert response.status_code == 200
    columns = response.json()["columns"]
    assert columns["age"]["from_data"] is True
    assert columns["sex"]["from_data"] is True
    assert columns["visits"] == {"kind": "identifier"}


@pytest.mark.parametrize(
    ("age", "marked"),
    [
        pytest.param({"lower": 0, "upper": 130}, False, id="both-bounds-public"),
        pytest.param({"lower": 0, "upper": 120}, True, id="observed-maximum-kept"),
        pytest.param({"lower": 29, "upper": 130}, True, id="observed-minimum-kept"),
    ],
)
def test_a_bound_left_at_the_observed_extreme_marks_the_column(
    curator_client, suggested, age, marked
):
    # when
    response = put_schema(curator_client, suggested, {"age": {"kind": "numeric", **age}})

    # then
    assert response.status_code == 200
    assert response.json()["columns"]["age"].get("from_data", False) is marked


def test_changed_categories_are_not_marked(curator_client, suggested):
    # when the curator declares the public list instead of the observed one
    response = put_schema(
        curator_client, suggested, {"sex": {"kind": "categorical", "categories": ["F", "M"]}}
    )

    # then
    assert response.json()["columns"]["sex"] == {"kind": "categorical", "categories": ["F", "M"]}
    assert selectors.dataset_columns_from_data(dataset=Dataset.objects.get()) == []


def test_without_a_suggestion_nothing_is_marked(curator_client, bare):
    # when the same values are typed without ever asking for a suggestion
    response = put_schema(curator_client, bare, {"age": AGE_SUGGESTED, "sex": SEX_SUGGESTED})

    # then
    assert response.status_code == 200
    assert "from_data" not in response.json()["columns"]["age"]
    assert "from_data" not in response.json()["columns"]["sex"]


def test_schema_change_is_audited_with_names_kinds_and_marks_never_values(
    curator_client, suggested
):
    # when
    put_schema(
        curator_client,
        suggested,
        {
            "age": AGE_SUGGESTED,
            "sex": SEX_SUGGESTED,
            "visits": {"kind": "numeric", "lower": 0, "upper": 20},
        },
    )

    # then
    event = AuditEvent.objects.get(action="dataset.schema_changed")
    assert event.details == {
        "columns": {
            "name": {"kind": "identifier", "from_data": False},
            "age": {"kind": "numeric", "from_data": True},
            "sex": {"kind": "categorical", "from_data": True},
            # Its lower bound 0 is the observed minimum: one raw value is enough to mark it.
            "visits": {"kind": "numeric", "from_data": True},
        },
        "declared_size": 5,
    }
    details = json.dumps(event.details)
    assert not [value for value in ("29", "120", '"F"', '"X"', "20", *NAMES) if value in details]


def test_a_release_using_bounds_from_the_data_says_they_are_disclosed_exactly(
    curator_client, suggested, django_capture_on_commit_callbacks
):
    # given the suggested age bounds saved unchanged, and a public list for sex
    put_schema(
        curator_client,
        suggested,
        {"age": AGE_SUGGESTED, "sex": {"kind": "categorical", "categories": ["F", "M"]}},
    )
    draft = curator_client.post(
        "/api/v1/releases/",
        {
            "dataset": suggested.pk,
            "title": "Ages",
            "definition": {"kind": "pure_dp", "epsilon": 0.5},
            "queries": [{"kind": "sum", "column": "age"}, {"kind": "histogram", "column": "sex"}],
        },
        format="json",
    )
    assert draft.status_code == 201, draft.json()

    # when it is published
    with django_capture_on_commit_callbacks(execute=True):
        submitted = curator_client.post(f"/api/v1/releases/{draft.json()['id']}/submit/")
    assert submitted.status_code == 202

    # then
    release = Release.objects.get(pk=draft.json()["id"])
    assert release.status == Release.Status.PUBLISHED, release.failure_reason
    age, sex = [answer.statistic for answer in release.answers.order_by("position")]
    assert age["rule"].startswith(f"{FROM_DATA_BOUNDS}; values clamped to [29, 120]")
    assert not sex["rule"].startswith(("bounds taken", "categories taken"))


# --- limits (issue 7, point 8) ----------------------------------------------------------------


def test_more_categories_than_the_limit_are_refused_naming_the_column(
    curator_client, bare, settings
):
    # given
    settings.SCHEMA_MAX_CATEGORIES = 3
    events_before = AuditEvent.objects.count()

    # when
    response = put_schema(
        curator_client, bare, {"sex": {"kind": "categorical", "categories": ["F", "M", "X", "Y"]}}
    )

    # then
    assert response.status_code == 400
    assert response.json() == {
        "detail": "Invalid input.",
        "errors": {"columns.sex.categories": ["declare at most 3 categories"]},
    }
    bare.refresh_from_db()
    assert bare.schema == {}
    assert AuditEvent.objects.count() == events_before


def test_categories_up_to_the_limit_are_accepted(curator_client, bare, settings):
    # given
    settings.SCHEMA_MAX_CATEGORIES = 3

    # when
    response = put_schema(
        curator_client, bare, {"sex": {"kind": "categorical", "categories": ["F", "M", "X"]}}
    )

    # then
    assert response.status_code == 200
