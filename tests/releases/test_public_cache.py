"""Cached public catalog (issue 8, point 5): cookieless readers of the catalog get a stored
answer, a new version shows once the catalog's generation is read again, and anyone with a
session is never served a cached page."""

import pytest
from django.test import Client

from releases.models import Release
from tests.conftest import draft_body


def publish(curator_client, dataset, capture, title: str) -> Release:
    draft = curator_client.post(
        "/api/v1/releases/", {**draft_body(dataset.pk), "title": title}, format="json"
    ).json()
    with capture(execute=True):
        curator_client.post(f"/api/v1/releases/{draft['id']}/submit/")
    return Release.objects.get(pk=draft["id"])


@pytest.fixture
def first(curator_client, dataset, django_capture_on_commit_callbacks):
    return publish(curator_client, dataset, django_capture_on_commit_callbacks, "First")


@pytest.mark.parametrize(
    "path",
    ["/catalog/", "/api/v1/catalog/", "/catalog/{slug}/v1/", "/api/v1/catalog/{slug}/versions/1/"],
)
def test_a_cookieless_reader_is_served_from_the_cache_with_one_small_query(
    first, path, django_assert_num_queries
):
    # given one cookieless read
    url = path.format(slug=first.series.slug)
    reader = Client()
    warm = reader.get(url)
    assert warm.status_code == 200

    # when the same page is read again: only the catalog's generation is read
    with django_assert_num_queries(1):
        again = Client().get(url)

    # then
    assert again.status_code == 200
    assert again.content == warm.content


def test_a_new_version_shows_at_once(
    first, curator_client, dataset, django_capture_on_commit_callbacks
):
    # given a cached catalog (found by the end-to-end test: a generation reused for two seconds
    # hid a version published in between)
    assert Client().get("/api/v1/catalog/").json()["count"] == 1

    # when another version is published
    publish(curator_client, dataset, django_capture_on_commit_callbacks, "Second")

    # then
    assert Client().get("/api/v1/catalog/").json()["count"] == 2


def test_a_signed_in_reader_is_never_served_a_cached_page(first, client, curator):
    # given a cached anonymous catalog page
    anonymous = Client().get("/catalog/").content.decode()
    assert "Signed in as" not in anonymous

    # when a signed-in curator reads it
    client.force_login(curator)
    signed_in = client.get("/catalog/").content.decode()

    # then they see their own page
    assert "Signed in as" in signed_in


def test_a_missing_version_is_not_cached(first, curator_client, django_assert_max_num_queries):
    # given a 404
    assert Client().get("/catalog/nothing-here/v1/").status_code == 404

    # when / then it is computed again (a query), never stored
    with django_assert_max_num_queries(5) as queries:
        assert Client().get("/catalog/nothing-here/v1/").status_code == 404
    assert len(queries) >= 1


def test_without_the_cache_every_read_queries(first, settings, django_assert_max_num_queries):
    # given the cache switched off (a negative control for the first test)
    settings.PUBLIC_CACHE_SECONDS = 0
    Client().get("/api/v1/catalog/")

    # when / then
    with django_assert_max_num_queries(20) as queries:
        Client().get("/api/v1/catalog/")
    assert len(queries) >= 1


def test_a_process_may_reuse_the_generation_for_a_while(first, settings, django_assert_num_queries):
    # given
    settings.PUBLIC_CACHE_GENERATION_SECONDS = 60
    Client().get("/api/v1/catalog/")

    # when / then no query at all
    with django_assert_num_queries(0):
        assert Client().get("/api/v1/catalog/").status_code == 200


def test_a_response_holding_a_csrf_token_is_never_cached(rf, db):
    from django.contrib.auth.models import AnonymousUser
    from django.contrib.messages.storage.fallback import FallbackStorage
    from django.http import HttpResponse
    from django.middleware.csrf import get_token

    from releases.public_cache import public_cache

    calls = []

    def form_page(request):
        calls.append(1)
        return HttpResponse(f"<input name=csrfmiddlewaretoken value={get_token(request)}>")

    cached = public_cache(form_page)
    for _ in range(2):
        request = rf.get("/form/")
        request.user = AnonymousUser()
        request.session = {}
        request._messages = FallbackStorage(request)
        request.META["CSRF_COOKIE"] = "a" * 32  # the reader already has a token cookie
        cached(request)

    assert len(calls) == 2
