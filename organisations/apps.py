from django.apps import AppConfig


class OrganisationsConfig(AppConfig):
    name = "organisations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from organisations import signals  # noqa: F401  (a new account joins an organisation)
