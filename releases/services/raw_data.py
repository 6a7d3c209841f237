"""The raw data lifecycle: deleting a dataset's upload and converted table, by its curator or when
``RAW_DATA_RETENTION_DAYS`` have passed since the upload.

What goes: the uploaded CSV (``Dataset.file``), the converted table (``Dataset.table``), any
table a stopped conversion left behind, and the last "suggest from data" output (observed
minimums, maximums and categories: values from the rows). What stays: the dataset's row with its
metadata (name, column names, declared schema, budget, SHA-256 of the upload, so the same bytes
uploaded again are still caught as a duplicate), every release and its published files, the
ledger and the audit trail. Every published version therefore stays downloadable and verifiable:
its files, signed metadata and ledger entries never depended on the rows once published.

Drafts of the dataset are closed (``Release.Status.CLOSED``, with the reason in
``failure_reason``): a draft is only a plan, and it could never run without the rows. Deletion is
refused while a release of the dataset is queued or running, because its worker reads the table
(or may need to read it again after a redelivery); it can be asked again once that release has
published or failed. A dataset still converting is refused for the same reason. A release that
failed after its answers were drawn can still be published again afterwards: publishing reads
only the stored answers.
"""

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext

from audit.chain import AuditAction, audit_record
from releases.models import Dataset, Release, private_storage
from releases.services.clock import database_now
from releases.services.errors import Conflict
from releases.services.heartbeat import Ticker
from releases.services.text import free_text_clean

logger = logging.getLogger(__name__)

REASON_MAX_LENGTH = 1000
# How often a worker applies the retention period (config/celery.py): days are coarse, so hourly.
RETENTION_CHECK_SECONDS = 3600.0
# The folder of converted tables, and the prefix of a conversion attempt's table in it
# (releases/services/datasets.py names them so).
TABLES_FOLDER = "tables"
ATTEMPT_PREFIX = "dataset-{pk}-"


def raw_delete_reason_clean(reason: Any) -> str:
    """A raw-data deletion's reason as stored (see :func:`free_text_clean`)."""
    return free_text_clean(
        reason,
        field="reason",
        noun=gettext("The reason"),
        max_length=REASON_MAX_LENGTH,
        missing=gettext("Say why the raw data is deleted."),
    )


def _day(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d")


def closed_draft_reason(deleted_at: datetime) -> str:
    """What a draft closed by the deletion says about itself."""
    return (
        f"The dataset's raw data was deleted on {_day(deleted_at)}; this draft can no longer run."
    )


def dataset_require_raw_data(dataset: Dataset, *, action: str = "This") -> None:
    """Refuse (:class:`Conflict`, a 409) anything that needs the rows, or could lead to a release
    that does, once the dataset's raw data was deleted. ``action`` names what was refused."""
    if dataset.raw_deleted_at is None:
        return
    raise Conflict(
        f"The raw data of this dataset was deleted on {_day(dataset.raw_deleted_at)}: "
        f"{action} is no longer possible. Its published versions, budget ledger and audit "
        "trail are kept."
    )


def _stray_tables(storage, dataset_pk: int) -> list[str]:
    """Tables that conversions of the dataset stopped midway left behind."""
    try:
        _, names = storage.listdir(TABLES_FOLDER)
    except FileNotFoundError:
        return []
    prefix = ATTEMPT_PREFIX.format(pk=dataset_pk)
    return [f"{TABLES_FOLDER}/{name}" for name in names if name.startswith(prefix)]


def _stored_raw_files(dataset_pk: int, names: list[str]) -> list[str]:
    """Which of the dataset's named raw files, and of the tables its stopped conversions left,
    are in private storage (a directory or object storage, both read through Django's storage
    API)."""
    storage = private_storage()
    candidates = {name for name in names if name} | set(_stray_tables(storage, dataset_pk))
    return [name for name in sorted(candidates) if storage.exists(name)]


def _busy_release(dataset: Dataset) -> Release | None:
    return (
        dataset.releases.filter(
            status__in=[
                Release.Status.AWAITING_APPROVAL,
                Release.Status.QUEUED,
                Release.Status.RUNNING,
            ]
        )
        .order_by("pk")
        .first()
    )


def _deletion_refusal(dataset: Dataset) -> str | None:
    """Why the dataset's raw data cannot be deleted now, or None."""
    if dataset.status == Dataset.Status.PROCESSING:
        return (
            "The table is still being converted; delete its raw data once the conversion "
            "has finished."
        )
    busy = _busy_release(dataset)
    if busy is not None:
        return (
            f"Release #{busy.pk} of this dataset is {busy.get_status_display().lower()}: "
            "its worker needs the rows. "
            "Delete the raw data once it has been published, has failed or was rejected."
        )
    return None


def dataset_raw_delete(*, dataset_id: int, actor: Any, reason: Any) -> Dataset:
    """Delete the dataset's raw data for good and close its drafts, under its row lock; returns
    the dataset as it now is.

    Idempotent: on a dataset whose raw data is already deleted it changes and records nothing
    and returns it as it is. Raises :class:`ValidationFailed` naming ``reason``, or
    :class:`Conflict` while the dataset converts or a release of it is queued or running.
    Records ``dataset.raw_deleted`` with the reason, how many files were removed and which
    drafts were closed (ids only, never a value from the rows).

    The files are deleted last, inside the transaction: if deleting one fails (object storage
    unreachable), the transaction rolls back, nothing is marked deleted and the call can simply be
    repeated; a file already gone is not counted again.
    """
    text = raw_delete_reason_clean(reason)
    with transaction.atomic():
        dataset = Dataset.objects.select_for_update().get(pk=dataset_id)
        if dataset.raw_deleted_at is not None:
            return dataset
        refusal = _deletion_refusal(dataset)
        if refusal is not None:
            raise Conflict(refusal)
        now = database_now()
        drafts = list(
            Release.objects.select_for_update()
            .filter(dataset=dataset, status=Release.Status.DRAFT)
            .order_by("pk")
        )
        for draft in drafts:
            draft.status = Release.Status.CLOSED
            draft.failure_reason = closed_draft_reason(now)
            draft.save(update_fields=["status", "failure_reason"])
        raw_files = [dataset.file.name, dataset.table.name]
        dataset.file = ""
        dataset.table = ""
        dataset.schema_suggestion = None
        dataset.raw_deleted_at = now
        dataset.raw_deleted_reason = text
        dataset.save(
            update_fields=[
                "file",
                "table",
                "schema_suggestion",
                "raw_deleted_at",
                "raw_deleted_reason",
            ]
        )
        stored = _stored_raw_files(dataset.pk, raw_files)
        audit_record(
            actor=actor,
            action=AuditAction.DATASET_RAW_DELETED,
            object_type="dataset",
            object_id=dataset.pk,
            dataset_id=dataset.pk,
            details={
                "reason": text,
                "files_removed": len(stored),
                "drafts_closed": [draft.pk for draft in drafts],
            },
        )
        # Last, so that any failure before here leaves every file in place.
        storage = private_storage()
        for name in stored:
            storage.delete(name)
    return dataset


# --- retention --------------------------------------------------------------------------------


@dataclass
class RetentionOutcome:
    """What one application of the retention period did (or, dry, would do)."""

    retention_days: int
    deleted: list[int] = field(default_factory=list)
    # (dataset id, why it was left for now)
    skipped: list[tuple[int, str]] = field(default_factory=list)


def retention_reason(days: int) -> str:
    return f"retention: {days} days"


def dataset_list_raw_expired(*, retention_days: int) -> list[int]:
    """Ids of the datasets uploaded more than ``retention_days`` ago whose raw data is still
    kept, oldest first; none when the period is 0 (keep until deleted)."""
    if retention_days <= 0:
        return []
    cutoff = database_now() - timedelta(days=retention_days)
    return list(
        Dataset.objects.filter(raw_deleted_at__isnull=True, created_at__lt=cutoff)
        .order_by("created_at", "pk")
        .values_list("pk", flat=True)
    )


def raw_data_retention_apply(
    *, retention_days: int | None = None, dry_run: bool = False
) -> RetentionOutcome:
    """Delete the raw data of every dataset older than the retention period (default
    ``RAW_DATA_RETENTION_DAYS``), as the system, with the reason "retention: N days". A dataset
    that cannot be deleted now (converting, a release queued or running) is skipped, saying why,
    and taken on a later run. ``dry_run`` lists what would be deleted and changes nothing."""
    days = settings.RAW_DATA_RETENTION_DAYS if retention_days is None else retention_days
    outcome = RetentionOutcome(retention_days=days)
    for dataset_id in dataset_list_raw_expired(retention_days=days):
        if dry_run:
            refusal = _deletion_refusal(Dataset.objects.get(pk=dataset_id))
            if refusal is None:
                outcome.deleted.append(dataset_id)
            else:
                outcome.skipped.append((dataset_id, refusal))
            continue
        try:
            dataset_raw_delete(dataset_id=dataset_id, actor=None, reason=retention_reason(days))
        except Conflict as refusal:
            outcome.skipped.append((dataset_id, refusal.detail))
        else:
            outcome.deleted.append(dataset_id)
    return outcome


def raw_data_retention_start() -> Ticker | None:
    """Apply the retention period in a daemon thread of this process, now and then every
    RETENTION_CHECK_SECONDS, as the release reaper does (config/celery.py starts it in every
    worker); None when RAW_DATA_RETENTION_DAYS is 0. Several workers are safe: each dataset is
    re-checked under its row lock and a second deletion is a no-op."""
    if settings.RAW_DATA_RETENTION_DAYS <= 0:
        return None

    def apply() -> None:
        outcome = raw_data_retention_apply()
        for dataset_id in outcome.deleted:
            logger.warning(
                "dataset %s: raw data deleted (%s)",
                dataset_id,
                retention_reason(outcome.retention_days),
            )
        for dataset_id, why in outcome.skipped:
            logger.warning("dataset %s: raw data kept for now: %s", dataset_id, why)

    ticker = Ticker(
        name="raw-data-retention", interval=RETENTION_CHECK_SECONDS, action=apply, run_first=True
    )
    ticker.start()
    return ticker
