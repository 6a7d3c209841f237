"""The wizard in a real browser: with a person key Blowfish is not offered and the page says why
(issue 7, point 1); the preview charts show curator-typed names as text, so no link, style or line
break from a category or column name reaches Plotly's SVG (point 9)."""

import pytest
from playwright.sync_api import expect

from privacy_engine import blowfish_refusal
from releases.models import Release
from releases.services.datasets import dataset_create, dataset_schema_update
from releases.services.releases import release_draft_update
from tests.browser.conftest import wait_until
from tests.conftest import CLINIC_SCHEMA, csv_upload, make_user
from tests.releases.test_inert_charts import BREAK, COLUMN, LINK, STYLED, hostile_draft

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def hostile_preview_draft() -> Release:
    curator = make_user("curator1", "curator")
    draft = hostile_draft(curator)
    return release_draft_update(
        release=draft,
        user=curator,
        queries=[
            {"kind": "count"},
            {"kind": "histogram", "column": "group"},
            {"kind": "sum", "column": COLUMN},
        ],
    )


def open_preview(page, live_server, release: Release) -> None:
    page.goto(f"{live_server.url}/accounts/login/?next=/releases/{release.pk}/preview/")
    page.get_by_label("Username").fill("curator1")
    page.get_by_label("Password").fill("pw-test-12345")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_selector("#simulated-1 .main-svg")
    page.wait_for_selector("#simulated-2 .main-svg")
    page.wait_for_selector("#error-chart .main-svg")


def test_wizard_preview_charts_show_hostile_names_as_literal_text(
    page, live_server, hostile_preview_draft
):
    # given a draft whose category names and column name are HTML

    # when its curator opens the preview step
    open_preview(page, live_server, hostile_preview_draft)

    # then the histogram's tick labels are the category names, character for character
    ticks = page.locator("#simulated-1 .xtick text").all_text_contents()
    assert LINK in ticks
    assert STYLED in ticks
    assert BREAK in ticks
    assert "&lt;b&gt;" in ticks
    assert "AT&T" in ticks
    # and the sum's title, bar label and the error chart's legend carry the column name as text
    assert page.locator("#simulated-2 .gtitle").text_content() == f"sum of {COLUMN}"
    assert page.locator("#simulated-2 .xtick text").all_text_contents() == [f"sum of {COLUMN}"]
    assert f"Sum of {COLUMN}" in page.locator("#error-chart .legendtext").all_text_contents()
    # and no chart holds a link, an inline style from a name, or a second line
    for chart in ("#simulated-0", "#simulated-1", "#simulated-2", "#error-chart"):
        assert page.locator(f"{chart} svg a").count() == 0
        assert page.locator(f'{chart} svg [style*="font-size:90px"]').count() == 0
        assert page.locator(f'{chart} svg [style*="font-weight:bold"]').count() == 0
        assert page.locator(f"{chart} .xtick tspan.line").count() == 0
    assert page.console_errors == []


def test_wizard_preview_hover_shows_hostile_names_as_text(page, live_server, hostile_preview_draft):
    # given the same preview
    open_preview(page, live_server, hostile_preview_draft)

    # when the pointer rests on the first bar of the histogram
    page.evaluate(
        """() => window.Plotly.Fx.hover(
            document.getElementById("simulated-1"), [{curveNumber: 0, pointNumber: 0}])"""
    )
    page.wait_for_selector("#simulated-1 .hoverlayer .hovertext")

    # then the hover text names the category as text, and has no link either
    hover = page.locator("#simulated-1 .hoverlayer text").all_text_contents()
    assert f"({LINK}, 1)" in hover
    assert page.locator("#simulated-1 .hoverlayer a").count() == 0
    assert page.console_errors == []


def test_privacy_step_with_a_person_key_offers_no_blowfish_and_says_why(page, live_server):
    # given a dataset whose rows are grouped by a person key
    curator = make_user("curator1", "curator")
    dataset = dataset_create(
        owner=curator, name="Clinic", upload=csv_upload(), budget_epsilon="2", declared_size=500
    )
    dataset = dataset_schema_update(
        dataset=dataset,
        user=curator,
        schema={**CLINIC_SCHEMA, "declared_size": 500, "person_key": "name"},
    )

    # when its curator starts a release
    page.goto(f"{live_server.url}/accounts/login/?next=/datasets/{dataset.pk}/releases/new/")
    page.get_by_label("Username").fill("curator1")
    page.get_by_label("Password").fill("pw-test-12345")
    page.get_by_role("button", name="Log in").click()
    wait_until(page, "document.getElementById('id_truth_probability').value !== ''")

    # then only the two differential-privacy definitions are offered, with the reason
    expect(page.locator("input[name=definition_kind]")).to_have_count(2)
    expect(page.get_by_label("Blowfish privacy with a policy")).to_have_count(0)
    expect(page.locator("#blowfish-refusal")).to_have_text(blowfish_refusal(dataset.schema))
    expect(page.locator("#policy-section")).to_have_count(0)
    assert page.console_errors == []

    # and ε-DP still makes a draft
    page.get_by_label("Release title").fill("Keyed")
    page.get_by_label("ε-differential privacy (recommended)").check()
    page.get_by_role("button", name="Save and choose statistics →").click()
    page.wait_for_selector("#statistics-form")
    # (ε starts at the release's default share: half of the dataset's budget of 2)
    assert Release.objects.get().definition == {"kind": "pure_dp", "epsilon": 1.0}
    assert page.console_errors == []
