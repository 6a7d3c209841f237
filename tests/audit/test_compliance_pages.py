"""The compliance dashboard (issue 12, point 3): a per-dataset privacy report with the budget
over time, every release with its definition, charge and anchor; a CSV export of any filtered
view of the events, safe to open in a spreadsheet and itself an audit event; an `until` filter."""

import csv
import io
import json

import pytest

from audit.models import AuditEvent
from tests.conftest import draft_body, publish_through_api


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def published(curator_client, dataset, django_capture_on_commit_callbacks):
    body = draft_body(dataset.pk, epsilon=0.3)
    body["title"] = '=HYPERLINK("http://evil.example")'
    return publish_through_api(curator_client, django_capture_on_commit_callbacks, body)


def test_the_privacy_report_shows_each_release_with_its_anchor(published, client, compliance_user):
    client.force_login(compliance_user)
    response = client.get(f"/audit/datasets/{published.dataset_id}/report/")
    assert response.status_code == 200
    page = response.content.decode()
    metadata = json.loads(published.files.get(format="metadata").file.read())
    assert f'id="report-release-{published.pk}"' in page
    assert metadata["audit_head"] in page
    assert "pure_dp, ε 0.3" in page
    assert 'id="ledger-chart-data"' in page
    assert "Not required when submitted" in page


def test_only_compliance_sees_the_report_and_the_export(published, client, curator):
    client.force_login(curator)
    assert client.get(f"/audit/datasets/{published.dataset_id}/report/").status_code == 403
    assert client.get("/audit/export.csv").status_code == 403


def read_export(client, **params) -> list[dict]:
    response = client.get("/audit/export.csv", params)
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    text = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(text)))


def test_the_export_follows_the_filters_and_escapes_formulas(published, client, compliance_user):
    client.force_login(compliance_user)

    # when the drafted events are exported
    rows = read_export(client, action="release.drafted")

    # then one row; its details are JSON, which never starts like a formula
    assert [row["action"] for row in rows] == ["release.drafted"]
    assert rows[0]["details"].startswith("{")
    everything = read_export(client, dataset=published.dataset_id)
    stored = AuditEvent.objects.filter(dataset_id=published.dataset_id).order_by("id")
    assert [int(row["id"]) for row in everything] == [e.pk for e in stored]
    # and the export itself is an event, with its filters
    exported = AuditEvent.objects.filter(action="audit.exported").order_by("id").last()
    assert exported.actor == "auditor"
    assert exported.details == {"filters": {"dataset": str(published.dataset_id)}}


def test_text_starting_like_a_formula_is_escaped_in_the_export(db, client, compliance_user):
    from audit.chain import AuditAction, audit_record

    audit_record(
        actor=None,
        action=AuditAction.LOGIN_FAILED,
        object_type="=cmd|' /C calc'!A0",
        object_id="@SUM(1+1)",
    )
    client.force_login(compliance_user)
    (row,) = [r for r in read_export(client) if r["action"] == "user.login_failed"]
    assert row["object_type"] == "'=cmd|' /C calc'!A0"
    assert row["object_id"] == "'@SUM(1+1)"


def test_until_bounds_the_events_and_bad_filters_are_refused(published, client, compliance_user):
    client.force_login(compliance_user)
    first = AuditEvent.objects.order_by("id").first()
    rows = read_export(client, until=first.at.isoformat())
    assert [int(row["id"]) for row in rows] == [first.pk]
    response = client.get("/audit/export.csv", {"until": "not a date"})
    assert response.status_code == 400
    assert b"until" in response.content
