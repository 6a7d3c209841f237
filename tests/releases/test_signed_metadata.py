"""Every new version publishes a configuration, a machine-readable metadata file listing every
other file's SHA-256 and the audit head at publication, and the metadata's Ed25519 signature,
checkable offline with the key from /api/v1/signing-key/ (by this project or by openssl); and a
printable release card."""

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from django.conf import settings as django_settings
from django.contrib.staticfiles import finders
from django.core.management import CommandError, call_command

from audit.chain import AuditAction, audit_chain_verify
from audit.models import AuditEvent
from releases.models import Release
from releases.services import signing
from tests.conftest import REQUIRE_SERVICES, publish_through_api, skip_or_fail

QUERIES = [
    {"kind": "count"},
    {"kind": "histogram", "column": "sex"},
    {"kind": "sum", "column": "age"},
    {"kind": "mean", "column": "age", "weight": 2},
]
OTHER_FORMATS = {"csv", "json", "parquet", "configuration"}


def _body(dataset_id: int, **extra) -> dict:
    return {
        "dataset": dataset_id,
        "title": "Clinic",
        "definition": {"kind": "pure_dp", "epsilon": 0.8},
        "queries": QUERIES,
        **extra,
    }


def _download(client, url: str):
    response = client.get(url)
    assert response.status_code == 200, url
    return response, b"".join(response.streaming_content)


@pytest.fixture
def published(curator_client, anonymous_client, dataset, django_capture_on_commit_callbacks):
    """A published version, with its API entry and every file as downloaded."""
    release = publish_through_api(
        curator_client, django_capture_on_commit_callbacks, _body(dataset.pk)
    )
    entry = anonymous_client.get(f"/api/v1/catalog/{release.series.slug}/versions/1/").json()
    downloads = {f["format"]: _download(anonymous_client, f["url"]) for f in entry["files"]}
    return release, entry, downloads


def _filename(response) -> str:
    return re.search(r'filename="([^"]+)"', response["Content-Disposition"]).group(1)


def test_the_metadata_lists_every_other_file_with_its_sha256(published):
    release, entry, downloads = published
    metadata_response, metadata_bytes = downloads["metadata"]
    metadata = json.loads(metadata_bytes)

    listed = {f["format"]: f for f in metadata["files"]}
    assert set(downloads) == OTHER_FORMATS | {"metadata", "signature"}
    assert set(listed) == OTHER_FORMATS
    for file_format, (response, content) in downloads.items():
        assert hashlib.sha256(content).hexdigest() == next(
            f["sha256"] for f in entry["files"] if f["format"] == file_format
        )
        if file_format in listed:
            assert listed[file_format]["sha256"] == hashlib.sha256(content).hexdigest()
            assert listed[file_format]["size"] == len(content)
            assert listed[file_format]["name"] == _filename(response)
    assert metadata_response["Content-Type"] == "application/json"
    assert downloads["signature"][0]["Content-Type"].startswith("text/plain")
    assert downloads["configuration"][0]["Content-Type"] == "application/json"
    assert _filename(metadata_response) == f"{release.series.slug}-v1-metadata.json"
    # What the version says about itself, as the release's JSON file says it.
    document = json.loads(downloads["json"][1])
    assert {k: metadata[k] for k in ("slug", "title", "version", "published_at")} == {
        k: document[k] for k in ("slug", "title", "version", "published_at")
    }
    assert metadata["definition"] == document["definition"] == {"kind": "pure_dp", "epsilon": 0.8}
    assert metadata["policy"] is None
    fields = ("kind", "column", "mechanism", "epsilon", "delta", "sensitivity", "noise_scale")
    for position, (stat, published_stat) in enumerate(
        zip(metadata["statistics"], document["statistics"], strict=True)
    ):
        assert stat["position"] == position
        assert {k: stat[k] for k in fields} == {k: published_stat[k] for k in fields}
        assert stat["ci95_halfwidth"] == release.preview[position]["ci95_halfwidth"] > 0
    assert metadata["statistics"][0]["ci95"] == document["statistics"][0]["ci95"]
    assert metadata["statistics"][3]["parts"] == document["statistics"][3]["parts"]
    assert metadata["software"]["guided-data-release"] == "0.1.0"
    assert metadata["software"]["opendp"].startswith("0.16")


def test_the_signature_verifies_with_the_published_key_and_not_after_a_changed_byte(
    published, anonymous_client
):
    _, _, downloads = published
    metadata = downloads["metadata"][1]
    signature = downloads["signature"][1]
    key = anonymous_client.get("/api/v1/signing-key/")
    changed = bytearray(metadata)
    changed[len(changed) // 2] ^= 0x01

    assert key.status_code == 200
    assert key["Content-Type"] == "application/x-pem-file"
    assert "public" in key["Cache-Control"]
    assert key.content.startswith(b"-----BEGIN PUBLIC KEY-----")
    assert len(base64.b64decode(signature)) == 64
    signing.signature_check(metadata, signature, key.content)
    for data, bad_signature, problem in (
        (bytes(changed), signature, "bad signature"),
        (metadata + b" ", signature, "bad signature"),
        (metadata, b"not base64!", "not base64"),
        (metadata, base64.b64encode(b"x" * 63), "wrong length: 63 bytes"),
    ):
        with pytest.raises(signing.SignatureProblem, match=problem):
            signing.signature_check(data, bad_signature, key.content)
    assert json.loads(metadata)["signing_key"]["public_key_sha256"] == (
        signing.public_key_fingerprint(key.content)
    )


def _save_download(directory: Path, downloads: dict) -> dict[str, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = {}
    for file_format, (response, content) in downloads.items():
        paths[file_format] = directory / _filename(response)
        paths[file_format].write_bytes(content)
    return paths


def test_verify_release_accepts_a_download_and_names_what_is_wrong(
    published, anonymous_client, tmp_path, capsys
):
    _, _, downloads = published
    paths = _save_download(tmp_path / "download", downloads)
    key = tmp_path / "key.pem"
    key.write_bytes(anonymous_client.get("/api/v1/signing-key/").content)

    def run(*args) -> str:
        call_command("verify_release", *map(str, args))
        return capsys.readouterr().out

    def refused(*args) -> str:
        with pytest.raises(CommandError) as error:
            call_command("verify_release", *map(str, args))
        return str(error.value)

    # given a download as it came, checked with the served key and with the installation's own
    assert run(paths["metadata"], paths["signature"], "--key", key).startswith("VALID")
    assert "4 of 4 listed files found and matching" in run(paths["metadata"], paths["signature"])
    # when one byte of the metadata changes
    original = paths["metadata"].read_bytes()
    changed = bytearray(original)
    changed[10] ^= 0x01
    paths["metadata"].write_bytes(bytes(changed))
    assert "bad signature" in refused(paths["metadata"], paths["signature"], "--key", key)
    paths["metadata"].write_bytes(original)
    # a signature that is not base64, or not 64 bytes, or not there
    bad = tmp_path / "bad.sig"
    bad.write_text("%%% not base64 %%%")
    assert "not base64" in refused(paths["metadata"], bad)
    bad.write_bytes(base64.b64encode(b"x" * 32))
    assert "wrong length: 32 bytes" in refused(paths["metadata"], bad)
    assert "cannot read the signature file" in refused(paths["metadata"], tmp_path / "none.sig")
    assert "cannot read the metadata file" in refused(tmp_path / "none.json", paths["signature"])
    # another key
    other = tmp_path / "other.pem"
    other.write_bytes(
        signing.Ed25519PrivateKey.generate()
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    assert "bad signature" in refused(paths["metadata"], paths["signature"], "--key", other)
    # a file beside the metadata that is not the one published
    paths["csv"].write_bytes(paths["csv"].read_bytes() + b"1,2\r\n")
    assert "SHA-256" in refused(paths["metadata"], paths["signature"])
    # --files names a directory that must hold every listed file
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    assert "missing from" in refused(paths["metadata"], paths["signature"], "--files", lonely)


def test_the_management_command_exits_non_zero_on_a_changed_byte(published, tmp_path):
    _, _, downloads = published
    paths = _save_download(tmp_path, downloads)
    changed = bytearray(paths["metadata"].read_bytes())
    changed[-3] ^= 0x01
    paths["metadata"].write_bytes(bytes(changed))
    environment = {
        **os.environ,
        "SIGNING_KEY_PATH": str(django_settings.SIGNING_KEY_PATH),
        "VAR_DIR": str(tmp_path / "var"),
    }

    result = subprocess.run(
        [sys.executable, "manage.py", "verify_release", paths["metadata"], paths["signature"]],
        capture_output=True,
        text=True,
        env=environment,
        cwd=Path(django_settings.BASE_DIR),
        timeout=120,
        check=False,
    )

    assert result.returncode != 0
    assert "bad signature" in result.stderr


def test_openssl_verifies_the_signature_independently(published, anonymous_client, tmp_path):
    openssl = shutil.which("openssl")
    if openssl is None:
        skip_or_fail("the openssl command is not installed")
    _, _, downloads = published
    metadata = tmp_path / "metadata.json"
    metadata.write_bytes(downloads["metadata"][1])
    raw_signature = tmp_path / "signature.bin"
    raw_signature.write_bytes(base64.b64decode(downloads["signature"][1]))
    key = tmp_path / "key.pem"
    key.write_bytes(anonymous_client.get("/api/v1/signing-key/").content)

    def openssl_verify() -> subprocess.CompletedProcess:
        command = [openssl, "pkeyutl", "-verify", "-pubin", "-inkey", key, "-rawin"]
        return subprocess.run(
            [*command, "-in", metadata, "-sigfile", raw_signature],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    good = openssl_verify()
    changed = bytearray(downloads["metadata"][1])
    changed[0] ^= 0x01
    metadata.write_bytes(bytes(changed))
    tampered = openssl_verify()

    if good.returncode != 0 and "rawin" in good.stderr and not REQUIRE_SERVICES:
        pytest.skip(f"this openssl cannot verify raw Ed25519 input: {good.stderr.strip()}")
    assert good.returncode == 0, good.stderr
    assert "Signature Verified Successfully" in good.stdout
    assert tampered.returncode != 0


def test_the_key_file_is_private_and_outside_every_served_directory(published, settings):
    key_path = Path(settings.SIGNING_KEY_PATH)
    served = [
        settings.RELEASE_STORAGE_ROOT,
        settings.PRIVATE_STORAGE_ROOT,
        settings.STATIC_ROOT,
        settings.MEDIA_ROOT,
        *settings.STATICFILES_DIRS,
    ]

    assert (key_path.stat().st_mode & 0o777) == 0o600
    assert key_path.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    for directory in served:
        assert not key_path.resolve().is_relative_to(Path(directory).resolve()), directory
    # The default place too: under VAR_DIR, in a directory of its own.
    from config import settings as configured

    default = configured.VAR_DIR / "keys" / "release-signing.pem"
    for directory in (
        configured.RELEASE_STORAGE_ROOT,
        configured.PRIVATE_STORAGE_ROOT,
        configured.STATIC_ROOT,
        configured.MEDIA_ROOT,
        *configured.STATICFILES_DIRS,
    ):
        assert not default.is_relative_to(directory), directory
    assert not list(key_path.parent.glob(".*"))  # no partial file left behind


def test_concurrent_first_uses_in_threads_create_one_key(settings, tmp_path):
    for attempt in range(10):
        settings.SIGNING_KEY_PATH = tmp_path / f"attempt-{attempt}" / "key.pem"
        start = threading.Barrier(12)
        keys: list[bytes] = []

        def first_use(start=start, keys=keys) -> None:
            start.wait()
            keys.append(signing.public_key_pem())

        threads = [threading.Thread(target=first_use) for _ in range(12)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        assert len(keys) == 12
        assert len(set(keys)) == 1
        assert set(keys) == {signing.public_key_pem()}
        assert [p.name for p in settings.SIGNING_KEY_PATH.parent.iterdir()] == ["key.pem"]


FIRST_USE = """
import os, sys, time
from pathlib import Path
from releases.services import signing
ready, go = Path(sys.argv[1]), Path(sys.argv[2])
ready.touch()
while not go.exists():
    time.sleep(0.001)
sys.stdout.write(signing.public_key_pem().decode())
"""


def test_concurrent_first_uses_in_processes_create_one_key(tmp_path):
    import time

    key_path = tmp_path / "keys" / "release-signing.pem"
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "SIGNING_KEY_PATH": str(key_path),
        "VAR_DIR": str(tmp_path / "var"),
    }
    # Every process, once started up, says it is ready and waits for one "go", then uses the
    # key: all four at once, however long each took to start.
    ready, go = tmp_path / "ready", tmp_path / "go"
    ready.mkdir()
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", FIRST_USE, str(ready / str(i)), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=environment,
            cwd=Path(django_settings.BASE_DIR),
        )
        for i in range(4)
    ]
    deadline = time.monotonic() + 120
    while len(list(ready.iterdir())) < len(processes):
        failed = [p for p in processes if p.poll() is not None]
        assert not failed, failed[0].communicate()
        assert time.monotonic() < deadline, "the processes did not start"
        time.sleep(0.01)
    go.touch()
    outputs = [process.communicate(timeout=120) for process in processes]

    assert [p.returncode for p in processes] == [0, 0, 0, 0], [e for _, e in outputs]
    assert len({out for out, _ in outputs}) == 1
    assert outputs[0][0] == signing._public_pem(
        serialization.load_pem_private_key(key_path.read_bytes(), None).public_key()
    )


def test_the_audit_head_in_the_metadata_is_the_event_the_publication_follows(published):
    release, _, downloads = published
    metadata = json.loads(downloads["metadata"][1])
    publication = AuditEvent.objects.get(
        action=AuditAction.RELEASE_PUBLISHED, object_type="release", object_id=str(release.pk)
    )
    finished = AuditEvent.objects.get(
        action=AuditAction.TASK_FINISHED, object_type="release", object_id=str(release.pk)
    )

    anchored = AuditEvent.objects.get(hash=metadata["audit_head"])
    assert anchored.pk < finished.pk < publication.pk
    # Exactly the head the publication's own events were chained onto.
    assert finished.previous_hash == metadata["audit_head"]
    assert set(publication.details["files"]) == OTHER_FORMATS | {"metadata", "signature"}
    assert publication.details["files"]["metadata"] == (
        hashlib.sha256(downloads["metadata"][1]).hexdigest()
    )
    assert audit_chain_verify().valid


def test_the_release_card_states_the_guarantee_and_the_anchors_and_prints_on_a4(
    published, anonymous_client
):
    release, entry, downloads = published
    metadata = json.loads(downloads["metadata"][1])
    key = anonymous_client.get("/api/v1/signing-key/").content
    raw_key = serialization.load_pem_public_key(key).public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    slug = release.series.slug

    page = anonymous_client.get(f"/catalog/{slug}/v1/card/")
    version_page = anonymous_client.get(f"/catalog/{slug}/v1/").content.decode()
    html = page.content.decode()
    stylesheet = Path(finders.find("css/release-card.css")).read_text()

    assert page.status_code == 200
    assert f'href="/catalog/{slug}/v1/card/"' in version_page
    assert "ε-differential privacy with ε = 0.8" in html
    assert '<td class="truth">69.0%</td>' in html  # e^0.8 / (1 + e^0.8)
    for file in entry["files"]:
        assert file["sha256"] in html
    assert hashlib.sha256(downloads["metadata"][1]).hexdigest() in html
    assert metadata["audit_head"] in html
    assert hashlib.sha256(raw_key).hexdigest() in html
    for answer in Release.objects.get(pk=release.pk).answers.all():
        assert answer.statistic["mechanism"] in html
    assert "95% interval" in html
    assert 'href="/static/css/release-card.css"' in html
    assert re.search(r"@page\s*\{\s*size:\s*A4;\s*margin:\s*15mm;?\s*\}", stylesheet)
    print_rules = stylesheet.split("@media print", 1)[1]
    assert ".site-header" in print_rules
    assert "display: none" in print_rules
    assert "max-width: 100%" in print_rules


def test_a_missing_version_has_no_card(anonymous_client, db):
    assert anonymous_client.get("/catalog/nothing/v1/card/").status_code == 404


def test_the_configuration_drafts_the_same_plan_again_in_the_same_series(
    published, curator_client, other_curator_client
):
    release, _, downloads = published
    configuration = json.loads(downloads["configuration"][1])

    again = curator_client.post("/api/v1/releases/", configuration, format="json")
    refused = other_curator_client.post("/api/v1/releases/", configuration, format="json")

    assert set(configuration) == {"dataset", "title", "series", "definition", "queries"}
    assert again.status_code == 201, again.json()
    draft = Release.objects.get(pk=again.json()["id"])
    assert draft.status == Release.Status.DRAFT
    assert draft.definition == release.definition
    assert draft.queries == release.queries
    assert draft.series_id == release.series_id
    assert draft.dataset_id == release.dataset_id
    # Another curator learns nothing from the dataset's id: not theirs, not found.
    assert refused.status_code == 404
