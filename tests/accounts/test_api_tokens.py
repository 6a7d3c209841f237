"""API tokens: stored only as digests, expiring, revoked on password, role and account changes
and on logout; a replayed token is a 401, never a server error."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.db import connection
from django.test import override_settings
from django.utils import timezone
from knox.models import AuthToken
from rest_framework.test import APIClient

from audit.models import AuditEvent
from tests.conftest import make_user

TOKEN_URL = "/api/v1/auth/token/"
LOGOUT_URL = "/api/v1/auth/logout/"
PROTECTED_URL = "/api/v1/datasets/"
PASSWORD = "pw-test-12345"


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def obtain(username: str = "curator1", password: str = PASSWORD) -> str:
    response = APIClient().post(
        TOKEN_URL, {"username": username, "password": password}, format="json"
    )
    assert response.status_code == 200, response.content
    return response.json()["token"]


def status_with(token: str, url: str = PROTECTED_URL) -> int:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client.get(url).status_code


def revocations(user) -> list[dict]:
    return list(
        AuditEvent.objects.filter(action="user.tokens_revoked", object_id=str(user.pk))
        .order_by("id")
        .values_list("details", flat=True)
    )


@pytest.fixture
def curator_password(curator):
    curator.set_password(PASSWORD)
    curator.save()
    return curator


def test_the_database_holds_no_usable_token(curator_password):
    token = obtain()

    # then no column of any table holds the token itself
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM knox_authtoken")
        rows = cursor.fetchall()
    assert len(rows) == 1
    assert all(token not in str(value) for value in rows[0])
    assert status_with(token) == 200


def test_a_token_expires(curator_password, settings):
    token = obtain()
    expiry = AuthToken.objects.get().expiry
    assert (
        timedelta(hours=9, minutes=59) < expiry - timezone.now() <= settings.REST_KNOX["TOKEN_TTL"]
    )

    # when its time has passed
    AuthToken.objects.update(expiry=timezone.now() - timedelta(seconds=1))

    # then it no longer works, and is gone
    assert status_with(token) == 401
    assert not AuthToken.objects.exists()


@pytest.mark.parametrize(
    "change_password",
    [
        pytest.param(lambda user: (user.set_password("a-new-pw-2468"), user.save()), id="save"),
        pytest.param(
            lambda user: call_command(
                "create_user", "curator1", "--role", "curator", "--password", "a-new-pw-2468"
            ),
            id="create_user",
        ),
    ],
)
def test_a_password_change_revokes_every_token(curator_password, change_password):
    tokens = [obtain(), obtain()]

    # when
    change_password(curator_password)

    # then the old tokens are replayed in vain, and the trail says why
    assert [status_with(token) for token in tokens] == [401, 401]
    assert revocations(curator_password) == [{"reason": "password_changed", "tokens": 2}]
    assert status_with(obtain(password="a-new-pw-2468")) == 200


def test_saving_the_last_login_keeps_tokens(curator_password):
    # given a token, when the same user logs in again (which saves its last-login time)
    first = obtain()
    obtain()

    # then
    assert status_with(first) == 200
    assert revocations(curator_password) == []


@pytest.mark.parametrize(
    "change_role",
    [
        pytest.param(
            lambda user: user.groups.set([Group.objects.get_or_create(name="compliance")[0]]),
            id="user-side",
        ),
        pytest.param(
            lambda user: Group.objects.get(name="curator").user_set.remove(user), id="group-side"
        ),
        pytest.param(lambda user: Group.objects.get(name="curator").user_set.clear(), id="clear"),
    ],
)
def test_a_role_change_revokes_every_token(curator_password, change_role):
    token = obtain()

    # when
    change_role(curator_password)

    # then
    assert status_with(token) == 401
    assert revocations(curator_password)[-1]["reason"] == "role_changed"


def test_deactivating_an_account_revokes_its_tokens(curator_password):
    token = obtain()

    # when
    curator_password.is_active = False
    curator_password.save()

    # then
    assert status_with(token) == 401
    assert not AuthToken.objects.exists()
    assert revocations(curator_password) == [{"reason": "account_changed", "tokens": 1}]


def test_api_logout_revokes_only_the_token_it_carries(curator_password):
    kept, dropped = obtain(), obtain()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {dropped}")

    # when
    response = client.post(LOGOUT_URL)

    # then
    assert response.status_code == 204
    assert (status_with(dropped), status_with(kept)) == (401, 200)
    logout = AuditEvent.objects.filter(action="user.logout").get()
    assert (logout.actor, logout.details) == ("curator1", {"via": "api", "tokens": "this"})


def test_api_logout_everywhere_revokes_every_token(curator_password):
    tokens = [obtain(), obtain()]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {tokens[0]}")

    # when
    response = client.post(LOGOUT_URL + "?all=1")

    # then
    assert response.status_code == 204
    assert [status_with(token) for token in tokens] == [401, 401]
    assert revocations(curator_password) == [{"reason": "logout", "tokens": 2}]


def test_logging_out_of_the_site_revokes_every_token(curator_password, client):
    token = obtain()
    client.force_login(curator_password)

    # when
    response = client.post("/accounts/logout/")

    # then
    assert response.status_code == 302
    assert status_with(token) == 401


def test_logout_needs_a_login(db):
    assert APIClient().post(LOGOUT_URL).status_code == 401


@override_settings(REST_KNOX={"TOKEN_TTL": timedelta(hours=10), "TOKEN_LIMIT_PER_USER": 3})
def test_a_user_keeps_a_bounded_number_of_tokens(curator_password):
    tokens = [obtain() for _ in range(4)]

    # then the oldest went
    assert AuthToken.objects.count() == 3
    assert [status_with(token) for token in tokens] == [401, 200, 200, 200]


@pytest.mark.parametrize(
    "header",
    [
        b"Token \xff\xfe",
        b"Token " + b"a" * 64 + b"\x80",
        b"Token " + b"f" * 100_000,
        b"Token",
        b"Token a b",
        "Token ééé".encode(),
        b"Token " + b"0" * 64,
    ],
    ids=["latin1", "trailing-byte", "huge", "empty", "spaces", "unicode", "unknown"],
)
def test_a_malformed_token_is_a_401(curator_password, header):
    client = APIClient()

    # when (the test client passes header bytes through as the server would, as latin-1)
    response = client.get(PROTECTED_URL, HTTP_AUTHORIZATION=header.decode("latin-1"))

    # then
    assert response.status_code == 401
    assert response.json()["detail"]


def test_a_login_racing_a_password_change_gets_no_token(curator_password, monkeypatch):
    # given a login whose password check passes just before the password changes (the
    # change's revocation then finds no token to revoke)
    from accounts import services

    checked = services.user_login

    def login_then_password_changes(**kwargs):
        user = checked(**kwargs)
        changed = type(user).objects.get(pk=user.pk)
        changed.set_password("a-new-pw-2468")
        changed.save()
        return user

    monkeypatch.setattr(services, "user_login", login_then_password_changes)

    # when
    response = APIClient().post(
        TOKEN_URL, {"username": "curator1", "password": PASSWORD}, format="json"
    )

    # then no token outlives the password it was obtained with
    assert response.status_code == 400
    assert not AuthToken.objects.exists()


def test_a_hash_upgraded_at_login_is_no_password_change(curator_password):
    from django.contrib.auth.hashers import make_password

    token = obtain()

    # when a login re-hashes the same password (as check_password does after an upgrade)
    curator_password.password = make_password(PASSWORD, salt="another-salt")
    curator_password._password = None
    curator_password.save(update_fields=["password"])

    # then
    assert status_with(token) == 200
    assert revocations(curator_password) == []


def test_an_api_logout_with_a_session_ends_the_session(curator_password):
    token = obtain()
    client = APIClient()
    client.force_login(curator_password)

    # when
    first = client.post(LOGOUT_URL)
    again = client.post(LOGOUT_URL)

    # then the session is over (a second call is refused, not recorded) and the tokens revoked
    assert (first.status_code, again.status_code) == (204, 401)
    assert status_with(token) == 401
    assert AuditEvent.objects.filter(action="user.logout").count() == 1


def test_tokens_cannot_be_made_in_the_admin(db, client):
    admin = make_user("admin1", None)
    admin.is_staff = admin.is_superuser = True
    admin.save()
    client.force_login(admin)

    assert client.get("/admin/knox/authtoken/add/").status_code == 404
