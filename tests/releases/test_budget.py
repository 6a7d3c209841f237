"""Budget reservation on submit: refusals change nothing, double submits are refused, concurrent
submissions never overspend, and a failed run gives the reservation back."""

import threading
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from audit.models import AuditEvent
from releases.models import Dataset, LedgerEntry, NoisyAnswer, Release, ReleaseFile
from releases.selectors import dataset_budget
from releases.services.budget_audit import footprint_digest
from releases.services.releases import release_draft_create, release_submit
from releases.services.runs import release_reap_stale
from tests.conftest import CLINIC_CSV, csv_cells, draft_body, stored_cells

CELL_VALUES = ("Ann", "Bob", "Cid", "Dee", "Eve", "120", "34", "51", "29")


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def create_draft(client, dataset: Dataset, epsilon: float) -> int:
    response = client.post(
        "/api/v1/releases/", draft_body(dataset.pk, epsilon=epsilon), format="json"
    )
    assert response.status_code == 201, response.json()
    return response.json()["id"]


def submit(client, release_id: int):
    return client.post(f"/api/v1/releases/{release_id}/submit/")


def budget_of(client, dataset: Dataset) -> dict[str, Decimal]:
    budget = client.get(f"/api/v1/datasets/{dataset.pk}/").json()["budget"]
    return {key: Decimal(value) for key, value in budget.items()}


def test_submit_reserves_the_release_epsilon(curator_client, dataset):
    # given
    release_id = create_draft(curator_client, dataset, 0.5)

    # when (the task is not run: on-commit callbacks are not executed)
    response = submit(curator_client, release_id)

    # then
    assert response.status_code == 202
    assert response.json() == {"id": release_id, "status": "queued"}
    entry = LedgerEntry.objects.get()
    assert (entry.release_id, entry.state, entry.epsilon) == (
        release_id,
        "reserved",
        Decimal("0.5"),
    )
    assert budget_of(curator_client, dataset) == {
        "total": Decimal(1),
        "spent": Decimal(0),
        "reserved": Decimal("0.5"),
        "remaining": Decimal("0.5"),
    }
    release = Release.objects.get(pk=release_id)
    assert release.epsilon_charged == Decimal("0.5")
    assert release.schema == dataset.schema
    reserved = AuditEvent.objects.get(action="budget.reserved")
    assert reserved.details == {
        "release": release_id,
        "epsilon": "0.500000000000",
        "delta": "0",
        "ledger": "differential_privacy",
        "footprint_sha256": footprint_digest(
            LedgerEntry.objects.get(release_id=release_id).footprint
        ),
    }


def test_submit_exceeding_the_budget_is_409_and_changes_nothing(curator_client, dataset):
    # given
    release_id = create_draft(curator_client, dataset, 1.5)
    events_before = AuditEvent.objects.count()

    # when
    response = submit(curator_client, release_id)

    # then
    assert response.status_code == 409
    assert response.json() == {
        "detail": "Not enough privacy budget: this release requests ε = 1.5 "
        "but only ε = 1 remains.",
    }
    assert LedgerEntry.objects.count() == 0
    assert Release.objects.get(pk=release_id).status == "draft"
    # the refusal itself is the only event
    new_events = AuditEvent.objects.order_by("id")[events_before:]
    assert [(e.action, e.details["reason"]) for e in new_events] == [
        ("release.submission_refused", "over_budget")
    ]
    dataset.refresh_from_db()
    assert dataset.ledger_kind == ""
    assert budget_of(curator_client, dataset)["remaining"] == Decimal(1)


def test_submit_exceeding_what_remains_after_a_spend_states_both_amounts(
    curator_client, dataset, django_capture_on_commit_callbacks
):
    # given 0.6 spent by a published release
    with django_capture_on_commit_callbacks(execute=True):
        assert submit(curator_client, create_draft(curator_client, dataset, 0.6)).status_code == 202
    second = create_draft(curator_client, dataset, 0.6)

    # when
    response = submit(curator_client, second)

    # then
    assert response.status_code == 409
    assert response.json() == {
        "detail": "Not enough privacy budget: this release requests ε = 0.6 "
        "but only ε = 0.4 remains.",
    }
    assert list(LedgerEntry.objects.values_list("state", "epsilon")) == [
        ("spent", Decimal("0.6")),
    ]
    assert Release.objects.get(pk=second).status == "draft"


def test_submit_of_exactly_the_remaining_budget_is_accepted(
    curator_client, dataset, django_capture_on_commit_callbacks
):
    # given
    first = create_draft(curator_client, dataset, 0.5)
    second = create_draft(curator_client, dataset, 0.5)

    # when
    with django_capture_on_commit_callbacks(execute=True):
        responses = [submit(curator_client, first), submit(curator_client, second)]

    # then
    assert [r.status_code for r in responses] == [202, 202]
    assert budget_of(curator_client, dataset) == {
        "total": Decimal(1),
        "spent": Decimal(1),
        "reserved": Decimal(0),
        "remaining": Decimal(0),
    }


def test_releases_of_0_6_and_0_4_use_exactly_a_budget_of_1(
    curator_client, dataset, django_capture_on_commit_callbacks
):
    # given
    first = create_draft(curator_client, dataset, 0.6)
    second = create_draft(curator_client, dataset, 0.4)

    # when
    with django_capture_on_commit_callbacks(execute=True):
        responses = [submit(curator_client, first), submit(curator_client, second)]

    # then
    assert [r.status_code for r in responses] == [202, 202]
    assert Release.objects.get(pk=second).epsilon_charged == Decimal("0.4")
    assert budget_of(curator_client, dataset)["remaining"] == Decimal(0)


def test_second_submit_of_a_queued_release_is_409(curator_client, dataset):
    # given a queued release (task not run)
    release_id = create_draft(curator_client, dataset, 0.3)
    assert submit(curator_client, release_id).status_code == 202

    # when
    response = submit(curator_client, release_id)

    # then
    assert response.status_code == 409
    assert response.json() == {"detail": "This release was already submitted (status: queued)."}
    assert LedgerEntry.objects.count() == 1
    assert AuditEvent.objects.filter(action="release.submitted").count() == 1


def test_second_submit_of_a_published_release_is_409_and_charges_nothing(
    curator_client, dataset, django_capture_on_commit_callbacks
):
    # given
    release_id = create_draft(curator_client, dataset, 0.3)
    with django_capture_on_commit_callbacks(execute=True):
        assert submit(curator_client, release_id).status_code == 202

    # when
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = submit(curator_client, release_id)

    # then
    assert response.status_code == 409
    assert "already submitted" in response.json()["detail"]
    assert callbacks == []
    assert list(LedgerEntry.objects.values_list("state", "epsilon")) == [
        ("spent", Decimal("0.3")),
    ]
    assert NoisyAnswer.objects.filter(release_id=release_id).count() == 4
    assert Release.objects.get(pk=release_id).version == 1


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_two_submissions_racing_for_the_last_budget_never_overspend(curator, dataset):
    # given two drafts of 0.6 each on a budget of 1.0
    drafts = [
        release_draft_create(
            user=curator,
            dataset=dataset,
            title=f"Race {i}",
            definition={"kind": "pure_dp", "epsilon": 0.6},
            queries=draft_body(dataset.pk)["queries"],
        )
        for i in range(2)
    ]
    barrier = threading.Barrier(2)
    responses: dict[int, object] = {}
    errors: list[BaseException] = []

    def submit_in_thread(release_id: int) -> None:
        client = APIClient()
        client.force_authenticate(user=curator)
        try:
            barrier.wait(timeout=10)
            responses[release_id] = client.post(f"/api/v1/releases/{release_id}/submit/")
        except BaseException as error:  # surfaced by the main thread below
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=submit_in_thread, args=(d.pk,)) for d in drafts]

    # when
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    # then
    assert errors == []
    assert not any(thread.is_alive() for thread in threads)
    statuses = sorted(r.status_code for r in responses.values())
    assert statuses == [202, 409]
    [refused] = [r for r in responses.values() if r.status_code == 409]
    assert refused.json()["detail"] == (
        "Not enough privacy budget: this release requests ε = 0.6 but only ε = 0.4 remains."
    )
    assert LedgerEntry.objects.count() == 1
    epsilon, _ = dataset_budget(Dataset.objects.get(pk=dataset.pk))
    assert epsilon.spent + epsilon.reserved == Decimal("0.6")
    assert epsilon.spent + epsilon.reserved <= epsilon.total
    assert sorted(Release.objects.values_list("status", flat=True)) == ["draft", "published"]


def test_unreadable_upload_fails_the_release_and_returns_the_reservation(
    curator_client, anonymous_client, dataset, django_capture_on_commit_callbacks
):
    # given the stored table is gone from disk
    release_id = create_draft(curator_client, dataset, 0.5)
    path = Path(dataset.table.path)
    assert stored_cells(str(path)) == csv_cells(CLINIC_CSV)
    path.unlink()

    # when
    with django_capture_on_commit_callbacks(execute=True):
        response = submit(curator_client, release_id)

    # then
    assert response.status_code == 202
    detail = curator_client.get(f"/api/v1/releases/{release_id}/").json()
    assert detail["status"] == "failed"
    assert detail["version"] is None
    assert detail["failure_reason"] == "The uploaded table could not be read."
    assert not any(value in detail["failure_reason"] for value in CELL_VALUES)
    assert NoisyAnswer.objects.count() == 0
    assert ReleaseFile.objects.count() == 0
    assert anonymous_client.get("/api/v1/catalog/").json()["count"] == 0
    entry = LedgerEntry.objects.get()
    assert entry.state == "returned"
    assert budget_of(curator_client, dataset) == {
        "total": Decimal(1),
        "spent": Decimal(0),
        "reserved": Decimal(0),
        "remaining": Decimal(1),
    }
    actions = list(
        AuditEvent.objects.filter(object_type__in=["release", "ledger_entry"])
        .order_by("id")
        .values_list("action", flat=True)
    )
    assert actions == [
        "release.drafted",
        "release.submitted",
        "budget.reserved",
        "task.started",
        "task.failed",
        "budget.returned",
    ]


def test_reaper_sends_a_lost_queued_release_again_and_keeps_its_reservation(curator, dataset):
    # given a release submitted long ago and still queued (its worker died before drawing)
    draft = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Lost",
        definition={"kind": "pure_dp", "epsilon": 0.5},
        queries=[{"kind": "count"}],
    )
    release_submit(release=draft, user=curator)  # on_commit never runs here: nothing is enqueued
    Release.objects.filter(pk=draft.pk).update(submitted_at=timezone.now() - timedelta(hours=2))

    # when
    reaped = release_reap_stale(older_than=timedelta(hours=1))

    # then its message was lost, not its worker: it is sent again and keeps its reservation
    draft.refresh_from_db()
    assert [(r.release_id, r.outcome) for r in reaped] == [(draft.pk, "redelivered")]
    assert draft.status == Release.Status.QUEUED
    assert LedgerEntry.objects.get(release=draft).state == LedgerEntry.State.RESERVED


def test_reaper_leaves_recent_releases_alone(curator, dataset):
    # given a release submitted just now
    draft = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Fresh",
        definition={"kind": "pure_dp", "epsilon": 0.5},
        queries=[{"kind": "count"}],
    )
    release_submit(release=draft, user=curator)

    # when
    reaped = release_reap_stale(older_than=timedelta(hours=1))

    # then
    draft.refresh_from_db()
    assert reaped == []
    assert draft.status == Release.Status.QUEUED
