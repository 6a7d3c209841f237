"""The login and logout pages: audited logins, safe redirects, POST-only logout, the header."""

import pytest

from audit.models import AuditEvent
from tests.conftest import make_user

LOGIN_URL = "/accounts/login/"
LOGOUT_URL = "/accounts/logout/"
PASSWORD = "pw-test-12345"
BAD_CREDENTIALS = "That username and password do not match an active account."


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def logged_in_user_id(client) -> str | None:
    return client.session.get("_auth_user_id")


def login_events() -> list[tuple[str, str, str, dict]]:
    return list(
        AuditEvent.objects.filter(action__startswith="user.login")
        .order_by("id")
        .values_list("actor", "action", "object_id", "details")
    )


def test_login_page_renders_the_form_for_anonymous_visitors(client, db):
    # when
    response = client.get(LOGIN_URL)

    # then
    assert response.status_code == 200
    page = response.content.decode()
    assert '<input type="text" name="username" id="id_username"' in page
    assert '<input type="password" name="password" id="id_password"' in page
    assert '<a href="/accounts/login/">Log in</a>' in page
    assert "Signed in as" not in page


def test_good_credentials_log_in_redirect_to_next_and_are_audited(client, curator):
    # when
    response = client.post(
        LOGIN_URL, {"username": "curator1", "password": PASSWORD, "next": "/datasets/"}
    )

    # then
    assert response.status_code == 302
    assert response["Location"] == "/datasets/"
    assert logged_in_user_id(client) == str(curator.pk)
    assert login_events() == [("curator1", "user.login", str(curator.pk), {"via": "page"})]


def test_next_from_the_query_string_is_kept_in_the_form_and_followed(client, curator):
    # given
    form = client.get(LOGIN_URL, {"next": "/catalog/?q=clinic"}).content.decode()
    assert '<input type="hidden" name="next" value="/catalog/?q=clinic">' in form

    # when
    response = client.post(
        f"{LOGIN_URL}?next=/catalog/%3Fq%3Dclinic", {"username": "curator1", "password": PASSWORD}
    )

    # then
    assert response.status_code == 302
    assert response["Location"] == "/catalog/?q=clinic"
    assert logged_in_user_id(client) == str(curator.pk)


def test_login_without_next_redirects_home(client, curator):
    # when
    response = client.post(LOGIN_URL, {"username": "curator1", "password": PASSWORD})

    # then
    assert response.status_code == 302
    assert response["Location"] == "/"


@pytest.mark.parametrize(
    "next_url",
    ["https://evil.example/", "//evil.example/", "http://evil.example/datasets/"],
)
def test_off_site_next_redirects_home_instead(client, curator, next_url):
    # when
    response = client.post(
        LOGIN_URL, {"username": "curator1", "password": PASSWORD, "next": next_url}
    )

    # then
    assert response.status_code == 302
    assert response["Location"] == "/"
    assert logged_in_user_id(client) == str(curator.pk)


def test_off_site_next_is_not_put_into_the_form(client, db):
    # when
    response = client.get(LOGIN_URL, {"next": "https://evil.example/"})

    # then
    page = response.content.decode()
    assert '<input type="hidden" name="next" value="/">' in page
    assert "evil.example" not in page


def test_wrong_password_re_renders_with_an_error_and_is_audited(client, curator):
    # when
    response = client.post(
        LOGIN_URL, {"username": "curator1", "password": "wrong-password", "next": "/datasets/"}
    )

    # then
    assert response.status_code == 200
    page = response.content.decode()
    assert f'<div role="alert"><ul class="errorlist"><li>{BAD_CREDENTIALS}</li></ul></div>' in page
    assert 'name="username" id="id_username" autocomplete="username" required value="curator1"' in (
        page
    )
    assert "wrong-password" not in page
    assert '<input type="hidden" name="next" value="/datasets/">' in page
    assert logged_in_user_id(client) is None
    assert login_events() == [
        (
            "system",
            "user.login_failed",
            str(curator.pk),
            {"username": "curator1", "via": "page", "repeats_counted_for_s": 600},
        )
    ]


def test_unknown_user_is_refused_and_audited_with_the_attempted_name(client, db):
    # when
    response = client.post(LOGIN_URL, {"username": "nobody", "password": PASSWORD})

    # then
    assert response.status_code == 200
    assert BAD_CREDENTIALS in response.content.decode()
    assert logged_in_user_id(client) is None
    assert login_events() == [
        (
            "system",
            "user.login_failed",
            "",
            {"username": "(unknown account)", "via": "page", "repeats_counted_for_s": 600},
        )
    ]


def test_inactive_user_cannot_log_in(client, curator):
    # given
    curator.is_active = False
    curator.save(update_fields=["is_active"])

    # when
    response = client.post(LOGIN_URL, {"username": "curator1", "password": PASSWORD})

    # then
    assert response.status_code == 200
    assert BAD_CREDENTIALS in response.content.decode()
    assert logged_in_user_id(client) is None
    assert [event[1] for event in login_events()] == ["user.login_failed"]


def test_empty_form_shows_field_errors_and_writes_no_audit_event(client, db):
    # when
    response = client.post(LOGIN_URL, {"username": "", "password": ""})

    # then
    assert response.status_code == 200
    page = response.content.decode()
    assert page.count("<li>This field is required.</li>") == 2
    assert BAD_CREDENTIALS not in page
    assert login_events() == []


def test_logout_by_get_is_refused_and_keeps_the_session(client, curator):
    # given
    client.force_login(curator)

    # when
    response = client.get(LOGOUT_URL)

    # then
    assert response.status_code == 405
    assert logged_in_user_id(client) == str(curator.pk)


def test_logout_by_post_logs_out_and_redirects_home(client, curator):
    # given
    client.force_login(curator)

    # when
    response = client.post(LOGOUT_URL)

    # then
    assert response.status_code == 302
    assert response["Location"] == "/"
    assert logged_in_user_id(client) is None
    assert client.get("/datasets/")["Location"] == "/accounts/login/?next=/datasets/"


@pytest.mark.parametrize(
    ("username", "role", "nav_link", "hidden_link"),
    [
        ("curator1", "curator", '<a href="/datasets/">My datasets</a>', '<a href="/audit/">'),
        ("auditor", "compliance", '<a href="/audit/">Audit</a>', '<a href="/datasets/">'),
    ],
)
def test_header_names_the_user_and_role_and_links_role_pages(
    client, db, username, role, nav_link, hidden_link
):
    # given
    client.force_login(make_user(username, role))

    # when
    page = client.get("/catalog/").content.decode()

    # then
    assert f"Signed in as <strong>{username}</strong> ({role})" in page
    assert nav_link in page
    assert hidden_link not in page
    assert '<button type="submit" class="link">Log out</button>' in page


def test_the_admins_failed_logins_and_every_logout_are_audited(client, curator):
    from audit.chain import audit_chain_verify

    # when a failed login on the admin's own page, then a login and a logout on ours
    client.post("/admin/login/", {"username": "curator1", "password": "wrong"})
    client.post(LOGIN_URL, {"username": "curator1", "password": "pw-test-12345"})
    client.post(LOGOUT_URL)

    # then
    events = [
        (e.actor, e.action, e.details)
        for e in AuditEvent.objects.filter(action__startswith="user.log").order_by("id")
    ]
    assert events == [
        (
            "system",
            "user.login_failed",
            {"username": "curator1", "via": "admin", "repeats_counted_for_s": 600},
        ),
        ("curator1", "user.login", {"via": "page"}),
        ("curator1", "user.logout", {"via": "page"}),
    ]
    assert audit_chain_verify().valid is True


def test_repeated_failed_logins_are_paused_on_every_door(client, curator, settings):
    from rest_framework.test import APIClient

    limit = settings.AXES_FAILURE_LIMIT
    # when the page gets the limit of wrong passwords for curator1 from one address
    for _ in range(limit):
        client.post(LOGIN_URL, {"username": "curator1", "password": "wrong"})

    # then the right password is refused there, by the API and by the admin, with a 429
    page = client.post(LOGIN_URL, {"username": "curator1", "password": PASSWORD})
    assert page.status_code == 429
    assert int(page["Retry-After"]) == int(settings.AXES_COOLOFF_TIME.total_seconds())
    assert "Too many failed logins" in page.content.decode()
    api = APIClient().post(
        "/api/v1/auth/token/", {"username": "curator1", "password": PASSWORD}, format="json"
    )
    assert api.status_code == 429
    assert set(api.json()) == {"detail"}
    admin = client.post("/admin/login/", {"username": "curator1", "password": PASSWORD})
    assert admin.status_code == 429
    # while another account from the same address is not paused
    assert (
        APIClient()
        .post("/api/v1/auth/token/", {"username": "nobody", "password": "x"}, format="json")
        .status_code
        == 400
    )


def test_a_brute_force_is_one_event_that_counts_its_attempts(client, curator, settings):
    from audit.chain import audit_chain_verify

    for _ in range(settings.AXES_FAILURE_LIMIT + 3):
        client.post(LOGIN_URL, {"username": "curator1", "password": "wrong"})
    events = AuditEvent.objects.filter(action="user.login_failed")
    assert events.count() == 1
    from audit.models import EventRepeats

    assert EventRepeats.objects.get(event_id=events.get().pk).count == (
        settings.AXES_FAILURE_LIMIT + 2
    )
    assert audit_chain_verify().valid is True


def token(username: str, password: str, **extra):
    from rest_framework.test import APIClient

    return APIClient().post(
        "/api/v1/auth/token/", {"username": username, "password": password}, format="json", **extra
    )


def test_rotating_addresses_inside_one_ipv6_64_does_not_escape_the_lockout(curator, settings):
    for host in range(settings.AXES_FAILURE_LIMIT):
        token("curator1", "wrong", REMOTE_ADDR=f"2001:db8::{host + 1:x}")
    assert token("curator1", PASSWORD, REMOTE_ADDR="2001:db8::ffff").status_code == 429
    # an IPv4 client is the same client when written as an IPv4-mapped IPv6 address
    for _ in range(settings.AXES_FAILURE_LIMIT):
        token("curator1", "wrong", REMOTE_ADDR="192.0.2.7")
    assert token("curator1", PASSWORD, REMOTE_ADDR="::ffff:192.0.2.7").status_code == 429


def test_behind_a_proxy_one_client_cannot_lock_out_another(curator, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    for _ in range(settings.AXES_FAILURE_LIMIT + 2):
        token("curator1", "wrong", REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.66")
    victim = token(
        "curator1", PASSWORD, REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR="198.51.100.5"
    )
    assert victim.status_code == 200


def test_a_token_login_clears_the_names_failures(curator, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        token("curator1", "wrong")
    assert token("curator1", PASSWORD).status_code == 200
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        token("curator1", "wrong")
    assert token("curator1", PASSWORD).status_code == 200


def test_failures_after_a_login_are_a_new_event(curator):
    token("curator1", "wrong")
    token("curator1", PASSWORD)
    token("curator1", "wrong")
    actions = list(
        AuditEvent.objects.filter(action__startswith="user.login")
        .order_by("id")
        .values_list("action", flat=True)
    )
    assert actions == ["user.login_failed", "user.login", "user.login_failed"]


def test_login_throttling_keeps_no_typed_name_that_is_no_account(db):
    from axes.models import AccessAttempt

    token("MySecretPassw0rd!", "x")
    assert list(AccessAttempt.objects.values_list("username", flat=True)) == ["(unknown account)"]
    assert token("u" * 256, "x").status_code == 400


def test_a_login_without_a_client_address_is_answered(curator):
    assert token("curator1", "wrong", REMOTE_ADDR="").status_code == 400
    assert token("curator1", PASSWORD, REMOTE_ADDR="").status_code == 200
