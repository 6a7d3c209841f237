"""The privacy step's definition choices through the page forms."""

import pytest
from django.urls import reverse

from releases.models import Dataset, Release
from releases.services.datasets import dataset_create
from tests.conftest import csv_upload


def start(client, dataset, **fields):
    data = {"title": "Clinic 2026", "epsilon": "1", **fields}
    return client.post(reverse("wizard-start", kwargs={"dataset_pk": dataset.pk}), data)


def test_upload_form_sets_the_delta_budget(client, curator):
    # given
    client.force_login(curator)

    # when
    response = client.post(
        reverse("dataset-upload"),
        {
            "name": "With δ",
            "file": csv_upload(),
            "budget_epsilon": "1",
            "budget_delta": "0.0001",
        },
    )

    # then
    assert response.status_code == 302
    assert str(Dataset.objects.get(name="With δ").budget_delta.normalize()) == "0.0001"


def test_privacy_step_creates_an_approx_dp_draft_with_the_default_delta(client, curator, clinic):
    # given
    client.force_login(curator)

    # when δ is left empty
    response = start(client, clinic, definition_kind="approx_dp")

    # then the engine's default for 500 records applies: min(1e-6, 1/500²) = 1e-6
    assert response.status_code == 302
    release = Release.objects.get()
    assert release.definition == {"kind": "approx_dp", "epsilon": 1.0, "delta": 1e-6}


def test_privacy_step_creates_a_blowfish_partition_from_the_groups_text(client, curator, clinic):
    # given
    client.force_login(curator)

    # when
    response = start(
        client,
        clinic,
        definition_kind="blowfish",
        policy_graph="partition_groups",
        policy_column="sex",
        policy_groups="F | M",
    )

    # then
    assert response.status_code == 302
    assert Release.objects.get().definition["policy"] == {
        "graph": "partition",
        "column": "sex",
        "groups": [["F"], ["M"]],
    }


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        (
            {"policy_graph": "distance_threshold", "policy_column": "age", "policy_theta": "0"},
            "policy_theta",
            "must be a number greater than 0",
        ),
        (
            {"policy_graph": "partition_groups", "policy_column": "sex", "policy_groups": "F"},
            "policy_groups",
            "exactly once",
        ),
        (
            {"policy_graph": "partition_width", "policy_column": "sex", "policy_width": "10"},
            "policy_column",
            "must be a numeric column",
        ),
    ],
)
def test_privacy_step_shows_policy_errors_next_to_the_field(
    client, curator, clinic, fields, field, message
):
    # given
    client.force_login(curator)

    # when
    response = start(client, clinic, definition_kind="blowfish", **fields)

    # then the page re-renders with the error on that field and nothing is created
    assert response.status_code == 200
    assert message in response.context["form"].errors[field][0]
    assert not Release.objects.exists()


def test_privacy_step_refuses_a_delta_above_one_tenth_of_one_over_n(client, curator, clinic):
    # given 1/(10·500) = 2e-4
    client.force_login(curator)

    # when
    response = start(client, clinic, definition_kind="approx_dp", delta="0.001")

    # then
    assert response.status_code == 200
    assert "1/(10·n)" in response.context["form"].errors["delta"][0]
    assert not Release.objects.exists()


def test_preview_warns_about_a_delta_above_one_over_n_squared(client, curator, clinic):
    # given δ = 1e-5 > 1/500² = 4e-6 (allowed, but weaker than the default)
    client.force_login(curator)
    start(client, clinic, definition_kind="approx_dp", delta="0.00001")
    release = Release.objects.get()

    # when
    response = client.get(reverse("wizard-preview", kwargs={"pk": release.pk}))

    # then
    assert "publishes each record with probability δ" in response.content.decode()


def test_schema_form_saves_fill_values_and_keeps_them_on_a_second_save(client, curator):
    # given a fresh upload of the clinic table (columns name, age, sex, visits)
    client.force_login(curator)
    dataset = dataset_create(owner=curator, name="Fresh", upload=csv_upload(), budget_epsilon="1")
    url = reverse("dataset-detail", kwargs={"pk": dataset.pk})
    form = {
        "col0-kind": "identifier",
        "col1-kind": "numeric",
        "col1-lower": "0",
        "col1-upper": "100",
        "col1-fill": "0",
        "col2-kind": "categorical",
        "col2-categories": "F, M",
        "col2-fill": "F",
        "col3-kind": "numeric",
        "col3-lower": "0",
        "col3-upper": "10",
        "action": "save",
    }

    # when the schema is saved, and the page's own form is saved again unchanged
    client.post(url, form)
    page = client.get(url)
    again = {
        f"col{i}-{field}": page.context["column_forms"][i][1].initial.get(field) or ""
        for i in range(4)
        for field in ("kind", "lower", "upper", "categories", "other", "fill")
    }
    client.post(url, {**again, "action": "save"})

    # then the fill values are still declared
    columns = Dataset.objects.get(pk=dataset.pk).schema["columns"]
    assert columns["age"]["fill"] == 0.0
    assert columns["sex"]["fill"] == "F"
    assert "fill" not in columns["visits"]


def test_schema_form_refuses_a_fill_outside_the_bounds_next_to_the_field(client, curator):
    # given
    client.force_login(curator)
    dataset = dataset_create(owner=curator, name="Fresh", upload=csv_upload(), budget_epsilon="1")

    # when
    response = client.post(
        reverse("dataset-detail", kwargs={"pk": dataset.pk}),
        {
            "col0-kind": "identifier",
            "col1-kind": "numeric",
            "col1-lower": "0",
            "col1-upper": "100",
            "col1-fill": "200",
            "col2-kind": "identifier",
            "col3-kind": "identifier",
            "action": "save",
        },
    )

    # then
    assert response.status_code == 200
    age_form = response.context["column_forms"][1][1]
    assert age_form.errors["fill"] == ["the fill value must lie within the bounds"]
    assert Dataset.objects.get(pk=dataset.pk).schema == {}


def test_confirm_page_charges_an_epsilon_dp_release_twice_on_a_blowfish_budget(
    client, curator, clinic, django_capture_on_commit_callbacks
):
    # given a dataset whose first release was Blowfish
    client.force_login(curator)
    start(client, clinic, definition_kind="blowfish", policy_graph="full_domain")
    first = Release.objects.get()
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("wizard-confirm", kwargs={"pk": first.pk}))

    # when an ε-DP draft of ε = 0.5 is confirmed there
    start(client, clinic, definition_kind="pure_dp", epsilon="0.5")
    second = Release.objects.exclude(pk=first.pk).get()
    page = client.get(reverse("wizard-confirm", kwargs={"pk": second.pk})).content.decode()

    # then the page states the 2ε charge and the Blowfish guarantee text is not used
    assert "It will be charged ε = 1 to the dataset's budget" in page
    assert "charged 2ε" in page
    assert "ε-differential privacy with ε = 0.5" in page


def test_blowfish_explanation_endpoint_explains_a_policy_or_names_what_is_missing(
    client, curator, clinic
):
    # given
    client.force_login(curator)
    url = reverse("wizard-blowfish-explanation", kwargs={"dataset_pk": clinic.pk})

    # when
    complete = client.post(
        url,
        {
            "definition_kind": "blowfish",
            "epsilon": "1",
            "policy_graph": "partition_groups",
            "policy_column": "sex",
            "policy_groups": "F | M",
        },
    )
    unfinished = client.post(
        url,
        {
            "definition_kind": "blowfish",
            "epsilon": "1",
            "policy_graph": "distance_threshold",
            "policy_column": "age",
        },
    )

    # then
    assert complete.status_code == 200
    assert "Which group each person is in (sex)" in complete.json()["not_protected"][0]
    assert unfinished.status_code == 400
    assert list(unfinished.json()["errors"]) == ["definition.policy.theta"]


def test_blowfish_explanation_lists_missingness_only_for_policy_columns_without_a_fill(
    client, curator, clinic
):
    # given the clinic schema, whose age has no fill value
    client.force_login(curator)
    url = reverse("wizard-blowfish-explanation", kwargs={"dataset_pk": clinic.pk})
    body = {
        "definition_kind": "blowfish",
        "epsilon": "1",
        "policy_graph": "distance_threshold",
        "policy_column": "age",
        "policy_theta": "5",
    }

    # when
    response = client.post(url, body)

    # then
    assert any(
        "Whether a person's age is missing" in line for line in response.json()["not_protected"]
    )
