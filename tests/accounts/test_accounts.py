"""Roles as groups, and the create_user management command."""

import io
import re

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from audit.models import AuditEvent

OUTPUT = re.compile(
    r"^(?P<role>\w+) '(?P<username>[^']+)' of organisation '(?P<organisation>[^']+)' ready; "
    r"password: (?P<password>\S+)\n$"
)


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def create_user(*args: str) -> str:
    out = io.StringIO()
    call_command("create_user", *args, stdout=out)
    return out.getvalue()


def test_role_groups_exist_after_migrations(db):
    # then
    assert set(Group.objects.values_list("name", flat=True)) >= {"curator", "compliance"}


def test_create_user_makes_a_curator_and_prints_a_working_password(db):
    # when
    output = create_user("alice", "--role", "curator")

    # then
    match = OUTPUT.match(output)
    assert match is not None, output
    assert (match["role"], match["username"]) == ("curator", "alice")
    password = match["password"]
    assert len(password) >= 12
    user = get_user_model().objects.get(username="alice")
    assert user.check_password(password)
    assert user.is_active
    assert list(user.groups.values_list("name", flat=True)) == ["curator"]


def test_create_user_records_an_audit_event_without_the_password(db):
    # when
    password = OUTPUT.match(create_user("carol", "--role", "compliance"))["password"]

    # then
    event = AuditEvent.objects.get(action="user.created")
    user = get_user_model().objects.get(username="carol")
    assert (event.actor, event.object_type, event.object_id) == ("system", "user", str(user.pk))
    assert event.details == {"username": "carol", "role": "compliance", "organisation": "default"}
    assert event.organisation == "default"
    assert password not in str(event.details)


def test_create_user_with_given_password_uses_it(db):
    # when
    output = create_user("bob", "--role", "compliance", "--password", "given-pass-123")

    # then
    assert output == "compliance 'bob' of organisation 'default' ready; password: given-pass-123\n"
    user = get_user_model().objects.get(username="bob")
    assert user.check_password("given-pass-123")
    assert list(user.groups.values_list("name", flat=True)) == ["compliance"]


def test_generated_passwords_differ(db):
    # when
    first = OUTPUT.match(create_user("u1", "--role", "curator"))["password"]
    second = OUTPUT.match(create_user("u2", "--role", "curator"))["password"]

    # then
    assert first != second


def test_create_user_on_an_existing_user_resets_password_and_replaces_the_role(db):
    # given
    old = OUTPUT.match(create_user("dave", "--role", "curator"))["password"]

    # when
    new = OUTPUT.match(create_user("dave", "--role", "compliance"))["password"]

    # then
    user = get_user_model().objects.get(username="dave")
    assert get_user_model().objects.filter(username="dave").count() == 1
    assert not user.check_password(old)
    assert user.check_password(new)
    assert list(user.groups.values_list("name", flat=True)) == ["compliance"]


def test_create_user_reactivates_a_deactivated_user(db):
    # given
    create_user("erin", "--role", "curator")
    get_user_model().objects.filter(username="erin").update(is_active=False)

    # when
    create_user("erin", "--role", "curator", "--password", "back-again-123")

    # then
    assert get_user_model().objects.get(username="erin").is_active


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("frank", "--role", "admin"), id="unknown-role"),
        pytest.param(("frank",), id="missing-role"),
        pytest.param(("--role", "curator"), id="missing-username"),
    ],
)
def test_create_user_refuses_bad_arguments_and_creates_nothing(db, args):
    # given
    users_before = get_user_model().objects.count()

    # when / then
    with pytest.raises(CommandError):
        create_user(*args)
    assert get_user_model().objects.count() == users_before
    assert not AuditEvent.objects.exists()


def test_created_user_can_obtain_an_api_token_with_the_printed_password(db):
    # given
    password = OUTPUT.match(create_user("gina", "--role", "curator"))["password"]

    # when
    response = APIClient().post(
        "/api/v1/auth/token/", {"username": "gina", "password": password}, format="json"
    )

    # then
    assert response.status_code == 200
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {response.json()['token']}")
    assert client.get("/api/v1/releases/").status_code == 200
