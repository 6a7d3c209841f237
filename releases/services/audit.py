"""The tamper-evident audit trail: every event carries the SHA-256 of its canonical content and of
the previous event, so editing or deleting any row breaks the chain at that point.

``audit_record`` must be called inside the transaction of the change it records; it locks the chain
head so concurrent writers append one after another instead of forking the chain. Details hold
names, ids and public facts only, never raw values from a table.
"""

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from django.db import models, transaction
from django.utils import timezone

from releases.models import AuditChainHead, AuditEvent

GENESIS_HASH = "0" * 64


class AuditAction(models.TextChoices):
    USER_CREATED = "user.created"
    LOGIN = "user.login"
    LOGIN_FAILED = "user.login_failed"
    DATASET_UPLOADED = "dataset.uploaded"
    DATASET_CONVERTED = "dataset.converted"
    DATASET_CONVERSION_FAILED = "dataset.conversion_failed"
    DUPLICATE_UPLOAD_CONFIRMED = "dataset.duplicate_upload_confirmed"
    SCHEMA_CHANGED = "dataset.schema_changed"
    RELEASE_DRAFTED = "release.drafted"
    RELEASE_DRAFT_UPDATED = "release.draft_updated"
    SCHEMA_SUGGESTED = "dataset.schema_suggested_from_data"
    RELEASE_SUBMITTED = "release.submitted"
    SUBMISSION_REFUSED = "release.submission_refused"
    BUDGET_RESERVED = "budget.reserved"
    BUDGET_SPENT = "budget.spent"
    BUDGET_RETURNED = "budget.returned"
    TASK_STARTED = "task.started"
    NOISE_DRAWN = "task.noise_drawn"
    TASK_FINISHED = "task.finished"
    TASK_FAILED = "task.failed"
    TASK_REDELIVERED = "task.redelivered"
    RELEASE_REQUEUED = "release.requeued"
    RELEASE_PUBLISHED = "release.published"
    FILE_DOWNLOADED = "release.downloaded"
    RELEASE_WITHDRAWN = "release.withdrawn"
    BUDGET_INCREASE_REQUESTED = "budget.increase_requested"
    BUDGET_INCREASE_APPROVED = "budget.increase_approved"
    BUDGET_INCREASE_REJECTED = "budget.increase_rejected"


def _actor_name(actor: Any) -> str:
    if actor is None:
        return "system"
    if not getattr(actor, "is_authenticated", False):
        return "anonymous"
    return actor.get_username()


def canonical_content(event: AuditEvent) -> bytes:
    """The bytes an event's hash covers: every field but the hash itself, in a fixed form."""
    content = {
        "at": event.at.isoformat(timespec="microseconds"),
        "actor": event.actor,
        "action": event.action,
        "object_type": event.object_type,
        "object_id": event.object_id,
        "dataset_id": event.dataset_id,
        "details": event.details,
        "previous_hash": event.previous_hash,
    }
    return json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def event_hash(event: AuditEvent) -> str:
    return hashlib.sha256(canonical_content(event)).hexdigest()


def audit_record(
    *,
    actor: Any,
    action: AuditAction,
    object_type: str,
    object_id: Any,
    dataset_id: int | None = None,
    details: dict[str, Any] | None = None,
) -> AuditEvent:
    """Append one event to the chain, in the caller's transaction."""
    with transaction.atomic():
        head, _ = AuditChainHead.objects.select_for_update().get_or_create(pk=1)
        event = AuditEvent(
            at=timezone.now(),
            actor=_actor_name(actor),
            action=action.value,
            object_type=object_type,
            object_id="" if object_id is None else str(object_id),
            dataset_id=dataset_id,
            details=json.loads(json.dumps(details or {})),
            previous_hash=head.last_hash,
        )
        event.hash = event_hash(event)
        event.save()
        head.last_hash = event.hash
        head.last_event_id = event.pk
        head.save(update_fields=["last_hash", "last_event_id"])
    return event


@dataclass(frozen=True)
class ChainVerification:
    valid: bool
    events: int
    first_broken_event: int | None


def audit_chain_verify() -> ChainVerification:
    """Recompute every hash in order; name the first event whose content or link does not match."""
    previous = GENESIS_HASH
    count = AuditEvent.objects.count()
    for event in AuditEvent.objects.order_by("id").iterator(chunk_size=2000):
        if event.previous_hash != previous or event_hash(event) != event.hash:
            return ChainVerification(valid=False, events=count, first_broken_event=event.pk)
        previous = event.hash
    head = AuditChainHead.objects.filter(pk=1).first()
    if head is not None and head.last_hash != previous:
        # The newest events were deleted: the head still remembers the hash they ended on.
        return ChainVerification(valid=False, events=count, first_broken_event=head.last_event_id)
    return ChainVerification(valid=True, events=count, first_broken_event=None)
