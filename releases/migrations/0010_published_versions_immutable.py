"""Published versions are immutable in the database itself, not only in the code: triggers refuse
any change of a published release, of its files and noisy answers, of its series' slug, and of
any withdrawal record (releases/immutability.py says exactly what, on SQLite and PostgreSQL).
Publication still works: it inserts the files and updates the answers while the release is
running, and its last write is the one UPDATE that sets the status to published. A withdrawal is
an INSERT beside the version.

The SQL is imported from releases/immutability.py, not copied here: the same definitions are
installed again after every ``migrate`` (post_migrate, since SQLite drops a table's triggers when
a later migration rebuilds the table), and two copies would drift. They name only tables and
columns that exist at this migration; a later change that needs a later schema must keep that
true (or install its triggers in its own migration).
"""

from django.db import migrations

from releases import immutability


def install_triggers(apps, schema_editor) -> None:
    immutability.install_triggers(schema_editor.connection)


def drop_triggers(apps, schema_editor) -> None:
    immutability.drop_triggers(schema_editor.connection)


class Migration(migrations.Migration):
    dependencies = [
        ("releases", "0009_publication_records"),
    ]

    operations = [
        migrations.RunPython(install_triggers, drop_triggers),
    ]
