"""The tamper-evident audit trail: each event carries an HMAC-SHA256, under ``AUDIT_HMAC_KEY`` (a
key kept outside the database), of its id, its canonical content and the previous event's hash.
Whoever can write the database but does not hold the key cannot re-hash a rewritten, renumbered,
shortened or reordered trail so that it verifies; the database itself also refuses to update or
delete an event (audit/immutability.py). The newest hash is anchored outside the database, in
every published version's signed metadata and in the anchors compliance downloads
(:func:`audit_anchor`), so even the key's holder cannot quietly rewrite what was anchored.

``audit_record`` must be called inside the transaction of the change it records; it locks the
chain head so concurrent writers append one after another instead of forking the chain, and gives
each event the next id itself, so the id is known before the hash that covers it. Details hold
names, ids and public facts only, never raw values from a table.
"""

import hashlib
import hmac
import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.cache import caches
from django.db import models, transaction
from django.db.models import F, Max
from django.utils import timezone
from django.utils.module_loading import import_string

from audit.context import current_client
from audit.models import GENESIS_HASH, AuditChainHead, AuditEvent, EventRepeats
from organisations.services import organisation_slug_of


class AuditAction(models.TextChoices):
    USER_CREATED = "user.created"
    LOGIN = "user.login"
    LOGIN_FAILED = "user.login_failed"
    LOGOUT = "user.logout"
    ACCESS_DENIED = "user.access_denied"
    TOKENS_REVOKED = "user.tokens_revoked"
    DATASET_UPLOADED = "dataset.uploaded"
    DATASET_CONVERTED = "dataset.converted"
    DATASET_CONVERSION_FAILED = "dataset.conversion_failed"
    DATASET_RAW_DELETED = "dataset.raw_deleted"
    DUPLICATE_UPLOAD_CONFIRMED = "dataset.duplicate_upload_confirmed"
    SCHEMA_CHANGED = "dataset.schema_changed"
    RELEASE_DRAFTED = "release.drafted"
    RELEASE_DRAFT_UPDATED = "release.draft_updated"
    SCHEMA_SUGGESTED = "dataset.schema_suggested_from_data"
    RELEASE_SUBMITTED = "release.submitted"
    APPROVAL_REQUESTED = "release.approval_requested"
    RELEASE_APPROVED = "release.approved"
    RELEASE_REJECTED = "release.rejected"
    APPROVAL_REQUIREMENT_CHANGED = "dataset.approval_requirement_changed"
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
    TRAIL_REKEYED = "audit.rekeyed"
    TRAIL_EXPORTED = "audit.exported"


# Characters PostgreSQL's jsonb refuses (NUL, lone surrogates): stored as U+FFFD instead.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
# jsonb stores a float's decimal text as a number and gives back an integer for one written
# without a fraction (1e+16 comes back as 10000000000000000).
_WHOLE_FLOATS_FROM = 1e16


def stable_json(value: Any) -> Any:
    """``value`` as JSON that reads back the same from SQLite and from PostgreSQL's jsonb, so
    an event's hash is the same computed before storing and after reading back: -0.0 becomes
    0.0, floats of 10¹⁶ and more integers, non-finite floats their names, and characters jsonb
    refuses U+FFFD; tuples become lists and keys strings."""
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            return repr(value)
        if abs(value) >= _WHOLE_FLOATS_FROM:
            return int(value)
        return value + 0.0  # -0.0 + 0.0 is 0.0
    if isinstance(value, str):
        return _UNSTORABLE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {stable_json(str(key)): stable_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [stable_json(item) for item in value]
    return stable_json(str(value))


def _actor_name(actor: Any) -> str:
    if actor is None:
        return "system"
    if not getattr(actor, "is_authenticated", False):
        return "anonymous"
    return actor.get_username()


def canonical_content(event: AuditEvent) -> bytes:
    """The bytes an event's hash covers: its id and every field but the hash, in a fixed form."""
    content = {
        "id": event.pk,
        "at": event.at.isoformat(timespec="microseconds"),
        "actor": event.actor,
        "action": event.action,
        "object_type": event.object_type,
        "object_id": event.object_id,
        "dataset_id": event.dataset_id,
        "details": event.details,
        "client": event.client,
        "previous_hash": event.previous_hash,
    }
    # Only when set, so events from before organisations keep the hash they were given.
    organisation = getattr(event, "organisation", "")
    if organisation:
        content["organisation"] = organisation
    return json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _key() -> bytes:
    return settings.AUDIT_HMAC_KEY.encode()


def event_hash(event: AuditEvent) -> str:
    """HMAC-SHA256 of the event's canonical content under the installation's audit key."""
    return hmac.new(_key(), canonical_content(event), hashlib.sha256).hexdigest()


def audit_record(
    *,
    actor: Any,
    action: AuditAction,
    object_type: str,
    object_id: Any,
    dataset_id: int | None = None,
    details: dict[str, Any] | None = None,
    organisation: str | None = None,
) -> AuditEvent:
    """Append one event to the chain, in the caller's transaction. It belongs to
    ``organisation`` (a slug) if given, else to its dataset's, else to its actor's."""
    if organisation is None:
        organisation = _organisation_of(actor=actor, dataset_id=dataset_id)
    return append_event(
        AuditEvent,
        AuditChainHead,
        actor=_actor_name(actor),
        action=action.value,
        object_type=object_type,
        object_id="" if object_id is None else str(object_id),
        dataset_id=dataset_id,
        details=stable_json(details or {}),
        client=current_client(),
        organisation=organisation,
    )


def _organisation_of(*, actor: Any, dataset_id: int | None) -> str:
    if dataset_id is not None:
        # Datasets are the apps' (the trail never imports them): the setting names the function.
        return import_string(settings.AUDIT_DATASET_ORGANISATION)(dataset_id)
    return organisation_slug_of(actor)


def _window_key(key: str) -> str:
    return "audit-window:" + hashlib.sha256(key.encode()).hexdigest()


def audit_window_close(key: str) -> None:
    """End ``key``'s window now: its next action is an event of its own."""
    caches["throttle"].delete(_window_key(key))


def audit_record_repeated(*, key: str, window_seconds: int, **event: Any) -> AuditEvent | None:
    """Record ``event`` (audit_record's arguments) once per ``window_seconds`` for actions
    sharing ``key``: a repeat within the window is counted on the window's event (EventRepeats)
    instead of becoming an event of its own. Returns the new event, or None for a repeat. The
    window is kept in the shared throttle cache; when it is lost, the next action simply opens a
    new window."""
    cache = caches["throttle"]
    cache_key = _window_key(key)
    event_id = cache.get(cache_key)
    if event_id is not None and EventRepeats.objects.filter(event_id=event_id).update(
        count=F("count") + 1, last_at=timezone.now()
    ):
        return None
    details = {**(event.pop("details", None) or {}), "repeats_counted_for_s": window_seconds}
    with transaction.atomic():
        recorded = audit_record(**event, details=details)
        EventRepeats.objects.create(event_id=recorded.pk)
    cache.set(cache_key, recorded.pk, timeout=window_seconds)
    return recorded


def append_event(event_model: Any, head_model: Any, **fields: Any) -> Any:
    """Insert an event of ``event_model`` after the head of ``head_model`` (the app's models,
    or a migration's historical ones) and move the head to it."""
    with transaction.atomic():
        head, _ = head_model.objects.select_for_update().get_or_create(pk=1)
        # The head is locked: no other writer can take the next id meanwhile. It is the next
        # after the newest event (not the head's, which a restored or flushed database may
        # lack), so ids stay contiguous and the hash can cover the id.
        newest = event_model.objects.aggregate(newest=Max("id"))["newest"] or 0
        event = event_model(
            pk=newest + 1, at=timezone.now(), previous_hash=head.last_hash, **fields
        )
        event.hash = event_hash(event)
        event.save(force_insert=True)
        head.last_hash = event.hash
        head.last_event_id = event.pk
        head.save(update_fields=["last_hash", "last_event_id"])
    return event


@dataclass(frozen=True)
class ChainVerification:
    valid: bool
    events: int
    first_broken_event: int | None
    # Why the chain is broken at that event, in words, or None.
    problem: str | None = None


def legacy_event_hash(event: AuditEvent) -> str:
    """The hash events had before the trail was keyed (migration audit 0003): a plain SHA-256
    of the content without the id (legacy events have no client address either). Only the
    events up to the legacy head recorded outside the database (:func:`legacy_head`) are
    checked with it; the first keyed event's HMAC covers that head, so a rewrite of any legacy
    event breaks the link the key protects."""
    content = json.loads(canonical_content(event))
    del content["id"], content["client"]
    encoded = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(encoded.encode()).hexdigest()


# The legacy head of a trail that had no events before it was keyed.
NO_LEGACY = "none"


class LegacyHeadMismatch(RuntimeError):
    """The legacy head recorded outside the database is not the trail's."""


def legacy_head() -> str | None:
    """The hash of the last event written before the trail was keyed, as recorded outside the
    database (``AUDIT_LEGACY_HEAD``, else the file at ``AUDIT_LEGACY_HEAD_PATH``): NO_LEGACY
    when there was none, None when nothing is recorded (every event is then keyed)."""
    if settings.AUDIT_LEGACY_HEAD:
        return settings.AUDIT_LEGACY_HEAD.strip()
    try:
        return Path(settings.AUDIT_LEGACY_HEAD_PATH).read_text().strip() or None
    except (OSError, UnicodeDecodeError):
        # Missing or unreadable: no legacy events are accepted (every event must be keyed).
        return None


def record_legacy_head(value: str) -> None:
    """Write the legacy head to its file, mode 0600, once: an existing file is never replaced
    (:class:`LegacyHeadMismatch` when it holds another value)."""
    path = Path(settings.AUDIT_LEGACY_HEAD_PATH)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        if path.read_text().strip() != value:
            raise LegacyHeadMismatch(
                f"{path} records another legacy head than the trail's ({value})"
            ) from None
        return
    with os.fdopen(descriptor, "w") as out:
        out.write(value + "\n")


def _missing_legacy(boundary: str | None) -> str:
    return (
        f"no event has the legacy head recorded outside the database ({boundary}): the events "
        "written before the trail was keyed are gone or were rewritten"
    )


def audit_chain_verify() -> ChainVerification:
    """Recompute every hash in id order; name the first event whose id, content or link does
    not match (an event missing from the middle breaks the next one's link). Events up to the
    legacy head (:func:`legacy_head`) are checked with the old unkeyed hash; every later one
    with the key, and their ids must follow one another, so a renumbered trail fails too."""
    boundary = legacy_head()
    in_legacy = boundary not in (None, NO_LEGACY)
    previous = GENESIS_HASH
    expected_id = None
    count = AuditEvent.objects.count()
    first = None
    for event in AuditEvent.objects.order_by("id").iterator(chunk_size=2000):
        first = first or event.pk
        problem = None
        if not in_legacy and expected_id is not None and event.pk != expected_id:
            problem = f"events {expected_id} to {event.pk - 1} are missing"
        elif event.previous_hash != previous:
            problem = "its link to the previous event does not match"
        elif in_legacy and event.client:
            problem = "an event from before the key has a client address"
        elif not hmac.compare_digest(
            legacy_event_hash(event) if in_legacy else event_hash(event), event.hash
        ):
            problem = "its content does not match its hash"
            if in_legacy and hmac.compare_digest(event_hash(event), event.hash):
                problem = _missing_legacy(boundary)
        if problem is not None:
            return ChainVerification(False, count, event.pk, problem)
        if in_legacy and event.hash == boundary:
            in_legacy = False
        previous = event.hash
        expected_id = event.pk + 1
    if in_legacy:
        # The events before the key (or all of them) are gone or were rewritten.
        return ChainVerification(False, count, first, _missing_legacy(boundary))
    head = AuditChainHead.objects.filter(pk=1).first()
    if head is not None and head.last_hash != previous:
        # The newest events were deleted: the head still remembers the hash they ended on.
        return ChainVerification(False, count, head.last_event_id, "the newest events are missing")
    return ChainVerification(True, count, None)


@dataclass(frozen=True)
class Anchor:
    """The chain's newest event at a moment: a copy kept outside the database shows later
    whether the trail up to it was rewritten."""

    event_id: int | None
    hash: str
    at: str

    def to_dict(self) -> dict[str, Any]:
        return {"event": self.event_id, "hash": self.hash, "at": self.at}


def audit_anchor() -> Anchor:
    """The chain's head now (read with the head locked, so it is an event's hash, committed)."""
    with transaction.atomic():
        head, _ = AuditChainHead.objects.select_for_update().get_or_create(pk=1)
        return Anchor(head.last_event_id, head.last_hash, timezone.now().isoformat())


def anchor_problem(anchor: dict[str, Any]) -> str | None:
    """Whether the trail still holds an anchored head: ``{"event": id, "hash": h}`` (an anchor
    compliance downloaded) must still be event ``id`` with hash ``h``; ``{"hash": h}`` alone (a
    published version's ``audit_head``) must still be some event's hash. None when it holds,
    else what changed."""
    expected = anchor.get("hash")
    if not isinstance(expected, str) or not re.fullmatch(r"[0-9a-f]{64}", expected):
        return "the anchor holds no hash (64 hexadecimal digits)"
    event_id = anchor.get("event")
    if event_id is not None and (
        isinstance(event_id, bool) or not isinstance(event_id, int) or not 0 < event_id < 2**63
    ):
        return "the anchor's event is not an event id"
    if expected == GENESIS_HASH and event_id is None:
        return None
    if event_id is None:
        if AuditEvent.objects.filter(hash=expected).exists():
            return None
        return f"no event has the anchored hash {expected}: the trail before it was rewritten"
    event = AuditEvent.objects.filter(pk=event_id).first()
    if event is None:
        return f"event {event_id}, anchored with hash {expected}, is gone"
    if not hmac.compare_digest(event.hash, expected):
        # The hash it has now is not shown: it may be another organisation's event.
        return f"event {event_id} was anchored with hash {expected} but no longer has it"
    return None
