"""The "suggest from data" helper. It reads private values, so every use is audited and the page
warns that the suggestion itself leaks (DESIGN.md rule 1)."""

import numpy as np
from django.db import transaction

from audit.chain import AuditAction, audit_record
from privacy_engine.columnar import read_typed
from releases.models import Dataset
from releases.services.datasets import dataset_require_ready
from releases.services.errors import Conflict
from releases.services.raw_data import dataset_require_raw_data
from releases.services.storage import local_copy
from releases.services.tables import MAX_INFERRED_CATEGORIES


def dataset_schema_suggest(*, dataset: Dataset, user) -> dict[str, dict]:
    """Bounds from the observed minimum and maximum, categories from the observed values.

    The suggestion is kept on the dataset (the curator's side only): a schema later saved with
    these values unchanged is marked ``from_data`` (see ``dataset_schema_update``).
    """
    dataset_require_ready(dataset)
    kinds = {column["name"]: column["inferred_kind"] for column in dataset.columns}
    try:
        with local_copy(dataset.table.storage, dataset.table.name) as path:
            typed = read_typed(
                path,
                numbers=[name for name, kind in kinds.items() if kind == "numeric"],
                labels=[name for name, kind in kinds.items() if kind == "categorical"],
            )
    except FileNotFoundError:
        # Its raw data was deleted meanwhile.
        raise Conflict("The table of this dataset is no longer stored.") from None
    suggestion: dict[str, dict] = {}
    for name, kind in kinds.items():
        if kind == "numeric":
            numbers = typed.numbers[name]
            # "1e999" reads as infinity: no finite bound to suggest, and JSON has no infinity.
            finite = numbers[np.isfinite(numbers)]
            suggestion[name] = (
                {"kind": "numeric", "lower": float(finite.min()), "upper": float(finite.max())}
                if finite.size
                else {"kind": "numeric"}
            )
        elif kind == "categorical":
            values = typed.labels[name].dictionary.to_pylist()
            categories = sorted(value for value in values if value)[:MAX_INFERRED_CATEGORIES]
            suggestion[name] = {"kind": "categorical", "categories": categories}
        else:
            suggestion[name] = {"kind": "identifier"}
    with transaction.atomic():
        # Under the row's lock: a deletion of the raw data since the read wins, and the values
        # seen in the rows are not kept.
        locked = Dataset.objects.select_for_update().get(pk=dataset.pk)
        dataset_require_raw_data(locked, action="a suggestion from the data")
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
