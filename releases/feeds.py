"""The catalog's Atom feed of new versions (``/catalog/feed/``), by Django's syndication
framework: feed readers and scripts learn of a new version without polling the catalog.

A withdrawn version keeps its entry, marked: "(withdrawn)" after its title, the date and reason
first in its summary, and the withdrawal's time as the entry's ``updated``, so readers that
follow updates see it."""

import re

from django.contrib.syndication.views import Feed
from django.urls import reverse
from django.utils.feedgenerator import Atom1Feed
from django.utils.html import escape

from releases import selectors
from releases.apis.versions import release_withdrawal
from releases.models import Release

# Entries in the feed: the newest versions.
FEED_ENTRIES = 50
DEFINITION_NAMES = {
    "pure_dp": "ε-differential privacy",
    "approx_dp": "(ε, δ)-differential privacy",
    "blowfish": "Blowfish privacy",
}


# What XML 1.0 cannot hold: control characters but tab and line ends, surrogates, U+FFFE/U+FFFF.
NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: str) -> str:
    """``text`` without the characters an XML document cannot hold (titles saved before they
    were refused): one such character would make the whole feed unreadable."""
    return NOT_XML.sub("", text)


def guarantee_text(definition: dict) -> str:
    """A version's guarantee in one line (its page says it in full)."""
    name = DEFINITION_NAMES.get(definition.get("kind"), str(definition.get("kind")))
    text = f"{name}, ε = {definition.get('epsilon')}"
    if definition.get("kind") == "approx_dp":
        text += f", δ = {definition.get('delta')}"
    if definition.get("kind") == "blowfish":
        text += f", policy {(definition.get('policy') or {}).get('graph')}"
    return text


def feed_cache_key(request) -> list[str]:
    """The feed ignores its query string: one cache entry whatever a client appends. A
    withdrawal needs no part here: public_cache adds the catalog's generation, which every
    publication and withdrawal changes."""
    return ["catalog-feed"]


class NewVersionsFeed(Feed):
    feed_type = Atom1Feed
    title = "Guided data release: new versions"
    subtitle = "Each new version of a published release, with its privacy guarantee."

    def link(self) -> str:
        return reverse("catalog")

    def items(self):
        return selectors.release_list_published()[:FEED_ENTRIES]

    def item_title(self, item: Release) -> str:
        withdrawn = " (withdrawn)" if release_withdrawal(item) is not None else ""
        return xml_text(f"{item.title}, version {item.version}{withdrawn}")

    def item_description(self, item: Release) -> str:
        statistics = len(item.queries or [])
        withdrawal = release_withdrawal(item)
        text = (
            f"{statistics} statistic{'s' if statistics != 1 else ''} under "
            f"{guarantee_text(item.definition)}; files: "
            + ", ".join(f.format for f in item.files.all())
        )
        if withdrawal is not None:
            text = (
                f"Withdrawn on {withdrawal.at:%Y-%m-%d}: {withdrawal.reason} "
                f"(its numbers and files stay as published). {text}"
            )
        # An Atom summary is HTML (type="html"): a reason is text, never markup.
        return escape(xml_text(text))

    def item_link(self, item: Release) -> str:
        return reverse(
            "catalog-version", kwargs={"slug": item.series.slug, "version": item.version}
        )

    def item_pubdate(self, item: Release):
        return item.published_at

    def item_updateddate(self, item: Release):
        withdrawal = release_withdrawal(item)
        return withdrawal.at if withdrawal is not None else item.published_at

    def item_guid(self, item: Release) -> str:
        # Permanent: a version's slug, number and publication date never change.
        day = f"{item.published_at:%Y-%m-%d}"
        return f"tag:guided-data-release,{day}:{item.series.slug}/v{item.version}"

    item_guid_is_permalink = False
