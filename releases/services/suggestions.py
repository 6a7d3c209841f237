"""The "suggest from data" helper. It reads private values, so every use is audited and the page
warns that the suggestion itself leaks (DESIGN.md rule 1)."""

import math

import pandas as pd
from django.db import transaction

from releases.models import Dataset
from releases.services.audit import AuditAction, audit_record
from releases.services.tables import MAX_INFERRED_CATEGORIES, table_load


def dataset_schema_suggest(*, dataset: Dataset, user) -> dict[str, dict]:
    """Bounds from the observed minimum and maximum, categories from the observed values.

    The suggestion is kept on the dataset (the curator's side only): a schema later saved with
    these values unchanged is marked ``from_data`` (see ``dataset_schema_update``).
    """
    frame = table_load(dataset.file.path, dialect=dataset.csv_dialect)
    suggestion: dict[str, dict] = {}
    for column in dataset.columns:
        name, kind = column["name"], column["inferred_kind"]
        values = frame[name][frame[name].str.strip() != ""]
        if kind == "numeric" and not values.empty:
            numbers = [
                number
                for number in pd.to_numeric(values, errors="coerce").dropna().tolist()
                if math.isfinite(number)
            ]
            # "1e999" reads as infinity: no finite bound to suggest, and JSON has no infinity.
            suggestion[name] = (
                {"kind": "numeric", "lower": float(min(numbers)), "upper": float(max(numbers))}
                if numbers
                else {"kind": "numeric"}
            )
        elif kind == "categorical":
            categories = sorted(values.str.strip().unique().tolist())[:MAX_INFERRED_CATEGORIES]
            suggestion[name] = {"kind": "categorical", "categories": categories}
        else:
            suggestion[name] = {"kind": "identifier"}
    with transaction.atomic():
        Dataset.objects.filter(pk=dataset.pk).update(schema_suggestion=suggestion)
        dataset.schema_suggestion = suggestion
        audit_record(
            actor=user,
            action=AuditAction.SCHEMA_SUGGESTED,
            object_type="dataset",
            object_id=dataset.pk,
            dataset_id=dataset.pk,
            # Which columns were suggested, never the suggested values: they are data.
            details={"columns": [c["name"] for c in dataset.columns]},
        )
    return suggestion
