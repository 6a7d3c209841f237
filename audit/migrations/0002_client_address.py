"""Events record the client's truncated network address for web requests (audit/context.py)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("audit", "0001_initial")]
    operations = [
        migrations.AddField(
            model_name="auditevent",
            name="client",
            field=models.CharField(
                blank=True,
                default="",
                help_text="the client's network, truncated (IPv4 /24, IPv6 /48), for web requests",
                max_length=64,
            ),
        )
    ]
