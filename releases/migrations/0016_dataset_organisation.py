"""Each dataset belongs to its owner's organisation (organisations 0002 put every existing
account in the default one)."""

import django.db.models.deletion
from django.db import migrations, models


def owners_organisation(apps, schema_editor):
    Dataset = apps.get_model("releases", "Dataset")
    Membership = apps.get_model("organisations", "Membership")
    Organisation = apps.get_model("organisations", "Organisation")
    default, _ = Organisation.objects.get_or_create(
        slug="default", defaults={"name": "Default organisation"}
    )
    of_owner = dict(Membership.objects.values_list("user_id", "organisation_id"))
    for dataset in Dataset.objects.filter(organisation__isnull=True):
        dataset.organisation_id = of_owner.get(dataset.owner_id, default.pk)
        dataset.save(update_fields=["organisation"])


class Migration(migrations.Migration):
    dependencies = [
        ("releases", "0015_release_approvals"),
        ("organisations", "0002_default_organisation"),
    ]
    operations = [
        migrations.AddField(
            model_name="dataset",
            name="organisation",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="datasets",
                to="organisations.organisation",
            ),
        ),
        migrations.RunPython(owners_organisation, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="dataset",
            name="organisation",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="datasets",
                to="organisations.organisation",
            ),
        ),
    ]
