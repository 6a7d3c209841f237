"""Migration 0005 converts datasets stored as CSV before tables were columnar, through the
configured storage: a converted upload keeps its Parquet table and loses its CSV, as new uploads
do; one that cannot be converted is marked failed and keeps its CSV (it was usable before, and
the reason may be passing), so the migration never loses a table."""

import pytest
from django.core.files.base import ContentFile
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from privacy_engine.columnar import read_typed
from releases.models import private_storage

BEFORE = [("releases", "0004_integrity_fields")]
# Migrating needs committed tables (transaction=True); serialized_rollback restores the database
# as the transactional tests after these expect it.
AFTER = [("releases", "0006_conversion_recovery")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.fixture(autouse=True)
def _latest_schema_after():
    """Every later migration applied again after each test: the tests that follow expect the
    current schema (serialized_rollback restores rows, not columns)."""
    yield
    executor = MigrationExecutor(connection)
    migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_legacy_csvs_are_converted_once_and_a_failed_one_keeps_its_csv():
    # given: two datasets stored as CSV before migration 0005, one that no longer parses
    old_apps = migrate(BEFORE)
    User = old_apps.get_model("auth", "User")
    Dataset = old_apps.get_model("releases", "Dataset")
    owner = User.objects.create(username="legacy-curator")
    storage = private_storage()
    good_name = storage.save("datasets/good.csv", ContentFile(b"age,city\n31,Oslo\n,Rome\n"))
    bad_name = storage.save("datasets/bad.csv", ContentFile(b"age,city\n31,Oslo,extra\n"))
    shared = {
        "owner": owner,
        "budget_epsilon": 1,
        "csv_dialect": {"delimiter": ","},
        "columns": ["age", "city"],
        "row_count": 2,
    }
    good = Dataset.objects.create(name="good", file=good_name, **shared)
    bad = Dataset.objects.create(name="bad", file=bad_name, **shared)

    # when
    new_apps = migrate(AFTER)

    # then: the good one reads from its table without its CSV; the bad one failed naming its row
    # and kept its CSV
    Dataset = new_apps.get_model("releases", "Dataset")
    good, bad = Dataset.objects.get(pk=good.pk), Dataset.objects.get(pk=bad.pk)
    assert good.status == "ready"
    assert good.file.name == ""
    assert good.table.name.startswith(f"tables/dataset-{good.pk}-")
    typed = read_typed(storage.path(good.table.name), numbers=["age"], labels=["city"])
    assert typed.row_count == 2
    assert typed.numbers["age"][0] == 31.0
    assert bad.status == "failed"
    assert bad.failure_reason.startswith("Row 2 has 3 fields")
    assert "stored before tables were kept in columns" in bad.failure_reason
    assert (bad.file.name, bad.table.name) == (bad_name, "")
    assert not storage.exists(good_name)
    assert storage.exists(bad_name)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_passing_storage_error_keeps_the_csv(monkeypatch):
    # given a legacy dataset, and a disk that is full while the migration converts it
    from releases.services import tables

    old_apps = migrate(BEFORE)
    owner = old_apps.get_model("auth", "User").objects.create(username="legacy-curator")
    Dataset = old_apps.get_model("releases", "Dataset")
    storage = private_storage()
    name = storage.save("datasets/good.csv", ContentFile(b"age,city\n31,Oslo\n"))
    dataset = Dataset.objects.create(
        name="good", file=name, owner=owner, budget_epsilon=1, columns=["age", "city"], row_count=1
    )

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tables, "table_convert", disk_full)

    # when
    new_apps = migrate(AFTER)

    # then: failed, with its CSV still there to convert later
    dataset = new_apps.get_model("releases", "Dataset").objects.get(pk=dataset.pk)
    assert dataset.status == "failed"
    assert dataset.failure_reason.startswith("The stored upload could not be read.")
    assert dataset.file.name == name
    assert storage.exists(name)
