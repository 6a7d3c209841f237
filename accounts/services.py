"""Writes for users: creation with a role, and logins (audited: accounts/signals.py)."""

import secrets
from datetime import datetime

from django.contrib.auth import authenticate, get_user_model, logout
from django.contrib.auth.models import AbstractBaseUser, Group
from django.contrib.auth.password_validation import validate_password
from django.contrib.auth.signals import user_logged_in
from django.db import transaction
from knox.models import AuthToken

from accounts.roles import Role
from accounts.tokens import api_token_issue, api_token_revoke, api_tokens_revoke
from audit.chain import AuditAction, audit_record
from organisations.services import (
    membership_set,
    organisation_default,
    organisation_get_or_create,
    organisation_of,
)


def user_create_or_reset(
    *,
    username: str,
    role: Role,
    password: str | None = None,
    organisation: str | None = None,
) -> tuple[AbstractBaseUser, str]:
    """Create the user (or reset its password) with exactly this role, in this organisation
    (created when it does not exist; without one, a new user joins the default organisation and
    an existing one stays in theirs); return it and the password. A user who owns datasets in
    another organisation cannot move (ValueError).

    A generated password is returned once and stored only as a hash.
    """
    if password is not None:
        # The same validators as everywhere else (AUTH_PASSWORD_VALIDATORS): a weak password
        # is refused with their messages (ValidationError) before anything is written.
        validate_password(password, get_user_model()(username=username))
    password = password or secrets.token_urlsafe(12)
    with transaction.atomic():
        user, _ = get_user_model().objects.get_or_create(username=username)
        user.set_password(password)
        user.is_active = True
        user.save()
        user.groups.set([Group.objects.get_or_create(name=role.value)[0]])
        if organisation is not None:
            membership_set(user=user, organisation=organisation_get_or_create(organisation))
        member_of = organisation_of(user) or organisation_default()
        membership_set(user=user, organisation=member_of)
        audit_record(
            actor=None,
            action=AuditAction.USER_CREATED,
            object_type="user",
            object_id=user.pk,
            details={"username": username, "role": role.value, "organisation": member_of.slug},
            organisation=member_of.slug,
        )
    return user, password


def user_login(*, request, username: str, password: str) -> AbstractBaseUser | None:
    """Check credentials; return the user or ``None``. A failure is recorded by the signal
    django.contrib.auth sends (accounts/signals.py), as for the admin's login."""
    # The plain HttpRequest under a DRF request: login throttling (django-axes) marks the
    # request it is given, and its middleware reads that mark on the HttpRequest.
    return authenticate(getattr(request, "_request", request), username=username, password=password)


def auth_token_obtain(*, request, username: str, password: str) -> tuple[str, datetime] | None:
    """Log in for the API and return a new token and its expiry, or ``None`` for bad
    credentials. A token login opens no session, so the login signal is sent here."""
    user = user_login(request=request, username=username, password=password)
    if user is None:
        return None
    with transaction.atomic():
        # The password was checked against the row as it was read; a change since (whose
        # revocation ran before this token existed) must refuse the token. Under the row's
        # lock, a change still under way is waited for.
        current = (
            type(user)
            .objects.select_for_update()
            .filter(pk=user.pk)
            .values("password", "is_active")
            .first()
        )
        if current != {"password": user.password, "is_active": True}:
            return None
        issued = api_token_issue(user)
        # As a session login would: the audit event (accounts/signals.py), the last login
        # time, and login throttling forgetting this name's failures from this client.
        user_logged_in.send(
            sender=type(user), request=getattr(request, "_request", request), user=user
        )
    return issued


def auth_token_logout(*, request, token: AuthToken | None) -> None:
    """An API logout: revoke the request's token, or with ``token=None`` every token of its
    user. A request without a token (a session) logs the session out, as the site's logout does,
    which revokes every token (accounts/signals.py)."""
    user = request.user
    if getattr(request, "auth", None) is None:
        logout(getattr(request, "_request", request))
        return
    with transaction.atomic():
        if token is None:
            api_tokens_revoke(user, reason="logout", actor=user)
        else:
            api_token_revoke(token)
        audit_record(
            actor=user,
            action=AuditAction.LOGOUT,
            object_type="user",
            object_id=user.pk,
            details={"via": "api", "tokens": "all" if token is None else "this"},
        )
