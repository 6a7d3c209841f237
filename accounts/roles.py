"""Roles are Django groups; the public needs no account."""

from django.db import models


class Role(models.TextChoices):
    CURATOR = "curator", "Curator"
    COMPLIANCE = "compliance", "Compliance officer"


def user_has_role(user, role: Role) -> bool:
    return bool(
        user is not None
        and user.is_authenticated
        and user.is_active
        and user.groups.filter(name=role.value).exists()
    )


def user_roles(user) -> list[str]:
    if user is None or not user.is_authenticated:
        return []
    return sorted(user.groups.filter(name__in=Role.values).values_list("name", flat=True))
