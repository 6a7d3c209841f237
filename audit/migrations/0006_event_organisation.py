"""Events belong to an organisation (its slug; empty for events from before organisations, which
belong to the default one). Adding the column rewrites no event; the hash covers it when set."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("audit", "0005_event_repeats")]
    operations = [
        migrations.AddField(
            model_name="auditevent",
            name="organisation",
            field=models.CharField(blank=True, db_index=True, default="", max_length=60),
        ),
    ]
