"""Every account that exists joins the default organisation, which therefore holds everything
made before organisations existed (its compliance officers keep seeing it all)."""

from django.conf import settings
from django.db import migrations

DEFAULT_SLUG = "default"


def join_default(apps, schema_editor):
    Organisation = apps.get_model("organisations", "Organisation")
    Membership = apps.get_model("organisations", "Membership")
    User = apps.get_model(*settings.AUTH_USER_MODEL.split("."))
    default, _ = Organisation.objects.get_or_create(
        slug=DEFAULT_SLUG, defaults={"name": "Default organisation"}
    )
    Membership.objects.bulk_create(
        Membership(user_id=pk, organisation=default)
        for pk in User.objects.filter(membership__isnull=True).values_list("pk", flat=True)
    )


class Migration(migrations.Migration):
    dependencies = [("organisations", "0001_initial")]
    operations = [migrations.RunPython(join_default, migrations.RunPython.noop)]
