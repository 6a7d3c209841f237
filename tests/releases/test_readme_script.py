"""README's download-by-script example, run as written (its own Python process, standard
library only) against a live server: it downloads every file of the newest matching version and
checks each against the published SHA-256."""

import hashlib
import io
import os
import re
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest
from django.core.management import call_command

from releases.models import Release
from releases.services.signed_metadata import release_file_name
from tests.conftest import draft_body, publish_through_api

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_script() -> str:
    text = README.read_text(encoding="utf-8")
    block = re.search(
        r"<!-- download-by-script -->\s*```python\n(.*?)```\s*<!-- /download-by-script -->",
        text,
        re.DOTALL,
    )
    assert block, "README has no download-by-script block"
    return block.group(1)


def run_readme_script(folder: Path, url: str) -> subprocess.CompletedProcess:
    """README's script, as written, in its own Python process in ``folder``, against ``url``."""
    script = folder / "download.py"
    script.write_text(readme_script(), encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=folder,
        env={**os.environ, "GDR_URL": url},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_readme_script_downloads_and_verifies_every_file(
    live_server, curator_client, dataset, django_capture_on_commit_callbacks, tmp_path
):
    publish_through_api(curator_client, django_capture_on_commit_callbacks, draft_body(dataset.pk))
    release = Release.objects.get(status=Release.Status.PUBLISHED)
    result = run_readme_script(tmp_path, live_server.url)

    assert result.returncode == 0, result.stdout + result.stderr
    slug, version = release.series.slug, release.version
    folder = tmp_path / "downloads" / f"{slug}-v{version}"
    for record in release.files.all():
        assert f"verified {record.format} {record.sha256[:16]}" in result.stdout
        saved = folder / release_file_name(slug=slug, version=version, file_format=record.format)
        assert hashlib.sha256(saved.read_bytes()).hexdigest() == record.sha256
    assert len(list(folder.iterdir())) == release.files.count() >= 6
    # and what it saved is what the signed metadata lists, as README says to check it
    name = partial(release_file_name, slug=slug, version=version)
    out = io.StringIO()
    call_command(
        "verify_release",
        str(folder / name(file_format="metadata")),
        str(folder / name(file_format="signature")),
        "--files",
        str(folder),
        stdout=out,
    )
    assert out.getvalue().startswith("VALID")


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_readme_script_refuses_a_file_whose_hash_differs(
    live_server, curator_client, dataset, django_capture_on_commit_callbacks, tmp_path
):
    publish_through_api(curator_client, django_capture_on_commit_callbacks, draft_body(dataset.pk))
    release = Release.objects.get(status=Release.Status.PUBLISHED)
    # The stored CSV altered behind the database's back: the published hash no longer matches.
    csv = release.files.get(format="csv")
    Path(csv.file.path).write_bytes(b"altered\r\n")
    result = run_readme_script(tmp_path, live_server.url)

    assert result.returncode != 0
    assert "csv: SHA-256 mismatch, not saved" in result.stdout + result.stderr
