"""API tokens (django-rest-knox): the database holds only each token's SHA-512 digest, every
token expires (API_TOKEN_TTL_HOURS), and a user's tokens are revoked when their password, role or
account flags change and when they log out (accounts/signals.py)."""

import re
from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from knox.auth import TokenAuthentication
from knox.models import AuthToken
from knox.settings import knox_settings
from rest_framework import exceptions

from audit.chain import AuditAction, audit_record
from organisations.services import organisation_slug_of

# What knox issues: AUTH_TOKEN_CHARACTER_LENGTH lowercase hexadecimal characters, no prefix.
_TOKEN_SHAPE = re.compile(rb"[0-9a-f]{%d}" % knox_settings.AUTH_TOKEN_CHARACTER_LENGTH)


class ApiTokenAuthentication(TokenAuthentication):
    """knox's authentication, refusing any credential that is not a token's shape before
    looking it up: knox decodes whatever bytes the header holds as UTF-8, which for other bytes
    would be a server error instead of a 401."""

    def authenticate_credentials(self, token: bytes):
        if not _TOKEN_SHAPE.fullmatch(token):
            raise exceptions.AuthenticationFailed("Invalid token.")
        return super().authenticate_credentials(token)


def api_token_issue(user: AbstractBaseUser) -> tuple[str, datetime]:
    """A new token for ``user`` and when it expires. The token itself is returned once and
    never stored. A user keeps at most TOKEN_LIMIT_PER_USER live tokens: the oldest go."""
    with transaction.atomic():
        instance, token = AuthToken.objects.create(user=user)
        kept = AuthToken.objects.filter(user=user).order_by("-created", "-pk")
        stale = kept.values_list("pk", flat=True)[knox_settings.TOKEN_LIMIT_PER_USER :]
        AuthToken.objects.filter(pk__in=list(stale)).delete()
    return token, instance.expiry


def api_token_revoke(token: AuthToken) -> None:
    """Revoke the one token a request was authenticated with (an API logout)."""
    AuthToken.objects.filter(pk=token.pk).delete()


def api_tokens_revoke(user: AbstractBaseUser, *, reason: str, actor=None) -> int:
    """Revoke every token of ``user``; an audit event says why when there were any."""
    revoked, _ = AuthToken.objects.filter(user=user).delete()
    if revoked:
        audit_record(
            actor=actor,
            action=AuditAction.TOKENS_REVOKED,
            object_type="user",
            object_id=user.pk,
            details={"reason": reason, "tokens": revoked},
            organisation=organisation_slug_of(user),
        )
    return revoked
