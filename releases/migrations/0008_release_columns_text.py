from django.db import migrations, models


def fill_columns_text(apps, schema_editor):
    """Submitted releases get their statistics' column names (as services.releases writes them
    at submission; repeated here so the migration never changes with the code)."""
    Release = apps.get_model("releases", "Release")
    for release in Release.objects.exclude(status="draft").only("pk", "queries").iterator():
        names = []
        for query in release.queries or []:
            if isinstance(query.get("column"), str):
                names.append(query["column"])
            names.extend(n for n in query.get("columns") or [] if isinstance(n, str))
        Release.objects.filter(pk=release.pk).update(columns_text="\n".join(dict.fromkeys(names)))


class Migration(migrations.Migration):
    dependencies = [
        ("releases", "0007_release_file_formats"),
    ]

    operations = [
        migrations.AddField(
            model_name="release",
            name="columns_text",
            field=models.TextField(blank=True),
        ),
        migrations.RunPython(fill_columns_text, migrations.RunPython.noop),
    ]
