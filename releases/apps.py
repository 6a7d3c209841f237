from django.apps import AppConfig


class ReleasesConfig(AppConfig):
    name = "releases"
    verbose_name = "Datasets and releases"

    def ready(self) -> None:
        from django.core import checks
        from django.db.backends.signals import connection_created
        from django.db.models.signals import post_migrate, pre_migrate

        from releases import immutability
        from releases.checks import signing_key_check

        # Every migrate puts the immutability triggers back (a rebuilt SQLite table loses its
        # own; on SQLite they step aside while migrations run), and the database check says
        # when one is missing.
        pre_migrate.connect(
            immutability.drop_before_migrate,
            sender=self,
            dispatch_uid="releases.immutability.drop_before_migrate",
        )
        post_migrate.connect(
            immutability.reinstall_after_migrate,
            sender=self,
            dispatch_uid="releases.immutability.reinstall_after_migrate",
        )
        checks.register(immutability.check_triggers, checks.Tags.database)
        connection_created.connect(
            _sqlite_file_private, dispatch_uid="releases.sqlite_file_private"
        )
        checks.register(signing_key_check, checks.Tags.security)
        broker_file_private()


def _sqlite_file_private(sender, connection, **kwargs) -> None:
    """A SQLite database file is readable by the service's user only (it holds the trail, the
    ledger and the schemas; sqlite creates it as the umask allows)."""
    import contextlib
    import os

    if connection.vendor != "sqlite":
        return
    name = str(connection.settings_dict.get("NAME") or "")
    if name and not name.startswith("file:") and name != ":memory:" and os.path.exists(name):
        # Another user's file (shared through a group on purpose) is theirs to set.
        with contextlib.suppress(PermissionError):
            os.chmod(name, 0o600)


SQLITE_BROKER_PREFIX = "sqla+sqlite:///"


def broker_file_private() -> None:
    """The embedded broker's SQLite file (task messages: release and dataset ids) is created
    readable by the service's user only, before kombu creates it as the umask allows."""
    import contextlib
    import os

    from django.conf import settings

    url = str(getattr(settings, "CELERY_BROKER_URL", "") or "")
    if not url.startswith(SQLITE_BROKER_PREFIX):
        return
    path = url.removeprefix(SQLITE_BROKER_PREFIX)
    if not path or path.startswith(":memory:"):
        return
    with contextlib.suppress(FileExistsError, FileNotFoundError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    # Another user's file (shared through a group on purpose) is theirs to set.
    with contextlib.suppress(PermissionError, FileNotFoundError):
        os.chmod(path, 0o600)
