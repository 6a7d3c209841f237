"""Ingest once, in columns (issue 8, points 1 and 2): uploads stream to disk, convert to typed
columns (inline when small, in a worker when large), end ready or failed with nothing half-made
left behind, and every release records how long the worker took."""

from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.utils import timezone

from audit.models import AuditEvent
from releases.models import Dataset
from releases.services.datasets import dataset_convert, dataset_create, dataset_reap_stale
from tests.conftest import (
    CLINIC_CSV,
    CLINIC_SCHEMA,
    csv_cells,
    csv_upload,
    draft_body,
    stored_cells,
)

User = get_user_model()


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def converts_in_worker(settings):
    """Every upload is "large": it converts in a (here eager) Celery task after the commit."""
    settings.DATASET_CONVERT_INLINE_BYTES = 0


def files_under(root) -> list[Path]:
    root = Path(root)
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def upload(client, content: bytes = CLINIC_CSV):
    return client.post(
        "/api/v1/datasets/",
        {
            "name": "Clinic",
            "budget_epsilon": "1",
            "declared_size": "5",
            "file": csv_upload(content),
        },
        format="multipart",
    )


def test_default_upload_limit_is_at_least_two_gibibytes():
    assert django_settings.DATASET_MAX_UPLOAD_BYTES >= 2 * 1024**3


def test_a_large_upload_answers_processing_at_once_then_becomes_ready_in_the_worker(
    curator_client, converts_in_worker, settings, django_capture_on_commit_callbacks
):
    # when the upload is made, before the task runs
    with django_capture_on_commit_callbacks(execute=False) as pending:
        response = upload(curator_client)

    # then it answers at once, processing, with nothing converted yet
    assert response.status_code == 201
    body = response.json()
    assert (body["status"], body["progress"], body["row_count"], body["columns"]) == (
        "processing",
        0.0,
        None,
        [],
    )
    dataset = Dataset.objects.get()
    assert not dataset.table
    assert [p.name for p in files_under(settings.PRIVATE_STORAGE_ROOT)] == [
        Path(dataset.file.name).name
    ]

    # when the conversion task runs (and its own commit hooks with it)
    with django_capture_on_commit_callbacks(execute=True):
        for callback in pending:
            callback()

    # then the dataset is ready, its columns filled, and only the columnar table is kept
    detail = curator_client.get(f"/api/v1/datasets/{dataset.pk}/").json()
    assert (detail["status"], detail["progress"], detail["row_count"]) == ("ready", 1.0, 5)
    assert [c["name"] for c in detail["columns"]] == ["name", "age", "sex", "visits"]
    dataset.refresh_from_db()
    assert files_under(settings.PRIVATE_STORAGE_ROOT) == [Path(dataset.table.path)]
    assert stored_cells(dataset.table.path) == csv_cells(CLINIC_CSV)
    assert AuditEvent.objects.filter(action="dataset.converted").count() == 1


def test_a_bad_large_upload_ends_failed_naming_the_row_and_leaves_no_file(
    curator_client, converts_in_worker, settings, django_capture_on_commit_callbacks
):
    # given a table whose third row is ragged, uploaded as a large one
    ragged = b"name,age\nAnn,34\nBob,51,secret-value\n"

    # when
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(curator_client, ragged)

    # then
    assert response.status_code == 201
    dataset_id = response.json()["id"]
    detail = curator_client.get(f"/api/v1/datasets/{dataset_id}/").json()
    assert detail["status"] == "failed"
    assert detail["failure_reason"] == "Row 3 has 3 fields but the header has 2."
    assert "secret-value" not in str(detail)
    assert files_under(settings.PRIVATE_STORAGE_ROOT) == []
    event = AuditEvent.objects.get(action="dataset.conversion_failed")
    assert event.details == {"reason": "Row 3 has 3 fields but the header has 2."}


def test_a_table_that_is_not_ready_refuses_a_schema_and_a_suggestion_with_409(
    curator_client, converts_in_worker, django_capture_on_commit_callbacks
):
    # given a dataset still converting
    with django_capture_on_commit_callbacks(execute=False):
        dataset_id = upload(curator_client).json()["id"]

    # when
    schema = curator_client.put(
        f"/api/v1/datasets/{dataset_id}/schema/", CLINIC_SCHEMA, format="json"
    )

    # then
    assert schema.status_code == 409
    assert "still being converted" in schema.json()["detail"]


def test_converting_twice_changes_nothing(curator, converts_in_worker):
    # given a converted dataset
    dataset = dataset_create(owner=curator, name="Clinic", upload=csv_upload(), budget_epsilon="1")
    dataset_convert(dataset_id=dataset.pk)
    dataset.refresh_from_db()
    ready = (dataset.status, dataset.table.name, dataset.row_count, dataset.columns)
    events = AuditEvent.objects.count()

    # when the task is delivered again
    dataset_convert(dataset_id=dataset.pk)

    # then
    dataset.refresh_from_db()
    assert (dataset.status, dataset.table.name, dataset.row_count, dataset.columns) == ready
    assert AuditEvent.objects.count() == events


def test_pages_show_a_converting_and_a_failed_upload(
    client, curator, converts_in_worker, django_capture_on_commit_callbacks
):
    # given one dataset converting and one failed
    with django_capture_on_commit_callbacks(execute=False):
        converting = dataset_create(
            owner=curator, name="Converting", upload=csv_upload(), budget_epsilon="1"
        )
    with django_capture_on_commit_callbacks(execute=True):
        failed = dataset_create(
            owner=curator,
            name="Broken",
            upload=csv_upload(b"a,b\n1,2\n\n3,4\n", "broken.csv"),
            budget_epsilon="1",
        )
    client.force_login(curator)

    # when
    converting_page = client.get(f"/datasets/{converting.pk}/").content.decode()
    failed_page = client.get(f"/datasets/{failed.pk}/").content.decode()
    listing = client.get("/datasets/").content.decode()

    # then
    assert '<meta http-equiv="refresh" content="2">' in converting_page
    assert 'id="conversion-progress"' in converting_page
    assert "Row 3 is blank" in failed_page
    assert 'id="failure-reason"' in failed_page
    assert "converting (0%)" in listing
    assert "upload failed" in listing


class ChunksOnly:
    """An upload that can only be read in chunks: reading it whole fails the test."""

    def __init__(self, content: bytes, chunk: int = 7) -> None:
        self.content, self.chunk, self.size, self.name = content, chunk, len(content), "t.csv"

    def chunks(self):
        for start in range(0, self.size, self.chunk):
            yield self.content[start : start + self.chunk]

    def read(self, *args):
        raise AssertionError("the upload was read whole")


def test_an_upload_is_streamed_in_chunks_never_read_whole(curator):
    # when
    dataset = dataset_create(
        owner=curator, name="Clinic", upload=ChunksOnly(CLINIC_CSV), budget_epsilon="1"
    )

    # then
    assert dataset.status == "ready"
    assert stored_cells(dataset.table.path) == csv_cells(CLINIC_CSV)


def test_a_published_release_records_the_workers_timings_for_its_curator(
    curator_client, dataset, django_capture_on_commit_callbacks
):
    # given a draft
    draft = curator_client.post("/api/v1/releases/", draft_body(dataset.pk), format="json").json()

    # when it is submitted and the worker runs it
    with django_capture_on_commit_callbacks(execute=True):
        curator_client.post(f"/api/v1/releases/{draft['id']}/submit/")

    # then the detail and the status page say how long each step took
    detail = curator_client.get(f"/api/v1/releases/{draft['id']}/").json()
    assert detail["status"] == "published"
    assert set(detail["timings"]) == {"read_s", "compute_s", "noise_s", "publish_s"}
    assert all(isinstance(v, float) and v >= 0 for v in detail["timings"].values())
    curator_client.force_login(User.objects.get(username="curator1"))
    page = curator_client.get(f"/releases/{draft['id']}/").content.decode()
    assert 'id="timings"' in page
    assert "reading" in page
    assert "publishing" in page


@pytest.mark.parametrize("engine", ["in_process", "out_of_core"])
def test_the_release_engine_setting_chooses_who_computes_and_the_trail_says_which(
    curator_client, dataset, settings, django_capture_on_commit_callbacks, engine
):
    # given
    settings.RELEASE_ENGINE = engine
    draft = curator_client.post("/api/v1/releases/", draft_body(dataset.pk), format="json").json()

    # when
    with django_capture_on_commit_callbacks(execute=True):
        curator_client.post(f"/api/v1/releases/{draft['id']}/submit/")

    # then
    assert curator_client.get(f"/api/v1/releases/{draft['id']}/").json()["status"] == "published"
    drawn = AuditEvent.objects.get(action="task.noise_drawn")
    assert drawn.details["engine"] == engine


def test_a_killed_attempts_table_is_deleted_when_a_later_delivery_converts(
    curator, converts_in_worker, settings, django_capture_on_commit_callbacks
):
    # given a processing dataset, and the partial table a worker killed mid-conversion left
    with django_capture_on_commit_callbacks(execute=False):
        dataset = dataset_create(
            owner=curator, name="Clinic", upload=csv_upload(), budget_epsilon="1"
        )
    orphan = Path(settings.PRIVATE_STORAGE_ROOT) / "tables" / f"dataset-{dataset.pk}-dead.parquet"
    orphan.parent.mkdir(parents=True, exist_ok=True)
    orphan.write_bytes(b"PAR1 half written")

    # when a later delivery converts it
    with django_capture_on_commit_callbacks(execute=True):
        dataset_convert(dataset_id=dataset.pk)

    # then only the finished table is left
    dataset.refresh_from_db()
    assert dataset.status == "ready"
    assert files_under(settings.PRIVATE_STORAGE_ROOT) == [Path(dataset.table.path)]


def test_a_delivery_that_loses_the_race_leaves_no_table(
    curator, converts_in_worker, settings, monkeypatch, django_capture_on_commit_callbacks
):
    # given two deliveries of one conversion: the second finishes while the first converts
    from releases.services import datasets

    with django_capture_on_commit_callbacks(execute=False):
        dataset = dataset_create(
            owner=curator, name="Clinic", upload=csv_upload(), budget_epsilon="1"
        )
    real_convert = datasets._convert
    calls: list[int] = []

    def convert_while_another_finishes(staged, table, **options):
        calls.append(1)
        if len(calls) == 1:
            # this delivery looks stalled (its heartbeat is old), so another one takes over
            stale = timezone.now() - timedelta(seconds=10 * settings.RELEASE_STALE_SECONDS)
            Dataset.objects.filter(pk=dataset.pk).update(heartbeat_at=stale)
            with django_capture_on_commit_callbacks(execute=True):
                dataset_convert(dataset_id=dataset.pk)
        return real_convert(staged, table, **options)

    monkeypatch.setattr(datasets, "_convert", convert_while_another_finishes)

    # when
    with django_capture_on_commit_callbacks(execute=True):
        dataset_convert(dataset_id=dataset.pk)

    # then the winner's table is the only file, and it is the dataset's
    dataset.refresh_from_db()
    assert len(calls) == 2
    assert dataset.status == "ready"
    assert files_under(settings.PRIVATE_STORAGE_ROOT) == [Path(dataset.table.path)]
    assert AuditEvent.objects.filter(action="dataset.converted").count() == 1


def processing_dataset(curator, django_capture_on_commit_callbacks) -> Dataset:
    with django_capture_on_commit_callbacks(execute=False):
        return dataset_create(owner=curator, name="Clinic", upload=csv_upload(), budget_epsilon="1")


def test_a_conversion_whose_worker_stopped_is_sent_again_and_completes(
    curator, converts_in_worker, settings, django_capture_on_commit_callbacks
):
    # given a conversion claimed by a worker that stopped beating long ago
    dataset = processing_dataset(curator, django_capture_on_commit_callbacks)
    long_ago = timezone.now() - timedelta(seconds=10 * settings.RELEASE_STALE_SECONDS)
    Dataset.objects.filter(pk=dataset.pk).update(heartbeat_at=long_ago)

    # when the reaper runs (and the conversion it sends)
    with django_capture_on_commit_callbacks(execute=True):
        outcomes = dataset_reap_stale()

    # then
    assert outcomes == [(dataset.pk, "redelivered")]
    dataset.refresh_from_db()
    assert (dataset.status, dataset.deliveries) == ("ready", 1)
    event = AuditEvent.objects.get(action="task.redelivered")
    assert (event.object_type, event.details) == ("dataset", {"reason": "worker stopped"})


def test_a_conversion_never_claimed_is_sent_again_when_its_message_was_lost(
    curator, converts_in_worker, settings, django_capture_on_commit_callbacks
):
    # given a conversion queued long ago that no worker ever claimed
    dataset = processing_dataset(curator, django_capture_on_commit_callbacks)
    long_ago = timezone.now() - timedelta(seconds=3 * settings.DATASET_CONVERT_TIME_LIMIT)
    Dataset.objects.filter(pk=dataset.pk).update(queued_at=long_ago)

    # when
    with django_capture_on_commit_callbacks(execute=True):
        outcomes = dataset_reap_stale()

    # then
    assert outcomes == [(dataset.pk, "redelivered")]
    dataset.refresh_from_db()
    assert (dataset.status, dataset.deliveries) == ("ready", 1)
    assert AuditEvent.objects.get(action="task.redelivered").details == {"reason": "message lost"}


def test_a_conversion_whose_workers_keep_stopping_fails_and_leaves_no_file(
    curator, converts_in_worker, settings, django_capture_on_commit_callbacks
):
    # given a conversion whose every allowed attempt stopped
    dataset = processing_dataset(curator, django_capture_on_commit_callbacks)
    long_ago = timezone.now() - timedelta(seconds=10 * settings.RELEASE_STALE_SECONDS)
    Dataset.objects.filter(pk=dataset.pk).update(
        heartbeat_at=long_ago, deliveries=settings.RELEASE_MAX_DELIVERIES
    )

    # when
    with django_capture_on_commit_callbacks(execute=True):
        outcomes = dataset_reap_stale()

    # then
    assert outcomes == [(dataset.pk, "failed")]
    dataset.refresh_from_db()
    assert dataset.status == "failed"
    assert dataset.failure_reason.startswith("The worker converting this table stopped")
    assert files_under(settings.PRIVATE_STORAGE_ROOT) == []


def test_a_fresh_or_beating_conversion_is_left_alone(
    curator, converts_in_worker, django_capture_on_commit_callbacks
):
    # given one conversion just queued and one whose worker beat just now
    queued = processing_dataset(curator, django_capture_on_commit_callbacks)
    beating = dataset_create(
        owner=curator,
        name="Other",
        upload=csv_upload(CLINIC_CSV.replace(b"Ann", b"Ana"), "other.csv"),
        budget_epsilon="1",
    )
    Dataset.objects.filter(pk=beating.pk).update(heartbeat_at=timezone.now())

    # when / then
    assert dataset_reap_stale() == []
    assert Dataset.objects.get(pk=queued.pk).status == "processing"


def test_a_conversion_whose_worker_is_killed_again_and_again_fails_after_the_limit(
    curator, converts_in_worker, settings, monkeypatch, django_capture_on_commit_callbacks
):
    # given a table whose conversion kills its worker every time (found by review: the broker
    # handed the message back at once, each claim refreshed the heartbeat, and it looped forever)
    from releases.services import datasets

    dataset = processing_dataset(curator, django_capture_on_commit_callbacks)

    class Killed(BaseException):
        """Stands for SIGKILL: nothing after it runs in that worker."""

    def killed(*args, **kwargs):
        raise Killed

    monkeypatch.setattr(datasets, "_convert", killed)
    long_ago = timezone.now() - timedelta(seconds=10 * settings.RELEASE_STALE_SECONDS)

    # when the message comes straight back after each kill, and the reaper runs between
    for _ in range(10):
        with pytest.raises(Killed):
            dataset_convert(dataset_id=dataset.pk)
        dataset_convert(dataset_id=dataset.pk)  # the broker's immediate redelivery
        Dataset.objects.filter(pk=dataset.pk, status="processing").update(heartbeat_at=long_ago)
        with django_capture_on_commit_callbacks(execute=False):
            dataset_reap_stale()
        if Dataset.objects.get(pk=dataset.pk).status != "processing":
            break

    # then it was tried RELEASE_MAX_DELIVERIES times, and failed saying why
    dataset.refresh_from_db()
    assert dataset.status == "failed"
    assert dataset.deliveries == settings.RELEASE_MAX_DELIVERIES
    assert "stopped before finishing" in dataset.failure_reason


def test_an_upload_answers_201_when_the_broker_is_down(
    curator_client, converts_in_worker, monkeypatch, django_capture_on_commit_callbacks
):
    # given a broker that refuses every message (found by review: the upload was a 500, its
    # dataset stored, and the retry a 409)
    from kombu.exceptions import OperationalError as BrokerDown

    from releases.tasks import dataset_convert_task

    def down(*args, **kwargs):
        raise BrokerDown("connection refused")

    monkeypatch.setattr(dataset_convert_task, "apply_async", down)

    # when
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(curator_client)

    # then the reaper will send it once the message is overdue
    assert response.status_code == 201
    assert response.json()["status"] == "processing"


def test_a_dataset_that_is_not_ready_takes_no_draft_and_no_submission(
    curator_client, dataset, django_capture_on_commit_callbacks
):
    # given a draft, then the dataset marked failed (found by review: a failed dataset that kept
    # its schema took drafts and submissions, which then failed in the worker)
    draft = curator_client.post("/api/v1/releases/", draft_body(dataset.pk), format="json").json()
    Dataset.objects.filter(pk=dataset.pk).update(status="failed", failure_reason="Row 3 is blank.")

    # when
    another = curator_client.post("/api/v1/releases/", draft_body(dataset.pk), format="json")
    with django_capture_on_commit_callbacks(execute=True):
        submitted = curator_client.post(f"/api/v1/releases/{draft['id']}/submit/")

    # then
    assert another.status_code == 409
    assert "could not be used" in another.json()["detail"]
    assert submitted.status_code == 409
    assert "not ready" in submitted.json()["detail"]
    assert AuditEvent.objects.filter(action="release.submission_refused").count() == 1


@pytest.mark.parametrize("budget", ["1_0", "١", "0x1", "1,5"])
def test_a_budget_in_anything_but_ascii_decimal_digits_is_refused(curator_client, budget):
    # (found by review: "1_0" was read as 10 and "١" as 1)
    response = curator_client.post(
        "/api/v1/datasets/",
        {"name": "Clinic", "budget_epsilon": budget, "file": csv_upload()},
        format="multipart",
    )
    assert response.status_code == 400
    assert response.json()["errors"] == {"budget_epsilon": ["must be a number"]}
