"""Hardening (issue 12, point 6, in part): the app's files and the SQLite database readable by
the service's user only; a working day's session; password validators in create_user too."""

import stat
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from tests.conftest import draft_body, publish_through_api

SHARED_BITS = 0o077


def mode(path: str | Path) -> int:
    return stat.S_IMODE(Path(path).stat().st_mode)


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def test_uploads_tables_and_released_files_are_the_owners_only(
    curator_client, dataset, django_capture_on_commit_callbacks
):
    release = publish_through_api(
        curator_client, django_capture_on_commit_callbacks, draft_body(dataset.pk, epsilon=0.3)
    )
    dataset.refresh_from_db()
    path = dataset.table.path
    assert mode(path) & SHARED_BITS == 0, path
    assert mode(Path(path).parent) & SHARED_BITS == 0, Path(path).parent
    for record in release.files.all():
        assert mode(record.file.path) & SHARED_BITS == 0, record.format


def test_a_staged_upload_is_the_owners_only_from_its_first_byte(db):
    from releases.models import private_storage
    from releases.services.datasets import _stage_upload
    from tests.conftest import csv_upload

    name, _ = _stage_upload(csv_upload(), limit=1 << 20)
    path = Path(private_storage().path(name))
    assert mode(path) & SHARED_BITS == 0
    assert mode(path.parent) & SHARED_BITS == 0


def test_the_sqlite_database_file_is_the_owners_only(db):
    if connection.vendor != "sqlite":
        pytest.skip("a SQLite file's mode")
    connection.ensure_connection()
    name = connection.settings_dict["NAME"]
    if name.startswith("file:") or name == ":memory:":
        pytest.skip("an in-memory test database")
    assert mode(name) & SHARED_BITS == 0


def test_a_login_lasts_a_working_day(client, curator):
    response = client.post(
        "/accounts/login/", {"username": "curator1", "password": "pw-test-12345"}
    )
    assert response.status_code == 302
    assert response.cookies["sessionid"]["max-age"] == 8 * 3600


@pytest.mark.parametrize("password", ["password", "short", "12345678901"])
def test_create_user_applies_the_password_validators(db, password):
    with pytest.raises(CommandError, match="Password refused"):
        call_command("create_user", "newbie", "--role", "curator", "--password", password)
    from django.contrib.auth import get_user_model

    assert not get_user_model().objects.filter(username="newbie").exists()


def test_the_embedded_broker_file_is_the_owners_only(settings, tmp_path):
    from releases.apps import broker_file_private

    # given a broker file the umask would make readable by others, and one not yet created
    made_open = tmp_path / "open-broker.sqlite"
    made_open.touch(mode=0o644)
    made_open.chmod(0o644)
    for path in (made_open, tmp_path / "new-broker.sqlite"):
        settings.CELERY_BROKER_URL = f"sqla+sqlite:///{path}"

        # when the app starts
        broker_file_private()

        # then
        assert mode(path) == 0o600, path
