"""The catalog's Atom feed of new versions: newest first, each entry linking to its version's
page with its guarantee, names from curator input escaped, only published versions."""

import xml.etree.ElementTree as ET

import pytest

from releases.feeds import guarantee_text
from releases.models import Release
from tests.conftest import publish_through_api

ATOM = "{http://www.w3.org/2005/Atom}"


def body(dataset_id: int, title: str, definition: dict) -> dict:
    return {
        "dataset": dataset_id,
        "title": title,
        "definition": definition,
        "queries": [{"kind": "count"}],
    }


@pytest.fixture
def published(curator_client, dataset, django_capture_on_commit_callbacks) -> list[Release]:
    capture = django_capture_on_commit_callbacks
    first = publish_through_api(
        curator_client,
        capture,
        body(dataset.pk, "Clinic <b>counts</b>", {"kind": "pure_dp", "epsilon": 0.1}),
    )
    second = publish_through_api(
        curator_client,
        capture,
        body(dataset.pk, "Clinic & visits", {"kind": "pure_dp", "epsilon": 0.2}),
    )
    # a draft is not in the feed
    curator_client.post(
        "/api/v1/releases/",
        body(dataset.pk, "Draft", {"kind": "pure_dp", "epsilon": 0.1}),
        format="json",
    )
    return [first, second]


def test_the_feed_lists_published_versions_newest_first_with_their_guarantee(
    anonymous_client, published
):
    response = anonymous_client.get("/catalog/feed/")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/atom+xml")
    feed = ET.fromstring(b"".join(response) if response.streaming else response.content)
    entries = feed.findall(f"{ATOM}entry")
    titles = [e.find(f"{ATOM}title").text for e in entries]
    assert titles == ["Clinic & visits, version 1", "Clinic <b>counts</b>, version 1"]
    newest = entries[0]
    link = newest.find(f"{ATOM}link").get("href")
    assert link.endswith(f"/catalog/{published[1].series.slug}/v1/")
    summary = newest.find(f"{ATOM}summary").text
    assert "1 statistic under ε-differential privacy, ε = 0.2" in summary
    assert "files: " in summary
    ids = [e.find(f"{ATOM}id").text for e in entries]
    assert len(set(ids)) == 2
    assert all(i.startswith("tag:guided-data-release,") for i in ids)


def test_the_catalog_page_links_the_feed(anonymous_client, published):
    html = anonymous_client.get("/catalog/").content.decode()

    assert 'type="application/atom+xml"' in html
    assert 'href="/catalog/feed/"' in html


def test_the_feed_is_well_formed_with_no_version_published(anonymous_client, db):
    feed = ET.fromstring(anonymous_client.get("/catalog/feed/?anything=1").content)

    assert feed.findall(f"{ATOM}entry") == []
    assert feed.find(f"{ATOM}title").text == "Guided data release: new versions"


@pytest.mark.parametrize(
    ("definition", "text"),
    [
        ({"kind": "pure_dp", "epsilon": 1.0}, "ε-differential privacy, ε = 1.0"),
        (
            {"kind": "approx_dp", "epsilon": 0.5, "delta": 1e-06},
            "(ε, δ)-differential privacy, ε = 0.5, δ = 1e-06",
        ),
        (
            {"kind": "blowfish", "epsilon": 1.0, "policy": {"graph": "full_domain"}},
            "Blowfish privacy, ε = 1.0, policy full_domain",
        ),
    ],
)
def test_each_definition_reads_as_one_line(definition, text):
    assert guarantee_text(definition) == text


def test_a_title_with_a_noncharacter_is_refused_and_the_feed_stays_readable(
    curator_client, dataset, published, django_capture_on_commit_callbacks
):
    refused = curator_client.post(
        "/api/v1/releases/",
        body(dataset.pk, "Bad \uffff title", {"kind": "pure_dp", "epsilon": 0.1}),
        format="json",
    )
    assert refused.status_code == 400
    assert "noncharacters" in " ".join(refused.json()["errors"]["title"])

    # a title saved before the refusal existed (set on the draft: a published version never
    # changes) is written without the character
    draft = curator_client.post(
        "/api/v1/releases/",
        body(dataset.pk, "Old title", {"kind": "pure_dp", "epsilon": 0.1}),
        format="json",
    ).json()
    Release.objects.filter(pk=draft["id"]).update(title="Old \uffff\ufffe title")
    with django_capture_on_commit_callbacks(execute=True):
        curator_client.post(f"/api/v1/releases/{draft['id']}/submit/")
    assert Release.objects.get(pk=draft["id"]).status == "published"
    feed = ET.fromstring(curator_client.get("/catalog/feed/").content)
    assert feed.find(f"{ATOM}entry").find(f"{ATOM}title").text == "Old  title, version 1"
