"""What a worker does with a queued release: draw every noisy answer once, then publish.

Three short transactions, each idempotent, so a redelivered or retried task resumes where the last
one stopped and never draws fresh noise or charges twice:
1. claim: queued → running (a running release is resumed);
2. draw: if no answers are stored, read the table, draw all answers and store them, and mark the
   reservation spent, in one transaction;
3. publish: write the files from the stored answers and give the release its version.

A delivery lost with its worker (killed, out of memory, past the hard time limit) is redelivered,
because tasks are acknowledged late and rejected when the worker is lost; releases left running
past the time limit are failed by ``release_reap_stale`` (``manage.py reap_stale_releases``).
"""

import csv
import hashlib
import io
import json
import logging
from datetime import timedelta
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.core.files.base import ContentFile
from django.db import DatabaseError, transaction
from django.utils import timezone

from privacy_engine import EngineValidationError, run_queries
from releases.models import LedgerEntry, NoisyAnswer, Release, ReleaseFile, ReleaseSeries
from releases.services.audit import AuditAction, audit_record
from releases.services.releases import series_next_version
from releases.services.tables import TableError, table_load

logger = logging.getLogger(__name__)

CSV_FIELDS = [
    "statistic",
    "kind",
    "column",
    "category",
    "value",
    "ci95_low",
    "ci95_high",
    "mechanism",
    "epsilon",
    "delta",
    "sensitivity",
    "noise_scale",
    "rule",
]


class ReleaseFailure(Exception):
    """A reason safe to show the curator: it names no value from the table."""


def _set_progress(release_id: int, progress: float) -> None:
    Release.objects.filter(pk=release_id).update(progress=progress)


def _claim(release_id: int, worker: str) -> bool:
    with transaction.atomic():
        release = Release.objects.select_for_update().get(pk=release_id)
        if release.status == Release.Status.QUEUED:
            release.status = Release.Status.RUNNING
            release.progress = 0.1
            release.worker = worker
            release.save(update_fields=["status", "progress", "worker"])
            audit_record(
                actor=None,
                action=AuditAction.TASK_STARTED,
                object_type="release",
                object_id=release.pk,
                dataset_id=release.dataset_id,
                details={"worker": worker},
            )
            return True
        # A running release was claimed by a delivery that died; this redelivery resumes it.
        return release.status == Release.Status.RUNNING


def _draw(release_id: int) -> None:
    release = Release.objects.select_related("dataset").get(pk=release_id)
    if release.answers.exists():
        return
    # Reading and computing happen outside any transaction, so a long computation does not hold
    # the database's write lock (SQLite) while pages and downloads wait. Answers drawn here are
    # stored only if none were stored meanwhile; answers never stored are never seen by anyone.
    try:
        frame = table_load(release.dataset.file.path)
    except (OSError, TableError):
        raise ReleaseFailure("The uploaded table could not be read.") from None
    try:
        result = run_queries(
            frame,
            schema=release.schema,
            definition=release.definition,
            queries=release.queries,
        )
    except EngineValidationError as error:
        raise ReleaseFailure(f"The release plan is not valid: {error}") from None
    with transaction.atomic():
        release = Release.objects.select_for_update().get(pk=release_id)
        if release.answers.exists():
            return
        NoisyAnswer.objects.bulk_create(
            NoisyAnswer(release=release, position=i, statistic=s.to_dict())
            for i, s in enumerate(result.statistics)
        )
        release.progress = 0.6
        release.save(update_fields=["progress"])
        audit_record(
            actor=None,
            action=AuditAction.NOISE_DRAWN,
            object_type="release",
            object_id=release.pk,
            dataset_id=release.dataset_id,
            details={"statistics": len(result.statistics)},
        )
        _ledger_settle(
            LedgerEntry.objects.select_for_update().get(release=release),
            release=release,
            state=LedgerEntry.State.SPENT,
        )


def _ledger_settle(entry: LedgerEntry, *, release: Release, state: str) -> None:
    """Move a reservation to spent or returned and record it, in the caller's transaction."""
    entry.state = state
    entry.save(update_fields=["state", "updated_at"])
    audit_record(
        actor=None,
        action=AuditAction.BUDGET_SPENT
        if state == LedgerEntry.State.SPENT
        else AuditAction.BUDGET_RETURNED,
        object_type="ledger_entry",
        object_id=entry.pk,
        dataset_id=release.dataset_id,
        details={"release": release.pk, "epsilon": str(entry.epsilon), "delta": str(entry.delta)},
    )


def _csv_bytes(statistics: list[dict[str, Any]]) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for index, stat in enumerate(statistics):
        common = {
            k: stat[k]
            for k in (
                "kind",
                "column",
                "mechanism",
                "epsilon",
                "delta",
                "sensitivity",
                "noise_scale",
                "rule",
            )
        }
        if isinstance(stat["value"], dict):
            for category, value in stat["value"].items():
                low, high = stat["ci95"][category]
                writer.writerow(
                    {
                        "statistic": index,
                        "category": category,
                        "value": value,
                        "ci95_low": low,
                        "ci95_high": high,
                        **common,
                    }
                )
        else:
            low, high = stat["ci95"]
            writer.writerow(
                {
                    "statistic": index,
                    "category": "",
                    "value": stat["value"],
                    "ci95_low": low,
                    "ci95_high": high,
                    **common,
                }
            )
    return out.getvalue().encode()


def release_document(release: Release, statistics: list[dict[str, Any]]) -> dict[str, Any]:
    """The published JSON document of one version (also the API's statistics)."""
    return {
        "slug": release.series.slug,
        "title": release.title,
        "version": release.version,
        "definition": release.definition,
        "published_at": release.published_at.isoformat() if release.published_at else None,
        "statistics": statistics,
    }


def _publish(release_id: int) -> None:
    with transaction.atomic():
        release = Release.objects.select_for_update().select_related("series").get(pk=release_id)
        if release.status != Release.Status.RUNNING:
            return
        series = ReleaseSeries.objects.select_for_update().get(pk=release.series_id)
        statistics = [a.statistic for a in release.answers.order_by("position")]
        release.version = series_next_version(series)
        release.published_at = timezone.now()
        document = release_document(release, statistics)
        contents = {
            ReleaseFile.Format.CSV: _csv_bytes(statistics),
            ReleaseFile.Format.JSON: json.dumps(document, indent=2, ensure_ascii=False).encode(),
        }
        for file_format, content in contents.items():
            record = ReleaseFile(
                release=release,
                format=file_format,
                sha256=hashlib.sha256(content).hexdigest(),
                size=len(content),
            )
            record.file.save(
                f"{series.slug}-v{release.version}.{file_format}", ContentFile(content), save=False
            )
            record.save()
        release.status = Release.Status.PUBLISHED
        release.progress = 1.0
        release.save(update_fields=["status", "progress", "version", "published_at"])
        audit_record(
            actor=None,
            action=AuditAction.TASK_FINISHED,
            object_type="release",
            object_id=release.pk,
            dataset_id=release.dataset_id,
            details={},
        )
        audit_record(
            actor=None,
            action=AuditAction.RELEASE_PUBLISHED,
            object_type="release",
            object_id=release.pk,
            dataset_id=release.dataset_id,
            details={
                "slug": series.slug,
                "version": release.version,
                "files": {f: hashlib.sha256(c).hexdigest() for f, c in contents.items()},
            },
        )


def release_fail(*, release_id: int, reason: str) -> None:
    """Mark the release failed with a safe reason; publish nothing. The reservation comes back
    only if no noise was drawn: drawn answers have spent the budget whether published or not."""
    with transaction.atomic():
        release = Release.objects.select_for_update().get(pk=release_id)
        if release.status in (Release.Status.PUBLISHED, Release.Status.FAILED):
            return
        release.status = Release.Status.FAILED
        release.failure_reason = reason
        release.save(update_fields=["status", "failure_reason"])
        audit_record(
            actor=None,
            action=AuditAction.TASK_FAILED,
            object_type="release",
            object_id=release.pk,
            dataset_id=release.dataset_id,
            details={"reason": reason},
        )
        entry = LedgerEntry.objects.select_for_update().filter(release=release).first()
        if entry is not None and entry.state == LedgerEntry.State.RESERVED:
            drawn = release.answers.exists()
            _ledger_settle(
                entry,
                release=release,
                state=LedgerEntry.State.SPENT if drawn else LedgerEntry.State.RETURNED,
            )


def release_run(*, release_id: int, worker: str) -> None:
    """Run a queued release to publication, or leave it failed with a safe reason.

    Database errors propagate so the task can retry them; every other error fails the release.
    """
    if not _claim(release_id, worker):
        return
    try:
        _draw(release_id)
        _set_progress(release_id, 0.8)
        _publish(release_id)
    except DatabaseError:
        raise
    except ReleaseFailure as failure:
        release_fail(release_id=release_id, reason=str(failure))
    except SoftTimeLimitExceeded:
        release_fail(release_id=release_id, reason="The release took longer than the time limit.")
    except Exception as error:
        # Only the type is logged: messages from data libraries can quote table values.
        logger.error("release %s failed with %s", release_id, type(error).__name__)
        release_fail(
            release_id=release_id,
            reason=f"Internal error while computing the release ({type(error).__name__}).",
        )


def release_reap_stale(*, older_than: timedelta) -> list[int]:
    """Fail releases that have been queued or running for longer than ``older_than`` since
    submission (their worker is gone); the budget comes back only if no noise was drawn."""
    cutoff = timezone.now() - older_than
    stale = list(
        Release.objects.filter(
            status__in=[Release.Status.QUEUED, Release.Status.RUNNING], submitted_at__lt=cutoff
        ).values_list("pk", flat=True)
    )
    for release_id in stale:
        release_fail(
            release_id=release_id,
            reason="The worker computing this release stopped before finishing.",
        )
    return stale
