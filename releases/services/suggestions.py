"""The "suggest from data" helper. It reads private values, so every use is audited and the page
warns that the suggestion itself leaks (DESIGN.md rule 1)."""

import pandas as pd
from django.db import transaction

from releases.models import Dataset
from releases.services.audit import AuditAction, audit_record
from releases.services.tables import MAX_INFERRED_CATEGORIES, table_load


def dataset_schema_suggest(*, dataset: Dataset, user) -> dict[str, dict]:
    """Bounds from the observed minimum and maximum, categories from the observed values."""
    frame = table_load(dataset.file.path)
    suggestion: dict[str, dict] = {}
    for column in dataset.columns:
        name, kind = column["name"], column["inferred_kind"]
        values = frame[name][frame[name].str.strip() != ""]
        if kind == "numeric" and not values.empty:
            numbers = pd.to_numeric(values, errors="coerce").dropna()
            suggestion[name] = {
                "kind": "numeric",
                "lower": float(numbers.min()),
                "upper": float(numbers.max()),
            }
        elif kind == "categorical":
            categories = sorted(values.str.strip().unique().tolist())[:MAX_INFERRED_CATEGORIES]
            suggestion[name] = {"kind": "categorical", "categories": categories}
        else:
            suggestion[name] = {"kind": "identifier"}
    with transaction.atomic():
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
