"""An audit trail a database administrator cannot quietly rewrite (issue 12, point 1): the
database refuses updates and deletes of events; each hash is an HMAC under a key kept outside
the database and covers the event's id; anchors kept outside catch even a rewrite by the key's
holder; and verification recomputes every dataset's budget from the trail, naming each figure
edited behind it."""

import hashlib
import importlib
import json
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command
from django.db import IntegrityError, connection, transaction

from audit.chain import (
    AuditAction,
    LegacyHeadMismatch,
    audit_anchor,
    audit_chain_verify,
    audit_record,
    canonical_content,
    event_hash,
    legacy_event_hash,
)
from audit.models import GENESIS_HASH, AuditChainHead, AuditEvent
from releases.models import BudgetMovement, Dataset, LedgerEntry, Release
from tests.conftest import draft_body, publish_through_api

VERIFY_URL = "/api/v1/audit/verify/"
keyed_chain = importlib.import_module("audit.migrations.0003_keyed_chain")


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def published(curator_client, dataset, django_capture_on_commit_callbacks) -> Release:
    """A dataset with one published release (ε 0.3 of 1): budget events in the trail."""
    return publish_through_api(
        curator_client, django_capture_on_commit_callbacks, draft_body(dataset.pk, epsilon=0.3)
    )


def rechain(events: list[AuditEvent], hasher, start: str) -> None:
    """Rewrite ``events`` (in order) as someone with write access would: each linked to the one
    before and hashed with ``hasher``; then point the head at the last one."""
    previous = start
    for event in events:
        event.previous_hash = previous
        event.hash = hasher(event)
        AuditEvent.objects.filter(pk=event.pk).update(
            previous_hash=event.previous_hash, hash=event.hash, details=event.details
        )
        previous = event.hash
    AuditChainHead.objects.filter(pk=1).update(last_hash=previous, last_event_id=events[-1].pk)


def sha256_of_content(event: AuditEvent) -> str:
    """The public hash function a forger has: SHA-256 of the canonical content, id included."""
    return hashlib.sha256(canonical_content(event)).hexdigest()


# --- the database refuses ----------------------------------------------------------------------


def test_the_database_refuses_to_update_or_delete_an_event(published):
    event = AuditEvent.objects.order_by("id").first()
    with pytest.raises(IntegrityError, match="an audit event is permanent"), transaction.atomic():
        AuditEvent.objects.filter(pk=event.pk).update(actor="someone-else")
    with pytest.raises(IntegrityError, match="an audit event is permanent"), transaction.atomic():
        AuditEvent.objects.filter(pk=event.pk).delete()
    with (
        pytest.raises(IntegrityError, match="an audit event is permanent"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute("DELETE FROM releases_auditevent")
    assert AuditEvent.objects.get(pk=event.pk).actor == event.actor


def test_the_triggers_are_checked_and_come_back_with_every_migrate(db):
    from audit.immutability import AUDIT_EVENTS, check_triggers

    assert AUDIT_EVENTS.installed(connection) == AUDIT_EVENTS.names(connection.vendor)
    assert check_triggers(databases=["default"]) == []
    AUDIT_EVENTS.drop(connection)
    (error,) = check_triggers(databases=["default"])
    assert error.id == "audit.E001"
    AUDIT_EVENTS.reinstall_after_migrate(None, "default")
    assert check_triggers(databases=["default"]) == []


# --- a rewrite without the key is caught --------------------------------------------------------


def test_a_trail_rewritten_with_the_public_hash_function_is_caught(
    published, database_administrator, compliance_client
):
    # given a forger who edits an event and re-hashes it and every later one with SHA-256
    events = list(AuditEvent.objects.order_by("id"))
    tampered = next(e for e in events if e.action == "budget.reserved")
    tampered.details = {**tampered.details, "epsilon": "0.000000000001"}
    later = [e for e in events if e.pk >= tampered.pk]
    rechain(later, sha256_of_content, tampered.previous_hash)

    # when
    result = compliance_client.get(VERIFY_URL).json()

    # then the edited event is named: its hash is not the key's
    assert (result["valid"], result["first_broken_event"]) == (False, tampered.pk)
    assert result["problem"] == "its content does not match its hash"


def test_a_trail_rewritten_with_the_old_unkeyed_function_is_caught(
    published, database_administrator
):
    # given every event re-hashed with the function events had before the trail was keyed
    events = list(AuditEvent.objects.order_by("id"))
    for event in events:
        event.details = {**event.details}
    rechain(events, legacy_event_hash, GENESIS_HASH)

    # then the first event fails: a trail without a rekeyed event is keyed from its start
    assert audit_chain_verify().first_broken_event == events[0].pk


def test_a_trail_rewritten_under_another_key_is_caught(published, database_administrator, settings):
    # given a trail re-hashed under a key of the forger's own
    events = list(AuditEvent.objects.order_by("id"))
    installations = settings.AUDIT_HMAC_KEY
    settings.AUDIT_HMAC_KEY = "a key that is not the installation's, 32 characters+"
    rechain(events, event_hash, GENESIS_HASH)
    settings.AUDIT_HMAC_KEY = installations

    # then
    assert audit_chain_verify().first_broken_event == events[0].pk


def test_deleted_events_are_caught_even_when_the_gap_is_relinked(published, database_administrator):
    # given a failed login deleted, and the next event relinked to the one before it with the
    # public function (the forger lacks the key)
    audit_record(actor=None, action=AuditAction.LOGIN_FAILED, object_type="user", object_id=None)
    audit_record(actor=None, action=AuditAction.LOGIN_FAILED, object_type="user", object_id=None)
    events = list(AuditEvent.objects.order_by("id"))
    AuditEvent.objects.filter(pk=events[-2].pk).delete()

    # then the gap in the ids is named
    result = audit_chain_verify()
    assert result.first_broken_event == events[-1].pk
    assert result.problem == f"events {events[-2].pk} to {events[-2].pk} are missing"


def test_renumbered_events_are_caught(published, database_administrator):
    # given the newest event moved to another id (its content, hash and link unchanged)
    newest = AuditEvent.objects.order_by("-id").first()
    AuditEvent.objects.filter(pk=newest.pk).update(id=newest.pk + 5)

    # then: the hash covers the id
    result = audit_chain_verify()
    assert result.valid is False
    assert result.first_broken_event == newest.pk + 5


def test_an_anchor_kept_outside_catches_a_shortened_trail(
    published, database_administrator, compliance_client
):
    # given an anchor downloaded by compliance, then two more events
    anchor = compliance_client.get("/api/v1/audit/anchor/").json()
    assert anchor["hash"] == AuditEvent.objects.get(pk=anchor["event"]).hash
    for _ in range(2):
        audit_record(
            actor=None, action=AuditAction.LOGIN_FAILED, object_type="user", object_id=None
        )

    # when someone with write access (and the key, even) deletes everything from the anchored
    # event on and points the head at what is left: the chain itself verifies
    AuditEvent.objects.filter(pk__gte=anchor["event"]).delete()
    last = AuditEvent.objects.order_by("-id").first()
    AuditChainHead.objects.filter(pk=1).update(last_hash=last.hash, last_event_id=last.pk)
    assert audit_chain_verify().valid is True

    # then the anchor does not
    params = {"anchor_event": anchor["event"], "anchor_hash": anchor["hash"]}
    result = compliance_client.get(VERIFY_URL, params).json()
    assert result["valid"] is False
    assert result["anchor_problems"] == [
        f"event {anchor['event']}, anchored with hash {anchor['hash']}, is gone"
    ]


@pytest.mark.parametrize(
    ("params", "errors"),
    [
        ({"anchor_hash": "xyz"}, {"anchor_hash": ["must be 64 lowercase hexadecimal digits"]}),
        ({"anchor_event": "3"}, {"anchor_hash": ["give the anchored hash with anchor_event"]}),
        (
            {"anchor_hash": "0" * 64, "anchor_event": "-1"},
            {"anchor_event": ["must be an event id"]},
        ),
    ],
)
def test_bad_anchor_parameters_are_400_naming_them(compliance_client, params, errors):
    response = compliance_client.get(VERIFY_URL, params)
    assert response.status_code == 400
    assert response.json()["errors"] == errors


# --- a trail from before the key ----------------------------------------------------------------


def legacy_trail(count: int) -> str:
    """``count`` events hashed the old way (no key, no id, gaps between ids), as migration
    0003 finds a trail written before it; returns the last hash."""
    from django.utils import timezone

    previous = GENESIS_HASH
    for number in range(1, count + 1):
        event = AuditEvent(
            pk=number * 10,
            at=timezone.now(),
            actor="system",
            action="user.login_failed",
            object_type="user",
            details={"n": number},
            previous_hash=previous,
        )
        event.hash = legacy_event_hash(event)
        event.save(force_insert=True)
        previous = event.hash
    AuditChainHead.objects.update_or_create(
        pk=1, defaults={"last_hash": previous, "last_event_id": count * 10}
    )
    return previous


@pytest.fixture
def legacy_head_file(settings, tmp_path):
    """Where this test's migration records the legacy head, on a development installation
    (the test database's own migration found an empty trail)."""
    settings.AUDIT_LEGACY_HEAD = ""
    settings.AUDIT_LEGACY_HEAD_PATH = tmp_path / "audit_legacy_head"
    settings.DEBUG = True  # a development installation: the migration records it itself
    return settings.AUDIT_LEGACY_HEAD_PATH


def test_a_legacy_trail_stays_verifiable_and_protected_once_keyed(
    db, database_administrator, legacy_head_file
):
    from django.apps import apps

    # given three events hashed the old way
    head = legacy_trail(3)

    # when the migration keys the trail, and events follow
    keyed_chain.rekey(apps, None)
    audit_record(actor=None, action=AuditAction.LOGIN_FAILED, object_type="user", object_id=None)

    # then the legacy head is recorded outside the database, and the trail verifies
    assert legacy_head_file.read_text().strip() == head
    rekeyed = AuditEvent.objects.get(action="audit.rekeyed")
    assert rekeyed.pk == 31
    assert rekeyed.details == {
        "legacy_events": 3,
        "legacy_chain_valid": True,
        "first_broken_legacy_event": None,
        "legacy_head": head,
    }
    assert audit_chain_verify().valid is True

    # and a legacy event rewritten with the legacy function breaks the keyed link after it
    legacy = list(AuditEvent.objects.filter(pk__lt=31).order_by("id"))
    legacy[1].details = {"n": 99}
    rechain(legacy[1:], legacy_event_hash, legacy[0].hash)
    AuditChainHead.objects.filter(pk=1).update(
        last_hash=AuditEvent.objects.order_by("-id").first().hash, last_event_id=32
    )
    assert audit_chain_verify().valid is False


def test_a_trail_rewritten_as_legacy_events_is_neither_verified_nor_blessed(
    published, database_administrator, legacy_head_file
):
    from django.apps import apps

    # given a keyed trail (its migration recorded no legacy events), then rewritten whole by
    # someone without the key as if it were from before the key
    legacy_head_file.write_text("none\n")
    events = list(AuditEvent.objects.order_by("id"))
    rechain(events, legacy_event_hash, GENESIS_HASH)

    # then it does not verify, and running the keying migration again refuses to bless it
    result = audit_chain_verify()
    assert (result.valid, result.first_broken_event) == (False, events[0].pk)
    with pytest.raises(LegacyHeadMismatch, match="Refusing to key the audit trail"):
        keyed_chain.rekey(apps, None)
    assert not AuditEvent.objects.filter(action="audit.rekeyed").exists()


def test_a_trail_whose_legacy_part_was_removed_is_caught(
    db, database_administrator, legacy_head_file
):
    # given a trail keyed after three legacy events, then emptied and started again
    from django.apps import apps

    legacy_trail(3)
    keyed_chain.rekey(apps, None)
    AuditEvent.objects.all().delete()
    AuditChainHead.objects.all().delete()
    audit_record(actor=None, action=AuditAction.LOGIN_FAILED, object_type="user", object_id=None)

    # then the missing legacy head is named
    result = audit_chain_verify()
    assert result.valid is False
    assert result.problem.startswith("no event has the legacy head recorded outside")


def test_details_read_back_from_the_database_hash_as_recorded(db):
    # -0.0 and large floats come back from PostgreSQL's jsonb as 0.0 and integers: an event
    # stores them already that way, so it verifies on every database
    audit_record(
        actor=None,
        action=AuditAction.RELEASE_DRAFTED,
        object_type="release",
        object_id=1,
        details={"bins": [-0.0, 50.0, 1e20], "inf": float("inf"), "text": "a\x00b"},
    )
    event = AuditEvent.objects.get(action="release.drafted")
    assert event.details == {"bins": [0.0, 50.0, 10**20], "inf": "inf", "text": "a\ufffdb"}
    assert audit_chain_verify().valid is True


# --- budgets recomputed from the trail ----------------------------------------------------------


def mismatches(client) -> list[dict]:
    body = client.get(VERIFY_URL).json()
    assert body["first_broken_event"] is None
    return body["budget_mismatches"]


def test_an_untouched_trail_matches_every_budget(published, compliance_client):
    body = compliance_client.get(VERIFY_URL).json()
    assert body == {
        "valid": True,
        "events": AuditEvent.objects.count(),
        "first_broken_event": None,
        "problem": None,
        "budget_mismatches": [],
        "anchor_problems": [],
    }


def test_a_budget_edited_in_sql_is_named(published, compliance_client):
    # given a dataset's total raised behind the application's back
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE releases_dataset SET budget_epsilon = %s WHERE id = %s",
            [Decimal("5"), published.dataset_id],
        )

    # then
    assert mismatches(compliance_client) == [
        {"dataset": published.dataset_id, "what": "total ε", "table": "5", "trail": "1"}
    ]


def test_a_ledger_entry_edited_in_sql_is_named(published, compliance_client):
    # given a spent release's ε lowered and its state set back to returned
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE releases_ledgerentry SET epsilon = %s, state = 'returned' "
            "WHERE release_id = %s",
            [Decimal("0.01"), published.pk],
        )

    # then both figures are named, with the release
    assert mismatches(compliance_client) == [
        {
            "dataset": published.dataset_id,
            "what": f"release {published.pk}: ε",
            "table": "0.01",
            "trail": "0.3",
        },
        {
            "dataset": published.dataset_id,
            "what": f"release {published.pk}: state",
            "table": "returned",
            "trail": "spent",
        },
    ]


def test_a_footprint_or_journal_edited_in_sql_is_named(published, compliance_client):
    # given the release's footprint emptied and its journal spend halved
    LedgerEntry.objects.filter(release=published).update(
        footprint={"epsilon": {"everyone": "0"}, "delta": {"everyone": "0"}}
    )
    BudgetMovement.objects.filter(release=published, kind="spend").update(epsilon=Decimal("0.15"))

    # then
    found = {m["what"]: (m["table"], m["trail"]) for m in mismatches(compliance_client)}
    assert set(found) == {
        f"release {published.pk}: footprint",
        f"release {published.pk}: footprint's charge ε",
        f"journal spend of {published.pk}: ε",
    }
    assert found[f"release {published.pk}: footprint's charge ε"] == ("0", "0.3")
    assert found[f"journal spend of {published.pk}: ε"] == ("0.15", "0.3")


def test_a_deleted_ledger_entry_is_named(published, compliance_client):
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM releases_ledgerentry WHERE release_id = %s", [published.pk])
    assert mismatches(compliance_client) == [
        {
            "dataset": published.dataset_id,
            "what": f"release {published.pk}: ledger entry",
            "table": "missing",
            "trail": "reserved",
        }
    ]


# --- the command -------------------------------------------------------------------------------


def test_verify_audit_says_valid_and_checks_a_published_versions_anchor(
    published, tmp_path, capsys
):
    # given the version's metadata file, whose audit_head anchors the trail at publication
    metadata = published.files.get(format="metadata")
    path = tmp_path / "metadata.json"
    path.write_bytes(metadata.file.read())
    assert json.loads(path.read_bytes())["audit_head"]

    # when
    call_command("verify_audit", "--anchor", str(path))

    # then
    assert capsys.readouterr().out.startswith("VALID: ")


def test_verify_audit_names_what_is_wrong_and_fails(published, database_administrator, tmp_path):
    # given a budget edit, an anchor to an event that then disappears, and a broken chain
    anchor = tmp_path / "anchor.json"
    anchor.write_text(json.dumps(audit_anchor().to_dict()))
    Dataset.objects.filter(pk=published.dataset_id).update(budget_epsilon=Decimal("2"))
    AuditEvent.objects.filter(pk=audit_anchor().event_id).delete()

    # when
    with pytest.raises(CommandError) as error:
        call_command("verify_audit", "--anchor", str(anchor))

    # then
    text = str(error.value)
    assert text.startswith("INVALID:")
    assert "the newest events are missing" in text
    assert (
        f"dataset {published.dataset_id}, total ε: the tables hold 2, the trail recorded 1" in text
    )
    assert "anchor: event" in text
    assert "is gone" in text


@pytest.mark.parametrize("content", [b"", b"[1, 2]", b"\xff\xfe", b"[" * 100_000, b"{}"])
def test_verify_audit_refuses_a_hostile_anchor_file_with_a_message(db, tmp_path, content):
    path = tmp_path / "anchor.json"
    path.write_bytes(content)
    with pytest.raises(CommandError) as error:
        call_command("verify_audit", "--anchor", str(path))
    assert str(error.value).startswith("INVALID:")


# --- who and from where ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "network"),
    [
        ("192.0.2.77", "192.0.2.0/24"),
        ("2001:db8:1:2::5", "2001:db8:1::/48"),
        ("::ffff:198.51.100.9", "198.51.100.0/24"),
        ("not an address", ""),
        ("", ""),
    ],
)
def test_client_addresses_are_truncated_to_their_network(address, network):
    from audit.context import truncated_address

    assert truncated_address(address) == network


def test_an_event_of_a_web_request_records_its_clients_network_and_the_hash_covers_it(
    db, client, database_administrator
):
    # when a failed login comes from 203.0.113.45
    client.post(
        "/accounts/login/",
        {"username": "nobody", "password": "wrong-password"},
        REMOTE_ADDR="203.0.113.45",
    )

    # then the event says the network, not the machine; a forged network breaks the chain
    event = AuditEvent.objects.get(action="user.login_failed")
    assert event.client == "203.0.113.0/24"
    assert audit_chain_verify().valid is True
    AuditEvent.objects.filter(pk=event.pk).update(client="198.51.100.0/24")
    assert audit_chain_verify().first_broken_event == event.pk


def test_journal_amounts_swapped_between_releases_are_named(
    curator_client, dataset, compliance_client
):
    # given two reservations of 0.1 and 0.2, whose journal rows swap amounts (sums unchanged)
    first = curator_client.post(
        "/api/v1/releases/", draft_body(dataset.pk, epsilon=0.1), format="json"
    )
    second = curator_client.post(
        "/api/v1/releases/", draft_body(dataset.pk, epsilon=0.2), format="json"
    )
    for created in (first, second):
        submitted = curator_client.post(f"/api/v1/releases/{created.json()['id']}/submit/")
        assert submitted.status_code == 202
    one, two = (created.json()["id"] for created in (first, second))
    BudgetMovement.objects.filter(release_id=one).update(epsilon=Decimal("0.2"))
    BudgetMovement.objects.filter(release_id=two).update(epsilon=Decimal("0.1"))

    # then each row is named
    assert {m["what"] for m in mismatches(compliance_client)} == {
        f"journal reservation of {one}: ε",
        f"journal reservation of {two}: ε",
    }


def test_a_switched_ledger_or_a_deleted_dataset_is_named(published, compliance_client, curator):
    from releases.services.datasets import dataset_create
    from tests.conftest import CLINIC_CSV_CRLF, csv_upload

    # given the ledger switched, and another dataset deleted with its journal
    Dataset.objects.filter(pk=published.dataset_id).update(ledger_kind="blowfish")
    other = dataset_create(
        owner=curator, name="Other", upload=csv_upload(CLINIC_CSV_CRLF), budget_epsilon="1.0"
    )
    BudgetMovement.objects.filter(dataset=other).delete()
    Dataset.objects.filter(pk=other.pk).delete()

    # then both are named
    assert mismatches(compliance_client) == [
        {
            "dataset": published.dataset_id,
            "what": "ledger",
            "table": "blowfish",
            "trail": "differential_privacy",
        },
        {"dataset": other.pk, "what": "dataset", "table": "missing", "trail": "uploaded"},
    ]


def test_forged_budget_events_are_named_not_a_server_error(
    published, compliance_client, database_administrator
):
    # given events the application never writes (the chain breaks at the first, and the
    # budget check still answers)
    for details in ({"release": [1], "epsilon": "0.1"}, {"release": 1, "epsilon": "sNaN"}):
        audit_record(
            actor=None,
            action=AuditAction.BUDGET_SPENT,
            object_type="ledger_entry",
            object_id=None,
            dataset_id=published.dataset_id,
            details=details,
        )
    from django.utils import timezone

    BudgetMovement.objects.create(
        dataset_id=published.dataset_id,
        kind="adjustment",
        actor="x",
        at=timezone.now(),
        epsilon=1,
        delta=0,
    )

    # when
    response = compliance_client.get(VERIFY_URL)

    # then
    assert response.status_code == 200
    whats = [m["what"] for m in response.json()["budget_mismatches"]]
    assert sum(1 for w in whats if w.startswith("event ")) == 2
    assert "journal adjustment: rows" in whats


def test_a_short_audit_key_is_a_system_check_error(settings):
    from audit.immutability import check_key

    assert check_key() == []
    settings.AUDIT_HMAC_KEY = ""
    (error,) = check_key()
    assert error.id == "audit.E002"


def test_insert_or_replace_cannot_replace_an_event_on_sqlite(published):
    if connection.vendor != "sqlite":
        pytest.skip("INSERT OR REPLACE is SQLite's")
    event = AuditEvent.objects.order_by("id").first()
    replace = (
        "INSERT OR REPLACE INTO releases_auditevent "
        "(id, at, actor, action, object_type, object_id, dataset_id, details, client, "
        "previous_hash, hash) SELECT id, at, 'mallory', action, object_type, object_id, "
        "dataset_id, details, client, previous_hash, hash FROM releases_auditevent WHERE id = %s"
    )
    with connection.cursor() as cursor:
        # A connection of someone else's, without the recursive triggers ours turn on.
        cursor.execute("PRAGMA recursive_triggers = OFF")
        try:
            with (
                pytest.raises(IntegrityError, match="an audit event is permanent"),
                transaction.atomic(),
            ):
                cursor.execute(replace, [event.pk])
        finally:
            cursor.execute("PRAGMA recursive_triggers = ON")
    assert AuditEvent.objects.get(pk=event.pk).actor == event.actor


def test_downloads_are_recorded_with_their_real_actor(published, curator, client):
    from knox.models import AuthToken
    from rest_framework.test import APIClient

    url = f"/api/v1/catalog/{published.series.slug}/versions/1/files/csv/"
    _, token = AuthToken.objects.create(user=curator)
    by_token = APIClient()
    by_token.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    bad_token = APIClient()
    bad_token.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    client.force_login(curator)

    # when the file is downloaded with a token, a session, a bad token and by nobody
    for downloader in (by_token, client, bad_token, APIClient()):
        response = downloader.get(url)
        assert response.status_code == 200
        b"".join(response.streaming_content)

    # then
    actors = list(
        AuditEvent.objects.filter(action="release.downloaded")
        .order_by("id")
        .values_list("actor", flat=True)
    )
    # (the two anonymous downloads, from one network, are one event counting one repeat)
    assert actors == ["curator1", "curator1", "anonymous"]


def test_in_production_only_the_operator_can_accept_events_from_before_the_key(
    db, database_administrator, legacy_head_file, settings
):
    from django.apps import apps

    # given a production installation whose trail holds events from before the key
    settings.DEBUG = False
    head = legacy_trail(2)

    # then the migration refuses, saying what to set, and records nothing
    with pytest.raises(LegacyHeadMismatch, match=f"set AUDIT_LEGACY_HEAD={head}"):
        keyed_chain.rekey(apps, None)
    assert not legacy_head_file.exists()
    assert not AuditEvent.objects.filter(action="audit.rekeyed").exists()

    # and when the operator sets it, the trail is keyed and verifies
    settings.AUDIT_LEGACY_HEAD = head
    keyed_chain.rekey(apps, None)
    assert audit_chain_verify().valid is True


def test_an_event_from_before_the_key_cannot_gain_a_client_address(
    db, database_administrator, legacy_head_file
):
    from django.apps import apps

    legacy_trail(2)
    keyed_chain.rekey(apps, None)
    AuditEvent.objects.filter(pk=10).update(client="192.0.2.0/24")
    result = audit_chain_verify()
    assert (result.first_broken_event, result.problem) == (
        10,
        "an event from before the key has a client address",
    )


def test_a_users_refusals_are_recorded_at_most_thirty_a_minute(client, curator):
    from audit.context import MAX_DENIALS_PER_MINUTE

    client.force_login(curator)
    for _ in range(MAX_DENIALS_PER_MINUTE + 5):
        assert client.get("/datasets/999999/").status_code == 404
    denials = list(
        AuditEvent.objects.filter(action="user.access_denied")
        .order_by("id")
        .values_list("details", flat=True)
    )
    assert len(denials) == MAX_DENIALS_PER_MINUTE
    assert denials[-1]["further_denials"] == "not recorded until the next minute"
    assert "further_denials" not in denials[0]


def test_repeated_anonymous_downloads_are_counted_on_one_event(
    published, curator, client, compliance_client
):
    from rest_framework.test import APIClient

    url = f"/api/v1/catalog/{published.series.slug}/versions/1/files/csv/"

    def download(downloader, address: str) -> None:
        response = downloader.get(url, REMOTE_ADDR=address)
        assert response.status_code == 200
        b"".join(response.streaming_content)

    # when one network downloads five times, another once, and a curator twice
    anonymous = APIClient()
    for _ in range(5):
        download(anonymous, "198.51.100.7")
    download(anonymous, "203.0.113.9")
    client.force_login(curator)
    download(client, "198.51.100.7")
    download(client, "198.51.100.7")

    # then the first network's five are one event counting four repeats; everyone else's are
    # events of their own, and the chain holds
    events = compliance_client.get(
        "/api/v1/audit/events/", {"action": "release.downloaded"}
    ).json()["results"]
    assert [(e["actor"], e["client"], e["repeats"]) for e in reversed(events)] == [
        ("anonymous", "198.51.100.0/24", 4),
        ("anonymous", "203.0.113.0/24", 0),
        ("curator1", "198.51.100.0/24", 0),
        ("curator1", "198.51.100.0/24", 0),
    ]
    assert audit_chain_verify().valid is True


def test_a_new_window_opens_a_new_event(published, settings):
    from django.core.cache import caches
    from rest_framework.test import APIClient

    url = f"/api/v1/catalog/{published.series.slug}/versions/1/files/json/"
    for _ in range(2):
        response = APIClient().get(url)
        b"".join(response.streaming_content)
        caches["throttle"].clear()  # the window ends
    assert AuditEvent.objects.filter(action="release.downloaded").count() == 2
