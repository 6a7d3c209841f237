"""Published versions are immutable in the database itself: the one place their triggers are
written, for SQLite and PostgreSQL. Migration 0010 installs them, every ``migrate`` installs them
again (post_migrate, releases/apps.py: SQLite drops a table's triggers when a migration rebuilds
the table, and on SQLite they step aside while migrations run, see drop_before_migrate) and the
system check releases.E001 reports any that is missing.

What they refuse, each with an integrity error (SQLite: RAISE(ABORT); PostgreSQL: SQLSTATE 23000,
both ``django.db.IntegrityError``):

- any UPDATE or DELETE of a published release, and any INSERT of a release already published
  (a version is published only by the UPDATE that ends its run);
- any INSERT, UPDATE or DELETE of a noisy answer or a file of a published release (an UPDATE may
  not move a row into one either). Publication still works: it inserts the files while the
  release is running, and its last write is the UPDATE that sets the status to published;
- a withdrawal of a release that is not published, and any UPDATE or DELETE of a withdrawal;
- an UPDATE of a series' slug, dataset or owner, or its DELETE, once it has a published version:
  the slug is in every version's permanent URL and signed metadata. Its title may change: no
  public page, API or file reads it (each version shows its own frozen Release.title; only the
  curator's confirm page names the series by it);
- PostgreSQL only: a TRUNCATE of the release, answer, file or withdrawal table while any
  published release exists (it fires no row trigger).

SQLite: ``INSERT OR REPLACE`` deletes the row it replaces without firing DELETE triggers unless
``PRAGMA recursive_triggers`` is on: config/settings.py turns it on for every connection.
"""

from __future__ import annotations

from django.db import connections

from audit.triggers import REFUSE, TriggerSet, sqlite_trigger

MESSAGE = "a published version is immutable"
FINAL = "a withdrawal is final"
UNPUBLISHED = "only a published version can be withdrawn"
# The migration that first installed the triggers: before it is applied, there is nothing to
# install them on (or the tables are older).
MIGRATION = ("releases", "0010_published_versions_immutable")


def _published(release_id: str) -> str:
    return (
        f"EXISTS (SELECT 1 FROM releases_release WHERE id = {release_id} AND status = 'published')"
    )


_SERIES_KEY_CHANGED = (
    "(NEW.id IS NOT OLD.id OR NEW.slug IS NOT OLD.slug"
    " OR NEW.dataset_id IS NOT OLD.dataset_id OR NEW.owner_id IS NOT OLD.owner_id)"
)
_SERIES_PUBLISHED = (
    "EXISTS (SELECT 1 FROM releases_release WHERE series_id = OLD.id AND status = 'published')"
)

SQLITE_TRIGGERS: dict[str, str] = {
    name: sqlite_trigger(name, *spec)
    for name, spec in {
        "releases_release_published_no_insert": (
            "INSERT",
            "releases_release",
            "NEW.status = 'published'",
            f"{MESSAGE}: release",
        ),
        "releases_release_published_no_update": (
            "UPDATE",
            "releases_release",
            "OLD.status = 'published'",
            f"{MESSAGE}: release",
        ),
        "releases_release_published_no_delete": (
            "DELETE",
            "releases_release",
            "OLD.status = 'published'",
            f"{MESSAGE}: release",
        ),
        "releases_releasefile_published_no_insert": (
            "INSERT",
            "releases_releasefile",
            _published("NEW.release_id"),
            f"{MESSAGE}: file",
        ),
        "releases_releasefile_published_no_update": (
            "UPDATE",
            "releases_releasefile",
            f"{_published('OLD.release_id')} OR {_published('NEW.release_id')}",
            f"{MESSAGE}: file",
        ),
        "releases_releasefile_published_no_delete": (
            "DELETE",
            "releases_releasefile",
            _published("OLD.release_id"),
            f"{MESSAGE}: file",
        ),
        "releases_noisyanswer_published_no_insert": (
            "INSERT",
            "releases_noisyanswer",
            _published("NEW.release_id"),
            f"{MESSAGE}: noisy answer",
        ),
        "releases_noisyanswer_published_no_update": (
            "UPDATE",
            "releases_noisyanswer",
            f"{_published('OLD.release_id')} OR {_published('NEW.release_id')}",
            f"{MESSAGE}: noisy answer",
        ),
        "releases_noisyanswer_published_no_delete": (
            "DELETE",
            "releases_noisyanswer",
            _published("OLD.release_id"),
            f"{MESSAGE}: noisy answer",
        ),
        "releases_withdrawal_unpublished_no_insert": (
            "INSERT",
            "releases_withdrawal",
            f"NOT {_published('NEW.release_id')}",
            f"{UNPUBLISHED}: withdrawal",
        ),
        "releases_withdrawal_no_update": (
            "UPDATE",
            "releases_withdrawal",
            None,
            f"{FINAL}: withdrawal",
        ),
        "releases_withdrawal_no_delete": (
            "DELETE",
            "releases_withdrawal",
            None,
            f"{FINAL}: withdrawal",
        ),
        "releases_releaseseries_published_no_update": (
            "UPDATE",
            "releases_releaseseries",
            f"{_SERIES_KEY_CHANGED} AND {_SERIES_PUBLISHED}",
            f"{MESSAGE}: series",
        ),
        "releases_releaseseries_published_no_delete": (
            "DELETE",
            "releases_releaseseries",
            _SERIES_PUBLISHED,
            f"{MESSAGE}: series",
        ),
    }.items()
}

_REFUSE = REFUSE

POSTGRESQL_FUNCTIONS: dict[str, str] = {
    "releases_refuse_published_release_change": f"""
    CREATE OR REPLACE FUNCTION releases_refuse_published_release_change() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'INSERT' THEN
            RAISE EXCEPTION '{MESSAGE}: release inserted as published' {_REFUSE};
        END IF;
        RAISE EXCEPTION '{MESSAGE}: release % (%)', OLD.id, TG_OP {_REFUSE};
    END $$""",
    # An UPDATE may not move a row into a published release either (NEW.release_id).
    "releases_refuse_published_child_change": f"""
    CREATE OR REPLACE FUNCTION releases_refuse_published_child_change() RETURNS trigger
    LANGUAGE plpgsql AS $$
    DECLARE
        touched bigint[];
    BEGIN
        IF TG_OP = 'INSERT' THEN
            touched := ARRAY[NEW.release_id];
        ELSIF TG_OP = 'UPDATE' THEN
            touched := ARRAY[OLD.release_id, NEW.release_id];
        ELSE
            touched := ARRAY[OLD.release_id];
        END IF;
        IF EXISTS (
            SELECT 1 FROM releases_release WHERE status = 'published' AND id = ANY (touched)
        ) THEN
            RAISE EXCEPTION '{MESSAGE}: % of release % (%)', TG_TABLE_NAME, touched, TG_OP
                {_REFUSE};
        END IF;
        IF TG_OP = 'DELETE' THEN
            RETURN OLD;
        END IF;
        RETURN NEW;
    END $$""",
    "releases_refuse_withdrawal_change": f"""
    CREATE OR REPLACE FUNCTION releases_refuse_withdrawal_change() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'INSERT' THEN
            IF EXISTS (
                SELECT 1 FROM releases_release WHERE id = NEW.release_id AND status = 'published'
            ) THEN
                RETURN NEW;
            END IF;
            RAISE EXCEPTION '{UNPUBLISHED}: release %', NEW.release_id {_REFUSE};
        END IF;
        RAISE EXCEPTION '{FINAL}: withdrawal % (%)', OLD.id, TG_OP {_REFUSE};
    END $$""",
    "releases_refuse_published_series_change": f"""
    CREATE OR REPLACE FUNCTION releases_refuse_published_series_change() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        IF (
            TG_OP = 'DELETE'
            OR (NEW.id, NEW.slug, NEW.dataset_id, NEW.owner_id)
                IS DISTINCT FROM (OLD.id, OLD.slug, OLD.dataset_id, OLD.owner_id)
        ) AND EXISTS (
            SELECT 1 FROM releases_release WHERE series_id = OLD.id AND status = 'published'
        ) THEN
            RAISE EXCEPTION '{MESSAGE}: series % (%)', OLD.slug, TG_OP {_REFUSE};
        END IF;
        IF TG_OP = 'DELETE' THEN
            RETURN OLD;
        END IF;
        RETURN NEW;
    END $$""",
    "releases_refuse_published_truncate": f"""
    CREATE OR REPLACE FUNCTION releases_refuse_published_truncate() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        IF EXISTS (SELECT 1 FROM releases_release WHERE status = 'published') THEN
            RAISE EXCEPTION '{MESSAGE}: TRUNCATE of %', TG_TABLE_NAME {_REFUSE};
        END IF;
        RETURN NULL;
    END $$""",
}

# name: (table, timing and events, level and condition, function)
_POSTGRESQL_SPECS: dict[str, tuple[str, str, str, str]] = {
    "releases_release_published_immutable": (
        "releases_release",
        "BEFORE UPDATE OR DELETE",
        "FOR EACH ROW WHEN (OLD.status = 'published')",
        "releases_refuse_published_release_change",
    ),
    "releases_release_published_no_insert": (
        "releases_release",
        "BEFORE INSERT",
        "FOR EACH ROW WHEN (NEW.status = 'published')",
        "releases_refuse_published_release_change",
    ),
    "releases_releasefile_published_immutable": (
        "releases_releasefile",
        "BEFORE INSERT OR UPDATE OR DELETE",
        "FOR EACH ROW",
        "releases_refuse_published_child_change",
    ),
    "releases_noisyanswer_published_immutable": (
        "releases_noisyanswer",
        "BEFORE INSERT OR UPDATE OR DELETE",
        "FOR EACH ROW",
        "releases_refuse_published_child_change",
    ),
    "releases_withdrawal_immutable": (
        "releases_withdrawal",
        "BEFORE INSERT OR UPDATE OR DELETE",
        "FOR EACH ROW",
        "releases_refuse_withdrawal_change",
    ),
    "releases_releaseseries_published_immutable": (
        "releases_releaseseries",
        "BEFORE UPDATE OR DELETE",
        "FOR EACH ROW",
        "releases_refuse_published_series_change",
    ),
    **{
        f"{table}_published_no_truncate": (
            table,
            "BEFORE TRUNCATE",
            "FOR EACH STATEMENT",
            "releases_refuse_published_truncate",
        )
        for table in (
            "releases_release",
            "releases_noisyanswer",
            "releases_releasefile",
            "releases_withdrawal",
        )
    },
}

PUBLISHED_VERSIONS = TriggerSet(
    migration=MIGRATION,
    check_id="releases.E001",
    purpose="keep published versions immutable",
    sqlite=SQLITE_TRIGGERS,
    postgresql_functions=POSTGRESQL_FUNCTIONS,
    postgresql_specs=_POSTGRESQL_SPECS,
)
POSTGRESQL_TRIGGERS = PUBLISHED_VERSIONS.postgresql
trigger_names = PUBLISHED_VERSIONS.names
install_triggers = PUBLISHED_VERSIONS.install
drop_triggers = PUBLISHED_VERSIONS.drop
installed_triggers = PUBLISHED_VERSIONS.installed


def check_triggers(app_configs=None, databases=None, **kwargs):
    """releases.E001 (a function: the check registry tags what it registers)."""
    return PUBLISHED_VERSIONS.check(app_configs, databases, **kwargs)


def reinstall_after_migrate(sender, using, **kwargs) -> None:
    PUBLISHED_VERSIONS.reinstall_after_migrate(sender, using, **kwargs)


def drop_before_migrate(sender, using, plan=None, **kwargs) -> None:
    """pre_migrate, SQLite only, when there is something to migrate: SQLite rebuilds a table to
    alter it (create a copy, drop the table, rename the copy), and that rename fails while
    another table's trigger names the dropped one ("error in trigger …: no such table"). So the
    triggers step aside for the migration and post_migrate puts them back; PostgreSQL alters
    tables in place and keeps them in force throughout."""
    connection = connections[using]
    if plan and connection.vendor == "sqlite":
        drop_triggers(connection)
