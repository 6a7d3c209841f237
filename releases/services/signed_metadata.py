"""A published version's configuration, machine-readable metadata and the metadata's signature.

``configuration`` is exactly the body ``POST /api/v1/releases/`` accepts (dataset id, title,
series slug, definition, queries), so a curator can draft the next version of the same plan.
It says nothing the published JSON does not, except the dataset's id: an opaque number that
grants nothing (every dataset endpoint answers 404 to anyone but its owner), so it is public
like the other files and covered by the signature.

``metadata`` restates, for machines, what the version guarantees (definition and policy; per
statistic its mechanism, ε, δ, sensitivity, noise scale and 95% half-width, copied from the
stored statistics and the engine's plan, never recomputed here), the software that produced it,
the SHA-256 and size of every other file of the version, and ``audit_head``: the audit trail's
head hash read, with the head row locked, in the publishing transaction, i.e. the hash of the
event that this version's own publication events follow. ``signature`` is the Ed25519 signature
of the metadata file's exact bytes (``releases.services.signing``).
"""

import hashlib
import json
import re
from importlib import metadata as package_metadata
from pathlib import Path
from typing import Any

from audit.models import AuditChainHead
from releases.models import MICRODATA_PREFIX, Release, ReleaseFile
from releases.services import signing

METADATA_SCHEMA = "guided-data-release/metadata/v1"
PROJECT_PACKAGE = "guided-data-release"
# Per statistic, copied as stored: what Kerckhoffs' principle says every release publishes.
STATISTIC_FIELDS = ("kind", "column", "mechanism", "epsilon", "delta", "sensitivity", "noise_scale")
SHA256_HEX = re.compile(r"[0-9a-f]{64}")
# How many shape problems a check names (a hostile file could hold thousands).
SHAPE_PROBLEMS_NAMED = 5
# Files the metadata does not list: itself and its signature.
UNLISTED = (ReleaseFile.Format.METADATA, ReleaseFile.Format.SIGNATURE)

CONTENT_TYPES = {
    ReleaseFile.Format.CSV: "text/csv",
    ReleaseFile.Format.JSON: "application/json",
    ReleaseFile.Format.PARQUET: "application/vnd.apache.parquet",
    ReleaseFile.Format.CONFIGURATION: "application/json",
    ReleaseFile.Format.METADATA: "application/json",
    ReleaseFile.Format.SIGNATURE: "text/plain; charset=us-ascii",
}
# How the signed files are named when downloaded (the others keep ``<slug>-v<n>.<format>``).
DOWNLOAD_SUFFIXES = {
    ReleaseFile.Format.CONFIGURATION: "-configuration.json",
    ReleaseFile.Format.METADATA: "-metadata.json",
    ReleaseFile.Format.SIGNATURE: "-metadata.json.sig",
}


def release_file_content_type(file_format: str) -> str:
    """The Content-Type a version's file is served with."""
    if file_format.startswith(MICRODATA_PREFIX):
        extension = file_format.rpartition(".")[2]
        return CONTENT_TYPES.get(extension, "application/octet-stream")
    return CONTENT_TYPES.get(file_format, "application/octet-stream")


def release_file_name(*, slug: str, version: int, file_format: str) -> str:
    """The name a version's file is downloaded as; the metadata lists files by these names, so
    that ``manage.py verify_release`` finds them beside a downloaded metadata file."""
    if file_format.startswith(MICRODATA_PREFIX):
        return f"{slug}-v{version}-{file_format}"
    if file_format in DOWNLOAD_SUFFIXES:
        return f"{slug}-v{version}{DOWNLOAD_SUFFIXES[file_format]}"
    return f"{slug}-v{version}.{file_format}"


def release_configuration(release: Release) -> dict[str, Any]:
    """The draft body (``POST /api/v1/releases/``) that plans this version again, as the next
    version of the same series."""
    return {
        "dataset": release.dataset_id,
        "title": release.title,
        "series": release.series.slug,
        "definition": release.definition,
        "queries": release.queries,
    }


def release_configuration_file(release: Release) -> bytes:
    return json.dumps(release_configuration(release), indent=2, ensure_ascii=False).encode()


def software_versions() -> dict[str, str | None]:
    """This project's version and OpenDP's, as installed."""
    versions: dict[str, str | None] = {}
    for package in (PROJECT_PACKAGE, "opendp"):
        try:
            versions[package] = package_metadata.version(package)
        except package_metadata.PackageNotFoundError:
            versions[package] = None
    return versions


def _statistic_entry(position: int, stat: dict[str, Any], planned: dict[str, Any]) -> dict:
    entry: dict[str, Any] = {"position": position, **{k: stat.get(k) for k in STATISTIC_FIELDS}}
    if stat.get("columns"):
        entry["columns"] = stat["columns"]
    # The engine's 95% half-width of the statistic's noise, from the release's plan (the preview
    # the curator approved; the same plan the worker ran). The published intervals themselves,
    # per cell, are in the json, csv and parquet files.
    entry["ci95_halfwidth"] = planned.get("ci95_halfwidth")
    if not isinstance(stat.get("value"), dict | list) and stat.get("ci95") is not None:
        entry["ci95"] = stat["ci95"]
    if stat.get("rule"):
        entry["rule"] = stat["rule"]
    if stat.get("accounting"):
        entry["accounting"] = stat["accounting"]
    if stat.get("parts"):
        entry["parts"] = stat["parts"]
    return entry


def release_metadata(
    *,
    release: Release,
    statistics: list[dict[str, Any]],
    contents: dict[str, bytes],
    audit_head: str,
    public_key_pem: bytes,
) -> dict[str, Any]:
    """The metadata document of a version whose other files are ``contents`` (format → bytes)."""
    slug, version = release.series.slug, release.version
    plan = release.preview if isinstance(release.preview, list) else []
    return {
        "schema": METADATA_SCHEMA,
        "slug": slug,
        "title": release.title,
        "version": version,
        "published_at": release.published_at.isoformat() if release.published_at else None,
        "definition": release.definition,
        "policy": release.definition.get("policy"),
        "statistics": [
            _statistic_entry(i, stat, plan[i] if i < len(plan) else {})
            for i, stat in enumerate(statistics)
        ],
        "software": software_versions(),
        "files": [
            {
                "format": file_format,
                "name": release_file_name(slug=slug, version=version, file_format=file_format),
                "sha256": hashlib.sha256(content).hexdigest(),
                "size": len(content),
            }
            for file_format, content in sorted(contents.items())
            if file_format not in UNLISTED
        ],
        "audit_head": audit_head,
        "signing_key": {
            "algorithm": signing.ALGORITHM,
            "public_key_sha256": signing.public_key_fingerprint(public_key_pem),
        },
    }


def release_signed_files(
    *, release: Release, statistics: list[dict[str, Any]], contents: dict[str, bytes]
) -> dict[str, bytes]:
    """The metadata and signature files of a version being published, whose other files are
    ``contents``. Call inside the publishing transaction, after every other file is stored and
    just before the publication's audit events: the audit head is locked here and stays locked
    until commit, so the head named in the metadata is exactly the one those events follow."""
    head, _ = AuditChainHead.objects.select_for_update().get_or_create(pk=1)
    document = release_metadata(
        release=release,
        statistics=statistics,
        contents=contents,
        audit_head=head.last_hash,
        public_key_pem=signing.public_key_pem(),
    )
    body = json.dumps(document, indent=2, ensure_ascii=False).encode() + b"\n"
    return {
        ReleaseFile.Format.METADATA: body,
        ReleaseFile.Format.SIGNATURE: signing.signature_text(body),
    }


def release_metadata_read(*, release: Release) -> dict[str, Any] | None:
    """A published version's stored metadata document, or None for a version published before
    versions were signed."""
    stored = release.files.filter(format=ReleaseFile.Format.METADATA).first()
    if stored is None:
        return None
    with stored.file.open("rb") as handle:
        return json.loads(handle.read())


def _json_type(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    return "null" if value is None else "a number"


def _plain_name(name: Any) -> bool:
    """A file name alone: no directory, no ``..``, nothing a path could not hold."""
    return (
        isinstance(name, str)
        and name not in ("", ".", "..")
        and "\x00" not in name
        and Path(name).name == name
    )


def metadata_shape_problems(document: Any) -> list[str]:
    """What makes ``document`` (a parsed metadata file: a good signature says who wrote it, not
    that it is well formed) other than a metadata document whose files can be checked; empty
    when its shape is right. Names at most SHAPE_PROBLEMS_NAMED problems."""
    if not isinstance(document, dict):
        return [f"it is {_json_type(document)}, not a JSON object"]
    if document.get("schema") != METADATA_SCHEMA:
        return [f"its schema is not {METADATA_SCHEMA!r}"]
    files = document.get("files")
    if not isinstance(files, list):
        return [
            f"its files is {_json_type(files) if 'files' in document else 'missing'}, not a list"
        ]
    problems: list[str] = []
    for index, listed in enumerate(files):
        where = f"files[{index}]"
        if not isinstance(listed, dict):
            problems.append(f"{where} is {_json_type(listed)}, not an object")
            continue
        if not _plain_name(listed.get("name")):
            problems.append(f"{where}.name is not a plain file name")
        if not isinstance(listed.get("sha256"), str) or not SHA256_HEX.fullmatch(listed["sha256"]):
            problems.append(f"{where}.sha256 is not a SHA-256 (64 hex digits)")
    return problems[:SHAPE_PROBLEMS_NAMED]


def metadata_files_check(
    *, metadata: dict[str, Any], directory: Path, require_all: bool
) -> tuple[list[str], list[str]]:
    """Compare the files the metadata lists with those in ``directory`` (by their download
    names): the names that match, and a problem for each that differs (or, with
    ``require_all``, is missing). ``metadata`` has the right shape (metadata_shape_problems)."""
    matched: list[str] = []
    problems: list[str] = []
    for listed in metadata["files"]:
        name = listed["name"]
        # Only a plain name (checked): a metadata file never points outside the directory.
        path = directory / name
        if not path.is_file():
            if require_all:
                problems.append(f"{name}: missing from {directory}")
            continue
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
        if digest.hexdigest() != listed.get("sha256"):
            problems.append(f"{name}: SHA-256 {digest.hexdigest()} differs from the metadata's")
        else:
            matched.append(name)
    return matched, problems
