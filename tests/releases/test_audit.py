"""The audit trail: one event per state change, a verifiable hash chain that names the first broken
event, filters and pagination for compliance, and never a raw cell value."""

import itertools
import json
import re
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from audit.chain import AuditAction, audit_record, event_hash
from audit.models import GENESIS_HASH, AuditChainHead, AuditEvent
from releases.models import Release
from tests.conftest import (
    CLINIC_CSV,
    CLINIC_CSV_CRLF,
    CLINIC_SCHEMA,
    RELEASE_FILE_FORMATS,
    csv_upload,
    draft_body,
)

EVENTS_URL = "/api/v1/audit/events/"
VERIFY_URL = "/api/v1/audit/verify/"
NAMES = ("Ann", "Bob", "Cid", "Dee", "Eve")
NUMBERS = ("34", "51", "29", "120")


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def full_flow(curator, compliance_user, django_capture_on_commit_callbacks):
    """Every kind of event through the API: login, upload, schema, draft, submit → publish,
    download. Returns the ids it created."""
    login = APIClient().post(
        "/api/v1/auth/token/", {"username": "curator1", "password": "pw-test-12345"}, format="json"
    )
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {login.json()['token']}")
    dataset = client.post(
        "/api/v1/datasets/",
        {"name": "Clinic", "file": csv_upload(CLINIC_CSV_CRLF), "budget_epsilon": "1.0"},
        format="multipart",
    )
    dataset_id = dataset.json()["id"]
    assert (
        client.put(
            f"/api/v1/datasets/{dataset_id}/schema/", CLINIC_SCHEMA, format="json"
        ).status_code
        == 200
    )
    draft = client.post("/api/v1/releases/", draft_body(dataset_id), format="json")
    release_id = draft.json()["id"]
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(f"/api/v1/releases/{release_id}/submit/").status_code == 202
    [entry] = APIClient().get("/api/v1/catalog/").json()["results"]
    csv_file = next(f for f in entry["files"] if f["format"] == "csv")
    download = APIClient().get(csv_file["url"])
    assert download.status_code == 200
    b"".join(download.streaming_content)  # consuming it closes the file
    return {"dataset": dataset_id, "release": release_id}


def verify(client) -> dict:
    """The chain's part of the verification (budgets are test_trail_integrity.py's)."""
    response = client.get(VERIFY_URL)
    assert response.status_code == 200
    body = response.json()
    return {key: body[key] for key in ("valid", "events", "first_broken_event")}


def all_event_ids() -> list[int]:
    return list(AuditEvent.objects.order_by("id").values_list("id", flat=True))


def test_full_flow_writes_one_event_per_step_in_order(full_flow):
    # when
    events = list(AuditEvent.objects.order_by("id"))

    # then
    assert [(e.actor, e.action) for e in events] == [
        ("system", "user.created"),
        ("system", "user.created"),
        ("curator1", "user.login"),
        ("curator1", "dataset.uploaded"),
        ("curator1", "dataset.schema_changed"),
        ("curator1", "release.drafted"),
        ("curator1", "release.submitted"),
        ("curator1", "budget.reserved"),
        ("system", "task.started"),
        ("system", "task.noise_drawn"),
        ("system", "budget.spent"),
        ("system", "task.finished"),
        ("system", "release.published"),
        ("anonymous", "release.downloaded"),
    ]
    assert all(e.dataset_id == full_flow["dataset"] for e in events[3:])
    release_events = [e for e in events if e.object_type == "release"]
    assert {e.object_id for e in release_events} == {str(full_flow["release"])}


def test_events_form_a_hash_chain_from_genesis(full_flow):
    # when
    events = list(AuditEvent.objects.order_by("id"))

    # then
    assert events[0].previous_hash == GENESIS_HASH
    for previous, event in itertools.pairwise(events):
        assert event.previous_hash == previous.hash
    assert all(event_hash(e) == e.hash for e in events)
    head = AuditChainHead.objects.get(pk=1)
    assert (head.last_event_id, head.last_hash) == (events[-1].pk, events[-1].hash)


def test_verify_reports_an_intact_chain(full_flow, compliance_client):
    # when
    result = verify(compliance_client)

    # then
    assert result == {"valid": True, "events": 14, "first_broken_event": None}


def test_verify_of_an_empty_trail_is_valid(db, database_administrator):
    # given
    from tests.conftest import client_for, make_user

    client = client_for(make_user("auditor", "compliance"))
    AuditEvent.objects.all().delete()
    AuditChainHead.objects.all().delete()

    # when
    result = verify(client)

    # then
    assert result == {"valid": True, "events": 0, "first_broken_event": None}


def test_verify_names_an_event_whose_details_were_edited(
    full_flow, compliance_client, database_administrator
):
    # given
    ids = all_event_ids()
    tampered = AuditEvent.objects.get(action="budget.reserved")
    AuditEvent.objects.filter(pk=tampered.pk).update(
        details={**tampered.details, "epsilon": "0.000000000001"}
    )

    # when
    result = verify(compliance_client)

    # then
    assert result == {"valid": False, "events": len(ids), "first_broken_event": tampered.pk}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("actor", "someone-else"),
        ("action", "user.login"),
        ("object_id", "999"),
        ("dataset_id", 999),
        ("at", "shift"),
    ],
)
def test_verify_names_an_event_whose_other_fields_were_edited(
    full_flow, compliance_client, database_administrator, field, value
):
    # given
    tampered = AuditEvent.objects.get(action="release.drafted")
    if value == "shift":
        value = tampered.at - timedelta(seconds=1)
    AuditEvent.objects.filter(pk=tampered.pk).update(**{field: value})

    # when
    result = verify(compliance_client)

    # then
    assert result["valid"] is False
    assert result["first_broken_event"] == tampered.pk


def test_verify_names_the_next_event_when_a_rewritten_event_has_a_recomputed_hash(
    full_flow, compliance_client, database_administrator
):
    # given an edit that also recomputes the edited event's own hash
    ids = all_event_ids()
    tampered = AuditEvent.objects.get(action="budget.reserved")
    tampered.details = {**tampered.details, "epsilon": "0.000000000001"}
    tampered.hash = event_hash(tampered)
    AuditEvent.objects.filter(pk=tampered.pk).update(details=tampered.details, hash=tampered.hash)

    # when
    result = verify(compliance_client)

    # then the link from the following event is broken
    assert result == {
        "valid": False,
        "events": len(ids),
        "first_broken_event": ids[ids.index(tampered.pk) + 1],
    }


def test_verify_names_the_next_event_when_a_middle_event_is_deleted(
    full_flow, compliance_client, database_administrator
):
    # given
    ids = all_event_ids()
    deleted = ids[6]
    AuditEvent.objects.filter(pk=deleted).delete()

    # when
    result = verify(compliance_client)

    # then
    assert result == {"valid": False, "events": len(ids) - 1, "first_broken_event": ids[7]}


def test_verify_detects_deletion_of_the_newest_event(
    full_flow, compliance_client, database_administrator
):
    # given
    ids = all_event_ids()
    AuditEvent.objects.filter(pk=ids[-1]).delete()

    # when
    result = verify(compliance_client)

    # then
    assert result == {"valid": False, "events": len(ids) - 1, "first_broken_event": ids[-1]}


def test_event_list_shape_is_newest_first(full_flow, compliance_client):
    # when
    body = compliance_client.get(EVENTS_URL).json()

    # then
    assert body["count"] == 14
    assert body["next"] is None
    ids = [e["id"] for e in body["results"]]
    assert ids == sorted(ids, reverse=True)
    newest = body["results"][0]
    stored = AuditEvent.objects.get(pk=newest["id"])
    assert newest == {
        "id": stored.pk,
        "at": stored.at.isoformat(),
        "actor": "anonymous",
        "action": "release.downloaded",
        "object_type": "release_file",
        "object_id": stored.object_id,
        "dataset": full_flow["dataset"],
        "details": {
            "slug": Release.objects.get(pk=full_flow["release"]).series.slug,
            "version": 1,
            "format": "csv",
            "repeats_counted_for_s": 600,
        },
        "repeats": 0,
        "client": "127.0.0.0/24",
        "hash": stored.hash,
        "previous_hash": stored.previous_hash,
    }


def test_event_list_is_paginated(compliance_client):
    # given 25 events besides the compliance user's creation
    for number in range(25):
        audit_record(
            actor=None,
            action=AuditAction.LOGIN_FAILED,
            object_type="user",
            object_id=None,
            details={"username": f"guess{number}"},
        )
    ids = list(AuditEvent.objects.order_by("-id").values_list("id", flat=True))

    # when
    first = compliance_client.get(EVENTS_URL).json()
    second = compliance_client.get(first["next"]).json()

    # then
    assert first["count"] == 26
    assert first["previous"] is None
    assert first["next"] == "http://testserver/api/v1/audit/events/?page=2"
    assert [e["id"] for e in first["results"]] == ids[:20]
    assert second["next"] is None
    assert [e["id"] for e in second["results"]] == ids[20:]


def test_event_list_past_the_last_page_is_404(compliance_client):
    # when
    response = compliance_client.get(EVENTS_URL, {"page": 99})

    # then
    assert response.status_code == 404
    assert set(response.json()) == {"detail"}


def test_event_list_filters_by_dataset(full_flow, compliance_client, curator, dataset):
    # given a second dataset (the conftest's) with its own events
    expected = list(
        AuditEvent.objects.filter(dataset_id=full_flow["dataset"])
        .order_by("-id")
        .values_list("id", flat=True)
    )

    # when
    body = compliance_client.get(EVENTS_URL, {"dataset": full_flow["dataset"]}).json()

    # then
    assert [e["id"] for e in body["results"]] == expected
    assert len(expected) == 11
    other = compliance_client.get(EVENTS_URL, {"dataset": dataset.pk}).json()
    assert [e["action"] for e in other["results"]] == ["dataset.schema_changed", "dataset.uploaded"]


def test_event_list_filters_by_actor(full_flow, compliance_client):
    # when
    body = compliance_client.get(EVENTS_URL, {"actor": "curator1"}).json()

    # then
    assert [e["action"] for e in body["results"]] == [
        "budget.reserved",
        "release.submitted",
        "release.drafted",
        "dataset.schema_changed",
        "dataset.uploaded",
        "user.login",
    ]


def test_event_list_filters_by_action(full_flow, compliance_client):
    # when
    body = compliance_client.get(EVENTS_URL, {"action": "release.published"}).json()

    # then
    assert body["count"] == 1
    [event] = body["results"]
    assert event["object_id"] == str(full_flow["release"])
    assert event["details"]["slug"] == Release.objects.get(pk=full_flow["release"]).series.slug
    assert event["details"]["version"] == 1
    assert set(event["details"]["files"]) == RELEASE_FILE_FORMATS


def test_event_list_filters_by_since(compliance_client):
    # given events before and after a cut
    audit_record(
        actor=None,
        action=AuditAction.LOGIN_FAILED,
        object_type="user",
        object_id=None,
        details={"username": "before"},
    )
    cut = timezone.now()
    after = [
        audit_record(
            actor=None,
            action=AuditAction.LOGIN_FAILED,
            object_type="user",
            object_id=None,
            details={"username": f"after{i}"},
        ).pk
        for i in range(2)
    ]

    # when
    body = compliance_client.get(EVENTS_URL, {"since": cut.isoformat()}).json()

    # then
    assert [e["id"] for e in body["results"]] == after[::-1]


def test_event_list_filters_combine(full_flow, compliance_client):
    # when
    body = compliance_client.get(
        EVENTS_URL,
        {
            "dataset": full_flow["dataset"],
            "actor": "system",
            "action": "budget.spent",
        },
    ).json()

    # then
    assert [e["action"] for e in body["results"]] == ["budget.spent"]
    assert body["results"][0]["details"]["release"] == full_flow["release"]


@pytest.mark.parametrize(
    ("params", "errors"),
    [
        ({"dataset": "abc"}, {"dataset": ["must be a dataset id"]}),
        ({"dataset": "-1"}, {"dataset": ["must be a dataset id"]}),
        ({"since": "yesterday"}, {"since": ["must be an ISO-8601 date and time"]}),
        ({"dataset": "x", "since": "2024-01-01T00:00"}, {"dataset": ["must be a dataset id"]}),
        (
            {"dataset": "x", "since": "not-a-date"},
            {"dataset": ["must be a dataset id"], "since": ["must be an ISO-8601 date and time"]},
        ),
    ],
)
def test_event_list_invalid_filters_are_400(compliance_client, params, errors):
    # when
    response = compliance_client.get(EVENTS_URL, params)

    # then
    assert response.status_code == 400
    assert response.json() == {"detail": "Invalid input.", "errors": errors}


@pytest.mark.parametrize(
    "since", ["2024-13-01T00:00:00", "2024-02-30T10:00:00", "2024-01-01T25:00:00+00:00"]
)
def test_event_list_impossible_since_date_is_400(compliance_client, since):
    # when
    response = compliance_client.get(EVENTS_URL, {"since": since})

    # then
    assert response.status_code == 400
    assert response.json() == {
        "detail": "Invalid input.",
        "errors": {"since": ["must be an ISO-8601 date and time"]},
    }


def _leaves(value):
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    else:
        yield value


def test_no_event_contains_a_raw_cell_value(full_flow, compliance_client):
    # given the clinic table's distinctive cells
    assert all(name.encode() in CLINIC_CSV for name in NAMES + NUMBERS)
    events = AuditEvent.objects.all()

    # then no name appears anywhere in any event's details, and no numeric cell is a value there
    for event in events:
        text = json.dumps(event.details, ensure_ascii=False)
        assert not any(name in text for name in NAMES), (event.action, text)
        for leaf in _leaves(event.details):
            assert str(leaf) not in NUMBERS, (event.action, leaf)
        assert not re.search(
            r"(?<![0-9A-Za-z.])(34|51|29|120)(?![0-9A-Za-z.])", json.dumps(event.details)
        ), (event.action, text)
    api_text = json.dumps(compliance_client.get(EVENTS_URL).json())
    assert not any(name in api_text for name in NAMES)
