"""Organisations: every user belongs to one, and through its owner so does every dataset (with
its releases, ledger and budget requests) and every audit event. Nobody sees another
organisation's datasets, drafts, ledgers or events; the public catalog stays public."""

from django.conf import settings
from django.db import models


class Organisation(models.Model):
    slug = models.SlugField(max_length=60, unique=True)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class Membership(models.Model):
    """The one organisation a user belongs to."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="membership"
    )
    organisation = models.ForeignKey(
        Organisation, on_delete=models.PROTECT, related_name="memberships"
    )

    def __str__(self) -> str:
        return f"{self.user} in {self.organisation}"
