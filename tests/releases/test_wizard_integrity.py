"""The release wizard after the schema changed under a draft, and Blowfish with a person key
(issue 7, points 1 and 8): each page shows the problem where the curator can fix it, never a 500."""

import re

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse
from django.utils.html import escape

from privacy_engine import blowfish_refusal
from releases.curator_views import DRAFT_DEFINITION_STALE
from releases.models import Release
from releases.services.datasets import dataset_create, dataset_schema_update
from releases.services.releases import release_draft_create
from tests.conftest import CLINIC_SCHEMA, csv_upload

DISTANCE_ON_AGE = {"graph": "distance_threshold", "column": "age", "theta": 5.0}
KEYED_SCHEMA = {
    **CLINIC_SCHEMA,
    "declared_size": 500,
    "person_key": "name",
    "max_rows_per_person": 2,
}
AGE_AS_IDENTIFIER = {
    **CLINIC_SCHEMA,
    "declared_size": 500,
    "columns": {**CLINIC_SCHEMA["columns"], "age": {"kind": "identifier"}},
}


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def clinic(curator):
    created = dataset_create(
        owner=curator, name="Clinic", upload=csv_upload(), budget_epsilon="2", declared_size=500
    )
    return dataset_schema_update(
        dataset=created, user=curator, schema={**CLINIC_SCHEMA, "declared_size": 500}
    )


@pytest.fixture
def keyed_clinic(curator, clinic):
    return dataset_schema_update(dataset=clinic, user=curator, schema=KEYED_SCHEMA)


def blowfish_draft(curator, dataset) -> Release:
    return release_draft_create(
        user=curator,
        dataset=dataset,
        title="Ages under Blowfish",
        definition={"kind": "blowfish", "epsilon": 1.0, "policy": DISTANCE_ON_AGE},
        queries=[{"kind": "count"}, {"kind": "sum", "column": "age"}],
    )


def sum_of_age_draft(curator, dataset) -> Release:
    return release_draft_create(
        user=curator,
        dataset=dataset,
        title="Sum of ages",
        definition={"kind": "pure_dp", "epsilon": 1.0},
        queries=[{"kind": "count"}, {"kind": "sum", "column": "age"}],
    )


def definition_card(page: str) -> str:
    """The privacy step's "Which privacy definition?" card."""
    start = page.index('id="definition-choice"')
    return page[start : page.index('<div class="card"', start)]


def message_texts(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


# --- point 1: Blowfish is not offered with a person key ------------------------------------------


def test_privacy_step_does_not_offer_blowfish_with_a_person_key_and_says_why(
    client, curator, keyed_clinic
):
    # given a schema whose rows are grouped by a person key
    client.force_login(curator)
    refusal = blowfish_refusal(keyed_clinic.schema)
    assert refusal is not None

    # when the curator starts a release
    response = client.get(reverse("wizard-start", kwargs={"dataset_pk": keyed_clinic.pk}))

    # then Blowfish is not among the definitions, and the card says why in the engine's words
    assert response.status_code == 200
    card = definition_card(response.content.decode())
    assert 'value="pure_dp"' in card
    assert 'value="approx_dp"' in card
    assert 'value="blowfish"' not in card
    assert escape(refusal) in card
    assert 'id="policy-section"' not in response.content.decode()


def test_privacy_step_offers_blowfish_without_a_person_key(client, curator, clinic):
    # given a schema without a person key
    client.force_login(curator)

    # when
    response = client.get(reverse("wizard-start", kwargs={"dataset_pk": clinic.pk}))

    # then
    assert response.status_code == 200
    assert 'value="blowfish"' in definition_card(response.content.decode())
    assert 'id="policy-section"' in response.content.decode()


def test_posted_blowfish_with_a_person_key_is_refused_next_to_the_definition_choice(
    client, curator, keyed_clinic
):
    # given
    client.force_login(curator)
    refusal = blowfish_refusal(keyed_clinic.schema)

    # when a Blowfish definition is posted anyway (an old tab, a hand-made request)
    response = client.post(
        reverse("wizard-start", kwargs={"dataset_pk": keyed_clinic.pk}),
        {
            "title": "Keyed Blowfish",
            "epsilon": "1",
            "definition_kind": "blowfish",
            "policy_graph": "full_domain",
        },
    )

    # then the page answers with the reason beside the choice, keeps the input, creates nothing
    assert response.status_code == 200
    form = response.context["form"]
    assert form.errors == {"definition_kind": [refusal]}
    page = response.content.decode()
    assert escape(refusal) in definition_card(page)
    assert 'value="Keyed Blowfish"' in page
    assert Release.objects.count() == 0


def test_epsilon_dp_with_a_person_key_still_makes_a_draft(client, curator, keyed_clinic):
    # given
    client.force_login(curator)

    # when
    response = client.post(
        reverse("wizard-start", kwargs={"dataset_pk": keyed_clinic.pk}),
        {"title": "Keyed DP", "epsilon": "1", "definition_kind": "pure_dp"},
    )

    # then
    release = Release.objects.get()
    assert response.status_code == 302
    assert response.url == reverse("wizard-statistics", kwargs={"pk": release.pk})
    assert release.definition == {"kind": "pure_dp", "epsilon": 1.0}


# --- point 8: the privacy step of a Blowfish draft the schema no longer fits ----------------------


def test_privacy_step_shows_a_policy_column_made_an_identifier_on_its_field(
    client, curator, clinic
):
    # given a Blowfish draft on age, and then age declared an identifier
    draft = blowfish_draft(curator, clinic)
    dataset_schema_update(dataset=clinic, user=curator, schema=AGE_AS_IDENTIFIER)
    client.force_login(curator)

    # when the curator opens the draft's privacy step
    response = client.get(reverse("wizard-privacy", kwargs={"pk": draft.pk}))

    # then the page shows what no longer fits, on the policy's column, with the draft prefilled
    assert response.status_code == 200
    form = response.context["form"]
    assert form.errors == {
        "policy_column": ["'age' is not a numeric column"],
        "__all__": [DRAFT_DEFINITION_STALE],
    }
    page = response.content.decode()
    assert re.search(
        r'<input type="radio" name="definition_kind" value="blowfish"[^>]* checked', page
    )
    assert '<option value="distance_threshold" selected>' in page
    assert 'name="policy_theta" value="5.0"' in page
    assert "&#x27;age&#x27; is not a numeric column" in page
    assert response.context["blowfish"] is None
    draft.refresh_from_db()
    assert draft.definition["policy"] == DISTANCE_ON_AGE


def test_privacy_step_of_a_broken_blowfish_draft_saves_the_fixed_policy(client, curator, clinic):
    # given the same draft, broken by the schema change
    draft = blowfish_draft(curator, clinic)
    dataset_schema_update(dataset=clinic, user=curator, schema=AGE_AS_IDENTIFIER)
    client.force_login(curator)

    # when the curator picks another numeric column and saves
    response = client.post(
        reverse("wizard-privacy", kwargs={"pk": draft.pk}),
        {
            "title": "Visits under Blowfish",
            "epsilon": "1",
            "definition_kind": "blowfish",
            "policy_graph": "distance_threshold",
            "policy_column": "visits",
            "policy_theta": "2",
        },
    )

    # then the draft is saved with the new policy, without the sum the schema no longer allows,
    # and the wizard moves on to choose statistics again, saying which one was removed
    assert response.status_code == 302
    assert response.url == reverse("wizard-statistics", kwargs={"pk": draft.pk})
    draft.refresh_from_db()
    assert draft.title == "Visits under Blowfish"
    assert draft.definition["policy"] == {
        "graph": "distance_threshold",
        "column": "visits",
        "theta": 2.0,
    }
    assert draft.queries == [{"kind": "count"}]
    assert message_texts(response) == [
        "The dataset's schema changed since these statistics were chosen, and they no longer "
        "fit it, so they were removed from the draft (Sum of age: a sum needs a numeric "
        "column). Choose them again."
    ]


def test_privacy_step_of_a_blowfish_draft_after_a_person_key_was_declared(client, curator, clinic):
    # given a Blowfish draft, and then a person key declared on the schema
    draft = blowfish_draft(curator, clinic)
    keyed = dataset_schema_update(dataset=clinic, user=curator, schema=KEYED_SCHEMA)
    refusal = blowfish_refusal(keyed.schema)
    client.force_login(curator)

    # when the curator opens the draft's privacy step
    response = client.get(reverse("wizard-privacy", kwargs={"pk": draft.pk}))

    # then the refusal sits on the definition choice, Blowfish is no longer offered
    assert response.status_code == 200
    assert response.context["form"].errors["definition_kind"] == [refusal]
    card = definition_card(response.content.decode())
    assert escape(refusal) in card
    assert 'value="blowfish"' not in card

    # and when they choose ε-DP and save, the draft is fixed
    fixed = client.post(
        reverse("wizard-privacy", kwargs={"pk": draft.pk}),
        {"title": "Ages", "epsilon": "1", "definition_kind": "pure_dp"},
    )
    assert fixed.status_code == 302
    draft.refresh_from_db()
    assert draft.definition == {"kind": "pure_dp", "epsilon": 1.0}


def test_invalid_post_on_a_broken_blowfish_draft_renders_the_form_errors(client, curator, clinic):
    # given a broken Blowfish draft
    draft = blowfish_draft(curator, clinic)
    dataset_schema_update(dataset=clinic, user=curator, schema=AGE_AS_IDENTIFIER)
    client.force_login(curator)

    # when the curator posts without ε or p
    response = client.post(
        reverse("wizard-privacy", kwargs={"pk": draft.pk}),
        {"title": "Ages", "definition_kind": "blowfish", "policy_graph": "full_domain"},
    )

    # then the page shows the form's own error, nothing is saved
    assert response.status_code == 200
    assert response.context["form"].errors == {"__all__": ["Set either ε or p."]}
    draft.refresh_from_db()
    assert draft.definition["policy"] == DISTANCE_ON_AGE


# --- point 8: the simulated preview after a schema change --------------------------------------


def test_simulated_preview_api_names_the_statistic_the_schema_no_longer_fits(
    curator, curator_client, clinic
):
    # given a draft with a sum on age, and then age declared an identifier
    draft = sum_of_age_draft(curator, clinic)
    dataset_schema_update(dataset=clinic, user=curator, schema=AGE_AS_IDENTIFIER)

    # when
    response = curator_client.get(f"/api/v1/releases/{draft.pk}/simulated-preview/")

    # then
    assert response.status_code == 400
    body = response.json()
    assert list(body["errors"]) == ["queries.1.column"]
    assert body["detail"]


def test_wizard_preview_after_a_schema_change_returns_to_the_statistics(client, curator, clinic):
    # given a draft with a sum on age, and then age declared an identifier
    draft = sum_of_age_draft(curator, clinic)
    dataset_schema_update(dataset=clinic, user=curator, schema=AGE_AS_IDENTIFIER)
    client.force_login(curator)

    # when the curator opens its preview
    response = client.get(reverse("wizard-preview", kwargs={"pk": draft.pk}))

    # then they are sent back to the statistics with the reason
    assert response.status_code == 302
    assert response.url == reverse("wizard-statistics", kwargs={"pk": draft.pk})
    assert message_texts(response) == [
        "Choose the statistics again: statistic 2 (Sum of age): a sum needs a numeric column"
    ]


def test_wizard_preview_of_a_broken_blowfish_policy_returns_to_the_privacy_step(
    client, curator, clinic
):
    # given a Blowfish draft on age, and then age declared an identifier
    draft = release_draft_create(
        user=curator,
        dataset=clinic,
        title="Counts under Blowfish",
        definition={"kind": "blowfish", "epsilon": 1.0, "policy": DISTANCE_ON_AGE},
        queries=[{"kind": "count"}, {"kind": "sum", "column": "visits"}],
    )
    dataset_schema_update(dataset=clinic, user=curator, schema=AGE_AS_IDENTIFIER)
    client.force_login(curator)

    # when the curator opens its preview
    response = client.get(reverse("wizard-preview", kwargs={"pk": draft.pk}))

    # then they are sent to the privacy step, where the policy can be fixed
    assert response.status_code == 302
    assert response.url == reverse("wizard-privacy", kwargs={"pk": draft.pk})
    assert message_texts(response) == [
        "Choose the privacy definition again: the dataset's schema changed since this draft "
        "was saved (policy.column: 'age' is not a numeric column)."
    ]


def test_statistics_step_of_a_broken_blowfish_draft_points_to_the_privacy_step(
    client, curator, clinic
):
    # given a Blowfish draft on age, and then age declared an identifier
    draft = blowfish_draft(curator, clinic)
    dataset_schema_update(dataset=clinic, user=curator, schema=AGE_AS_IDENTIFIER)
    client.force_login(curator)
    url = reverse("wizard-statistics", kwargs={"pk": draft.pk})

    # when the curator opens the statistics step and saves a count
    shown = client.get(url)
    response = client.post(
        url,
        {
            "stat-TOTAL_FORMS": "1",
            "stat-INITIAL_FORMS": "0",
            "stat-MIN_NUM_FORMS": "1",
            "stat-MAX_NUM_FORMS": "1000",
            "stat-0-kind": "count",
            "stat-0-weight": "1",
        },
    )

    # then the page says the definition must be fixed first, where, and saves nothing
    assert shown.status_code == 200
    assert response.status_code == 200
    assert message_texts(response) == [
        "The dataset's schema changed since the privacy definition was chosen (policy.column: "
        "'age' is not a numeric column): fix it on the Privacy step first."
    ]
    draft.refresh_from_db()
    assert draft.queries == [
        {"kind": "count"},
        {"kind": "sum", "column": "age"},
    ]


# --- point 8: the limits on the statistics step ---------------------------------------------------


def test_statistics_step_beyond_the_statistics_limit_says_so_and_saves_nothing(
    client, curator, clinic, settings
):
    # given a draft of a count and a sum, and a limit of two statistics
    draft = sum_of_age_draft(curator, clinic)
    settings.RELEASE_MAX_STATISTICS = 2
    client.force_login(curator)
    counts = {
        f"stat-{index}-{field}": value
        for index in range(3)
        for field, value in (("kind", "count"), ("weight", "1"))
    }

    # when the curator saves three counts
    response = client.post(
        reverse("wizard-statistics", kwargs={"pk": draft.pk}),
        {
            "stat-TOTAL_FORMS": "3",
            "stat-INITIAL_FORMS": "0",
            "stat-MIN_NUM_FORMS": "1",
            "stat-MAX_NUM_FORMS": "1000",
            **counts,
        },
    )

    # then the page says why, and the draft keeps its statistics
    assert response.status_code == 200
    assert message_texts(response) == ["choose at most 2 statistics per release"]
    assert '<li class="error">choose at most 2 statistics per release</li>' in (
        response.content.decode()
    )
    draft.refresh_from_db()
    assert draft.queries == [{"kind": "count"}, {"kind": "sum", "column": "age"}]
