"""Migration 0005 converts datasets stored as CSV before tables were columnar, through the
configured storage, and keeps no CSV afterwards: a converted upload keeps its Parquet table, a
failed one keeps nothing, as new uploads do."""

import pytest
from django.core.files.base import ContentFile
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from privacy_engine.columnar import read_typed
from releases.models import private_storage

BEFORE = [("releases", "0004_integrity_fields")]
AFTER = [("releases", "0006_conversion_recovery")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_legacy_csvs_are_converted_once_and_no_csv_is_kept():
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

    # then: the good one reads from its table, the bad one failed naming its row; no CSV left
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
    assert (bad.file.name, bad.table.name) == ("", "")
    assert not storage.exists(good_name)
    assert not storage.exists(bad_name)
