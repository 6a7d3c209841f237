"""Dual control (issue 12, point 4): on a dataset that requires approval a submitted release waits,
its budget reserved, until a compliance officer other than its curator approves it (then a worker
runs it) or rejects it (its budget comes back); the approver sees the plan, never the data; the
curator sees the decision; the trail records every step."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.exceptions import PermissionDenied
from django.test import Client
from rest_framework.test import APIClient

from audit.models import AuditEvent
from releases import selectors
from releases.models import LedgerEntry, Release, ReleaseApproval
from releases.services.approvals import (
    dataset_approval_requirement_set,
    release_approve,
    release_reject,
)
from releases.services.budget_audit import trail_verification
from releases.services.datasets import dataset_create, dataset_schema_update
from releases.services.errors import Conflict, ValidationFailed
from releases.services.raw_data import dataset_raw_delete
from releases.services.releases import release_draft_create, release_submit
from releases.services.runs import release_reap_stale
from tests.conftest import CLINIC_SCHEMA, csv_upload, make_user

# A value only the rows hold: the approver's pages and answers must never show it.
SECRET_NAME = "Zqxjvkpwmb"
TABLE = f"name,age,sex,visits\n{SECRET_NAME},34,F,2\nBob,51,M,0\nCid,29,M,5\nDee,77,F,1\n".encode()


@pytest.fixture
def officer(db):
    return make_user("officer1", "compliance")


@pytest.fixture
def guarded(curator, officer):
    """A dataset of curator1 that requires approval."""
    dataset = dataset_create(
        owner=curator, name="Clinic", upload=csv_upload(TABLE), budget_epsilon="1.0"
    )
    dataset = dataset_schema_update(dataset=dataset, user=curator, schema=CLINIC_SCHEMA)
    return dataset_approval_requirement_set(dataset=dataset, user=officer, required=True)


def submitted(dataset, user, epsilon: float = 0.4) -> Release:
    draft = release_draft_create(
        user=user,
        dataset=dataset,
        title="Ages",
        definition={"kind": "pure_dp", "epsilon": epsilon},
        queries=[{"kind": "count"}, {"kind": "mean", "column": "age"}],
    )
    release_submit(release=draft, user=user)
    return Release.objects.get(pk=draft.pk)


def actions(release: Release) -> list[str]:
    return list(
        AuditEvent.objects.filter(object_type="release", object_id=str(release.pk))
        .order_by("id")
        .values_list("action", flat=True)
    )


def test_a_release_waits_with_its_budget_reserved_and_runs_once_approved(
    guarded, curator, officer, django_capture_on_commit_callbacks
):
    # when the curator submits
    release = submitted(guarded, curator)

    # then nothing runs, and the budget is held
    assert release.status == Release.Status.AWAITING_APPROVAL
    assert not release.answers.exists()
    assert LedgerEntry.objects.get(release=release).state == LedgerEntry.State.RESERVED
    assert selectors.dataset_budget(guarded)[0].reserved == Decimal("0.4")
    assert actions(release) == [
        "release.drafted",
        "release.submitted",
        "release.approval_requested",
    ]
    # and the reaper leaves a waiting release alone, however old
    assert release_reap_stale(older_than=timedelta(0)) == []

    # when another officer approves it (and the worker runs what it queued)
    with django_capture_on_commit_callbacks(execute=True):
        release_approve(release=release, user=officer, comment="Bounds are public; fine.")

    # then it ran and published, spending what it reserved
    release.refresh_from_db()
    assert release.status == Release.Status.PUBLISHED
    approval = ReleaseApproval.objects.get(release=release)
    assert (approval.decision, approval.decided_by, approval.comment) == (
        "approved",
        officer,
        "Bounds are public; fine.",
    )
    assert LedgerEntry.objects.get(release=release).state == LedgerEntry.State.SPENT
    assert actions(release)[2:4] == ["release.approval_requested", "release.approved"]
    approved = AuditEvent.objects.get(action="release.approved")
    assert (approved.actor, approved.details["comment"]) == ("officer1", "Bounds are public; fine.")
    chain = trail_verification()
    assert chain["valid"], chain


def test_a_rejected_release_never_runs_and_its_budget_comes_back(guarded, curator, officer):
    release = submitted(guarded, curator)

    # when
    release_reject(release=release, user=officer, comment="Too many statistics for this table.")

    # then
    release.refresh_from_db()
    assert release.status == Release.Status.REJECTED
    assert not release.answers.exists()
    assert LedgerEntry.objects.get(release=release).state == LedgerEntry.State.RETURNED
    budget = selectors.dataset_budget(guarded)[0]
    assert (budget.spent, budget.reserved) == (0, 0)
    assert actions(release)[-1] == "release.rejected"
    assert AuditEvent.objects.filter(action="budget.returned").count() == 1
    chain = trail_verification()
    assert chain["valid"], chain
    # and it cannot be submitted again
    with pytest.raises(Conflict):
        release_submit(release=release, user=curator)


def test_nobody_approves_their_own_release(curator, officer):
    # given someone who is both curator and compliance officer, on a guarded dataset of theirs
    both = make_user("both1", "curator")
    both.groups.add(officer.groups.get())
    dataset = dataset_create(owner=both, name="Own", upload=csv_upload(TABLE), budget_epsilon="1")
    dataset = dataset_schema_update(dataset=dataset, user=both, schema=CLINIC_SCHEMA)
    dataset_approval_requirement_set(dataset=dataset, user=officer, required=True)
    release = submitted(dataset, both)

    # when they try to decide it, on every door
    with pytest.raises(PermissionDenied):
        release_approve(release=release, user=both, comment="Mine is fine.")
    with pytest.raises(PermissionDenied):
        release_reject(release=release, user=both, comment="Mine is not.")
    api = APIClient()
    api.force_authenticate(both)
    refused = api.post(f"/api/v1/releases/{release.pk}/approve/", {"comment": "x"}, format="json")
    page = Client()
    page.force_login(both)
    review = page.get(f"/audit/approvals/{release.pk}/").content.decode()
    posted = page.post(f"/audit/approvals/{release.pk}/approve/", {"comment": "x"})

    # then it still waits
    assert refused.status_code == 403
    assert 'id="own-release"' in review
    assert 'id="approve-form"' not in review
    assert posted.status_code == 403
    release.refresh_from_db()
    assert release.status == Release.Status.AWAITING_APPROVAL
    assert not ReleaseApproval.objects.exists()


def test_a_decision_is_made_once_with_a_comment(guarded, curator, officer):
    release = submitted(guarded, curator)
    other_officer = make_user("officer2", "compliance")

    # a comment is required
    for comment in (None, "", "   ", 5, "x" * 2001, "nul\x00"):
        with pytest.raises(ValidationFailed) as refused:
            release_approve(release=release, user=officer, comment=comment)
        assert set(refused.value.errors) == {"comment"}

    # when decided, it cannot be decided again
    release_reject(release=release, user=officer, comment="No.")
    with pytest.raises(Conflict):
        release_approve(release=release, user=other_officer, comment="Yes.")
    assert ReleaseApproval.objects.count() == 1


def test_a_release_on_a_dataset_without_the_requirement_runs_at_once(
    dataset, curator, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        release = submitted(dataset, curator)
    release.refresh_from_db()
    assert release.status == Release.Status.PUBLISHED
    assert "release.approval_requested" not in actions(release)


def test_the_requirement_is_compliance_s_and_audited(curator, officer, dataset):
    api = APIClient()
    url = f"/api/v1/datasets/{dataset.pk}/approval/"

    # a curator may not lift (or set) it
    api.force_authenticate(curator)
    assert api.put(url, {"required": True}, format="json").status_code == 403

    # compliance sets it; bad values are named
    api.force_authenticate(officer)
    assert api.put(url, {"required": "yes"}, format="json").json()["errors"] == {
        "required": ["must be true or false"]
    }
    assert api.put(url, [], format="json").json()["errors"] == {"body": ["must be a JSON object"]}
    answer = api.put(url, {"required": True}, format="json")
    assert answer.json() == {"dataset": dataset.pk, "requires_approval": True}
    # and through the privacy report's form
    page = Client()
    page.force_login(officer)
    page.post(f"/audit/datasets/{dataset.pk}/approval/", {})
    dataset.refresh_from_db()
    assert dataset.requires_approval is False
    changes = AuditEvent.objects.filter(action="dataset.approval_requirement_changed")
    assert [(e.actor, e.details) for e in changes.order_by("id")] == [
        ("officer1", {"requires_approval": True}),
        ("officer1", {"requires_approval": False}),
    ]


def test_the_approver_sees_the_plan_and_never_the_data(guarded, curator, officer):
    release = submitted(guarded, curator)
    page = Client()
    page.force_login(officer)
    api = APIClient()
    api.force_authenticate(officer)

    # when
    listing = page.get("/audit/approvals/").content.decode()
    review = page.get(f"/audit/approvals/{release.pk}/").content.decode()
    awaiting = api.get("/api/v1/approvals/").json()

    # then the definition, the risk, the statistics and the charge are there
    assert f"#{release.pk} Ages" in listing
    assert "ε-differential privacy with ε = 0.4" in review
    assert 'id="approval-risk"' in review
    assert "0.599" in review
    assert "Mean of age" in review
    assert "With 95% probability" in review
    assert 'id="approve-form"' in review
    assert 'id="reject-form"' in review
    assert [entry["id"] for entry in awaiting["results"]] == [release.pk]
    assert awaiting["results"][0]["curator"] == "curator1"
    # and no value of the rows
    for shown in (listing, review, str(awaiting)):
        assert SECRET_NAME not in shown


def test_the_curator_sees_the_wait_and_the_decision(guarded, curator, officer):
    release = submitted(guarded, curator)
    page = Client()
    page.force_login(curator)
    api = APIClient()
    api.force_authenticate(curator)

    waiting = page.get(f"/releases/{release.pk}/").content.decode()
    assert 'id="awaiting-approval"' in waiting
    assert api.get(f"/api/v1/releases/{release.pk}/").json()["approval"] is None

    release_reject(release=release, user=officer, comment="Ask for fewer statistics.")

    rejected = page.get(f"/releases/{release.pk}/").content.decode()
    assert 'id="rejected"' in rejected
    assert "Rejected by <strong>officer1</strong>" in rejected
    assert "Ask for fewer statistics." in rejected
    detail = api.get(f"/api/v1/releases/{release.pk}/").json()
    assert detail["status"] == "rejected"
    assert detail["approval"]["decision"] == "rejected"
    assert detail["approval"]["comment"] == "Ask for fewer statistics."


def test_the_privacy_report_shows_approvals(guarded, curator, officer):
    approved = submitted(guarded, curator, epsilon=0.2)
    waiting = submitted(guarded, curator, epsilon=0.2)
    release_approve(release=approved, user=officer, comment="Fine.")
    page = Client()
    page.force_login(officer)

    report = page.get(f"/audit/datasets/{guarded.pk}/report/").content.decode()

    assert "Approved by officer1" in report
    assert "Fine." in report
    assert f'href="/audit/approvals/{waiting.pk}/">Awaiting approval' in report
    assert 'name="requires_approval" checked' in report


def test_raw_data_is_not_deleted_under_a_waiting_release(guarded, curator):
    submitted(guarded, curator)
    with pytest.raises(Conflict, match="awaiting approval"):
        dataset_raw_delete(dataset_id=guarded.pk, actor=curator, reason="Retention.")


@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_deciding_through_the_api(
    guarded, curator, officer, decision, django_capture_on_commit_callbacks
):
    release = submitted(guarded, curator)
    api = APIClient()
    api.force_authenticate(officer)
    url = f"/api/v1/releases/{release.pk}/{decision}/"

    assert api.post(url, {}, format="json").json()["errors"] == {
        "comment": ["Say why: the curator and the audit trail see it."]
    }
    with django_capture_on_commit_callbacks(execute=True):
        answer = api.post(url, {"comment": "Checked."}, format="json")

    assert answer.status_code == 200
    assert answer.json()["approval"]["decided_by"] == "officer1"
    assert answer.json()["status"] == ("queued" if decision == "approve" else "rejected")
    assert Release.objects.get(pk=release.pk).status == (
        "published" if decision == "approve" else "rejected"
    )
    assert api.post(url, {"comment": "Again."}, format="json").status_code == 409


def test_an_officer_does_not_set_dual_control_on_their_own_dataset(curator, officer):
    # given someone both curator and officer, whose dataset another officer guards
    both = make_user("both1", "curator")
    both.groups.add(officer.groups.get())
    dataset = dataset_create(owner=both, name="Own", upload=csv_upload(TABLE), budget_epsilon="1")
    dataset_approval_requirement_set(dataset=dataset, user=officer, required=True)
    api = APIClient()
    api.force_authenticate(both)

    # when they try to lift it, through the API and the report's form
    lifted = api.put(f"/api/v1/datasets/{dataset.pk}/approval/", {"required": False}, format="json")
    page = Client()
    page.force_login(both)
    posted = page.post(f"/audit/datasets/{dataset.pk}/approval/", {})

    # then it stays
    assert (lifted.status_code, posted.status_code) == (403, 403)
    dataset.refresh_from_db()
    assert dataset.requires_approval is True


def test_a_comment_has_no_hidden_characters(guarded, curator, officer):
    release = submitted(guarded, curator)
    for comment in ("\u202eevil", "bell\u0007", "tab\there"):
        with pytest.raises(ValidationFailed) as refused:
            release_approve(release=release, user=officer, comment=comment)
        assert set(refused.value.errors) == {"comment"}
    release_approve(release=release, user=officer, comment="Two lines\nare fine.")


def test_a_rejection_leaves_the_schema_open_to_fixes(guarded, curator, officer):
    release = submitted(guarded, curator)
    release_reject(release=release, user=officer, comment="Declare wider age bounds.")

    fixed = dataset_schema_update(
        dataset=guarded,
        user=curator,
        schema={**CLINIC_SCHEMA, "columns": {"age": {"kind": "numeric", "lower": 0, "upper": 120}}},
    )

    assert fixed.schema["columns"]["age"]["upper"] == 120
