"""Audit events are permanent in the database itself: triggers refuse every UPDATE and DELETE of
an event, and on PostgreSQL a TRUNCATE of the table (which fires no row trigger). Migration
audit 0004 installs them and every ``migrate`` installs them again (audit/apps.py); the system
check audit.E001 reports any that is missing. The chain's HMAC (audit/chain.py) still catches a
rewrite by someone who drops the triggers first."""

from audit.triggers import REFUSE, TriggerSet, sqlite_trigger

MESSAGE = "an audit event is permanent"
TABLE = "releases_auditevent"

AUDIT_EVENTS = TriggerSet(
    migration=("audit", "0004_events_permanent"),
    check_id="audit.E001",
    purpose="keep audit events permanent",
    sqlite={
        name: sqlite_trigger(name, event, TABLE, when, MESSAGE)
        for name, event, when in (
            ("audit_event_no_update", "UPDATE", None),
            ("audit_event_no_delete", "DELETE", None),
            # INSERT OR REPLACE deletes the row it replaces without a DELETE trigger on a
            # connection without recursive_triggers (config/settings.py turns them on for ours).
            (
                "audit_event_no_replace",
                "INSERT",
                f"EXISTS (SELECT 1 FROM {TABLE} WHERE id = NEW.id)",
            ),
        )
    },
    postgresql_functions={
        "audit_refuse_event_change": f"""
    CREATE OR REPLACE FUNCTION audit_refuse_event_change() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION '{MESSAGE}: % of %', TG_OP, TG_TABLE_NAME {REFUSE};
    END $$""",
    },
    postgresql_specs={
        "audit_event_permanent": (
            TABLE,
            "BEFORE UPDATE OR DELETE",
            "FOR EACH ROW",
            "audit_refuse_event_change",
        ),
        "audit_event_no_truncate": (
            TABLE,
            "BEFORE TRUNCATE",
            "FOR EACH STATEMENT",
            "audit_refuse_event_change",
        ),
    },
)


def check_triggers(app_configs=None, databases=None, **kwargs):
    """audit.E001 (a function: the check registry tags what it registers)."""
    return AUDIT_EVENTS.check(app_configs, databases, **kwargs)


def reinstall_after_migrate(sender, using, **kwargs) -> None:
    AUDIT_EVENTS.reinstall_after_migrate(sender, using, **kwargs)


# HMAC-SHA256 keys shorter than this are guessable or typed by hand.
MIN_KEY_LENGTH = 32


def check_key(app_configs=None, **kwargs):
    """audit.E002: an audit key too short to keep a forger from re-hashing the trail."""
    from django.conf import settings
    from django.core import checks

    if len(settings.AUDIT_HMAC_KEY or "") >= MIN_KEY_LENGTH:
        return []
    return [
        checks.Error(
            f"AUDIT_HMAC_KEY has fewer than {MIN_KEY_LENGTH} characters.",
            hint="Set it to a long random secret, e.g. `python -c 'import secrets; "
            "print(secrets.token_hex(32))'`, kept outside the database.",
            id="audit.E002",
        )
    ]
