"""Uploading tables and declaring their public shape."""

from decimal import Decimal, InvalidOperation
from typing import Any

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import transaction

from privacy_engine import EngineValidationError, schema_from_dict
from privacy_engine.accounting import LEDGER_PLACES
from releases.models import Dataset, Release
from releases.services.audit import AuditAction, audit_record
from releases.services.errors import Conflict, ValidationFailed
from releases.services.tables import TableError, table_parse


def _budget(value: Any, *, field: str, default: str, allow_zero: bool) -> Decimal:
    if value in (None, ""):
        value = default
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        raise ValidationFailed({field: ["must be a number"]}) from None
    if not amount.is_finite() or amount < 0 or (amount == 0 and not allow_zero):
        raise ValidationFailed({field: ["must be a number greater than 0"]})
    if amount >= Decimal("1e12"):
        raise ValidationFailed({field: ["is too large"]})
    if amount != amount.quantize(LEDGER_PLACES):
        raise ValidationFailed({field: ["use at most 12 decimal places"]})
    return amount


def dataset_create(
    *,
    owner,
    name: str,
    upload,
    budget_epsilon: Any = None,
    budget_delta: Any = None,
    declared_size: Any = None,
) -> Dataset:
    """Validate an upload completely, then store the file and the row in one transaction.

    Raises :class:`ValidationFailed` with field errors; nothing is created on failure.
    """
    errors: dict[str, list[str]] = {}
    name = (name or "").strip()
    if not name:
        errors["name"] = ["Give the dataset a name."]
    elif len(name) > 200:
        errors["name"] = ["Use at most 200 characters."]
    if upload is None:
        errors["file"] = ["Choose a CSV file to upload."]
    elif upload.size > settings.DATASET_MAX_UPLOAD_BYTES:
        limit_mb = settings.DATASET_MAX_UPLOAD_BYTES / (1024 * 1024)
        errors["file"] = [f"The file is larger than the limit of {limit_mb:g} MB."]
    size: int | None = None
    if declared_size not in (None, ""):
        try:
            size = int(declared_size)
            if size < 1:
                raise ValueError
        except (TypeError, ValueError):
            errors["declared_size"] = ["must be a positive whole number"]
    try:
        epsilon = _budget(
            budget_epsilon,
            field="budget_epsilon",
            default=settings.DEFAULT_BUDGET_EPSILON,
            allow_zero=False,
        )
    except ValidationFailed as error:
        errors.update(error.errors)
    try:
        delta = _budget(
            budget_delta,
            field="budget_delta",
            default=settings.DEFAULT_BUDGET_DELTA,
            allow_zero=True,
        )
        if delta >= 1:
            errors["budget_delta"] = ["must be below 1"]
    except ValidationFailed as error:
        errors.update(error.errors)
    parsed = None
    raw = b""
    if "file" not in errors and upload is not None:
        raw = upload.read()
        try:
            parsed = table_parse(raw)
        except TableError as error:
            errors["file"] = [str(error)]
    if errors:
        raise ValidationFailed(errors)
    assert parsed is not None
    with transaction.atomic():
        dataset = Dataset(
            owner=owner,
            name=name,
            row_count=len(parsed.frame),
            columns=parsed.columns,
            schema={},
            declared_size=size,
            budget_epsilon=epsilon,
            budget_delta=delta,
        )
        dataset.file.save("upload.csv", ContentFile(raw), save=False)
        try:
            dataset.save()
            audit_record(
                actor=owner,
                action=AuditAction.DATASET_UPLOADED,
                object_type="dataset",
                object_id=dataset.pk,
                dataset_id=dataset.pk,
                details={
                    "name": name,
                    "columns": [c["name"] for c in parsed.columns],
                    "budget_epsilon": str(epsilon),
                    "budget_delta": str(delta),
                },
            )
        except Exception:
            dataset.file.delete(save=False)
            raise
    return dataset


def dataset_has_submissions(dataset: Dataset) -> bool:
    return dataset.releases.exclude(status=Release.Status.DRAFT).exists()


def dataset_schema_update(*, dataset: Dataset, user, schema: Any) -> Dataset:
    """Replace the declared schema; omitted columns become identifiers.

    Refused with :class:`Conflict` once any release of the dataset was submitted, because the
    published guarantees depend on the bounds they were computed with.
    """
    if dataset_has_submissions(dataset):
        raise Conflict("The schema is fixed once a release of this dataset was submitted.")
    if not isinstance(schema, dict):
        raise ValidationFailed({"columns": ["must be an object of column declarations"]})
    spec = dict(schema)
    if "declared_size" not in spec and dataset.declared_size is not None:
        spec["declared_size"] = dataset.declared_size
    try:
        typed = schema_from_dict(spec, known_columns=dataset.column_names)
    except EngineValidationError as error:
        raise ValidationFailed(error.errors) from None
    with transaction.atomic():
        locked = Dataset.objects.select_for_update().get(pk=dataset.pk)
        if dataset_has_submissions(locked):
            raise Conflict("The schema is fixed once a release of this dataset was submitted.")
        locked.schema = typed.to_dict()
        locked.declared_size = typed.declared_size
        locked.save(update_fields=["schema", "declared_size"])
        audit_record(
            actor=user,
            action=AuditAction.SCHEMA_CHANGED,
            object_type="dataset",
            object_id=locked.pk,
            dataset_id=locked.pk,
            details={"schema": locked.schema},
        )
    return locked
