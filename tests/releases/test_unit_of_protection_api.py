"""Declaring the unit of protection through the schema API."""

from releases.models import Dataset
from tests.conftest import CLINIC_SCHEMA


def test_schema_with_a_person_key_is_saved_and_multiplies_the_preview(curator_client, dataset):
    # given the clinic table's "name" column as the person key, up to 2 rows each
    schema = {**CLINIC_SCHEMA, "person_key": "name", "max_rows_per_person": 2}

    # when
    response = curator_client.put(f"/api/v1/datasets/{dataset.pk}/schema/", schema, format="json")
    draft = curator_client.post(
        "/api/v1/releases/",
        {
            "dataset": dataset.pk,
            "title": "Visits",
            "definition": {"kind": "pure_dp", "epsilon": 1},
            "queries": [{"kind": "sum", "column": "visits"}],
        },
        format="json",
    )

    # then
    assert response.status_code == 200
    assert response.json()["person_key"] == "name"
    assert response.json()["max_rows_per_person"] == 2
    assert draft.json()["preview"][0]["sensitivity"] == 20.0


def test_person_key_must_be_an_identifier_column_of_the_table(curator_client, dataset):
    # given
    before = Dataset.objects.get(pk=dataset.pk).schema

    # when
    unknown = curator_client.put(
        f"/api/v1/datasets/{dataset.pk}/schema/",
        {**CLINIC_SCHEMA, "person_key": "nope"},
        format="json",
    )
    numeric = curator_client.put(
        f"/api/v1/datasets/{dataset.pk}/schema/",
        {**CLINIC_SCHEMA, "person_key": "age"},
        format="json",
    )

    # then
    assert unknown.status_code == 400
    assert list(unknown.json()["errors"]) == ["person_key"]
    assert numeric.status_code == 400
    assert list(numeric.json()["errors"]) == ["person_key"]
    assert Dataset.objects.get(pk=dataset.pk).schema == before
