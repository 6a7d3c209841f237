"""A withdrawn version says so everywhere it is published: on its release card (also when the
card was cached before the withdrawal) and in the Atom feed; a withdrawal's reason is text
without invisible formatting characters. Also: the diff's page and API share one cache key
function without sharing cache entries, stored answers are paired with statistics only when
there is one per statistic, and a deployment under a path prefix keeps JSON 404s in its API."""

import html
import xml.etree.ElementTree as ET

import pytest
from django.test import Client

from releases.models import Withdrawal
from releases.services.errors import ValidationFailed
from releases.services.versions import (
    AnswersMismatch,
    release_withdraw,
    version_diff,
    withdrawal_reason_clean,
)
from tests.conftest import draft_body, publish_through_api

ATOM = "{http://www.w3.org/2005/Atom}"
REASON = "Wrong bounds on <age> & weight"


@pytest.fixture
def published(curator_client, dataset, django_capture_on_commit_callbacks):
    return publish_through_api(
        curator_client, django_capture_on_commit_callbacks, draft_body(dataset.pk)
    )


def _card(release) -> str:
    response = Client().get(f"/catalog/{release.series.slug}/v{release.version}/card/")
    assert response.status_code == 200
    return response.content.decode()


def test_the_card_of_a_withdrawn_version_says_so_even_if_cached_before(published, curator):
    # given a card read (and cached) before the withdrawal
    before = _card(published)
    assert 'id="withdrawn"' not in before

    # when the version is withdrawn
    withdrawal = release_withdraw(release=published, user=curator, reason=REASON)

    # then the card says so at the top, with the date and the reason (escaped)
    card = _card(published)
    assert 'id="withdrawn"' in card
    assert f"This version was withdrawn on {withdrawal.at:%Y-%m-%d}" in card
    assert "Wrong bounds on &lt;age&gt; &amp; weight" in card
    assert "(withdrawn)" in card.split("</h1>", 1)[0]
    assert card.index('id="withdrawn"') < card.index('id="guarantee"')


def _feed_entries(client) -> list:
    response = client.get("/catalog/feed/")
    assert response.status_code == 200
    return ET.fromstring(response.content).findall(f"{ATOM}entry")


def test_the_feed_marks_a_withdrawn_version_even_if_cached_before(published, curator):
    # given the feed read (and cached) before the withdrawal
    [entry] = _feed_entries(Client())
    assert "withdrawn" not in entry.find(f"{ATOM}title").text

    # when
    withdrawal = release_withdraw(release=published, user=curator, reason=REASON)

    # then its entry is marked, with the reason as text (the summary is HTML), and updated
    [entry] = _feed_entries(Client())
    assert entry.find(f"{ATOM}title").text == f"{published.title}, version 1 (withdrawn)"
    summary = entry.find(f"{ATOM}summary")
    assert summary.get("type") == "html"
    assert "&lt;age&gt; &amp; weight" in summary.text
    assert html.unescape(summary.text).startswith(
        f"Withdrawn on {withdrawal.at:%Y-%m-%d}: {REASON} "
    )
    assert entry.find(f"{ATOM}updated").text != entry.find(f"{ATOM}published").text


@pytest.mark.parametrize(
    "reason",
    [
        "Bad \u202eelbat",  # right-to-left override
        "zero\u200dwidth joiner",
        "zero\u200bwidth space",
        "\ufeffbyte order mark",
        "isolate \u2067x\u2069",
    ],
)
def test_a_reason_with_an_invisible_formatting_character_is_refused(published, curator, reason):
    with pytest.raises(ValidationFailed) as refused:
        release_withdraw(release=published, user=curator, reason=reason)
    assert "invisible formatting characters" in refused.value.errors["reason"][0]
    assert not Withdrawal.objects.exists()


@pytest.mark.parametrize("reason", [42, 4.2, ["a list"], {"a": "dict"}, True])
def test_a_reason_that_is_not_text_is_refused_as_such(reason):
    with pytest.raises(ValidationFailed) as refused:
        withdrawal_reason_clean(reason)
    assert refused.value.errors == {"reason": ["The reason must be text."]}


def test_a_reason_keeps_its_line_breaks_and_other_scripts():
    assert withdrawal_reason_clean(" Erste Zeile\r\nשורה שנייה\rdritte ") == (
        "Erste Zeile\nשורה שנייה\ndritte"
    )
    with pytest.raises(ValidationFailed) as missing:
        withdrawal_reason_clean(None)
    assert missing.value.errors == {"reason": ["Say why the version is withdrawn."]}


def test_the_diff_page_and_api_never_share_a_cached_answer(
    published, curator_client, dataset, django_capture_on_commit_callbacks
):
    slug = published.series.slug
    publish_through_api(
        curator_client, django_capture_on_commit_callbacks, draft_body(dataset.pk, series=slug)
    )

    page = Client().get(f"/catalog/{slug}/diff/?from=1&to=2")
    api = Client().get(f"/api/v1/catalog/{slug}/diff/?from=1&to=2")
    page_again = Client().get(f"/catalog/{slug}/diff/?to=2&from=1&utm=x")

    assert page.status_code == api.status_code == 200
    assert page["Content-Type"].startswith("text/html")
    assert api["Content-Type"] == "application/json"
    assert api.json()["from"]["version"] == 1
    assert page_again.content == page.content


def test_answers_are_paired_with_statistics_only_one_to_one(published):
    published.queries = published.queries[:-1]

    with pytest.raises(AnswersMismatch, match="4 stored answers for 3 planned statistics"):
        version_diff(before=published, after=published, max_cells=10)


def test_a_deployment_under_a_prefix_answers_json_404s_in_its_api(db):
    reader = Client()

    api = reader.get("/api/v1/no-such-thing/", SCRIPT_NAME="/data")
    page = reader.get("/no-such-page/", SCRIPT_NAME="/data")

    assert api.status_code == page.status_code == 404
    assert api.json() == {"detail": "Not found."}
    assert page["Content-Type"].startswith("text/html")
