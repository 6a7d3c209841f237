"""Writes for users: creation with a role, and logins (which are audited)."""

import secrets

from django.contrib.auth import authenticate, get_user_model
from django.contrib.auth.models import AbstractBaseUser, Group
from django.db import transaction
from rest_framework.authtoken.models import Token

from accounts.roles import Role
from releases.services.audit import AuditAction, audit_record


def user_create_or_reset(
    *, username: str, role: Role, password: str | None = None
) -> tuple[AbstractBaseUser, str]:
    """Create the user (or reset its password) with exactly this role; return it and the password.

    A generated password is returned once and stored only as a hash.
    """
    password = password or secrets.token_urlsafe(12)
    with transaction.atomic():
        user, _ = get_user_model().objects.get_or_create(username=username)
        user.set_password(password)
        user.is_active = True
        user.save()
        user.groups.set([Group.objects.get_or_create(name=role.value)[0]])
        audit_record(
            actor=None,
            action=AuditAction.USER_CREATED,
            object_type="user",
            object_id=user.pk,
            details={"username": username, "role": role.value},
        )
    return user, password


def user_login(*, request, username: str, password: str) -> AbstractBaseUser | None:
    """Check credentials and record the attempt; return the user or ``None``."""
    user = authenticate(request, username=username, password=password)
    with transaction.atomic():
        if user is None:
            # The typed name is recorded only if it is an account's: a mistyped password typed
            # into the username field must not end up in the audit trail.
            account = get_user_model().objects.filter(username=username).first()
            audit_record(
                actor=None,
                action=AuditAction.LOGIN_FAILED,
                object_type="user",
                object_id=account.pk if account else None,
                details={"username": username if account else "(unknown account)"},
            )
            return None
        audit_record(actor=user, action=AuditAction.LOGIN, object_type="user", object_id=user.pk)
    return user


def auth_token_obtain(*, request, username: str, password: str) -> str | None:
    """Log in for the API and return the user's token key, or ``None`` for bad credentials."""
    user = user_login(request=request, username=username, password=password)
    if user is None:
        return None
    token, _ = Token.objects.get_or_create(user=user)
    return token.key
