"""Anonymous API clients are rate-limited per address (429 with Retry-After, the API's error
shape); logged-in users and other addresses are not affected."""

import time

import pytest


@pytest.fixture
def low_rate(settings, db, monkeypatch):
    settings.ANONYMOUS_API_RATE = "3/min"
    # One counting window for the whole test: a minute's edge in the middle would start a new
    # count (the limit is per fixed window) and the test would see no 429.
    now = time.time()
    monkeypatch.setattr("releases.apis.throttles.time.time", lambda: now)


def catalog_searches(client, count: int, **extra) -> list:
    # A new search each time: the public cache cannot answer it, so each reaches the view.
    return [client.get(f"/api/v1/catalog/?search=term{i}", **extra) for i in range(count)]


@pytest.mark.usefixtures("low_rate")
def test_an_anonymous_client_past_the_rate_gets_429_with_retry_after(anonymous_client):
    answers = catalog_searches(anonymous_client, 5)
    assert [a.status_code for a in answers] == [200, 200, 200, 429, 429]
    refused = answers[-1]
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert set(refused.json()) == {"detail"}
    assert "throttled" in refused.json()["detail"].lower()


@pytest.mark.usefixtures("low_rate")
def test_the_token_endpoint_is_limited_too(anonymous_client):
    answers = [
        anonymous_client.post(
            "/api/v1/auth/token/", {"username": "nobody", "password": f"guess{i}"}, format="json"
        ).status_code
        for i in range(5)
    ]
    assert answers[3:] == [429, 429]
    assert 429 not in answers[:3]


@pytest.mark.usefixtures("low_rate")
def test_another_address_has_its_own_count(anonymous_client):
    catalog_searches(anonymous_client, 4)
    elsewhere = catalog_searches(anonymous_client, 1, REMOTE_ADDR="192.0.2.7")
    assert elsewhere[0].status_code == 200


@pytest.mark.usefixtures("low_rate")
def test_logged_in_users_are_not_limited_by_the_anonymous_rate(curator_client):
    answers = catalog_searches(curator_client, 6)
    assert {a.status_code for a in answers} == {200}
