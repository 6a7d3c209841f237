from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "audit"
    verbose_name = "Audit trail"

    def ready(self) -> None:
        from django.core import checks
        from django.db.models.signals import post_migrate

        from audit import immutability

        # Every migrate puts the triggers back (a rebuilt SQLite table loses its own), and the
        # database check says when one is missing.
        post_migrate.connect(
            immutability.reinstall_after_migrate,
            sender=self,
            dispatch_uid="audit.immutability.reinstall_after_migrate",
        )
        checks.register(immutability.check_triggers, checks.Tags.database)
        checks.register(immutability.check_key, checks.Tags.security)
