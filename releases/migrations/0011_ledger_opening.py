"""The budget journal gets an opening row per dataset: its total when it was created, so a
ledger's running totals come from its rows alone (no longer derived from the current total less
the approved top-ups, which a read racing an approval got wrong). Existing datasets get one, at
their creation, by their owner, of their total less their approved top-ups. Partial unique
constraints then hold a dataset to one opening and a release to one reservation and one spend or
refund.

The backfill is written out here, not imported, so this migration never changes with the code.
"""

from django.db import migrations, models
from django.db.models import Sum

NOTE = "journalled from the dataset's total when the opening row was introduced"


def opening_movements_backfill(apps, schema_editor):
    """One opening row per dataset that has none: its total less its approved top-ups."""
    datasets = apps.get_model("releases", "Dataset")
    movements = apps.get_model("releases", "BudgetMovement")
    opened = set(movements.objects.filter(kind="opening").values_list("dataset_id", flat=True))
    rows = []
    for dataset in datasets.objects.select_related("owner").order_by("id"):
        if dataset.pk in opened:
            continue
        top_ups = movements.objects.filter(dataset_id=dataset.pk, kind="top_up").aggregate(
            epsilon=Sum("epsilon"), delta=Sum("delta")
        )
        rows.append(
            movements(
                dataset_id=dataset.pk,
                kind="opening",
                actor=dataset.owner.username,
                at=dataset.created_at,
                epsilon=dataset.budget_epsilon - (top_ups["epsilon"] or 0),
                delta=dataset.budget_delta - (top_ups["delta"] or 0),
                composition={"rule": "opening", "note": NOTE},
            )
        )
    movements.objects.bulk_create(rows)


def opening_movements_remove(apps, schema_editor):
    """Going back: the earlier schema has no opening rows."""
    apps.get_model("releases", "BudgetMovement").objects.filter(kind="opening").delete()


class Migration(migrations.Migration):
    dependencies = [
        ("releases", "0010_published_versions_immutable"),
    ]

    operations = [
        migrations.AlterField(
            model_name="budgetmovement",
            name="kind",
            field=models.CharField(
                choices=[
                    ("opening", "Opening budget"),
                    ("reservation", "Reservation"),
                    ("spend", "Spend"),
                    ("refund", "Refund"),
                    ("top_up", "Top-up"),
                ],
                max_length=20,
            ),
        ),
        migrations.AddConstraint(
            model_name="budgetmovement",
            constraint=models.UniqueConstraint(
                condition=models.Q(("kind", "opening")),
                fields=("dataset",),
                name="budgetmovement_one_opening_per_dataset",
            ),
        ),
        migrations.AddConstraint(
            model_name="budgetmovement",
            constraint=models.UniqueConstraint(
                condition=models.Q(("kind", "reservation")),
                fields=("release",),
                name="budgetmovement_one_reservation_per_release",
            ),
        ),
        migrations.AddConstraint(
            model_name="budgetmovement",
            constraint=models.UniqueConstraint(
                condition=models.Q(("kind__in", ["spend", "refund"])),
                fields=("release",),
                name="budgetmovement_one_settlement_per_release",
            ),
        ),
        # The backfill last: PostgreSQL refuses to alter a table with rows just inserted in the
        # same transaction (pending deferred foreign-key checks).
        migrations.RunPython(opening_movements_backfill, opening_movements_remove),
    ]
