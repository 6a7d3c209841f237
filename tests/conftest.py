"""Shared fixtures. Under REQUIRE_SERVICES=1 (CI) a skipped service, worker or browser test is a
failure: those tests must run there."""

import os

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

REQUIRE_SERVICES = os.environ.get("REQUIRE_SERVICES") == "1"
SERVICE_MARKERS = {"services", "worker", "browser"}


def skip_or_fail(reason: str) -> None:
    """Skip with a printed reason, or fail when CI requires every service test to run."""
    if REQUIRE_SERVICES:
        pytest.fail(f"REQUIRE_SERVICES=1 but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if (
        REQUIRE_SERVICES
        and report.skipped
        and SERVICE_MARKERS & {m.name for m in item.iter_markers()}
    ):
        report.outcome = "failed"
        report.longrepr = f"REQUIRE_SERVICES=1: {item.nodeid} was skipped, it must run"


@pytest.fixture(autouse=True)
def _celery_eager_in_process(settings):
    """In-process tests run tasks eagerly; tests that claim the worker path start a real one."""
    from config.celery import app

    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = False


@pytest.fixture(autouse=True)
def _empty_public_cache():
    """Each test starts with no cached catalog response (each has its own database) and no
    request counted against a rate limit."""
    from django.core.cache import caches

    from releases.apis.throttles import THROTTLE_CACHE
    from releases.public_cache import public_cache_reset

    public_cache_reset()
    caches[THROTTLE_CACHE].clear()
    yield
    public_cache_reset()
    caches[THROTTLE_CACHE].clear()


@pytest.fixture(autouse=True, scope="session")
def _sqlite_flush_like_truncate():
    """Emptying the test database between transactional tests (Django's flush) removes every
    row, published versions and audit events too, which their triggers
    (releases/immutability.py, audit/immutability.py) refuse: row by row on SQLite (a DELETE),
    as a whole on PostgreSQL (a TRUNCATE). The flush
    alone runs without them: they are dropped and installed again, unchanged, in the flush's own
    transaction. No test's own write ever runs without them."""
    from django.db import transaction
    from django.db.backends.base.operations import BaseDatabaseOperations

    from audit.immutability import AUDIT_EVENTS
    from releases.immutability import PUBLISHED_VERSIONS

    original = BaseDatabaseOperations.execute_sql_flush

    def execute_sql_flush(self, sql_list):
        if self.connection.vendor not in ("sqlite", "postgresql"):
            return original(self, sql_list)
        with transaction.atomic(using=self.connection.alias):
            present = [
                triggers
                for triggers in (PUBLISHED_VERSIONS, AUDIT_EVENTS)
                if triggers.installed(self.connection)
            ]
            for triggers in present:
                triggers.drop(self.connection, functions=False)
            original(self, sql_list)
            for triggers in present:
                triggers.install(self.connection)

    patch = pytest.MonkeyPatch()
    patch.setattr(BaseDatabaseOperations, "execute_sql_flush", execute_sql_flush)
    yield
    patch.undo()


@pytest.fixture(autouse=True)
def _private_dirs(settings, tmp_path):
    settings.PRIVATE_STORAGE_ROOT = tmp_path / "private"
    settings.RELEASE_STORAGE_ROOT = tmp_path / "releases"
    settings.SIGNING_KEY_PATH = tmp_path / "keys" / "release-signing.pem"


@pytest.fixture(scope="session")
def stacks(tmp_path_factory):
    """What the real-process stacks of a session share (tests/processes.py: Stacks): database
    templates, and processes still shutting down."""
    from tests.processes import Stacks

    shared = Stacks(tmp_path_factory.mktemp("stacks"))
    yield shared
    shared.close()


def make_user(username: str, role: str | None):
    from accounts.roles import Role
    from accounts.services import user_create_or_reset

    if role is None:
        from django.contrib.auth import get_user_model

        return get_user_model().objects.create_user(username=username, password="pw-unused-1")
    user, _ = user_create_or_reset(username=username, role=Role(role), password="pw-test-12345")
    return user


@pytest.fixture
def curator(db):
    return make_user("curator1", "curator")


@pytest.fixture
def other_curator(db):
    return make_user("curator2", "curator")


@pytest.fixture
def compliance_user(db):
    return make_user("auditor", "compliance")


def client_for(user) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user=user)
    return client


@pytest.fixture
def anonymous_client():
    return APIClient()


@pytest.fixture
def database_administrator(db):
    """Someone who can write the database directly: the audit table's triggers are dropped
    first, as such a person could (the keyed chain must still catch what they do)."""
    from django.db import connection

    from audit.immutability import AUDIT_EVENTS

    AUDIT_EVENTS.drop(connection)
    yield
    AUDIT_EVENTS.install(connection)


@pytest.fixture
def curator_client(curator):
    return client_for(curator)


@pytest.fixture
def other_curator_client(other_curator):
    return client_for(other_curator)


@pytest.fixture
def compliance_client(compliance_user):
    return client_for(compliance_user)


CLINIC_CSV = b"name,age,sex,visits\nAnn,34,F,2\nBob,51,M,0\nCid,29,M,5\nDee,120,F,1\nEve,,X,3\n"

# The same table with CRLF line ends: other bytes (another SHA-256), so a second upload of it is
# not refused as a duplicate of CLINIC_CSV.
CLINIC_CSV_CRLF = CLINIC_CSV.replace(b"\n", b"\r\n")

# The files every published version has (record-level statistics add their own).
RELEASE_FILE_FORMATS = {"csv", "json", "parquet", "configuration", "metadata", "signature"}

CLINIC_SCHEMA = {
    "columns": {
        "age": {"kind": "numeric", "lower": 0, "upper": 100},
        "sex": {"kind": "categorical", "categories": ["F", "M"]},
        "visits": {"kind": "numeric", "lower": 0, "upper": 10},
    },
    "declared_size": 5,
}


def csv_upload(content: bytes = CLINIC_CSV, name: str = "clinic.csv") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="text/csv")


def statistics_formset(*rows: dict) -> dict:
    """The wizard's statistics step as a POST body: one formset row per dict of the form's
    fields (kind, column, bins…; a list for a multiple choice), each of weight 1 unless given."""
    data = {
        "stat-TOTAL_FORMS": str(len(rows)),
        "stat-INITIAL_FORMS": str(len(rows)),
        "stat-MIN_NUM_FORMS": "1",
        "stat-MAX_NUM_FORMS": "1000",
    }
    for index, row in enumerate(rows):
        data.update({f"stat-{index}-{key}": value for key, value in {"weight": "1", **row}.items()})
    return data


def csv_cells(content: bytes) -> list[list[str]]:
    """The cells of a simple CSV (no quoting), without its header."""
    return [line.split(",") for line in content.decode().splitlines()[1:]]


def stored_cells(path: str) -> list[list[str]]:
    """The text cells of a stored columnar table, row by row, read back from its file."""
    import pyarrow.parquet as pq

    from privacy_engine.columnar import stored_names, text_field

    fields = [text_field(index) for index in range(len(stored_names(path)))]
    table = pq.read_table(path, columns=fields)
    return [list(row) for row in zip(*(table.column(f).to_pylist() for f in fields), strict=True)]


@pytest.fixture
def dataset(curator):
    from releases.services.datasets import dataset_create, dataset_schema_update

    created = dataset_create(
        owner=curator, name="Clinic", upload=csv_upload(), budget_epsilon="1.0"
    )
    return dataset_schema_update(dataset=created, user=curator, schema=CLINIC_SCHEMA)


def draft_body(dataset_id: int, epsilon: float = 0.5, **extra) -> dict:
    return {
        "dataset": dataset_id,
        "title": "Clinic statistics",
        "definition": {"kind": "pure_dp", "epsilon": epsilon},
        "queries": [
            {"kind": "count"},
            {"kind": "histogram", "column": "sex"},
            {"kind": "sum", "column": "age"},
            {"kind": "mean", "column": "age", "weight": 2},
        ],
        **extra,
    }


def publish_through_api(client, capture, body: dict):
    """Drafts ``body`` through the API, submits it with the worker's task run on commit
    (``capture`` is django_capture_on_commit_callbacks) and returns the published Release."""
    from releases.models import Release

    created = client.post("/api/v1/releases/", body, format="json")
    assert created.status_code == 201, created.json()
    with capture(execute=True):
        client.post(f"/api/v1/releases/{created.json()['id']}/submit/")
    release = Release.objects.get(pk=created.json()["id"])
    assert release.status == "published", release.failure_reason
    return release
