"""Recording downloads of published files: each logged-in user's download is an event; an
anonymous client's repeated downloads of one file from one network within
``AUDIT_REPEAT_WINDOW`` seconds are counted on the window's one event, so anonymous
clients cannot flood the trail (the API throttle also limits how fast they download)."""

from typing import Any

from django.conf import settings

from audit.chain import AuditAction, audit_record, audit_record_repeated
from audit.context import current_client
from releases.models import Release, ReleaseFile


def release_file_download_record(
    *, actor: Any, release: Release, release_file: ReleaseFile, file_format: str
) -> None:
    """Record ``actor``'s download of ``release_file`` (in the request being served)."""
    event = {
        "actor": actor,
        "action": AuditAction.FILE_DOWNLOADED,
        "object_type": "release_file",
        "object_id": release_file.pk,
        "dataset_id": release.dataset_id,
        "details": {
            "slug": release.series.slug,
            "version": release.version,
            "format": file_format,
        },
    }
    if getattr(actor, "is_authenticated", False):
        audit_record(**event)
        return
    audit_record_repeated(
        key=f"download:{release_file.pk}:{current_client()}",
        window_seconds=settings.AUDIT_REPEAT_WINDOW,
        **event,
    )
