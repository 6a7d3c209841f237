"""The raw data lifecycle (issue 12, point 7): a dataset's upload and converted table deleted by
its curator or by the retention period, its drafts closed, its releases, ledger and trail kept
and every published version still verifiable; and no URL ever serves the raw files."""

import html
import itertools
import json
import re
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group
from django.core.files.base import ContentFile
from django.core.management import call_command
from django.db import models
from django.test import Client
from django.urls import URLResolver, get_resolver, resolve
from django.urls.exceptions import Resolver404
from django.utils import timezone

from audit.chain import AuditAction
from audit.models import AuditEvent
from releases.models import BudgetMovement, Dataset, LedgerEntry, Release, private_storage
from releases.services import raw_data, signing
from releases.services.budget_audit import trail_verification
from releases.services.datasets import dataset_create, dataset_schema_update
from releases.services.errors import Conflict
from releases.services.raw_data import dataset_raw_delete, raw_data_retention_start
from releases.services.releases import release_draft_create, release_draft_update, release_submit
from releases.services.suggestions import dataset_schema_suggest
from releases.services.versions import release_new_version
from tests.conftest import CLINIC_SCHEMA, RELEASE_FILE_FORMATS, csv_upload, make_user

# A value of the identifier column that no page, file or event may ever show.
MARKER = "Zq7RawMarker"
NAMES = (f"{MARKER}-Ann", "Bob", "Cid", "Dee", "Eve")
RAW_CSV = (
    "name,age,sex,visits\n"
    f"{NAMES[0]},34,F,2\n{NAMES[1]},51,M,0\n{NAMES[2]},29,M,5\n{NAMES[3]},120,F,1\n{NAMES[4]},,X,3\n"
).encode()
QUERIES = [
    {"kind": "count"},
    {"kind": "histogram", "column": "sex"},
    {"kind": "sum", "column": "age"},
]
REASON = "The data-sharing agreement ended."
DELETED = "raw data of this dataset was deleted on"


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@dataclass
class Raw:
    """A dataset with a published version, a draft and all three kinds of raw file stored."""

    dataset: Dataset
    published: Release
    draft: Release
    upload: str  # the uploaded CSV (kept, as an earlier version of the app did)
    table: str  # the converted table every release reads
    stray: str  # a table a stopped conversion left behind

    @property
    def files(self) -> list[str]:
        return [self.upload, self.table, self.stray]


def _draft(user, dataset, title: str = "Draft statistics") -> Release:
    return release_draft_create(
        user=user,
        dataset=dataset,
        title=title,
        definition={"kind": "pure_dp", "epsilon": 0.2},
        queries=QUERIES,
    )


def _publish(user, dataset, capture) -> Release:
    release = _draft(user, dataset, title="Clinic statistics")
    with capture(execute=True):
        release_submit(release=release, user=user)
    release.refresh_from_db()
    assert release.status == Release.Status.PUBLISHED, release.failure_reason
    return release


def _raw_dataset(user, name: str = "Clinic", content: bytes = RAW_CSV) -> Dataset:
    created = dataset_create(
        owner=user, name=name, upload=csv_upload(content), budget_epsilon="2.0"
    )
    return dataset_schema_update(dataset=created, user=user, schema=CLINIC_SCHEMA)


@pytest.fixture
def raw(curator, django_capture_on_commit_callbacks) -> Raw:
    dataset = _raw_dataset(curator)
    published = _publish(curator, dataset, django_capture_on_commit_callbacks)
    draft = _draft(curator, dataset)
    storage = private_storage()
    upload = storage.save("datasets/upload-kept.csv", ContentFile(RAW_CSV))
    Dataset.objects.filter(pk=dataset.pk).update(file=upload)
    dataset.refresh_from_db()
    with storage.open(dataset.table.name, "rb") as table:
        stray = storage.save(
            f"tables/dataset-{dataset.pk}-stray.parquet", ContentFile(table.read())
        )
    return Raw(dataset, published, draft, upload, dataset.table.name, stray)


def _deletions() -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(action=AuditAction.DATASET_RAW_DELETED).order_by("id"))


def _delete(client, dataset: Dataset, body: dict | None = None):
    return client.post(
        f"/api/v1/datasets/{dataset.pk}/delete-raw-data/",
        {"reason": REASON, "confirm": True} if body is None else body,
        format="json",
    )


def _unchanged(raw: Raw) -> None:
    """Nothing was deleted: every raw file is stored, the fields are set, no event."""
    storage = private_storage()
    assert all(storage.exists(name) for name in raw.files)
    dataset = Dataset.objects.get(pk=raw.dataset.pk)
    assert (dataset.file.name, dataset.table.name) == (raw.upload, raw.table)
    assert (dataset.raw_deleted_at, dataset.raw_deleted_reason) == (None, "")
    assert Release.objects.get(pk=raw.draft.pk).status == Release.Status.DRAFT
    assert _deletions() == []


def _downloads(client, release: Release) -> dict[str, bytes]:
    entry = client.get(f"/api/v1/catalog/{release.series.slug}/versions/{release.version}/")
    assert entry.status_code == 200
    files = {}
    for link in entry.json()["files"]:
        response = client.get(link["url"])
        assert response.status_code == 200, link
        files[link["format"]] = b"".join(response.streaming_content)
    return files


# --- the deletion itself ----------------------------------------------------------------------


def test_deleting_removes_the_upload_and_every_table_and_closes_the_drafts(raw, curator_client):
    # given
    storage = private_storage()
    assert all(storage.exists(name) for name in raw.files)
    ledger_before = list(LedgerEntry.objects.values_list("pk", "state", "epsilon"))
    journal_before = BudgetMovement.objects.count()

    # when
    response = _delete(curator_client, raw.dataset)

    # then the files are gone from storage and the fields cleared
    assert response.status_code == 200, response.json()
    assert [storage.exists(name) for name in raw.files] == [False, False, False]
    dataset = Dataset.objects.get(pk=raw.dataset.pk)
    assert (dataset.file.name, dataset.table.name) == ("", "")
    assert dataset.raw_deleted_reason == REASON
    assert dataset.raw_deleted_at is not None
    assert dataset.schema_suggestion is None
    # the answer is the dataset with when and why
    body = response.json()
    assert body["id"] == dataset.pk
    assert body["raw_deleted_at"] == dataset.raw_deleted_at.isoformat()
    assert body["raw_deleted_reason"] == REASON
    assert body["sha256"] == raw.dataset.sha256  # kept: the same bytes are still a duplicate
    # the draft is closed with its reason; the published version and the ledger are untouched
    draft = Release.objects.get(pk=raw.draft.pk)
    day = dataset.raw_deleted_at.strftime("%Y-%m-%d")
    assert draft.status == Release.Status.CLOSED
    assert draft.failure_reason == (
        f"The dataset's raw data was deleted on {day}; this draft can no longer run."
    )
    assert Release.objects.get(pk=raw.published.pk).status == Release.Status.PUBLISHED
    assert list(LedgerEntry.objects.values_list("pk", "state", "epsilon")) == ledger_before
    assert BudgetMovement.objects.count() == journal_before
    # and one event says what happened, as the curator
    (event,) = _deletions()
    assert (event.actor, event.object_type, event.object_id, event.dataset_id) == (
        "curator1",
        "dataset",
        str(dataset.pk),
        dataset.pk,
    )
    assert event.details == {
        "reason": REASON,
        "files_removed": 3,
        "drafts_closed": [raw.draft.pk],
    }


def test_the_dataset_and_the_detail_api_show_when_and_why(raw, curator_client, compliance_client):
    # given
    before = curator_client.get(f"/api/v1/datasets/{raw.dataset.pk}/").json()

    # when
    _delete(curator_client, raw.dataset)

    # then
    assert (before["raw_deleted_at"], before["raw_deleted_reason"]) == (None, None)
    for client in (curator_client, compliance_client):
        detail = client.get(f"/api/v1/datasets/{raw.dataset.pk}/").json()
        assert detail["raw_deleted_reason"] == REASON
        assert detail["raw_deleted_at"].startswith(str(timezone.now().year))
    listed = curator_client.get("/api/v1/datasets/").json()["results"]
    assert [entry["raw_deleted_reason"] for entry in listed] == [REASON]


def test_every_published_version_stays_downloadable_and_verifiable(
    raw, curator_client, anonymous_client, client, tmp_path, capsys
):
    # given every file of the published version as downloaded before the deletion
    release = raw.published
    before = _downloads(anonymous_client, release)
    assert set(before) == RELEASE_FILE_FORMATS

    # when
    assert _delete(curator_client, raw.dataset).status_code == 200

    # then the same files are served, byte for byte
    after = _downloads(anonymous_client, release)
    assert after == before
    # the signature of the metadata verifies with the published key
    key = anonymous_client.get("/api/v1/signing-key/").content
    signing.signature_check(after["metadata"], after["signature"], key)
    # and verify_release accepts the download: signature and every listed file's SHA-256
    slug = release.series.slug
    folder = tmp_path / "download"
    folder.mkdir()
    names = {"metadata": f"{slug}-v1-metadata.json", "signature": f"{slug}-v1-metadata.json.sig"}
    for file_format, content in after.items():
        name = names.get(file_format)
        if name is None:
            response = anonymous_client.get(
                f"/api/v1/catalog/{slug}/versions/1/files/{file_format}/"
            )
            b"".join(response.streaming_content)
            name = re.search(r'filename="([^"]+)"', response["Content-Disposition"]).group(1)
        (folder / name).write_bytes(content)
    capsys.readouterr()
    call_command("verify_release", folder / names["metadata"], folder / names["signature"])
    assert capsys.readouterr().out.startswith("VALID")
    # the public version page still shows it
    page = client.get(f"/catalog/{slug}/v1/")
    assert page.status_code == 200
    assert "Clinic statistics" in page.content.decode()
    # and the trail verifies, with no budget mismatch
    call_command("verify_audit")
    assert capsys.readouterr().out.startswith("VALID")
    verification = trail_verification()
    assert (verification["valid"], verification["budget_mismatches"]) == (True, [])


# --- after the deletion -----------------------------------------------------------------------


def test_a_closed_draft_can_never_be_submitted_changed_or_previewed(raw, curator_client, curator):
    # given
    _delete(curator_client, raw.dataset)
    ledger_before = LedgerEntry.objects.count()

    # when
    submitted = curator_client.post(f"/api/v1/releases/{raw.draft.pk}/submit/")
    preview = curator_client.get(f"/api/v1/releases/{raw.draft.pk}/simulated-preview/")

    # then
    draft = Release.objects.get(pk=raw.draft.pk)
    assert submitted.status_code == 409
    assert submitted.json() == {"detail": draft.failure_reason}
    assert "raw data was deleted" in draft.failure_reason
    assert preview.status_code == 409
    assert DELETED in preview.json()["detail"]
    with pytest.raises(Conflict, match="Only drafts can be changed"):
        release_draft_update(release=draft, user=curator, title="Changed")
    assert Release.objects.get(pk=raw.draft.pk).status == Release.Status.CLOSED
    assert LedgerEntry.objects.count() == ledger_before
    assert curator_client.get(f"/api/v1/releases/{raw.draft.pk}/").json()["status"] == "closed"
    refused = AuditEvent.objects.get(action=AuditAction.SUBMISSION_REFUSED)
    assert refused.details["reason"] == "closed"


def test_schema_drafts_suggestions_and_new_versions_are_refused_with_409(
    raw, curator_client, curator, client
):
    # given
    _delete(curator_client, raw.dataset)
    dataset = Dataset.objects.get(pk=raw.dataset.pk)
    releases_before = Release.objects.count()
    events_before = AuditEvent.objects.count()

    # when
    schema = curator_client.put(
        f"/api/v1/datasets/{dataset.pk}/schema/",
        {"columns": {"age": {"kind": "numeric", "lower": 0, "upper": 90}}},
        format="json",
    )
    drafted = curator_client.post(
        "/api/v1/releases/",
        {
            "dataset": dataset.pk,
            "title": "New",
            "definition": {"kind": "pure_dp", "epsilon": 0.1},
            "queries": QUERIES,
        },
        format="json",
    )

    # then
    for response in (schema, drafted):
        assert response.status_code == 409
        assert set(response.json()) == {"detail"}
        assert DELETED in response.json()["detail"]
    with pytest.raises(Conflict, match=DELETED):
        dataset_schema_suggest(dataset=dataset, user=curator)
    with pytest.raises(Conflict, match=DELETED):
        release_new_version(release=raw.published, user=curator)
    with pytest.raises(Conflict, match=DELETED):
        dataset_schema_update(dataset=dataset, user=curator, schema=CLINIC_SCHEMA)
    # the pages refuse the same, and offer none of it
    client.force_login(curator)
    new_version = client.post(f"/releases/{raw.published.pk}/new-version/", follow=True)
    assert DELETED in new_version.content.decode()
    suggested = client.post(f"/datasets/{dataset.pk}/", {"action": "suggest"})
    assert "These suggestions were read from the data" not in suggested.content.decode()
    # and nothing changed
    assert Release.objects.count() == releases_before
    assert Dataset.objects.get(pk=dataset.pk).schema == dataset.schema
    assert not AuditEvent.objects.filter(
        pk__gt=events_before,
        action__in=[
            AuditAction.SCHEMA_CHANGED,
            AuditAction.SCHEMA_SUGGESTED,
            AuditAction.RELEASE_DRAFTED,
        ],
    ).exists()


def test_a_second_deletion_answers_the_same_and_records_nothing(raw, curator_client):
    # given
    first = _delete(curator_client, raw.dataset)
    events = AuditEvent.objects.count()

    # when
    second = _delete(curator_client, raw.dataset, {"reason": "Another reason.", "confirm": True})
    again = dataset_raw_delete(dataset_id=raw.dataset.pk, actor=None, reason="A third one.")

    # then
    assert second.status_code == 200
    assert second.json() == first.json()
    assert (again.raw_deleted_reason, again.raw_deleted_at.isoformat()) == (
        REASON,
        first.json()["raw_deleted_at"],
    )
    assert AuditEvent.objects.count() == events
    assert len(_deletions()) == 1


def test_deletion_is_refused_while_a_release_is_queued_or_running(
    raw, curator, curator_client, django_capture_on_commit_callbacks
):
    # given a release submitted but not yet run (its task is sent on commit)
    submitted = _draft(curator, raw.dataset, title="Queued statistics")
    release_submit(release=submitted, user=curator)
    assert Release.objects.get(pk=submitted.pk).status == Release.Status.QUEUED

    # when
    queued = _delete(curator_client, raw.dataset)
    Release.objects.filter(pk=submitted.pk).update(status=Release.Status.RUNNING)
    running = _delete(curator_client, raw.dataset)

    # then
    assert queued.status_code == running.status_code == 409
    assert queued.json() == {
        "detail": f"Release #{submitted.pk} of this dataset is queued: its worker needs the "
        "rows. Delete the raw data once it has been published, has failed or was rejected."
    }
    assert f"Release #{submitted.pk} of this dataset is running" in running.json()["detail"]
    _unchanged(raw)
    # once it has run, the deletion goes ahead
    Release.objects.filter(pk=submitted.pk).update(status=Release.Status.QUEUED)
    from releases.services.runs import release_run

    release_run(release_id=submitted.pk, worker="test:0")
    assert Release.objects.get(pk=submitted.pk).status == Release.Status.PUBLISHED
    assert _delete(curator_client, raw.dataset).status_code == 200


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({}, {"reason", "confirm"}),
        ({"reason": REASON}, {"confirm"}),
        ({"reason": REASON, "confirm": "yes"}, {"confirm"}),
        ({"reason": REASON, "confirm": False}, {"confirm"}),
        ({"reason": "   ", "confirm": True}, {"reason"}),
        ({"reason": 5, "confirm": True}, {"reason"}),
        ({"reason": "x" * 1001, "confirm": True}, {"reason"}),
        ({"reason": "bad\u202eorder", "confirm": True}, {"reason"}),
        (["not", "an", "object"], {"reason", "confirm"}),
    ],
)
def test_a_bad_body_is_400_naming_reason_or_confirm_and_deletes_nothing(
    raw, curator_client, body, fields
):
    # when
    response = _delete(curator_client, raw.dataset, body)

    # then
    assert response.status_code == 400
    assert set(response.json()["errors"]) == fields
    _unchanged(raw)


def test_only_the_owner_may_delete(raw, other_curator_client, compliance_client, anonymous_client):
    # when
    answers = [
        _delete(client, raw.dataset).status_code
        for client in (other_curator_client, compliance_client, anonymous_client)
    ]

    # then
    assert answers == [404, 403, 401]
    _unchanged(raw)


def test_only_the_owner_may_use_the_page_form(raw, client, other_curator, compliance_user):
    # given
    url = f"/datasets/{raw.dataset.pk}/delete-raw-data/"
    form = {"reason": REASON, "confirm": "on"}

    # when
    anonymous = client.post(url, form)
    client.force_login(other_curator)
    other = client.post(url, form)
    client.force_login(compliance_user)
    compliance = client.post(url, form)

    # then
    assert anonymous.status_code == 302
    assert anonymous["Location"] == f"/accounts/login/?next={url}"
    assert (other.status_code, compliance.status_code) == (404, 403)
    _unchanged(raw)


def test_the_trail_holds_no_value_from_the_rows(raw, curator_client):
    # when
    _delete(curator_client, raw.dataset)

    # then
    (event,) = _deletions()
    assert set(event.details) == {"reason", "files_removed", "drafts_closed"}
    trail = json.dumps(
        list(AuditEvent.objects.filter(dataset_id=raw.dataset.pk).values("details")),
        ensure_ascii=False,
    )
    assert not [name for name in NAMES if name in trail]


# --- the page ---------------------------------------------------------------------------------


def _inline_code(page: str) -> list[str]:
    """Inline scripts and style attributes (a strict Content-Security-Policy refuses both)."""
    return re.findall(r"<script(?![^>]*\bsrc=)[^>]*>|\sstyle=", page)


def test_the_page_form_deletes_and_the_page_shows_the_deleted_state(raw, client, curator):
    # given
    client.force_login(curator)
    before = client.get(f"/datasets/{raw.dataset.pk}/").content.decode()

    # when
    response = client.post(
        f"/datasets/{raw.dataset.pk}/delete-raw-data/", {"reason": REASON, "confirm": "on"}
    )

    # then
    assert 'id="raw-delete"' in before
    assert 'name="csrfmiddlewaretoken"' in before
    assert response.status_code == 302
    assert response["Location"] == f"/datasets/{raw.dataset.pk}/"
    page = client.get(response["Location"]).content.decode()
    dataset = Dataset.objects.get(pk=raw.dataset.pk)
    day = dataset.raw_deleted_at.strftime("%Y-%m-%d")
    assert "The raw data was deleted." in page
    assert "<strong>Raw data deleted</strong> on <time datetime=" in page
    assert day in page
    assert f'<span id="raw-deleted-reason">{REASON}</span>' in page
    closed = re.search(r'\(closed: <span class="closed-reason">([^<]*)</span>\)', page)
    assert html.unescape(closed.group(1)) == Release.objects.get(pk=raw.draft.pk).failure_reason
    assert 'id="raw-delete"' not in page  # no second form
    assert "New release</a>" not in page
    assert 'value="suggest"' not in page
    assert _inline_code(before) == _inline_code(page) == []
    assert "<td>raw data deleted</td>" in client.get("/datasets/").content.decode()
    status = client.get(f"/releases/{raw.draft.pk}/").content.decode()
    assert f"Closed: The dataset&#x27;s raw data was deleted on {day}" in status
    assert [private_storage().exists(name) for name in raw.files] == [False, False, False]


@pytest.mark.parametrize(
    ("form", "messages"),
    [
        ({"reason": REASON}, ["Tick the box to confirm: deleting the raw data cannot be undone."]),
        ({"confirm": "on"}, ["Say why the raw data is deleted."]),
        (
            {"reason": "  "},
            [
                "Say why the raw data is deleted.",
                "Tick the box to confirm: deleting the raw data cannot be undone.",
            ],
        ),
        ({"reason": "x" * 1001, "confirm": "on"}, ["Use at most 1000 characters."]),
    ],
)
def test_the_page_form_shows_what_is_missing_and_deletes_nothing(
    raw, client, curator, form, messages
):
    # given
    client.force_login(curator)

    # when
    response = client.post(f"/datasets/{raw.dataset.pk}/delete-raw-data/", form)

    # then
    page = response.content.decode()
    assert response.status_code == 200
    for message in messages:
        assert f"Nothing was deleted: {message}" in page  # at the top
        assert f"<li>{message}</li>" in page  # and at the field
    if form.get("reason", "").strip() and len(form["reason"]) <= 1000:
        assert f">{form['reason']}</textarea>" in page  # kept as typed
    assert 'id="raw-delete"' in page
    assert _inline_code(page) == []
    _unchanged(raw)


def test_the_page_form_says_why_it_is_refused_while_a_release_is_queued(raw, client, curator):
    # given
    submitted = _draft(curator, raw.dataset, title="Queued statistics")
    release_submit(release=submitted, user=curator)
    client.force_login(curator)

    # when
    response = client.post(
        f"/datasets/{raw.dataset.pk}/delete-raw-data/", {"reason": REASON, "confirm": "on"}
    )

    # then
    assert response.status_code == 200
    assert f"Nothing was deleted: Release #{submitted.pk} of this dataset is queued" in (
        response.content.decode()
    )
    _unchanged(raw)


# --- retention --------------------------------------------------------------------------------


@pytest.fixture
def aged(curator, django_capture_on_commit_callbacks, settings):
    """Two datasets with raw data under a 30-day retention: one uploaded 31 days ago (with a
    draft), one yesterday."""
    settings.RAW_DATA_RETENTION_DAYS = 30
    old = _raw_dataset(curator, name="Old")
    new = _raw_dataset(curator, name="New", content=RAW_CSV.replace(b"\n", b"\r\n"))
    draft = _draft(curator, old)
    now = timezone.now()
    Dataset.objects.filter(pk=old.pk).update(created_at=now - timedelta(days=31))
    Dataset.objects.filter(pk=new.pk).update(created_at=now - timedelta(days=1))
    return old, new, draft


def test_retention_deletes_only_the_expired_datasets_as_the_system(aged, capsys):
    # given
    old, new, draft = aged
    old_table, new_table = old.table.name, new.table.name

    # when
    call_command("delete_expired_raw_data")

    # then
    assert capsys.readouterr().out.startswith(
        f"deleted the raw data of 1 dataset(s) (retention: 30 days): [{old.pk}]"
    )
    storage = private_storage()
    assert (storage.exists(old_table), storage.exists(new_table)) == (False, True)
    old.refresh_from_db()
    new.refresh_from_db()
    assert old.raw_deleted_reason == "retention: 30 days"
    assert new.raw_deleted_at is None
    assert Release.objects.get(pk=draft.pk).status == Release.Status.CLOSED
    (event,) = _deletions()
    assert (event.actor, event.dataset_id) == ("system", old.pk)
    assert event.details == {
        "reason": "retention: 30 days",
        "files_removed": 1,
        "drafts_closed": [draft.pk],
    }
    # and a second run finds nothing more to do
    call_command("delete_expired_raw_data")
    assert "deleted the raw data of 0 dataset(s)" in capsys.readouterr().out
    assert len(_deletions()) == 1


def test_retention_dry_run_deletes_nothing(aged, capsys):
    # given
    old, new, draft = aged
    events = AuditEvent.objects.count()

    # when
    call_command("delete_expired_raw_data", "--dry-run")

    # then
    assert capsys.readouterr().out.startswith(
        f"would delete the raw data of 1 dataset(s) (retention: 30 days): [{old.pk}]"
    )
    assert all(private_storage().exists(d.table.name) for d in (old, new))
    assert Dataset.objects.filter(raw_deleted_at__isnull=False).count() == 0
    assert Release.objects.get(pk=draft.pk).status == Release.Status.DRAFT
    assert AuditEvent.objects.count() == events


def test_retention_skips_a_dataset_whose_release_is_queued_and_zero_keeps_everything(
    aged, curator, settings, capsys
):
    # given the expired dataset's release queued
    old, _, draft = aged
    release_submit(release=draft, user=curator)

    # when
    call_command("delete_expired_raw_data")
    skipped = capsys.readouterr().out
    settings.RAW_DATA_RETENTION_DAYS = 0
    Release.objects.filter(pk=draft.pk).update(status=Release.Status.FAILED)
    call_command("delete_expired_raw_data")
    kept = capsys.readouterr().out

    # then
    assert f"skipped dataset {old.pk}: Release #{draft.pk} of this dataset is queued" in skipped
    assert kept == "RAW_DATA_RETENTION_DAYS is 0: raw data is kept until deleted.\n"
    assert private_storage().exists(old.table.name)
    assert _deletions() == []


def test_each_worker_applies_the_retention_period_in_a_thread_of_its_own(
    aged, settings, monkeypatch
):
    # given: the thread's action run here, in the test's transaction
    old, new, _ = aged
    started = []
    monkeypatch.setattr(raw_data.Ticker, "start", lambda ticker: started.append(ticker))

    # when
    ticker = raw_data_retention_start()
    ticker.action()
    settings.RAW_DATA_RETENTION_DAYS = 0
    idle = raw_data_retention_start()

    # then
    assert started == [ticker]
    assert (ticker.name, ticker.interval, ticker.run_first) == ("raw-data-retention", 3600.0, True)
    assert Dataset.objects.get(pk=old.pk).raw_deleted_reason == "retention: 30 days"
    assert Dataset.objects.get(pk=new.pk).raw_deleted_at is None
    assert idle is None


def test_a_worker_starts_the_retention_thread_when_it_is_ready(settings, monkeypatch):
    # given
    from config import celery

    settings.RAW_DATA_RETENTION_DAYS = 30
    monkeypatch.setattr(raw_data.Ticker, "start", lambda ticker: None)
    monkeypatch.setattr(celery, "_reapers", [])

    # when
    celery.worker_ready.send(sender=None)

    # then the release reaper and the retention both run until the worker shuts down
    names = sorted(ticker.name for ticker in celery._reapers)
    assert names == ["raw-data-retention", "release-reaper"]


# --- raw files never reachable ----------------------------------------------------------------

# A route's converter, not the name of a regex group: (?P<app_label>…).
CONVERTER = re.compile(r"(?<!\?P)<(?:(?P<converter>\w+):)?(?P<name>\w+)>")
REGEX_GROUP = re.compile(r"\(\?P<(?P<name>\w+)>(?P<body>[^)]*)\)")


def _route_templates() -> list[str]:
    """Every URL pattern of the site as one string from the root, its parameters still in
    (route converters ``<int:pk>`` and regex groups ``(?P<app_label>auth|knox)``)."""

    def walk(resolver, prefix: str):
        for entry in resolver.url_patterns:
            text = prefix + str(entry.pattern).replace("^", "").replace("$", "")
            if isinstance(entry, URLResolver):
                yield from walk(entry, text)
            else:
                yield text

    return list(walk(get_resolver(), "/"))


def _concrete_paths(raw: Raw, file_names: list[str]) -> set[str]:
    """Each pattern with every combination of plausible values for its parameters: this
    dataset's and its releases' ids, the published slug, every file format, and the raw files'
    own storage names wherever a pattern takes a path."""
    ids = sorted({raw.dataset.pk, raw.published.pk, raw.draft.pk})
    texts = [str(i) for i in ids] + file_names

    def candidates(name: str, kind: str) -> list[str]:
        if name == "slug" or kind == "slug":
            return [raw.published.series.slug]
        if name == "version":
            return ["1"]
        if name == "position":
            return ["0", "1", "2"]
        if name == "file_format":
            return [*sorted(RELEASE_FILE_FORMATS), "file", "table", *file_names]
        if kind == "int":
            return [str(i) for i in ids]
        if "|" in kind:
            return kind.split("|")
        return texts  # str, path and catch-all regex groups

    paths = set()
    for template in _route_templates():
        slots = [
            (m.group(0), m.group("name"), m.group("converter") or "str")
            for m in CONVERTER.finditer(template)
        ]
        slots += [
            (m.group(0), m.group("name"), m.group("body")) for m in REGEX_GROUP.finditer(template)
        ]
        for values in itertools.product(*(candidates(name, kind) for _, name, kind in slots)):
            path = template
            for (text, _, _), value in zip(slots, values, strict=True):
                path = path.replace(text, value, 1)
            try:
                resolve(path)
            except Resolver404:
                continue
            paths.add(path)
    return paths


def _body(response) -> bytes:
    if response.streaming:
        return b"".join(response.streaming_content)
    return response.content


def test_no_url_serves_the_raw_upload_or_table(raw, curator):
    # given the raw files' bytes, and a superuser who is also compliance
    storage = private_storage()
    secrets = {}
    for name in (raw.upload, raw.table):
        with storage.open(name, "rb") as file:
            secrets[name] = file.read()
    superuser = make_user("root", None)
    superuser.is_staff = superuser.is_superuser = True
    superuser.save()
    superuser.groups.add(Group.objects.get_or_create(name="compliance")[0])

    def leaks(body: bytes) -> bool:
        return MARKER.encode() in body or any(secret in body for secret in secrets.values())

    assert leaks(RAW_CSV)  # the check sees the raw bytes when they are there
    paths = _concrete_paths(raw, list(secrets))
    assert "/admin/auth/user/" in paths
    assert f"/datasets/{raw.dataset.pk}/" in paths
    assert f"/api/v1/catalog/{raw.published.series.slug}/versions/1/files/csv/" in paths
    assert f"/api/v1/datasets/{raw.dataset.pk}/" in paths

    # when every route is fetched by the owner and by the superuser
    served = {}
    for user in (curator, superuser):
        client = Client()
        for path in sorted(paths):
            client.force_login(user)  # a logout route may have ended the session
            response = client.get(path)
            served[(user.username, path)] = (response.status_code, _body(response))

    # then the owner's pages and the superuser's admin were reached, and none held raw bytes
    assert served[("curator1", f"/datasets/{raw.dataset.pk}/")][0] == 200
    assert served[("root", "/admin/auth/user/")][0] == 200
    assert served[("root", "/audit/export.csv")][0] == 200
    assert [key for key, (_, body) in served.items() if leaks(body)] == []


def test_the_admin_registers_no_model_with_a_private_file(raw, client):
    # given
    superuser = make_user("root", None)
    superuser.is_staff = superuser.is_superuser = True
    superuser.save()
    client.force_login(superuser)

    # when
    index = client.get("/admin/").content.decode()

    # then Dataset is not registered, nor any model with a file in private storage
    assert Dataset not in admin.site._registry
    private = [
        f"{model.__name__}.{field.name}"
        for model in admin.site._registry
        for field in model._meta.get_fields()
        if isinstance(field, models.FileField) and field.storage is private_storage()
    ]
    assert private == []
    assert "/admin/releases/" not in index
    assert raw.upload not in index
    assert raw.table not in index
    assert Path(raw.table).name not in index


def test_a_release_that_failed_after_drawing_is_still_published_again_without_the_rows(
    curator, curator_client, django_capture_on_commit_callbacks, monkeypatch
):
    # given a release whose answers were drawn (budget spent) but whose publication failed
    from releases.services import runs

    dataset = _raw_dataset(curator)
    real = runs.release_csv
    calls = []

    def failing_once(statistics):
        calls.append(1)
        if len(calls) == 1:
            raise MemoryError
        return real(statistics)

    monkeypatch.setattr(runs, "release_csv", failing_once)
    failed = _draft(curator, dataset, title="Clinic statistics")
    with django_capture_on_commit_callbacks(execute=True):
        release_submit(release=failed, user=curator)
    failed.refresh_from_db()
    assert failed.status == Release.Status.FAILED
    assert LedgerEntry.objects.get(release=failed).state == LedgerEntry.State.SPENT

    # when the raw data is deleted, then the release is published again
    assert _delete(curator_client, dataset).status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        again = curator_client.post(f"/api/v1/releases/{failed.pk}/publish-again/")

    # then its stored answers are published: publication never reads the rows
    assert again.status_code == 202
    failed.refresh_from_db()
    assert (failed.status, failed.version) == (Release.Status.PUBLISHED, 1)
    assert trail_verification()["valid"] is True


def test_a_failed_upload_whose_file_was_kept_can_be_deleted_but_not_while_converting(
    curator, client, curator_client
):
    # given a failed upload whose file an earlier version of the app kept
    dataset = dataset_create(
        owner=curator, name="Clinic", upload=csv_upload(RAW_CSV), budget_epsilon="1.0"
    )
    storage = private_storage()
    kept = storage.save("datasets/upload-failed.csv", ContentFile(RAW_CSV))
    Dataset.objects.filter(pk=dataset.pk).update(
        status=Dataset.Status.PROCESSING, failure_reason="", file=kept
    )
    client.force_login(curator)

    # when it is still converting, then when it has failed
    converting = _delete(curator_client, dataset)
    Dataset.objects.filter(pk=dataset.pk).update(
        status=Dataset.Status.FAILED, failure_reason="Row 3 has 5 fields; the header has 4."
    )
    page = client.get(f"/datasets/{dataset.pk}/").content.decode()
    deleted = client.post(
        f"/datasets/{dataset.pk}/delete-raw-data/", {"reason": REASON, "confirm": "on"}
    )

    # then
    assert converting.status_code == 409
    assert "still being converted" in converting.json()["detail"]
    assert 'id="raw-delete"' in page
    assert deleted.status_code == 302
    assert [storage.exists(name) for name in (kept, dataset.table.name)] == [False, False]
    after = client.get(f"/datasets/{dataset.pk}/").content.decode()
    assert "<strong>Raw data deleted</strong>" in after
    assert "Nothing of it was kept." in after
    assert _deletions()[0].details["files_removed"] == 2


def test_a_file_that_cannot_be_deleted_leaves_the_dataset_unmarked_and_a_retry_finishes(
    raw, curator, monkeypatch
):
    # given storage that deletes one file, then fails (object storage unreachable)
    from django.core.files.storage import FileSystemStorage

    real = FileSystemStorage.delete
    deleted = []

    def failing_after_one(storage, name):
        if deleted:
            raise OSError("storage unreachable")
        deleted.append(name)
        real(storage, name)

    monkeypatch.setattr(FileSystemStorage, "delete", failing_after_one)

    # when
    with pytest.raises(OSError, match="storage unreachable"):
        dataset_raw_delete(dataset_id=raw.dataset.pk, actor=curator, reason=REASON)

    # then nothing is marked deleted and no event was kept
    dataset = Dataset.objects.get(pk=raw.dataset.pk)
    assert (dataset.raw_deleted_at, dataset.table.name) == (None, raw.table)
    assert Release.objects.get(pk=raw.draft.pk).status == Release.Status.DRAFT
    assert _deletions() == []
    # and once storage answers again, the same call finishes the deletion
    monkeypatch.setattr(FileSystemStorage, "delete", real)
    dataset_raw_delete(dataset_id=raw.dataset.pk, actor=curator, reason=REASON)
    assert not any(private_storage().exists(name) for name in raw.files)
    (event,) = _deletions()
    assert event.details["files_removed"] == len(raw.files) - len(deleted)
