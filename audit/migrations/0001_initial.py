"""The audit trail's tables, handed over by releases 0013: state only, the tables exist."""

from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True
    dependencies = [("releases", "0013_audit_moves_to_its_app")]
    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="AuditChainHead",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("last_event_id", models.BigIntegerField(null=True)),
                        ("last_hash", models.CharField(default="0" * 64, max_length=64)),
                    ],
                    options={"db_table": "releases_auditchainhead"},
                ),
                migrations.CreateModel(
                    name="AuditEvent",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("at", models.DateTimeField()),
                        ("actor", models.CharField(help_text="username, or 'anonymous' / 'system'", max_length=150)),
                        ("action", models.CharField(db_index=True, max_length=60)),
                        ("object_type", models.CharField(max_length=60)),
                        ("object_id", models.CharField(blank=True, max_length=60)),
                        ("dataset_id", models.BigIntegerField(blank=True, db_index=True, null=True)),
                        ("details", models.JSONField(default=dict)),
                        ("previous_hash", models.CharField(max_length=64)),
                        ("hash", models.CharField(max_length=64, unique=True)),
                    ],
                    options={"db_table": "releases_auditevent", "ordering": ["-id"]},
                ),
            ]
        )
    ]
