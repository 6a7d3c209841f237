"""Uploads, tables and released files in S3-compatible object storage (issue 8, point 4), so web
servers and workers on several machines share them. The store is a real S3 API over HTTP (moto's
server, in a thread); nothing is written to the local directories."""

import hashlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from audit.models import AuditEvent
from releases.models import Dataset
from tests.conftest import CLINIC_CSV, CLINIC_SCHEMA, csv_cells, csv_upload, draft_body
from tests.processes import free_port


@pytest.fixture
def bucket(settings) -> Iterator["Bucket"]:
    boto3 = pytest.importorskip("boto3")
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    credentials = {"aws_access_key_id": "test", "aws_secret_access_key": "test"}
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", **credentials)
    # moto keeps buckets in the process: a fresh name per test keeps tests apart.
    bucket_name = f"gdr-test-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=bucket_name)
    settings.OBJECT_STORAGE_BUCKET = bucket_name
    settings.OBJECT_STORAGE = {
        "bucket_name": bucket_name,
        "endpoint_url": endpoint,
        "region_name": "us-east-1",
        "access_key": "test",
        "secret_key": "test",
        "default_acl": "private",
        "querystring_auth": True,
        "file_overwrite": False,
    }
    try:
        yield Bucket(client, bucket_name)
    finally:
        server.stop()


@dataclass(frozen=True)
class Bucket:
    client: object
    name: str


def keys(bucket: Bucket) -> list[str]:
    listed = bucket.client.list_objects_v2(Bucket=bucket.name)
    return sorted(item["Key"] for item in listed.get("Contents", []))


def local_files(settings) -> list[Path]:
    roots = (Path(settings.PRIVATE_STORAGE_ROOT), Path(settings.RELEASE_STORAGE_ROOT))
    return [p for root in roots if root.exists() for p in root.rglob("*") if p.is_file()]


def stored_cells_in(bucket: Bucket, key: str, tmp_path: Path) -> list[list[str]]:
    from tests.conftest import stored_cells

    local = tmp_path / "table.parquet"
    bucket.client.download_file(bucket.name, key, str(local))
    return stored_cells(str(local))


def test_a_release_goes_from_upload_to_download_through_object_storage(
    bucket, curator_client, anonymous_client, settings, tmp_path, django_capture_on_commit_callbacks
):
    # given an upload, a schema and a submitted release, run by the (eager) worker
    created = curator_client.post(
        "/api/v1/datasets/",
        {"name": "Clinic", "budget_epsilon": "1", "declared_size": "5", "file": csv_upload()},
        format="multipart",
    )
    assert created.status_code == 201, created.content
    dataset_id = created.json()["id"]
    curator_client.put(f"/api/v1/datasets/{dataset_id}/schema/", CLINIC_SCHEMA, format="json")
    suggestion = curator_client.post(f"/datasets/{dataset_id}/", {"action": "suggest"})
    draft = curator_client.post("/api/v1/releases/", draft_body(dataset_id), format="json").json()
    with django_capture_on_commit_callbacks(execute=True):
        curator_client.post(f"/api/v1/releases/{draft['id']}/submit/")

    # then the table and the released files are objects in the bucket, nothing is local
    stored = keys(bucket)
    [table] = [k for k in stored if k.startswith("private/tables/")]
    assert stored_cells_in(bucket, table, tmp_path) == csv_cells(CLINIC_CSV)
    assert not [k for k in stored if k.startswith("private/datasets/")]
    # csv, json, parquet, configuration, metadata and its signature
    assert len([k for k in stored if k.startswith("releases/")]) == 6
    assert local_files(settings) == []
    assert suggestion.status_code in (200, 302)

    # and the public downloads the files through the app, with their published SHA-256
    detail = curator_client.get(f"/api/v1/releases/{draft['id']}/").json()
    assert detail["status"] == "published", detail["failure_reason"]
    version = anonymous_client.get(detail["catalog_url"]).json()
    for file_entry in version["files"]:
        download = anonymous_client.get(file_entry["url"])
        assert download.status_code == 200
        content = b"".join(download.streaming_content)
        assert hashlib.sha256(content).hexdigest() == file_entry["sha256"]


def test_a_large_upload_converts_from_object_storage_and_the_upload_is_deleted(
    bucket, curator_client, settings, tmp_path, django_capture_on_commit_callbacks
):
    # given every upload is large
    settings.DATASET_CONVERT_INLINE_BYTES = 0

    # when
    with django_capture_on_commit_callbacks(execute=True):
        created = curator_client.post(
            "/api/v1/datasets/",
            {"name": "Clinic", "budget_epsilon": "1", "file": csv_upload()},
            format="multipart",
        )

    # then
    assert created.json()["status"] == "processing"
    dataset = Dataset.objects.get()
    assert (dataset.status, dataset.row_count) == ("ready", 5)
    assert keys(bucket) == [f"private/{dataset.table.name}"]
    assert stored_cells_in(bucket, f"private/{dataset.table.name}", tmp_path) == csv_cells(
        CLINIC_CSV
    )
    assert local_files(settings) == []


def test_the_distributed_engine_reads_the_table_from_object_storage_itself(
    bucket, curator, settings, monkeypatch, django_capture_on_commit_callbacks
):
    # given a table in the bucket, a local Dask cluster of two worker processes whose own
    # environment holds the store's credentials, and no local copy allowed
    from distributed import LocalCluster

    from releases.services import runs
    from releases.services.datasets import dataset_create, dataset_schema_update
    from releases.services.releases import release_draft_create, release_submit

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    dataset = dataset_create(owner=curator, name="Clinic", upload=csv_upload(), budget_epsilon="1")
    dataset = dataset_schema_update(dataset=dataset, user=curator, schema=CLINIC_SCHEMA)
    draft = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Clinic",
        definition={"kind": "pure_dp", "epsilon": 0.5},
        queries=draft_body(dataset.pk)["queries"],
    )

    def no_local_copy(*args, **kwargs):
        raise AssertionError("the table was copied to this machine")

    monkeypatch.setattr(runs, "local_copy", no_local_copy)
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        settings.RELEASE_ENGINE = "distributed"
        settings.DASK_SCHEDULER_ADDRESS = cluster.scheduler_address

        # when
        with django_capture_on_commit_callbacks(execute=True):
            release = release_submit(release=draft, user=curator)

    # then it was published by the distributed engine, with the table's true row count
    release.refresh_from_db()
    assert release.status == "published", release.failure_reason
    assert release.timings["read_s"] == 0.0  # the workers read; this process did not
    drawn = AuditEvent.objects.get(object_id=str(release.pk), action="task.noise_drawn")
    assert drawn.details["engine"] == "distributed"


def test_a_table_location_carries_no_credentials_from_the_endpoint(bucket, settings):
    # given an endpoint URL with credentials written into it
    from releases.models import private_storage
    from releases.services.storage import object_storage_uri

    settings.OBJECT_STORAGE = {
        **settings.OBJECT_STORAGE,
        "endpoint_url": "http://key:secret@127.0.0.1:9000/",
    }

    # when
    uri = object_storage_uri(private_storage(), "tables/t.parquet")

    # then
    assert uri == (
        f"s3://{bucket.name}/private/tables/t.parquet"
        "?endpoint_override=127.0.0.1%3A9000&scheme=http&region=us-east-1"
    )
