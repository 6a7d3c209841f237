from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("audit", "0004_events_permanent")]
    operations = [
        migrations.CreateModel(
            name="EventRepeats",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("event_id", models.BigIntegerField(unique=True)),
                ("count", models.PositiveBigIntegerField(default=0)),
                ("last_at", models.DateTimeField(blank=True, null=True)),
            ],
        ),
    ]
