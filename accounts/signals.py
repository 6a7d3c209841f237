"""Logins, failed logins and logouts recorded in the audit trail wherever they happen: the login
page, the API's token endpoint and Django's admin all authenticate through django.contrib.auth,
which sends these signals."""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
from django.db.models.signals import m2m_changed, post_save, pre_save
from django.dispatch import receiver

from accounts.tokens import api_tokens_revoke
from audit.chain import AuditAction, audit_record, audit_record_repeated, audit_window_close
from audit.context import current_client
from organisations.services import organisation_slug_of

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
        # The account's organisation; a name that is no account's belongs to none.
        organisation=organisation_slug_of(account) if account else "",
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
    """A logout (a session that was not logged in sends no user: nothing to record). Logging
    out of the site or the admin also revokes the user's API tokens: "log out" means everywhere."""
    if user is not None:
        _record_session(AuditAction.LOGOUT, request, user)
        api_tokens_revoke(user, reason="logout", actor=user)


# Fields of an account whose change revokes its API tokens: a token must not outlive the
# password it was obtained with, nor carry powers the account lost.
_TOKEN_BOUND_FIELDS = ("password", "is_active", "is_staff", "is_superuser")


@receiver(pre_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="accounts.tokens_on_change")
def note_token_bound_changes(sender, instance, update_fields=None, **kwargs) -> None:
    """A changed password (set anywhere: the admin, create_user, changepassword) or account flag
    is noted here and revokes the user's tokens once the row is written (below): a token login
    re-reads the row under its lock, so none can slip in between."""
    instance._tokens_revoked_because = None
    if instance.pk is None:
        return
    if update_fields is not None and not set(update_fields) & set(_TOKEN_BOUND_FIELDS):
        return  # e.g. the last-login time every login saves
    stored = sender.objects.filter(pk=instance.pk).values(*_TOKEN_BOUND_FIELDS).first()
    if stored is None:
        return
    changed = [name for name in _TOKEN_BOUND_FIELDS if stored[name] != getattr(instance, name)]
    # A login that re-hashes the same password with newer parameters sets _password to None
    # (django.contrib.auth): the password did not change.
    if changed == ["password"] and getattr(instance, "_password", "") is None:
        return
    if changed:
        instance._tokens_revoked_because = (
            "password_changed" if "password" in changed else "account_changed"
        )


@receiver(post_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="accounts.tokens_revoked")
def revoke_tokens_on_account_change(sender, instance, created, **kwargs) -> None:
    reason = getattr(instance, "_tokens_revoked_because", None)
    if reason is not None:
        instance._tokens_revoked_because = None
        api_tokens_revoke(instance, reason=reason)


@receiver(m2m_changed, dispatch_uid="accounts.tokens_on_role_change")
def revoke_tokens_on_role_change(sender, instance, action, reverse, model, pk_set, **kwargs):
    """A role is a group: adding or removing one revokes the tokens of every user it touches
    (from the user's side or the group's)."""
    user_model = get_user_model()
    if sender is not user_model.groups.through or action not in (
        "post_add",
        "post_remove",
        "pre_clear",
    ):
        return
    if not reverse:
        users = [instance]
    elif pk_set is None:  # a group cleared of every user
        users = list(instance.user_set.all())
    else:
        users = list(user_model.objects.filter(pk__in=pk_set))
    for user in users:
        api_tokens_revoke(user, reason="role_changed")
