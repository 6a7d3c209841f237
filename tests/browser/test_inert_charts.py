"""Chart labels from curator input render as text in a real browser (issue 7, point 9): no link,
style or line break from a category or column name reaches the chart's SVG."""

import pytest

from releases.models import Release
from releases.services.releases import release_submit
from tests.conftest import make_user
from tests.releases.test_inert_charts import BREAK, COLUMN, LINK, STYLED, hostile_draft

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def hostile_release() -> Release:
    curator = make_user("curator1", "curator")
    draft = hostile_draft(curator)
    release_submit(release=draft, user=curator)  # the eager task runs on commit
    draft.refresh_from_db()
    assert draft.status == Release.Status.PUBLISHED
    return draft


def test_hostile_labels_render_as_literal_text_in_the_charts(page, live_server, hostile_release):
    # given a published release whose category and column names are HTML

    # when a visitor opens it
    page.goto(f"{live_server.url}/catalog/{hostile_release.series.slug}/v1/")
    page.wait_for_selector("#chart-1 .main-svg")
    page.wait_for_selector("#chart-2 .main-svg")

    # then the tick labels are the names, character for character
    ticks = page.locator("#chart-1 .xtick text").all_text_contents()
    assert LINK in ticks
    assert STYLED in ticks
    assert BREAK in ticks
    assert "&lt;b&gt;" in ticks
    assert "AT&T" in ticks
    assert COLUMN in page.locator("#chart-2 .xtick text").all_text_contents()
    # and no link, inline style from a name, or second line exists in either chart
    for chart in ("#chart-1", "#chart-2"):
        assert page.locator(f"{chart} svg a").count() == 0
        assert page.locator(f'{chart} svg [style*="font-size:90px"]').count() == 0
        assert page.locator(f'{chart} svg [style*="font-weight:bold"]').count() == 0
        assert page.locator(f"{chart} .xtick tspan.line").count() == 0

    # and the hover text is the name as text too
    page.evaluate(
        """() => window.Plotly.Fx.hover(
            document.getElementById("chart-1"), [{curveNumber: 0, pointNumber: 0}])"""
    )
    page.wait_for_selector("#chart-1 .hoverlayer .hovertext")
    hover = page.locator("#chart-1 .hoverlayer .hovertext text").all_text_contents()
    assert any(text.startswith(f"{LINK}: ") for text in hover)
    assert page.locator("#chart-1 .hoverlayer a").count() == 0
    assert page.console_errors == []


def test_unescaped_labels_would_become_markup_negative_control(page, live_server, hostile_release):
    # given the same page, with Plotly loaded
    page.goto(f"{live_server.url}/catalog/{hostile_release.series.slug}/v1/")
    page.wait_for_selector("#chart-1 .main-svg")

    # when a chart is drawn from the raw names, as the page did before
    page.evaluate(
        """([link, styled]) => {
            const target = document.createElement("div");
            target.id = "raw-chart";
            document.body.appendChild(target);
            return window.Plotly.newPlot(target, [{type: "bar", x: [link, styled], y: [1, 2]}]);
        }""",
        [LINK, STYLED],
    )

    # then Plotly builds a link and an inline style: what the checks above would catch
    assert page.locator("#raw-chart svg a").count() == 1
    assert page.locator('#raw-chart svg [style*="font-size:90px"]').count() == 1
