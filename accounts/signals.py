"""Logins, failed logins and logouts recorded in the audit trail wherever they happen: the login
page, the API's token endpoint and Django's admin all authenticate through django.contrib.auth,
which sends these signals."""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
from django.dispatch import receiver

from audit.chain import AuditAction, audit_record, audit_record_repeated, audit_window_close
from audit.context import current_client

# Where a failed login came from, by the path it was posted to.
ADMIN_PREFIX = "/admin/"


def _via(request) -> str:
    path = getattr(request, "path", "") or ""
    if path.startswith(ADMIN_PREFIX):
        return "admin"
    return "api" if path.startswith("/api/") else "page"


@receiver(user_login_failed, dispatch_uid="accounts.audit_login_failed")
def record_login_failed(sender, credentials, request=None, **kwargs) -> None:
    """A failed login. The typed name is recorded only if it is an account's: a password typed
    into the username field by mistake must not end up in the audit trail."""
    username = credentials.get("username")
    account = (
        get_user_model().objects.filter(username=username).first()
        if isinstance(username, str)
        else None
    )
    recorded = username if account else "(unknown account)"
    # Repeated failures for one name from one network (a brute force, which login throttling
    # then refuses, but which still fails) are counted on one event per window.
    audit_record_repeated(
        key=_failures_key(recorded, request),
        window_seconds=settings.AUDIT_REPEAT_WINDOW,
        actor=None,
        action=AuditAction.LOGIN_FAILED,
        object_type="user",
        object_id=account.pk if account else None,
        details={"username": recorded, "via": _via(request)},
    )


def _record_session(action: AuditAction, request, user) -> None:
    audit_record(
        actor=user,
        action=action,
        object_type="user",
        object_id=user.pk,
        details={"via": _via(request)},
    )


def _failures_key(name: str, request) -> str:
    return f"login_failed:{name}:{_via(request)}:{current_client()}"


@receiver(user_logged_in, dispatch_uid="accounts.audit_logged_in")
def record_logged_in(sender, request, user, **kwargs) -> None:
    """A login (the login page, the admin, a token). Failures after it open a new event rather
    than adding to the one before it, so the trail keeps their order around it."""
    _record_session(AuditAction.LOGIN, request, user)
    audit_window_close(_failures_key(user.get_username(), request))


@receiver(user_logged_out, dispatch_uid="accounts.audit_logged_out")
def record_logged_out(sender, request, user, **kwargs) -> None:
    """A logout (a session that was not logged in sends no user: nothing to record)."""
    if user is not None:
        _record_session(AuditAction.LOGOUT, request, user)
