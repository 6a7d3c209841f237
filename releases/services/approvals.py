"""Dual control: a dataset that requires approval holds each submitted release (its budget
reserved) until a compliance officer other than its curator approves it, and only then does a
worker run it; a rejection returns the reservation. Every step is an audit event."""

from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils.translation import gettext

from audit.chain import AuditAction, audit_record
from releases.models import Dataset, LedgerEntry, Release, ReleaseApproval
from releases.services.clock import database_now
from releases.services.errors import Conflict
from releases.services.runs import ledger_settle
from releases.services.text import free_text_clean

MAX_COMMENT_LENGTH = 2000


def approval_comment_clean(comment: Any) -> str:
    """The decision's comment, required: it is what the curator and the trail are told (see
    :func:`free_text_clean`)."""
    return free_text_clean(
        comment,
        field="comment",
        noun=gettext("The comment"),
        max_length=MAX_COMMENT_LENGTH,
        missing=gettext("Say why: the curator and the audit trail see it."),
    )


def dataset_approval_requirement_set(*, dataset: Dataset, user, required: bool) -> Dataset:
    """Require (or stop requiring) approval of this dataset's releases. Releases already
    awaiting approval keep waiting for a decision either way."""
    with transaction.atomic():
        locked = Dataset.objects.select_for_update().get(pk=dataset.pk)
        if locked.owner_id == user.pk:
            raise PermissionDenied(
                "Dual control on your own dataset is another compliance officer's to set."
            )
        if locked.requires_approval == required:
            return locked
        locked.requires_approval = required
        locked.save(update_fields=["requires_approval"])
        audit_record(
            actor=user,
            action=AuditAction.APPROVAL_REQUIREMENT_CHANGED,
            object_type="dataset",
            object_id=locked.pk,
            dataset_id=locked.pk,
            details={"requires_approval": required},
        )
    return locked


def _awaiting_locked(release: Release, user) -> Release:
    """The release's row locked for a decision by ``user``; refused when ``user`` is its curator
    (403) or it does not await approval (409)."""
    locked = Release.objects.select_for_update().select_related("dataset").get(pk=release.pk)
    if user.pk in (locked.created_by_id, locked.dataset.owner_id):
        raise PermissionDenied("Nobody approves their own release: ask another officer.")
    if locked.status != Release.Status.AWAITING_APPROVAL:
        raise Conflict(
            f"This release does not await approval (status: {locked.status}); it cannot be decided."
        )
    return locked


def _decide(locked: Release, *, user, decision: str, comment: str) -> ReleaseApproval:
    approval = ReleaseApproval.objects.create(
        release=locked,
        decision=decision,
        decided_by=user,
        comment=comment,
        decided_at=database_now(),
    )
    audit_record(
        actor=user,
        action=AuditAction.RELEASE_APPROVED
        if decision == ReleaseApproval.Decision.APPROVED
        else AuditAction.RELEASE_REJECTED,
        object_type="release",
        object_id=locked.pk,
        dataset_id=locked.dataset_id,
        details={
            "title": locked.title,
            "curator": locked.created_by.get_username(),
            "comment": comment,
        },
    )
    return approval


def release_approve(*, release: Release, user, comment: Any) -> Release:
    """Approve a release awaiting approval: it is queued for a worker, with the budget it
    reserved at submission."""
    # Imported here: the task module imports the run services, which import the releases ones.
    from releases.tasks import release_run_task

    comment = approval_comment_clean(comment)
    with transaction.atomic():
        locked = _awaiting_locked(release, user)
        _decide(locked, user=user, decision=ReleaseApproval.Decision.APPROVED, comment=comment)
        locked.status = Release.Status.QUEUED
        # When it was queued: the reaper sends it again only if this message is lost.
        locked.heartbeat_at = database_now()
        locked.save(update_fields=["status", "heartbeat_at"])
        release_run_task.delay_on_commit(locked.pk)
    return locked


def release_reject(*, release: Release, user, comment: Any) -> Release:
    """Reject a release awaiting approval: it never runs, and its reservation is returned."""
    comment = approval_comment_clean(comment)
    with transaction.atomic():
        locked = _awaiting_locked(release, user)
        _decide(locked, user=user, decision=ReleaseApproval.Decision.REJECTED, comment=comment)
        locked.status = Release.Status.REJECTED
        locked.failure_reason = f"Rejected by {user.get_username()}: {comment}"
        locked.save(update_fields=["status", "failure_reason"])
        entry = LedgerEntry.objects.select_for_update().get(release=locked)
        ledger_settle(entry, release=locked, state=LedgerEntry.State.RETURNED)
    return locked
