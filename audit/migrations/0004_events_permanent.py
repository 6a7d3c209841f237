"""Audit events become permanent: the database refuses to update or delete them (the triggers
are defined in audit/immutability.py, not copied here)."""

from django.db import migrations


def install(apps, schema_editor):
    from audit.immutability import AUDIT_EVENTS

    AUDIT_EVENTS.install(schema_editor.connection)


def drop(apps, schema_editor):
    from audit.immutability import AUDIT_EVENTS

    AUDIT_EVENTS.drop(schema_editor.connection)


class Migration(migrations.Migration):
    dependencies = [("audit", "0003_keyed_chain")]
    operations = [migrations.RunPython(install, drop)]
