from django.db import migrations


def create_head(apps, schema_editor):
    apps.get_model("releases", "AuditChainHead").objects.get_or_create(pk=1)


class Migration(migrations.Migration):
    dependencies = [("releases", "0001_initial")]
    operations = [migrations.RunPython(create_head, migrations.RunPython.noop)]
