"""Which organisation a user belongs to, and the default one that accounts without another join
(the accounts that existed before organisations did, and those the admin creates)."""

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from organisations.models import Membership, Organisation

DEFAULT_ORGANISATION_SLUG = "default"
DEFAULT_ORGANISATION_NAME = "Default organisation"


def organisation_get_or_create(slug: str, *, name: str | None = None) -> Organisation:
    organisation, _ = Organisation.objects.get_or_create(slug=slug, defaults={"name": name or slug})
    return organisation


def organisation_default() -> Organisation:
    return organisation_get_or_create(DEFAULT_ORGANISATION_SLUG, name=DEFAULT_ORGANISATION_NAME)


def organisation_of(user) -> Organisation | None:
    """The user's organisation, or None for an anonymous visitor (or an account without one)."""
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    membership = Membership.objects.select_related("organisation").filter(user=user).first()
    return membership.organisation if membership is not None else None


def organisation_slug_of(user) -> str:
    organisation = organisation_of(user)
    return organisation.slug if organisation is not None else ""


def membership_set(*, user: AbstractBaseUser, organisation: Organisation) -> Membership:
    """Put a user in an organisation; refused (ValueError) when they belong to another one and
    already own data there: their datasets cannot follow them."""
    with transaction.atomic():
        membership = Membership.objects.select_for_update().filter(user=user).first()
        if membership is None:
            return Membership.objects.create(user=user, organisation=organisation)
        if membership.organisation_id != organisation.pk:
            if getattr(user, "datasets", None) is not None and user.datasets.exists():
                raise ValueError(
                    f"{user.get_username()} belongs to organisation "
                    f"{membership.organisation.slug} and owns datasets there."
                )
            membership.organisation = organisation
            membership.save(update_fields=["organisation"])
        return membership
