"""The signing key is only created by publication (or ``manage.py signing_key --create``), never
by a reader; a key file that cannot be used (corrupt, not Ed25519, not a file, open to other
users) is refused with its path and what to do: the key endpoint answers a JSON 503, the worker
fails the release before drawing any noise (the budget comes back), and ``manage.py check``
reports it. ``verify_release`` checks the shape of what a good signature covers."""

import json
import os
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ec import SECP256R1, generate_private_key
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.core.checks import run_checks
from django.core.management import CommandError, call_command

from audit.chain import AuditAction
from audit.models import AuditEvent
from releases.models import LedgerEntry, Release
from releases.services import signing
from releases.services.signed_metadata import METADATA_SCHEMA
from tests.conftest import draft_body, publish_through_api

CORRUPT_PEM = b"-----BEGIN PRIVATE KEY-----\ngarbage\n-----END PRIVATE KEY-----\n"


def _pem(key) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _key_file(settings, content: bytes, mode: int = 0o600) -> Path:
    path = Path(settings.SIGNING_KEY_PATH)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    os.chmod(path, mode)
    return path


def _signing_key_errors() -> dict[str, str]:
    return {
        message.id: message.msg
        for message in run_checks()
        if message.id and message.id.startswith("releases.E00")
    }


# The endpoint


def test_the_key_endpoint_never_creates_the_key_and_says_so_in_json(settings, anonymous_client, db):
    response = anonymous_client.get("/api/v1/signing-key/")

    assert response.status_code == 503
    assert response["Content-Type"] == "application/json"
    assert "no signing key yet" in response.json()["detail"]
    assert "no-store" in response["Cache-Control"]
    assert not os.path.lexists(settings.SIGNING_KEY_PATH)


@pytest.mark.parametrize("problem", ["corrupt", "not-ed25519", "directory", "shared"])
def test_an_unusable_key_is_a_json_503_naming_no_path(settings, anonymous_client, db, problem):
    anonymous_client.raise_request_exception = False
    if problem == "corrupt":
        _key_file(settings, CORRUPT_PEM)
    elif problem == "not-ed25519":
        _key_file(settings, _pem(generate_private_key(SECP256R1())))
    elif problem == "directory":
        Path(settings.SIGNING_KEY_PATH).mkdir(parents=True)
    else:
        _key_file(settings, _pem(Ed25519PrivateKey.generate()), mode=0o644)

    response = anonymous_client.get("/api/v1/signing-key/")

    assert response.status_code == 503
    assert response["Content-Type"] == "application/json"
    detail = response.json()["detail"]
    assert "cannot be used" in detail
    assert str(settings.SIGNING_KEY_PATH) not in detail


def test_the_key_endpoint_serves_the_key_once_created_by_the_command(
    settings, anonymous_client, db, capsys
):
    with pytest.raises(CommandError, match="no signing key yet"):
        call_command("signing_key")

    call_command("signing_key", "--create")
    printed = capsys.readouterr().out
    call_command("signing_key", "--create")  # never replaces it
    again = capsys.readouterr().out
    response = anonymous_client.get("/api/v1/signing-key/")

    assert printed == again
    assert (Path(settings.SIGNING_KEY_PATH).stat().st_mode & 0o777) == 0o600
    assert response.status_code == 200
    assert printed.startswith(response.content.decode())
    assert signing.public_key_fingerprint(response.content) in printed


# The key file itself


def test_a_key_file_open_to_other_users_is_refused_naming_the_path_and_chmod(settings):
    path = _key_file(settings, _pem(Ed25519PrivateKey.generate()), mode=0o640)

    for use in (signing.signing_key, signing.installation_public_key_pem):
        with pytest.raises(signing.SigningKeyExposed) as refused:
            use()
        assert str(path) in str(refused.value)
        assert f"chmod 600 {path}" in str(refused.value)
        assert "0640" in str(refused.value)
    os.chmod(path, 0o600)
    assert len(signing.signing_key().sign(b"x")) == 64


def test_the_system_check_reports_a_corrupt_a_foreign_and_a_shared_key(settings, db):
    assert _signing_key_errors() == {}  # no key yet: normal, the first publication creates it

    path = _key_file(settings, CORRUPT_PEM)
    errors = _signing_key_errors()
    assert set(errors) == {"releases.E002"}
    assert str(path) in errors["releases.E002"]
    assert "SIGNING_KEY_PATH" in errors["releases.E002"]

    _key_file(settings, _pem(generate_private_key(SECP256R1())))
    assert "not an Ed25519 key" in _signing_key_errors()["releases.E002"]

    _key_file(settings, _pem(Ed25519PrivateKey.generate()), mode=0o604)
    assert "chmod 600" in _signing_key_errors()["releases.E003"]

    os.chmod(path, 0o600)
    assert _signing_key_errors() == {}


# The worker


@pytest.mark.parametrize(
    ("content", "mode", "said"),
    [
        (CORRUPT_PEM, 0o600, "not an unencrypted PEM private key"),
        (_pem(Ed25519PrivateKey.generate()), 0o644, "chmod 600"),
    ],
)
def test_an_unusable_key_fails_the_release_before_any_noise_is_drawn(
    settings, curator_client, dataset, django_capture_on_commit_callbacks, content, mode, said
):
    path = _key_file(settings, content, mode)
    created = curator_client.post("/api/v1/releases/", draft_body(dataset.pk), format="json")
    assert created.status_code == 201, created.json()

    with django_capture_on_commit_callbacks(execute=True):
        curator_client.post(f"/api/v1/releases/{created.json()['id']}/submit/")

    release = Release.objects.get(pk=created.json()["id"])
    assert release.status == Release.Status.FAILED
    assert "SIGNING_KEY_PATH" in release.failure_reason
    assert said in release.failure_reason
    assert str(path) in release.failure_reason
    assert not release.answers.exists()
    assert not AuditEvent.objects.filter(
        action=AuditAction.NOISE_DRAWN, object_id=str(release.pk)
    ).exists()
    # Nothing was drawn: the reservation is given back.
    assert LedgerEntry.objects.get(release=release).state == LedgerEntry.State.RETURNED
    assert path.read_bytes() == content  # never replaced


def test_the_first_publication_creates_the_key(
    settings, curator_client, dataset, django_capture_on_commit_callbacks, anonymous_client
):
    assert not os.path.lexists(settings.SIGNING_KEY_PATH)

    publish_through_api(curator_client, django_capture_on_commit_callbacks, draft_body(dataset.pk))

    assert (Path(settings.SIGNING_KEY_PATH).stat().st_mode & 0o777) == 0o600
    assert anonymous_client.get("/api/v1/signing-key/").status_code == 200


# verify_release on a signed file that is not a metadata document


def _signed(tmp_path: Path, document) -> tuple[Path, Path]:
    body = json.dumps(document).encode()
    metadata, signature = tmp_path / "m.json", tmp_path / "m.json.sig"
    metadata.write_bytes(body)
    signature.write_bytes(signing.signature_text(body))
    return metadata, signature


GOOD_HASH = "0" * 64


@pytest.mark.parametrize(
    ("document", "said"),
    [
        ([1, 2], "it is an array, not a JSON object"),
        ("text", "it is a string, not a JSON object"),
        ({"files": []}, f"its schema is not '{METADATA_SCHEMA}'"),
        ({"schema": METADATA_SCHEMA}, "its files is missing, not a list"),
        ({"schema": METADATA_SCHEMA, "files": 5}, "its files is a number, not a list"),
        ({"schema": METADATA_SCHEMA, "files": {"a": 1}}, "its files is an object, not a list"),
        ({"schema": METADATA_SCHEMA, "files": ["a"]}, "files[0] is a string, not an object"),
        (
            {"schema": METADATA_SCHEMA, "files": [{"name": "../x", "sha256": GOOD_HASH}]},
            "files[0].name is not a plain file name",
        ),
        (
            {"schema": METADATA_SCHEMA, "files": [{"name": "..", "sha256": GOOD_HASH}]},
            "files[0].name is not a plain file name",
        ),
        (
            {"schema": METADATA_SCHEMA, "files": [{"name": "a\x00b", "sha256": GOOD_HASH}]},
            "files[0].name is not a plain file name",
        ),
        (
            {"schema": METADATA_SCHEMA, "files": [{"name": "m.json", "sha256": 5}]},
            "files[0].sha256 is not a SHA-256",
        ),
    ],
)
def test_verify_release_names_what_is_wrong_with_a_signed_document(tmp_path, document, said, db):
    metadata, signature = _signed(tmp_path, document)

    for extra in ([], ["--files", str(tmp_path)]):
        with pytest.raises(CommandError) as refused:
            call_command("verify_release", str(metadata), str(signature), *extra)
        assert "is signed but is not a metadata document" in str(refused.value)
        assert said in str(refused.value)


def test_verify_release_says_the_installation_key_is_unusable(settings, tmp_path, db):
    metadata, signature = _signed(tmp_path, {"schema": METADATA_SCHEMA, "files": []})
    path = Path(settings.SIGNING_KEY_PATH)
    os.chmod(path, 0o644)

    with pytest.raises(CommandError, match="chmod 600") as refused:
        call_command("verify_release", str(metadata), str(signature))
    assert "--key" in str(refused.value)
