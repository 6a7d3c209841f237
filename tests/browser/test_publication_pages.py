"""The publication pages in a real browser: the release card prints on A4 with nothing wider
than the page and no navigation; a second version's diff page; the budget ledger's chart."""

import re

import pytest

from releases.models import Release
from releases.services.releases import release_draft_create, release_submit
from tests.browser.conftest import screenshot
from tests.conftest import CLINIC_SCHEMA, csv_upload, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# A4 at CSS's 96 px per inch, less the card's 15 mm margins: 180 mm of printable width.
PRINTABLE_WIDTH_PX = 180 / 25.4 * 96
A4_POINTS = (595, 842)  # PDF user space units of an A4 page (1/72 inch)
# The right edge of the page's widest element, in CSS pixels.
WIDEST = (
    "Math.max(...[...document.querySelectorAll('main *')]"
    ".map(e => e.getBoundingClientRect().right))"
)


@pytest.fixture
def two_versions(settings):
    from releases.services.datasets import dataset_create, dataset_schema_update

    curator = make_user("curator1", "curator")
    dataset = dataset_create(
        owner=curator, name="Clinic", upload=csv_upload(), budget_epsilon="2.0"
    )
    dataset = dataset_schema_update(dataset=dataset, user=curator, schema=CLINIC_SCHEMA)
    queries = [{"kind": "count"}, {"kind": "histogram", "column": "sex"}]
    first = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Clinic visits 2026",
        definition={"kind": "pure_dp", "epsilon": 0.5},
        queries=queries,
    )
    release_submit(release=first, user=curator)
    first = Release.objects.get(pk=first.pk)
    second = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Clinic visits 2026",
        definition={"kind": "pure_dp", "epsilon": 0.8},
        queries=[*queries, {"kind": "mean", "column": "age"}],
        series_slug=first.series.slug,
    )
    release_submit(release=second, user=curator)
    second = Release.objects.get(pk=second.pk)
    assert (first.version, second.version) == (1, 2)
    return curator, dataset, first, second


def test_the_release_card_prints_on_a4_without_navigation(page, live_server, two_versions):
    _, _, first, _ = two_versions
    page.goto(f"{live_server.url}/catalog/{first.series.slug}/v1/")
    page.get_by_role("link", name="Release card").click()
    page.wait_for_load_state()
    text = page.inner_text("main")
    assert "ε = 0.5" in text
    for record in first.files.all():
        assert record.sha256 in text
    # each statistic's mechanism, sensitivity and noise scale: behind "Technical details"
    details = page.locator(".card-mechanism p").first
    assert not details.is_visible()
    screenshot(page, "release-card")

    page.emulate_media(media="print")
    # and on paper, printed whether or not the reader opened them
    assert details.is_visible()
    assert "noise scale" in details.inner_text()
    widest = page.evaluate(WIDEST)
    hidden = page.evaluate(
        "[...document.querySelectorAll('nav, .site-header')].every("
        "e => getComputedStyle(e).display === 'none')"
    )
    pdf = page.pdf(format="A4", prefer_css_page_size=True)

    page.set_viewport_size({"width": round(PRINTABLE_WIDTH_PX), "height": 1100})
    widest_on_paper = page.evaluate(WIDEST)
    assert hidden
    assert widest > 0
    assert widest_on_paper <= PRINTABLE_WIDTH_PX + 1
    boxes = {
        tuple(round(float(v)) for v in box)
        for box in re.findall(rb"/MediaBox\s*\[\s*0\s+0\s+([\d.]+)\s+([\d.]+)\s*\]", pdf)
    }
    assert boxes == {A4_POINTS}
    pages = len(re.findall(rb"/Type\s*/Page[^s]", pdf))
    assert 1 <= pages <= 2


def test_the_diff_page_shows_what_changed_between_two_versions(page, live_server, two_versions):
    _, _, first, _ = two_versions
    page.goto(f"{live_server.url}/catalog/{first.series.slug}/v2/")
    page.get_by_role("link", name="what changed").click()
    page.wait_for_load_state()
    text = page.inner_text("main")
    assert "0.5" in text
    assert "0.8" in text
    assert "mean" in text.lower()
    assert page.console_errors == []
    screenshot(page, "version-diff")


def test_the_ledger_page_draws_the_budget_over_time(page, live_server, two_versions):
    curator, dataset, _, _ = two_versions
    curator.set_password("pw-curator-123")
    curator.save()
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill("curator1")
    page.get_by_label("Password").fill("pw-curator-123")
    page.get_by_role("button", name="Log in").click()
    page.goto(f"{live_server.url}/datasets/{dataset.pk}/")
    page.click("#ledger-link")
    page.wait_for_selector(".main-svg")
    text = page.inner_text("main")
    assert "reservation" in text.lower()
    assert "spend" in text.lower()
    assert page.console_errors == []
    screenshot(page, "budget-ledger")
