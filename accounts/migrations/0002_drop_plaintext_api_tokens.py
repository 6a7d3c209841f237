"""API tokens moved to django-rest-knox, which stores only their digests: the old table of
plaintext tokens (rest_framework.authtoken, no longer installed) is dropped with every token in
it, so each API client logs in once more."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("accounts", "0001_role_groups")]

    operations = [
        migrations.RunSQL("DROP TABLE IF EXISTS authtoken_token", reverse_sql=migrations.RunSQL.noop)
    ]
