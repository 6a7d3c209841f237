"""A new account joins the default organisation unless it is given another (create_user puts it
in the one asked for right after)."""

from django.conf import settings
from django.db.models.signals import post_save
from django.dispatch import receiver

from organisations.models import Membership
from organisations.services import organisation_default


@receiver(post_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="organisations.join_default")
def join_default_organisation(sender, instance, created, raw=False, **kwargs) -> None:
    if created and not raw and not Membership.objects.filter(user=instance).exists():
        Membership.objects.create(user=instance, organisation=organisation_default())
