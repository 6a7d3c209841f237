"""Every page of the product in Simplified Chinese (issue 13, point 7): the walk the
accessibility scan takes (tests/browser/every_page.py: every route, in each state its users see,
the curator's, the compliance officer's and the error pages, every definition and kind of
statistic, failed, queued, withdrawn and awaiting releases) read by a browser that prefers zh-Hans
finds no interface text left in English, in the pages' words or in what their charts draw. Data
is not interface: what the users named or typed (titles, tables, columns, categories, reasons),
numbers, formulas, addresses, hashes and what a template marks ``translate="no"`` are set aside;
any run of three or more English words left is untranslated. The same walk in English is its
negative control: the check must flag every page there."""

import pytest

from tests.browser.every_page import routes_not_walked, walk_every_page
from tests.browser.test_chinese_pages import (
    CHART_WORDS,
    CHINESE,
    DATA,
    ENGLISH,
    VISIBLE_TEXTS,
    untranslated,
)
from tests.languages import compiled_catalogues  # noqa: F401 (a fixture)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("compiled_catalogues"),
]

# Pages left in English, each with the reason; they say so (<html lang="en">) to the reader's
# browser, which can offer to translate them.
ENGLISH_PAGES = {
    "/api/docs/": "the API reference for developers: Swagger UI's own controls come in English "
    "only, and the endpoints' descriptions are the OpenAPI document's, which the API serves in "
    "English"
}
# What the walk's users named or typed (tests/browser/every_page.py's tables, releases and
# reasons): data, shown as written in any language.
WALK_DATA = [
    "A coding error in the sex column.",
    "A second survey wave.",
    "Collected in error",
    "Clinic awaiting approval",
    "Clinic Blowfish draft",
    "Clinic converting",
    "Clinic draft",
    "Clinic failed",
    "Clinic queued",
    "Clinic raw",
    "Clinic refused",
    "Wards blowfish_published",
    "Wards randomized",
    "Wards approx",
    "Wards kmeans",
    "Wards synthetic",
    "Wards table",
    "Wards draft",
    "Wards models",
    "Long name",
]


def read_every_page(new_context, live_server, product, settings, options: dict) -> dict:
    """Each page the walk opens, read with a browser of the given locale: its untranslated
    runs (its words and its charts') and its <html lang>, keyed by the order it was opened in
    and its address."""
    page = new_context(**options).new_page()
    found: dict[str, list[str]] = {}

    def check() -> None:
        path = page.url.removeprefix(live_server.url)
        key = f"{len(found) // 2:02d} {path}"
        if path in ENGLISH_PAGES:
            assert page.evaluate("document.documentElement.lang") == "en"
            return
        texts = page.evaluate(VISIBLE_TEXTS) + page.locator(CHART_WORDS).all_text_contents()
        found[key] = untranslated(texts, data=DATA + WALK_DATA)
        found[f"{key} lang"] = [page.evaluate("document.documentElement.lang")]

    walked = walk_every_page(page, live_server.url, product, settings, check)
    assert routes_not_walked(walked) == set()
    return found


def test_a_chinese_browser_finds_no_english_on_any_page(
    new_context, live_server, product, settings
):
    # when a browser set to Chinese walks every page in each of its states
    found = read_every_page(new_context, live_server, product, settings, CHINESE)

    # then every page (but the API reference, in English) says it is in Chinese and no
    # interface text is left in English
    languages = {key: texts for key, texts in found.items() if key.endswith(" lang")}
    assert set(map(tuple, languages.values())) == {("zh-hans",)}
    left = {key: runs for key, runs in found.items() if runs and key not in languages}
    assert left == {}


def test_the_same_walk_in_english_finds_english_on_every_page(
    new_context, live_server, product, settings
):
    # when the same walk is read by an English browser (the negative control)
    found = read_every_page(new_context, live_server, product, settings, ENGLISH)

    # then the check flags every page: it can see untranslated text wherever it looks
    pages = [key for key in found if not key.endswith(" lang")]
    assert [key for key in pages if not found[key]] == []
    assert {tuple(found[f"{key} lang"]) for key in pages} == {("en",)}
