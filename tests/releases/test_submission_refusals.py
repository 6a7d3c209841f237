"""Issue 7, points 4, 6, 7 (confirmation), 8 (titles, limits) and 10: refused submissions are
audit events and look like refusals, δ is checked against the real table at submit and recorded
exactly, slugs reveal nothing about other curators' drafts."""

import re
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from audit.models import AuditEvent
from releases.models import LedgerEntry, Release, ReleaseSeries
from releases.services.datasets import dataset_create, dataset_schema_update
from releases.services.errors import ValidationFailed
from releases.services.releases import release_draft_create, release_draft_update, release_submit
from tests.conftest import CLINIC_SCHEMA, csv_upload, draft_body
from tests.languages import compiled_catalogues  # noqa: F401 (a fixture)

BIG_TABLE = b"age,sex\n" + b"".join(
    f"{i % 90},{'F' if i % 2 else 'M'}\n".encode() for i in range(1000)
)
BIG_SCHEMA = {
    "columns": {
        "age": {"kind": "numeric", "lower": 0, "upper": 100},
        "sex": {"kind": "categorical", "categories": ["F", "M"]},
    },
    # The public guess is far below the real 1000 rows.
    "declared_size": 10,
}


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def undersized(curator):
    created = dataset_create(
        owner=curator,
        name="Undersized",
        upload=csv_upload(BIG_TABLE, "big.csv"),
        budget_epsilon="5",
        budget_delta="0.5",
    )
    return dataset_schema_update(dataset=created, user=curator, schema=BIG_SCHEMA)


def refusals(release_id: int) -> list[tuple[str, str]]:
    return [
        (event.details["reason"], event.details["message"])
        for event in AuditEvent.objects.filter(
            action="release.submission_refused", object_id=str(release_id)
        ).order_by("id")
    ]


def count_draft(curator, dataset, title: str, epsilon: float) -> Release:
    return release_draft_create(
        user=curator,
        dataset=dataset,
        title=title,
        definition={"kind": "pure_dp", "epsilon": epsilon},
        queries=[{"kind": "count"}],
    )


def approx_draft(curator, dataset, delta: float) -> Release:
    return release_draft_create(
        user=curator,
        dataset=dataset,
        title="Gaussian",
        definition={"kind": "approx_dp", "epsilon": 0.5, "delta": delta},
        queries=[{"kind": "count"}],
    )


# --- point 4: δ against the real size ------------------------------------------------------------


def test_delta_allowed_by_the_declared_size_is_refused_at_submit_by_the_real_size(
    curator, curator_client, undersized
):
    # given δ = 0.005 ≤ 1/(10·10) on the declared size, but > 1/(10·1000) on the real table
    draft = approx_draft(curator, undersized, 0.005)
    before = list(LedgerEntry.objects.values_list("pk", flat=True))

    # when
    response = curator_client.post(f"/api/v1/releases/{draft.pk}/submit/")

    # then
    assert response.status_code == 409
    detail = response.json()["detail"]
    assert "too large for this table's size" in detail
    assert "δ ≤ 1/(10·n)" in detail
    assert "1000" not in detail
    assert "0.0001" not in detail
    draft.refresh_from_db()
    assert draft.status == Release.Status.DRAFT
    assert list(LedgerEntry.objects.values_list("pk", flat=True)) == before
    [(reason, message)] = refusals(draft.pk)
    assert reason == "delta_too_large"
    # the audit trail, read by compliance, never learns the row count
    assert "1000" not in message
    assert "0.0001" not in message


def test_delta_within_the_real_size_is_accepted(curator, curator_client, undersized):
    # given δ = 1e-5 ≤ 1/(10·1000)
    draft = approx_draft(curator, undersized, 1e-5)

    # when
    response = curator_client.post(f"/api/v1/releases/{draft.pk}/submit/")

    # then
    assert response.status_code == 202
    assert refusals(draft.pk) == []


def test_ledger_records_a_tiny_delta_exactly_as_published(curator, curator_client, undersized):
    # given
    draft = approx_draft(curator, undersized, 1e-14)

    # when
    response = curator_client.post(f"/api/v1/releases/{draft.pk}/submit/")

    # then
    assert response.status_code == 202
    entry = LedgerEntry.objects.get(release=draft)
    assert entry.delta == Decimal("1E-14")
    budget = curator_client.get(f"/api/v1/datasets/{undersized.pk}/").json()["budget_delta"]
    assert budget["reserved"] == "0.00000000000001"
    assert curator_client.get(f"/api/v1/releases/{draft.pk}/").json()["delta_charged"] == (
        "0.00000000000001"
    )


# --- point 6: refusals are events ----------------------------------------------------------------


def test_over_budget_refusal_is_an_event_with_the_reason_and_nothing_else_changes(
    curator, curator_client, dataset
):
    # given
    draft = count_draft(curator, dataset, "Too much", 2.0)

    # when
    response = curator_client.post(f"/api/v1/releases/{draft.pk}/submit/")

    # then
    assert response.status_code == 409
    assert refusals(draft.pk) == [
        (
            "over_budget",
            "Not enough privacy budget: this release requests ε = 2 but only ε = 1 remains.",
        )
    ]
    event = AuditEvent.objects.get(action="release.submission_refused")
    assert (event.actor, event.dataset_id) == ("curator1", dataset.pk)
    assert LedgerEntry.objects.count() == 0


def test_ledger_mismatch_and_second_submission_are_refusal_events(curator, curator_client, dataset):
    # given a DP ledger (first release) and a Blowfish draft on it
    first = count_draft(curator, dataset, "First", 0.2)
    assert curator_client.post(f"/api/v1/releases/{first.pk}/submit/").status_code == 202
    blowfish = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Blowfish",
        definition={"kind": "blowfish", "epsilon": 0.2, "policy": {"graph": "full_domain"}},
        queries=[{"kind": "histogram", "column": "sex"}],
    )

    # when
    mismatch = curator_client.post(f"/api/v1/releases/{blowfish.pk}/submit/")
    again = curator_client.post(f"/api/v1/releases/{first.pk}/submit/")

    # then
    assert (mismatch.status_code, again.status_code) == (409, 409)
    assert [reason for reason, _ in refusals(blowfish.pk)] == ["ledger_mismatch"]
    assert [reason for reason, _ in refusals(first.pk)] == ["already_submitted"]


# --- point 6: the confirm page ------------------------------------------------------------------


def test_confirm_page_of_a_release_that_does_not_fit_shows_an_error_and_a_disabled_submit(
    client, curator, dataset
):
    # given
    client.force_login(curator)
    draft = count_draft(curator, dataset, "Too much", 1.5)

    # when
    page = client.get(f"/releases/{draft.pk}/confirm/").content.decode()

    # then
    assert re.search(r'<p id="refusal" class="refusal" role="alert">', page)
    assert "Not enough privacy budget: this release requests ε = 1.5" in page
    assert "leaving ε" not in page
    assert "-0.5" not in page
    assert '<button type="submit" disabled aria-disabled="true">Submit release</button>' in page


def test_confirm_page_of_a_release_that_fits_shows_the_remainder_and_an_active_submit(
    client, curator, dataset
):
    # given
    client.force_login(curator)
    draft = count_draft(curator, dataset, "Fits", 0.25)

    # when
    page = client.get(f"/releases/{draft.pk}/confirm/").content.decode()

    # then
    assert "leaving ε = 0.75" in page
    assert 'id="refusal"' not in page
    assert '<button type="submit">Submit release</button>' in page


def test_refusal_after_submit_is_shown_as_an_error_not_a_success(client, curator, dataset):
    # given a draft that fitted when the page was shown, then another release took the budget
    client.force_login(curator)
    draft = count_draft(curator, dataset, "Late", 0.6)
    rival = count_draft(curator, dataset, "Rival", 0.6)
    release_submit(release=rival, user=curator)

    # when
    response = client.post(f"/releases/{draft.pk}/confirm/")

    # then
    page = response.content.decode()
    assert response.status_code == 200
    assert '<li class="error">Not enough privacy budget' in page
    assert '<li class="success">' not in page
    draft.refresh_from_db()
    assert draft.status == Release.Status.DRAFT
    assert [reason for reason, _ in refusals(draft.pk)] == ["over_budget"]


@pytest.mark.usefixtures("compiled_catalogues")
def test_a_chinese_reader_reads_the_refusal_in_chinese_and_the_trail_keeps_the_english(
    client, curator, dataset
):
    # given a draft that does not fit the budget, and another taking the budget after the page
    client.force_login(curator)
    too_much = count_draft(curator, dataset, "Too much", 1.5)
    late = count_draft(curator, dataset, "Late", 0.6)
    release_submit(release=count_draft(curator, dataset, "Rival", 0.6), user=curator)

    # when a Chinese reader opens the first's confirm page and submits the second
    chinese = {"HTTP_ACCEPT_LANGUAGE": "zh-Hans"}
    page = client.get(f"/releases/{too_much.pk}/confirm/", **chinese).content.decode()
    after = client.post(f"/releases/{late.pk}/confirm/", **chinese).content.decode()

    # then both refusals read in Chinese, with their amounts
    assert "隐私预算不足：此发布需要 ε = 1.5，但只剩下 ε = 0.4。" in page
    assert '<li class="error">隐私预算不足：此发布需要 ε = 0.6，但只剩下 ε = 0.4。' in after
    assert "Not enough privacy budget" not in page + after
    # and the audit trail keeps the English the engine wrote
    assert refusals(late.pk) == [
        (
            "over_budget",
            "Not enough privacy budget: this release requests ε = 0.6 but only ε = 0.4 remains.",
        )
    ]


# --- point 7: data-derived bounds are confirmed before submission ---------------------------------


@pytest.fixture
def from_data_dataset(curator, dataset):
    schema = {
        **CLINIC_SCHEMA,
        "columns": {
            **CLINIC_SCHEMA["columns"],
            "age": {"kind": "numeric", "lower": 29, "upper": 120, "from_data": True},
        },
    }
    return dataset_schema_update(dataset=dataset, user=curator, schema=schema)


def test_release_using_data_derived_bounds_needs_the_confirmation_checkbox(
    client, curator, from_data_dataset, django_capture_on_commit_callbacks
):
    # given
    client.force_login(curator)
    draft = release_draft_create(
        user=curator,
        dataset=from_data_dataset,
        title="Ages",
        definition={"kind": "pure_dp", "epsilon": 0.5},
        queries=[{"kind": "sum", "column": "age"}],
    )
    shown = client.get(f"/releases/{draft.pk}/confirm/").content.decode()

    # when submitted without, then with the confirmation
    refused = client.post(f"/releases/{draft.pk}/confirm/")
    with django_capture_on_commit_callbacks(execute=True):
        accepted = client.post(f"/releases/{draft.pk}/confirm/", {"confirm_data_derived": "on"})

    # then
    assert 'id="data-derived"' in shown
    assert 'name="confirm_data_derived"' in shown
    assert refused.status_code == 200
    assert '<li class="error">Confirm that you accept publishing' in refused.content.decode()
    assert accepted.status_code == 302
    draft.refresh_from_db()
    assert draft.status == Release.Status.PUBLISHED
    [answer] = draft.answers.all()
    assert answer.statistic["rule"].startswith(
        "bounds taken from the data: they are disclosed exactly"
    )


def test_release_not_using_data_derived_columns_needs_no_confirmation(
    client, curator, from_data_dataset
):
    # given a release on sex only
    client.force_login(curator)
    draft = release_draft_create(
        user=curator,
        dataset=from_data_dataset,
        title="Sexes",
        definition={"kind": "pure_dp", "epsilon": 0.5},
        queries=[{"kind": "histogram", "column": "sex"}],
    )

    # when
    page = client.get(f"/releases/{draft.pk}/confirm/").content.decode()

    # then
    assert 'name="confirm_data_derived"' not in page


# --- point 10: slugs ----------------------------------------------------------------------------


def test_a_series_slug_does_not_reveal_another_curators_draft(
    curator_client, other_curator_client, dataset, other_curator
):
    # given another curator's draft titled "Secret draft title"
    theirs = dataset_create(
        owner=other_curator,
        name="Theirs",
        upload=csv_upload(b"a,b\n1,2\n3,4\n", "theirs.csv"),
        budget_epsilon="1.0",
    )
    theirs = dataset_schema_update(
        dataset=theirs,
        user=other_curator,
        schema={"columns": {"a": {"kind": "numeric", "lower": 0, "upper": 10}}},
    )
    first = other_curator_client.post(
        "/api/v1/releases/",
        {**draft_body(theirs.pk), "title": "Secret draft title", "queries": [{"kind": "count"}]},
        format="json",
    )

    # when this curator uses the same title
    mine = curator_client.post(
        "/api/v1/releases/",
        {**draft_body(dataset.pk), "title": "Secret draft title"},
        format="json",
    )

    # then both slugs carry their own random part: neither says whether the other exists
    assert (first.status_code, mine.status_code) == (201, 201)
    for slug in (first.json()["series"], mine.json()["series"]):
        assert re.fullmatch(r"secret-draft-title-[0-9a-f]{8}", slug)
    assert ReleaseSeries.objects.count() == 2


# --- point 8: titles and limits -------------------------------------------------------------------


@pytest.mark.parametrize("title", ["Tab\there", "Bell\x07", "Line\x85break", "esc\x1b[31m"])
def test_control_characters_in_a_title_are_400_naming_title(curator_client, dataset, title):
    # when
    response = curator_client.post(
        "/api/v1/releases/", {**draft_body(dataset.pk), "title": title}, format="json"
    )

    # then
    assert response.status_code == 400
    assert list(response.json()["errors"]) == ["title"]
    assert Release.objects.count() == 0


def test_more_statistics_than_the_setting_allows_is_400_naming_queries(
    curator_client, dataset, settings
):
    # given
    settings.RELEASE_MAX_STATISTICS = 3

    # when
    response = curator_client.post("/api/v1/releases/", draft_body(dataset.pk), format="json")

    # then
    assert response.status_code == 400
    assert response.json()["errors"] == {"queries": ["choose at most 3 statistics per release"]}
    assert Release.objects.count() == 0


def test_more_published_cells_than_the_setting_allows_is_400_naming_queries(
    curator_client, dataset, settings
):
    # given 2 histograms of 500 bins each on age: 1000 published numbers
    settings.RELEASE_MAX_CELLS = 999
    edges = [i / 5 for i in range(501)]
    body = {
        **draft_body(dataset.pk),
        "queries": [{"kind": "histogram", "column": "age", "bins": edges}] * 2,
    }

    # when
    response = curator_client.post("/api/v1/releases/", body, format="json")
    settings.RELEASE_MAX_CELLS = 1000
    allowed = curator_client.post("/api/v1/releases/", body, format="json")

    # then
    assert response.status_code == 400
    assert list(response.json()["errors"]) == ["queries"]
    assert "1,000 numbers" in response.json()["errors"]["queries"][0]
    assert allowed.status_code == 201


def test_submitting_a_draft_whose_plan_no_longer_fits_is_refused_and_recorded(curator, dataset):
    # given a draft on age, then age made an identifier
    draft = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Ages",
        definition={"kind": "pure_dp", "epsilon": 0.5},
        queries=[{"kind": "sum", "column": "age"}],
    )
    columns = {k: v for k, v in CLINIC_SCHEMA["columns"].items() if k != "age"}
    dataset_schema_update(dataset=dataset, user=curator, schema={"columns": columns})

    # when / then
    with pytest.raises(ValidationFailed) as raised:
        release_submit(release=draft, user=curator)
    assert "queries.0.column" in raised.value.errors
    assert [reason for reason, _ in refusals(draft.pk)] == ["invalid_plan"]


@pytest.mark.parametrize("title", ["Clinic\x00statistics", "Clinic\tstatistics"])
def test_control_characters_in_a_title_are_refused_by_the_services_naming_title(
    curator, dataset, title
):
    # given a draft (the API's parser refuses NUL before the service; pages and other callers
    # reach the service directly, and PostgreSQL cannot store NUL in text at all)
    draft = count_draft(curator, dataset, "Clean", 0.5)
    events_before = AuditEvent.objects.count()

    # when / then
    with pytest.raises(ValidationFailed) as created:
        count_draft(curator, dataset, title, 0.5)
    with pytest.raises(ValidationFailed) as updated:
        release_draft_update(release=draft, user=curator, title=title)
    assert list(created.value.errors) == ["title"]
    assert list(updated.value.errors) == ["title"]
    draft.refresh_from_db()
    assert draft.title == "Clean"
    assert (Release.objects.count(), ReleaseSeries.objects.count()) == (1, 1)
    assert AuditEvent.objects.count() == events_before


PRINTABLE = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cs", "Zs", "Zl", "Zp")),
    min_size=1,
    max_size=20,
)


@hypothesis_settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    before=PRINTABLE,
    control=st.characters(whitelist_categories=("Cc",)),
    after=PRINTABLE,
)
def test_any_control_character_inside_a_title_is_refused_naming_title(
    curator, dataset, before, control, after
):
    # given
    releases_before = Release.objects.count()

    # when / then: refused whatever the control character and the text around it
    with pytest.raises(ValidationFailed) as raised:
        count_draft(curator, dataset, before + control + after, 0.5)
    assert list(raised.value.errors) == ["title"]
    assert Release.objects.count() == releases_before


@pytest.mark.parametrize("title", ["Clinic\x00statistics", "Clinic\tstatistics"])
def test_control_characters_in_a_wizard_title_are_shown_on_the_title_field(
    client, curator, dataset, title
):
    # given
    client.force_login(curator)

    # when
    response = client.post(
        f"/datasets/{dataset.pk}/releases/new/",
        {"title": title, "epsilon": "0.5", "definition_kind": "pure_dp"},
    )

    # then
    assert response.status_code == 200
    assert list(response.context["form"].errors) == ["title"]
    assert Release.objects.count() == 0


def test_published_cells_count_bars_other_buckets_summed_columns_quantiles_and_the_rest(
    curator_client, dataset, settings
):
    # given count 1 + sum of age 1 + vector of sums 2 + mean 1 + histogram of sex with an
    # "other" bucket 3 + histogram of age in 4 bins 4 + three quantiles 3 = 15 published numbers
    dataset.schema = {
        **CLINIC_SCHEMA,
        "columns": {
            **CLINIC_SCHEMA["columns"],
            "sex": {"kind": "categorical", "categories": ["F", "M"], "other": "other"},
        },
    }
    dataset.save(update_fields=["schema"])
    body = {
        **draft_body(dataset.pk),
        "queries": [
            {"kind": "count"},
            {"kind": "sum", "column": "age"},
            {"kind": "sum", "columns": ["age", "visits"]},
            {"kind": "mean", "column": "age"},
            {"kind": "histogram", "column": "sex"},
            {"kind": "histogram", "column": "age", "bins": [0, 25, 50, 75, 100]},
            {"kind": "quantile", "column": "age", "quantiles": [0.25, 0.5, 0.75]},
        ],
    }

    # when
    settings.RELEASE_MAX_CELLS = 14
    refused = curator_client.post("/api/v1/releases/", body, format="json")
    settings.RELEASE_MAX_CELLS = 15
    allowed = curator_client.post("/api/v1/releases/", body, format="json")

    # then
    assert refused.status_code == 400
    assert list(refused.json()["errors"]) == ["queries"]
    assert refused.json()["errors"]["queries"][0].startswith("these statistics publish 15 numbers")
    assert allowed.status_code == 201
    assert Release.objects.count() == 1


def test_limits_also_hold_when_a_draft_is_changed(curator, dataset, settings):
    # given a draft of one count, and a limit of two statistics
    draft = count_draft(curator, dataset, "Small", 0.5)
    settings.RELEASE_MAX_STATISTICS = 2

    # when / then
    with pytest.raises(ValidationFailed) as raised:
        release_draft_update(release=draft, user=curator, queries=[{"kind": "count"}] * 3)
    assert raised.value.errors == {"queries": ["choose at most 2 statistics per release"]}
    draft.refresh_from_db()
    assert draft.queries == [{"kind": "count"}]


def test_confirm_page_of_a_delta_too_large_for_the_real_table_disables_submit(
    client, curator, undersized
):
    # given δ allowed by the declared size (10) but not by the real one (1000)
    client.force_login(curator)
    draft = approx_draft(curator, undersized, 0.005)

    # when
    page = client.get(f"/releases/{draft.pk}/confirm/").content.decode()

    # then the owner is told why, without n, and cannot submit
    assert '<p id="refusal" class="refusal" role="alert">' in page
    assert "too large for this table&#x27;s size" in page
    assert "1000" not in page
    assert '<button type="submit" disabled aria-disabled="true">Submit release</button>' in page
    assert refusals(draft.pk) == []
