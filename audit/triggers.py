"""Triggers that make rows permanent, kept in force on SQLite and PostgreSQL: a named set is
installed by its migration, re-installed by every ``migrate`` (post_migrate: SQLite drops a
table's triggers when a migration rebuilds the table), and a database system check reports any
that is missing. The audit trail (audit/immutability.py) and published versions
(releases/immutability.py) each declare one set.

Refusals are integrity errors (SQLite: RAISE(ABORT); PostgreSQL: SQLSTATE 23000), which Django
raises as ``django.db.IntegrityError``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.core import checks
from django.db import connections, transaction
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.recorder import MigrationRecorder

REFUSE = "USING ERRCODE = 'integrity_constraint_violation'"


def sqlite_trigger(name: str, event: str, table: str, when: str | None, message: str) -> str:
    """A SQLite trigger that aborts ``event`` on ``table`` (for rows matching ``when``)."""
    condition = f"\n        FOR EACH ROW WHEN {when}" if when else ""
    return f"""
        CREATE TRIGGER {name}
        BEFORE {event} ON {table}{condition}
        BEGIN SELECT RAISE(ABORT, '{message}'); END"""


@dataclass(frozen=True)
class TriggerSet:
    """One set of triggers: SQLite statements by name; PostgreSQL functions by name and
    triggers by name as (table, timing and events, level and condition, function).
    ``migration`` is the (app, name) that first installs them; ``check_id`` and ``purpose``
    name them in the system check."""

    migration: tuple[str, str]
    check_id: str
    purpose: str
    sqlite: dict[str, str]
    postgresql_functions: dict[str, str]
    postgresql_specs: dict[str, tuple[str, str, str, str]]
    postgresql: dict[str, str] = field(init=False)

    def __post_init__(self) -> None:
        statements = {
            name: f"""
    CREATE OR REPLACE TRIGGER {name}
    {events} ON {table}
    {level} EXECUTE FUNCTION {function}()"""
            for name, (table, events, level, function) in self.postgresql_specs.items()
        }
        object.__setattr__(self, "postgresql", statements)

    def names(self, vendor: str) -> set[str]:
        """The names of the triggers this database should have."""
        if vendor == "sqlite":
            return set(self.sqlite)
        if vendor == "postgresql":
            return set(self.postgresql)
        raise RuntimeError(f"No triggers are written for {vendor}.")

    def install(self, connection) -> None:
        """Create every trigger, or replace it with its current definition, in one
        transaction."""
        with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
            if connection.vendor == "sqlite":
                # SQLite has no CREATE OR REPLACE TRIGGER: drop and create, so a changed
                # definition replaces the old one (the transaction keeps the table covered).
                for name, statement in self.sqlite.items():
                    cursor.execute(f"DROP TRIGGER IF EXISTS {name}")
                    cursor.execute(statement)
            elif connection.vendor == "postgresql":
                for statement in [
                    *self.postgresql_functions.values(),
                    *self.postgresql.values(),
                ]:
                    cursor.execute(statement)
            else:
                raise RuntimeError(f"No triggers are written for {connection.vendor}.")

    def drop(self, connection, *, functions: bool = True) -> None:
        """Drop every trigger (and on PostgreSQL, unless told otherwise, their functions)."""
        with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
            if connection.vendor == "sqlite":
                for name in self.sqlite:
                    cursor.execute(f"DROP TRIGGER IF EXISTS {name}")
            elif connection.vendor == "postgresql":
                for name, (table, *_) in self.postgresql_specs.items():
                    cursor.execute(f"DROP TRIGGER IF EXISTS {name} ON {table}")
                if functions:
                    for name in self.postgresql_functions:
                        cursor.execute(f"DROP FUNCTION IF EXISTS {name}()")

    def installed(self, connection) -> set[str]:
        """The names of this set's triggers the database has now."""
        with connection.cursor() as cursor:
            if connection.vendor == "sqlite":
                cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
            else:
                cursor.execute(
                    "SELECT t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
                    "WHERE NOT t.tgisinternal AND c.relnamespace = current_schema()::regnamespace"
                )
            present = {name for (name,) in cursor.fetchall()}
        return present & self.names(connection.vendor)

    def due(self, connection) -> bool:
        """Whether the database should have the triggers: a supported one, migrated past the
        set's migration."""
        if connection.vendor not in ("sqlite", "postgresql"):
            return False
        return self.migration in MigrationRecorder(connection).applied_migrations()

    def reinstall_after_migrate(self, sender, using, **kwargs) -> None:
        """post_migrate: put back any trigger a migration dropped and bring every one up to
        date."""
        connection = connections[using]
        if self.due(connection):
            self.install(connection)

    def check(self, app_configs=None, databases=None, **kwargs) -> list[checks.CheckMessage]:
        """A database migrated past the set's migration, with nothing left to migrate, that
        lacks one of its triggers (with migrations pending, the coming migrate installs them)."""
        errors = []
        for alias in databases or []:
            connection = connections[alias]
            if not self.due(connection) or _pending(connection):
                continue
            missing = self.names(connection.vendor) - self.installed(connection)
            if missing:
                errors.append(
                    checks.Error(
                        f"Database '{alias}' lacks the triggers that {self.purpose}: "
                        f"{', '.join(sorted(missing))}.",
                        hint="Run `manage.py migrate` (with --skip-checks if this check stops "
                        "it): every migrate re-creates them.",
                        id=self.check_id,
                    )
                )
        return errors


def _pending(connection) -> bool:
    """Whether the database has migrations to apply (a migrate would install the triggers)."""
    executor = MigrationExecutor(connection)
    return bool(executor.migration_plan(executor.loader.graph.leaf_nodes()))
