from django.apps import AppConfig


class ReleasesConfig(AppConfig):
    name = "releases"
    verbose_name = "Datasets and releases"

    def ready(self) -> None:
        from django.core import checks
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
        checks.register(signing_key_check, checks.Tags.security)
