"""The trail becomes keyed: events from here on carry an HMAC under AUDIT_HMAC_KEY covering their
id (audit/chain.py). Earlier events keep their plain SHA-256 hashes, so the audit heads that
published versions' signed metadata anchored still match. The hash of the last of them is
recorded outside the database: in production the operator sets ``AUDIT_LEGACY_HEAD`` (this
migration refuses, printing the hash, until they do), in development it is written once to a
file (audit.chain.record_legacy_head). Only events up to it are ever checked the old way, so a
trail rewritten later as "legacy" events does not verify, and running this migration again
cannot bless one. With legacy events, it appends the
first keyed event, ``audit.rekeyed``, whose HMAC covers the last of them."""

from django.conf import settings
from django.db import migrations


def rekey(apps, schema_editor):
    from audit.chain import (
        NO_LEGACY,
        AuditAction,
        LegacyHeadMismatch,
        append_event,
        legacy_event_hash,
        legacy_head,
        record_legacy_head,
    )
    from audit.models import GENESIS_HASH

    event_model = apps.get_model("audit", "AuditEvent")
    head_model = apps.get_model("audit", "AuditChainHead")
    events = event_model.objects.order_by("id")
    previous, broken, last = GENESIS_HASH, None, None
    for event in events.iterator(chunk_size=2000):
        if broken is None and (
            event.previous_hash != previous or legacy_event_hash(event) != event.hash
        ):
            broken = event.pk
        previous = last = event.hash
    value = last or NO_LEGACY
    recorded = legacy_head()
    if recorded is not None:
        if last is not None and recorded != value:
            raise LegacyHeadMismatch(
                f"Refusing to key the audit trail: the legacy head recorded outside the database "
                f"({recorded}) is not the trail's last event ({value}). The trail was rewritten, "
                "or this database is not the one the record belongs to."
            )
        return
    if last is None:
        if settings.DEBUG:
            record_legacy_head(NO_LEGACY)
        return  # a new trail: keyed from its first event, nothing to record
    if not settings.DEBUG:
        # Whoever can write the database could have rewritten the trail as "old" events and
        # removed this migration's record: only the operator, outside the database, can say
        # these events are the installation's own.
        raise LegacyHeadMismatch(
            f"The audit trail holds {events.count()} events from before it was keyed; the "
            f"last one's hash is {value} (its old chain "
            f"{'holds' if broken is None else f'is broken at event {broken}'}). If this is "
            f"this installation's trail, set AUDIT_LEGACY_HEAD={value} and migrate again."
        )
    record_legacy_head(value)
    append_event(
        event_model,
        head_model,
        actor="system",
        action=AuditAction.TRAIL_REKEYED.value,
        object_type="audit_trail",
        object_id="",
        dataset_id=None,
        client="",
        details={
            "legacy_events": events.count(),
            "legacy_chain_valid": broken is None,
            "first_broken_legacy_event": broken,
            "legacy_head": value,
        },
    )


class Migration(migrations.Migration):
    dependencies = [("audit", "0002_client_address")]
    operations = [migrations.RunPython(rekey, migrations.RunPython.noop)]
