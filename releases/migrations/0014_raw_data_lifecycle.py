"""The raw data lifecycle (releases/services/raw_data.py): when a dataset's upload and table were
deleted and why, and the ``closed`` status of drafts that can no longer run because of it."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("releases", "0013_audit_moves_to_its_app")]

    operations = [
        migrations.AddField(
            model_name="dataset",
            name="raw_deleted_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="dataset",
            name="raw_deleted_reason",
            field=models.TextField(blank=True),
        ),
        migrations.AlterField(
            model_name="release",
            name="status",
            field=models.CharField(
                choices=[
                    ("draft", "Draft"),
                    ("queued", "Queued"),
                    ("running", "Running"),
                    ("published", "Published"),
                    ("failed", "Failed"),
                    ("closed", "Closed"),
                ],
                default="draft",
                max_length=20,
            ),
        ),
    ]
