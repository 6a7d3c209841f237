"""Fixtures the web layer's tests share."""

import pytest

from releases.services.datasets import dataset_create, dataset_schema_update
from tests.conftest import CLINIC_SCHEMA, csv_upload


@pytest.fixture
def clinic(curator):
    """The clinic table, its public shape declared, with an ε and a δ budget and a declared size
    of 500 records."""
    created = dataset_create(
        owner=curator,
        name="Clinic",
        upload=csv_upload(),
        budget_epsilon="2",
        budget_delta="0.001",
        declared_size=500,
    )
    return dataset_schema_update(
        dataset=created, user=curator, schema={**CLINIC_SCHEMA, "declared_size": 500}
    )
