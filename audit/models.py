"""The audit trail's tables. They kept the names they had when the trail lived in ``releases``
(migration releases 0013 handed them over without moving a row)."""

from django.db import models

GENESIS_HASH = "0" * 64


class AuditChainHead(models.Model):
    """The single row every audit writer locks, so the hash chain can never fork."""

    last_event_id = models.BigIntegerField(null=True)
    last_hash = models.CharField(max_length=64, default=GENESIS_HASH)

    class Meta:
        db_table = "releases_auditchainhead"

    def __str__(self) -> str:
        return f"audit chain head at event {self.last_event_id}"


class AuditEvent(models.Model):
    """One event. Its ``hash`` is an HMAC of its content, id and the previous event's hash under
    a key kept outside the database (audit/chain.py); the database refuses to update or delete
    it (audit/immutability.py)."""

    at = models.DateTimeField()
    actor = models.CharField(max_length=150, help_text="username, or 'anonymous' / 'system'")
    action = models.CharField(max_length=60, db_index=True)
    object_type = models.CharField(max_length=60)
    object_id = models.CharField(max_length=60, blank=True)
    dataset_id = models.BigIntegerField(null=True, blank=True, db_index=True)
    details = models.JSONField(default=dict)
    client = models.CharField(
        max_length=64,
        blank=True,
        default="",
        help_text="the client's network, truncated (IPv4 /24, IPv6 /48), for web requests",
    )
    # The slug of the organisation the event belongs to (its dataset's, else its actor's); empty
    # for events from before organisations, which belong to the default organisation, and for
    # the few that belong to none (a failed login for a name that is no account). Covered by
    # the hash when set (audit/chain.py).
    organisation = models.CharField(max_length=60, blank=True, default="", db_index=True)
    previous_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64, unique=True)

    class Meta:
        db_table = "releases_auditevent"
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"#{self.pk} {self.action} by {self.actor}"


class EventRepeats(models.Model):
    """How many identical actions an event stands for beyond itself: repeated anonymous
    downloads of one file from one network within a window are counted here, on the window's
    one event, so an anonymous client cannot flood the trail (audit/chain.py
    ``audit_record_repeated``). Not part of the chain: the event itself is immutable, this count
    grows; it holds no actor, only a number."""

    event_id = models.BigIntegerField(unique=True)
    count = models.PositiveBigIntegerField(default=0)
    last_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"event {self.event_id} repeated {self.count} times"
