"""Uploading tables and declaring their public shape."""

import dataclasses
import hashlib
import logging
import re
import tempfile
import unicodedata
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils.translation import gettext

from audit.chain import AuditAction, audit_record
from organisations.services import organisation_of
from privacy_engine import EngineValidationError, schema_from_dict
from privacy_engine.accounting import DELTA_PLACES, LEDGER_PLACES
from privacy_engine.guidance import HARM_EPSILON, RELEASES_FACTOR, budget_from_questions
from privacy_engine.schema import (
    MAX_ROWS,
    CategoricalColumn,
    NumericColumn,
    Schema,
    check_declared_size,
)
from privacy_engine.wording import gettext_noop, phrase
from releases.models import Dataset, Release, private_storage
from releases.services.clock import database_now
from releases.services.errors import Conflict, ValidationFailed
from releases.services.heartbeat import heartbeat
from releases.services.ledger import budget_amount, budget_opening_record
from releases.services.raw_data import dataset_require_raw_data
from releases.services.storage import (
    PRIVATE_FILE_MODE,
    local_copy,
    private_directory,
    private_opener,
    storage_local_path,
    store_local_file,
)
from releases.services.tables import ConvertedTable, TableError, table_convert

logger = logging.getLogger(__name__)

# Why a conversion failed, besides the table reader's refusals: stored in English as the
# dataset's failure reason, translated where a page shows it (releases/refusals.py).
TOO_SLOW = gettext_noop("The conversion took longer than the time limit.")
INTERNAL_ERROR = gettext_noop("Internal error while converting the table ({error}).")
WORKER_STOPPED = gettext_noop(
    "The worker converting this table stopped before finishing, {count} (killed or out of "
    "memory); it is not tried again."
)
ONCE = gettext_noop("once")
TWICE = gettext_noop("twice")
TIMES = gettext_noop("{times} times")

TRUE_WORDS = frozenset({"true", "1", "on", "yes"})
FALSE_WORDS = frozenset({"", "false", "0", "off", "no"})


class DuplicateUpload(Conflict):
    """The uploaded bytes equal a stored dataset's; ``earlier`` is that dataset."""

    def __init__(self, detail: str, *, earlier: Dataset) -> None:
        super().__init__(detail)
        self.earlier = earlier


def _budget(value: Any, *, field: str, default: str, allow_zero: bool, places: Decimal) -> Decimal:
    return budget_amount(
        default if value in (None, "") else value,
        field=field,
        places=places,
        allow_zero=allow_zero,
    )


def _budget_answers(harm: Any, planned_releases: Any) -> tuple[dict[str, str], dict]:
    """The starting-point answers, both or neither, as budget_from_questions takes them; and
    the errors naming each bad one."""
    given = {"harm": harm, "planned_releases": planned_releases}
    choices = {"harm": HARM_EPSILON, "planned_releases": RELEASES_FACTOR}
    errors = {
        field: [f"must be one of {', '.join(choices[field])}"]
        for field, value in given.items()
        if value not in (None, "") and (not isinstance(value, str) or value not in choices[field])
    }
    answered = [field for field, value in given.items() if value not in (None, "")]
    if not errors and len(answered) == 1:
        missing = "planned_releases" if answered == ["harm"] else "harm"
        errors[missing] = [
            "answer both starting-point questions (harm and planned_releases), or neither"
        ]
    if errors or not answered:
        return {}, errors
    return {"harm": harm, "releases": planned_releases}, {}


def _name_errors(name: str) -> list[str]:
    if not name:
        return [gettext("Give the dataset a name.")]
    if len(name) > 200:
        return [gettext("Use at most 200 characters.")]
    # PostgreSQL cannot store NUL in text, and line breaks or other control characters in a
    # name only serve to forge lines on the pages and in the audit trail.
    if any(unicodedata.category(character) == "Cc" for character in name):
        return [gettext("Do not use control characters (such as NUL, tabs or line breaks).")]
    return []


def dataset_name_from_file(file_name: str) -> str:
    """The name a dataset gets from its file when the curator gives none: the file's name
    without its extension and without what cannot be shown in a name ("survey.csv" →
    "survey"), at most 200 characters."""
    base = re.split(r"[\\/]", file_name or "")[-1]
    stem, dot, _ = base.rpartition(".")
    stem = stem if dot and stem.strip() else base
    printable = "".join(c for c in stem if unicodedata.category(c) != "Cc")
    return printable.strip()[:200]


def _declared_size(value: Any) -> int | None:
    """A whole number from 1 to the engine's MAX_ROWS; its text is checked before int() so a
    5,000-digit number costs nothing."""
    if value in (None, ""):
        return None
    text = str(value).strip()
    if not re.fullmatch(r"[0-9]+", text) or not text.strip("0"):
        raise ValidationFailed({"declared_size": [gettext("must be a positive whole number")]})
    digits = text.lstrip("0")
    size = int(digits) if len(digits) <= len(str(MAX_ROWS)) else MAX_ROWS + 1
    try:
        return check_declared_size(size)
    except EngineValidationError as error:
        raise ValidationFailed(error.errors) from None


def _flag(value: Any, *, field: str) -> bool:
    if isinstance(value, bool):
        return value
    word = str(value if value is not None else "").strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ValidationFailed({field: ["must be true or false"]})


class _TooLarge(Exception):
    pass


def _stage_upload(upload, *, limit: int) -> tuple[str, str] | None:
    """Stream the upload into private storage, chunk by chunk (never whole in memory), hashing
    it on the way: its stored name and SHA-256, or ``None`` past ``limit`` (nothing kept). Object
    storage receives it from a local temporary file once it is whole."""
    storage = private_storage()
    name = f"datasets/upload-{uuid.uuid4().hex}.csv"
    local = storage_local_path(storage)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(storage.path(name)) if local else Path(folder) / "upload.csv"
        private_directory(path.parent)
        digest = hashlib.sha256()
        size = 0
        try:
            with open(path, "wb", opener=private_opener) as staged:
                for chunk in upload.chunks():
                    size += len(chunk)
                    if size > limit:
                        raise _TooLarge
                    digest.update(chunk)
                    staged.write(chunk)
            if not local:
                name = store_local_file(storage, path, name)
        except _TooLarge:
            path.unlink(missing_ok=True)
            return None
        except BaseException:
            path.unlink(missing_ok=True)
            raise
    return name, digest.hexdigest()


def _discard(*names: str) -> None:
    storage = private_storage()
    for name in names:
        if name:
            storage.delete(name)


def _table_name(dataset_pk: int | None = None) -> str:
    """A new table file's name; each conversion of a dataset writes its own, so two deliveries
    of one task never write the same file."""
    prefix = f"{_attempt_prefix(dataset_pk)}-" if dataset_pk is not None else ""
    return f"tables/{prefix}{uuid.uuid4().hex}.parquet"


def _attempt_prefix(dataset_pk: int) -> str:
    return f"dataset-{dataset_pk}"


def _discard_attempts(dataset_pk: int, *, keep: str = "") -> None:
    """Delete every conversion attempt's table of the dataset but ``keep``: what a worker killed
    mid-conversion left behind, or a delivery that lost the race."""
    storage = private_storage()
    try:
        _, names = storage.listdir("tables")
    except FileNotFoundError:
        return
    prefix = f"{_attempt_prefix(dataset_pk)}-"
    _discard(*(f"tables/{n}" for n in names if n.startswith(prefix) and f"tables/{n}" != keep))


def _convert(staged: str, table: str, **options: Any) -> ConvertedTable:
    """Convert a staged CSV to the columnar layout stored at ``table``; on a refusal nothing is
    left there."""
    storage = private_storage()
    local = storage_local_path(storage)
    with tempfile.TemporaryDirectory() as folder, local_copy(storage, staged) as source:
        target = Path(storage.path(table)) if local else Path(folder) / "table.parquet"
        private_directory(target.parent)
        try:
            converted = table_convert(
                source, target, max_columns=settings.DATASET_MAX_COLUMNS, **options
            )
            target.chmod(PRIVATE_FILE_MODE)
            if not local:
                store_local_file(storage, target, table)
        except BaseException:
            target.unlink(missing_ok=True)
            raise
    return converted


def _lock_digest(digest: str) -> None:
    """Serialise uploads of the same bytes until the creating transaction ends, so two at once
    cannot both miss each other. SQLite needs nothing more: its transactions here are IMMEDIATE
    (settings), which already serialises every writer."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [int(digest[:15], 16)])


def _earlier_upload(*, digest: str, owner, organisation) -> Dataset | None:
    """A stored dataset of the organisation with the same bytes: the curator's own first, else
    a colleague's. Another organisation's are not looked at: that would tell this one what
    another holds."""
    same = Dataset.objects.filter(sha256=digest, organisation=organisation).order_by("pk")
    return same.filter(owner=owner).first() or same.first()


def _duplicate_detail(*, earlier: Dataset, owner) -> str:
    budget = gettext(
        "The privacy budget belongs to the data, not to an upload: a second copy of the same "
        "records with a fresh budget would let their releases together spend more than either "
        "budget allows."
    )
    confirm = gettext(
        "If this is a new collection of records that happens to be identical, confirm it "
        "(confirm_new_budget=true) to give it a budget of its own; the pair is flagged to "
        "compliance."
    )
    if earlier.owner_id == owner.pk:
        return gettext(
            "This file is identical (same SHA-256) to your dataset #%(number)s “%(name)s”. "
            "%(budget)s Release from dataset #%(number)s instead. %(confirm)s"
        ) % {"number": earlier.pk, "name": earlier.name, "budget": budget, "confirm": confirm}
    return gettext(
        "This file is identical (same SHA-256) to a dataset another curator holds. "
        "%(budget)s Ask that curator or compliance before releasing from it. %(confirm)s"
    ) % {"budget": budget, "confirm": confirm}


def dataset_create(
    *,
    owner,
    name: str,
    upload,
    budget_epsilon: Any = None,
    budget_delta: Any = None,
    declared_size: Any = None,
    confirm_new_budget: Any = False,
    harm: Any = None,
    planned_releases: Any = None,
    name_from_file: bool = False,
) -> Dataset:
    """Validate an upload completely, then store the file and the row in one transaction.

    With ``name_from_file`` (the upload page) a name left empty is taken from the file's name
    (see :func:`dataset_name_from_file`); the API asks for a name.

    Raises :class:`ValidationFailed` with field errors; nothing is created on failure. Bytes
    identical to a stored dataset's raise :class:`DuplicateUpload` (a 409) unless
    ``confirm_new_budget`` says this is a new collection: then the dataset is created with
    ``duplicate_of`` set and the confirmation is audited.
    """
    errors: dict[str, list[str]] = {}
    name = (name or "").strip()
    if not name and name_from_file and upload is not None:
        name = dataset_name_from_file(upload.name)
    # Without a file the page asks for the file alone: its name will do for the dataset's.
    if (name_errors := _name_errors(name)) and not (name_from_file and upload is None):
        errors["name"] = name_errors
    limit = settings.DATASET_MAX_UPLOAD_BYTES
    if upload is None:
        errors["file"] = [gettext("Choose a CSV file to upload.")]
    size: int | None = None
    try:
        size = _declared_size(declared_size)
    except ValidationFailed as error:
        errors.update(error.errors)
    answers, answer_errors = _budget_answers(harm, planned_releases)
    errors.update(answer_errors)
    default_epsilon, default_delta = settings.DEFAULT_BUDGET_EPSILON, settings.DEFAULT_BUDGET_DELTA
    if budget_epsilon not in (None, ""):
        answers = {}  # the curator set the budget themselves: the answers did not set it
    if answers and "declared_size" not in errors:
        suggestion = budget_from_questions(**answers, declared_size=size)
        default_epsilon = repr(suggestion.total_epsilon)
        default_delta = format(suggestion.total_delta, "f")
        # Kept as they were said at upload: a declared size changed later does not rewrite them.
        answers["reasons"] = list(suggestion.reasons)
    fields = (
        ("budget_epsilon", budget_epsilon, default_epsilon, False, LEDGER_PLACES),
        ("budget_delta", budget_delta, default_delta, True, DELTA_PLACES),
    )
    amounts: dict[str, Decimal] = {}
    for field, value, default, allow_zero, places in fields:
        try:
            amounts[field] = _budget(
                value, field=field, default=default, allow_zero=allow_zero, places=places
            )
        except ValidationFailed as error:
            errors.update(error.errors)
    if amounts.get("budget_delta", 0) >= 1:
        errors["budget_delta"] = [gettext("must be below 1")]
    try:
        confirmed = _flag(confirm_new_budget, field="confirm_new_budget")
    except ValidationFailed as error:
        errors.update(error.errors)
    staged: tuple[str, str] | None = None
    converted: ConvertedTable | None = None
    table_name = ""
    if upload is not None:
        if upload.size > limit or (staged := _stage_upload(upload, limit=limit)) is None:
            errors["file"] = [
                gettext("The file is larger than the limit of %(megabytes)s MB.")
                % {"megabytes": _megabytes(limit)}
            ]
        elif upload.size <= settings.DATASET_CONVERT_INLINE_BYTES:
            # Small tables convert during the request: a refusal is a 400 naming the file.
            table_name = _table_name()
            try:
                converted = _convert(staged[0], table_name)
            except TableError as error:
                errors["file"] = [str(error)]
            except BaseException:
                _discard(staged[0])
                raise
    if errors:
        if staged is not None:
            _discard(staged[0], table_name)
        raise ValidationFailed(errors)
    assert staged is not None
    staged_name, digest = staged
    try:
        dataset = _dataset_store(
            owner=owner,
            name=name,
            digest=digest,
            confirmed=confirmed,
            declared_size=size,
            amounts=amounts,
            answers=answers,
            staged_name=staged_name,
            table_name=table_name,
            converted=converted,
        )
    except BaseException:
        _discard(staged_name, table_name)
        raise
    if converted is not None:
        _discard(staged_name)
    else:
        # Large tables convert in a worker once the row exists; the upload answers at once.
        # Robust: with the broker down the upload still answers 201; the reaper sends the
        # conversion once the message is overdue.
        dataset_id = dataset.pk
        transaction.on_commit(lambda: _send_conversion(dataset_id), robust=True)
    return dataset


def _megabytes(limit: int) -> str:
    return f"{limit / (1024 * 1024):g}"


def _send_conversion(dataset_id: int) -> None:
    # Imported here: the task module imports this one.
    from releases.tasks import dataset_convert_task

    limit = settings.DATASET_CONVERT_TIME_LIMIT
    dataset_convert_task.apply_async((dataset_id,), soft_time_limit=limit, time_limit=limit + 60)


def _dataset_store(
    *,
    owner,
    name: str,
    digest: str,
    confirmed: bool,
    declared_size: int | None,
    amounts: dict[str, Decimal],
    answers: dict[str, Any],
    staged_name: str,
    table_name: str,
    converted: ConvertedTable | None,
) -> Dataset:
    """The dataset row and its audit events, in one transaction; refuses a duplicate upload."""
    with transaction.atomic():
        _lock_digest(digest)
        organisation = organisation_of(owner)
        if organisation is None:
            raise Conflict(
                gettext("Your account belongs to no organisation: ask an administrator.")
            )
        earlier = _earlier_upload(digest=digest, owner=owner, organisation=organisation)
        if earlier is not None and not confirmed:
            raise DuplicateUpload(_duplicate_detail(earlier=earlier, owner=owner), earlier=earlier)
        dataset = Dataset.objects.create(
            owner=owner,
            organisation=organisation,
            name=name,
            sha256=digest,
            duplicate_of=earlier,
            declared_size=declared_size,
            budget_epsilon=amounts["budget_epsilon"],
            budget_delta=amounts["budget_delta"],
            harm=answers.get("harm", ""),
            planned_releases=answers.get("releases", ""),
            budget_reasons=answers.get("reasons", []),
            schema={},
            **(
                {
                    "status": Dataset.Status.READY,
                    "progress": 1.0,
                    "table": table_name,
                    "csv_dialect": converted.dialect,
                    "row_count": converted.row_count,
                    "columns": converted.columns,
                }
                if converted is not None
                else {
                    "status": Dataset.Status.PROCESSING,
                    "progress": 0.0,
                    "file": staged_name,
                    "queued_at": database_now(),
                }
            ),
        )
        budget_opening_record(dataset=dataset, user=owner)
        audit_record(
            actor=owner,
            action=AuditAction.DATASET_UPLOADED,
            object_type="dataset",
            object_id=dataset.pk,
            dataset_id=dataset.pk,
            details={
                "name": name,
                "columns": dataset.column_names,
                "budget_epsilon": str(amounts["budget_epsilon"]),
                "budget_delta": str(amounts["budget_delta"]),
                "sha256": digest,
                "status": dataset.status,
            },
        )
        if earlier is not None:
            audit_record(
                actor=owner,
                action=AuditAction.DUPLICATE_UPLOAD_CONFIRMED,
                object_type="dataset",
                object_id=dataset.pk,
                dataset_id=dataset.pk,
                details={
                    "dataset": dataset.pk,
                    "duplicate_of": earlier.pk,
                    "same_owner": earlier.owner_id == owner.pk,
                    "sha256": digest,
                },
            )
    return dataset


# Progress is written at most this often (share of the file), so a conversion does not spend its
# time updating one row.
PROGRESS_STEP = 0.02


def dataset_convert(*, dataset_id: int) -> None:
    """Convert a processing dataset's upload to typed columns; idempotent.

    Ends ``ready`` (columns, row count and dialect filled, the CSV deleted) or ``failed`` with a
    ``failure_reason`` that names rows and columns, never values (the CSV and any partial table
    deleted). A dataset that is not processing is left as it is.
    """
    claim = _claim_conversion(dataset_id)
    if claim == "stopped too often":
        _conversion_failed(dataset_id, _stopped_reason(settings.RELEASE_MAX_DELIVERIES))
        return
    if claim != "claimed":
        return
    dataset = Dataset.objects.get(pk=dataset_id)
    table_name = _table_name(dataset.pk)
    shown = [0.0]

    def progress(share: float) -> None:
        if share - shown[0] >= PROGRESS_STEP:
            shown[0] = share
            Dataset.objects.filter(pk=dataset_id, status=Dataset.Status.PROCESSING).update(
                progress=min(share, 0.99)
            )

    try:
        with _conversion_heartbeat(dataset_id):
            converted = _convert(dataset.file.name, table_name, progress=progress)
    except TableError as error:
        _conversion_failed(dataset_id, str(error))
        return
    except SoftTimeLimitExceeded:
        _conversion_failed(dataset_id, phrase(TOO_SLOW))
        return
    except Exception as error:
        logger.error("dataset %s conversion failed with %s", dataset_id, type(error).__name__)
        _conversion_failed(dataset_id, phrase(INTERNAL_ERROR, error=type(error).__name__))
        return
    with transaction.atomic():
        locked = Dataset.objects.select_for_update().filter(pk=dataset_id).first()
        if locked is None or locked.status != Dataset.Status.PROCESSING:
            # Another delivery finished first: this one's table is not used.
            transaction.on_commit(lambda: _discard(table_name))
            return
        staged = locked.file.name
        locked.status = Dataset.Status.READY
        locked.progress = 1.0
        locked.table = table_name
        locked.file = ""
        locked.csv_dialect = converted.dialect
        locked.row_count = converted.row_count
        locked.columns = converted.columns
        locked.save(
            update_fields=[
                "status",
                "progress",
                "table",
                "file",
                "csv_dialect",
                "row_count",
                "columns",
            ]
        )
        audit_record(
            actor=None,
            action=AuditAction.DATASET_CONVERTED,
            object_type="dataset",
            object_id=locked.pk,
            dataset_id=locked.pk,
            details={"columns": locked.column_names},
        )
        transaction.on_commit(
            lambda: (_discard(staged), _discard_attempts(dataset_id, keep=table_name))
        )


def _claim_conversion(dataset_id: int) -> str:
    """Take the conversion under the row lock, counting the attempt: "claimed"; or "busy" while
    another delivery's heartbeat is fresh (a message the broker handed out again at once), "done"
    when it is no longer processing, "stopped too often" after RELEASE_MAX_DELIVERIES attempts
    (a table that kills its worker, e.g. out of memory, is not tried forever)."""
    with transaction.atomic():
        locked = (
            Dataset.objects.select_for_update()
            .filter(pk=dataset_id, status=Dataset.Status.PROCESSING)
            .first()
        )
        if locked is None or not locked.file:
            return "done"
        now = database_now()
        fresh = now - timedelta(seconds=float(settings.RELEASE_STALE_SECONDS))
        if locked.heartbeat_at is not None and locked.heartbeat_at >= fresh:
            return "busy"
        if locked.deliveries >= settings.RELEASE_MAX_DELIVERIES:
            return "stopped too often"
        locked.deliveries += 1
        locked.heartbeat_at = now
        locked.save(update_fields=["deliveries", "heartbeat_at"])
    return "claimed"


def _stopped_reason(times: int) -> str:
    count = {1: phrase(ONCE), 2: phrase(TWICE)}.get(times) or phrase(TIMES, times=times)
    return phrase(WORKER_STOPPED, count=count)


@contextmanager
def _conversion_heartbeat(dataset_id: int) -> Iterator[None]:
    def beat() -> bool:
        return bool(
            Dataset.objects.filter(pk=dataset_id, status=Dataset.Status.PROCESSING).update(
                heartbeat_at=database_now()
            )
        )

    with heartbeat(name=f"dataset-{dataset_id}-heartbeat", beat=beat):
        yield


def dataset_reap_stale() -> list[tuple[int, str]]:
    """Recover conversions whose worker is gone: a processing dataset whose heartbeat is older
    than ``RELEASE_STALE_SECONDS`` (or, never claimed, whose upload is older than twice the
    conversion's time limit: its message was lost) is sent again, or failed once
    ``RELEASE_MAX_DELIVERIES`` attempts (counted when a delivery claims it). Returns (dataset
    id, outcome) pairs."""
    now = database_now()
    running_cutoff = now - timedelta(seconds=float(settings.RELEASE_STALE_SECONDS))
    queued_cutoff = now - timedelta(seconds=2 * settings.DATASET_CONVERT_TIME_LIMIT)
    stale = list(
        Dataset.objects.filter(status=Dataset.Status.PROCESSING)
        .filter(
            Q(heartbeat_at__lt=running_cutoff)
            | Q(heartbeat_at__isnull=True, queued_at__lt=queued_cutoff)
        )
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    outcomes = []
    for dataset_id in stale:
        with transaction.atomic():
            locked = Dataset.objects.select_for_update().get(pk=dataset_id)
            if locked.status != Dataset.Status.PROCESSING:
                continue
            if locked.heartbeat_at is not None and locked.heartbeat_at >= running_cutoff:
                continue
            stopped = locked.heartbeat_at is not None
            if stopped and locked.deliveries >= settings.RELEASE_MAX_DELIVERIES:
                outcome = "failed"
            else:
                outcome = "redelivered"
                locked.heartbeat_at = None
                # Just queued: the next message is sent only if this one is lost too.
                locked.queued_at = now
                locked.save(update_fields=["heartbeat_at", "queued_at"])
                audit_record(
                    actor=None,
                    action=AuditAction.TASK_REDELIVERED,
                    object_type="dataset",
                    object_id=locked.pk,
                    dataset_id=locked.pk,
                    details={"reason": "worker stopped" if stopped else "message lost"},
                )
                transaction.on_commit(lambda pk=locked.pk: _send_conversion(pk), robust=True)
        if outcome == "failed":
            _conversion_failed(dataset_id, _stopped_reason(settings.RELEASE_MAX_DELIVERIES))
        outcomes.append((dataset_id, outcome))
    return outcomes


def _conversion_failed(dataset_id: int, reason: str) -> None:
    with transaction.atomic():
        locked = Dataset.objects.select_for_update().filter(pk=dataset_id).first()
        if locked is None or locked.status != Dataset.Status.PROCESSING:
            return
        staged = locked.file.name
        locked.status = Dataset.Status.FAILED
        locked.failure_reason = reason
        locked.file = ""
        locked.save(update_fields=["status", "failure_reason", "file"])
        audit_record(
            actor=None,
            action=AuditAction.DATASET_CONVERSION_FAILED,
            object_type="dataset",
            object_id=locked.pk,
            dataset_id=locked.pk,
            details={"reason": reason},
        )
        transaction.on_commit(lambda: (_discard(staged), _discard_attempts(dataset_id)))


def dataset_require_ready(dataset: Dataset) -> None:
    """Refuse work on a table that is still converting, failed to convert, or whose raw data was
    deleted (a 409)."""
    dataset_require_raw_data(
        dataset, action="a schema change, a suggestion from the data or a new release"
    )
    if dataset.status == Dataset.Status.PROCESSING:
        raise Conflict(gettext("The table is still being converted; try again when it is ready."))
    if dataset.status == Dataset.Status.FAILED:
        # Imported here: the translations read the selectors, which read these services.
        from releases.refusals import refusal_text

        raise Conflict(
            gettext("The upload could not be used: %(reason)s")
            % {"reason": refusal_text(dataset.failure_reason)}
        )


def dataset_has_submissions(dataset: Dataset) -> bool:
    # A closed draft (releases/services/raw_data.py) was never submitted.
    # Nor was a rejected one run: its budget came back, and the schema may still be fixed.
    return dataset.releases.exclude(
        status__in=[Release.Status.DRAFT, Release.Status.CLOSED, Release.Status.REJECTED]
    ).exists()


def _category_limit_errors(schema: dict) -> dict[str, list[str]]:
    """Too many categories, refused before the engine builds anything from them: every
    category is a cell of every histogram on the public pages."""
    limit = settings.SCHEMA_MAX_CATEGORIES
    columns = schema.get("columns")
    if not isinstance(columns, dict):
        return {}
    return {
        f"columns.{name}.categories": [f"declare at most {limit} categories"]
        for name, spec in columns.items()
        if isinstance(spec, dict)
        and isinstance(spec.get("categories"), list)
        and len(spec["categories"]) > limit
    }


def _taken_from_data(column: Any, suggested: Any) -> bool:
    """Whether a declared column repeats the "suggest from data" values: a bound equal to the
    observed minimum or maximum, or exactly the observed categories."""
    if not isinstance(suggested, dict):
        return False
    if isinstance(column, NumericColumn) and suggested.get("kind") == "numeric":
        return column.lower == suggested.get("lower") or column.upper == suggested.get("upper")
    if isinstance(column, CategoricalColumn) and suggested.get("kind") == "categorical":
        return set(column.categories) == set(suggested.get("categories") or [])
    return False


def _mark_from_data(typed: Schema, suggestion: Any) -> Schema:
    """Mark the columns whose values came from the data. The service decides, not the client:
    a column that repeats the suggestion is marked even when the request says otherwise."""
    if not isinstance(suggestion, dict):
        return typed
    columns = {
        name: dataclasses.replace(column, from_data=True)
        if _taken_from_data(column, suggestion.get(name)) and not column.from_data
        else column
        for name, column in typed.columns.items()
    }
    return dataclasses.replace(typed, columns=columns)


def _schema_audit_details(schema: Schema) -> dict[str, Any]:
    """What changed, never the declared values. Bounds and categories taken from the data are
    raw values, and the audit trail can never be edited (its hash chain), so none are written
    for any column: names, kinds and which columns came from the data say what compliance
    needs, and the published release metadata carries the values once they are public."""
    details: dict[str, Any] = {
        "columns": {
            name: {"kind": column.kind, "from_data": bool(getattr(column, "from_data", False))}
            for name, column in schema.columns.items()
        },
        "declared_size": schema.declared_size,
    }
    if schema.person_key is not None:
        details["person_key"] = schema.person_key
        details["max_rows_per_person"] = schema.max_rows_per_person
    return details


def dataset_schema_update(*, dataset: Dataset, user, schema: Any) -> Dataset:
    """Replace the declared schema; omitted columns become identifiers.

    Columns whose bounds or categories repeat the last "suggest from data" output are stored
    with ``from_data: true``, so every release that uses them says they are disclosed exactly.
    Refused with :class:`Conflict` once any release of the dataset was submitted, because the
    published guarantees depend on the bounds they were computed with.
    """
    dataset_require_ready(dataset)
    if dataset_has_submissions(dataset):
        raise Conflict(gettext("The schema is fixed once a release of this dataset was submitted."))
    if not isinstance(schema, dict):
        raise ValidationFailed({"columns": ["must be an object of column declarations"]})
    if limit_errors := _category_limit_errors(schema):
        raise ValidationFailed(limit_errors)
    spec = dict(schema)
    if "declared_size" not in spec and dataset.declared_size is not None:
        spec["declared_size"] = dataset.declared_size
    try:
        typed = schema_from_dict(spec, known_columns=dataset.column_names)
    except EngineValidationError as error:
        raise ValidationFailed(error.errors) from None
    with transaction.atomic():
        locked = Dataset.objects.select_for_update().get(pk=dataset.pk)
        dataset_require_raw_data(locked, action="a schema change")
        if dataset_has_submissions(locked):
            raise Conflict(
                gettext("The schema is fixed once a release of this dataset was submitted.")
            )
        typed = _mark_from_data(typed, locked.schema_suggestion)
        locked.schema = typed.to_dict()
        locked.declared_size = typed.declared_size
        locked.save(update_fields=["schema", "declared_size"])
        audit_record(
            actor=user,
            action=AuditAction.SCHEMA_CHANGED,
            object_type="dataset",
            object_id=locked.pk,
            dataset_id=locked.pk,
            details=_schema_audit_details(typed),
        )
    return locked
