"""The audit trail's models move to the ``audit`` app (state only: the tables and their rows stay
where they are, under their names; audit 0001 declares them there)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("releases", "0012_ledger_entry_footprint")]
    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterModelTable("AuditEvent", "releases_auditevent"),
                migrations.AlterModelTable("AuditChainHead", "releases_auditchainhead"),
                migrations.DeleteModel("AuditEvent"),
                migrations.DeleteModel("AuditChainHead"),
            ]
        )
    ]
