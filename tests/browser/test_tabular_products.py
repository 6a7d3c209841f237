"""Quantiles, a 2-way table and a histogram for any range in a real browser: the curator's
preview draws every simulated chart, and the public release page draws a chart per product and
answers any range, with no script error."""

import math

import pytest

from releases.models import Release
from releases.services.datasets import dataset_create, dataset_schema_update
from releases.services.releases import release_draft_create, release_submit
from tests.browser.conftest import screenshot
from tests.conftest import CLINIC_SCHEMA, csv_upload, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

QUERIES = [
    {"kind": "quantile", "column": "age", "quantiles": [0.25, 0.5, 0.75]},
    {"kind": "marginal", "columns": ["sex", "visits"]},
    {"kind": "count"},
    {"kind": "range_histogram", "column": "age", "bins": 50},
]


def test_quantiles_and_a_table_are_previewed_and_published_with_charts(page, live_server):
    # given a curator's draft of quantiles, a table and a count
    curator = make_user("curator1", "curator")
    dataset = dataset_create(
        owner=curator, name="Clinic", upload=csv_upload(), budget_epsilon="2", declared_size=500
    )
    dataset = dataset_schema_update(
        dataset=dataset,
        user=curator,
        schema={
            **CLINIC_SCHEMA,
            "declared_size": 500,
            "columns": {
                **CLINIC_SCHEMA["columns"],
                "visits": {"kind": "categorical", "categories": ["0", "1", "2"], "other": "3+"},
            },
        },
    )
    draft = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Ages and visits",
        definition={"kind": "pure_dp", "epsilon": 1.0},
        queries=QUERIES,
    )

    # when the curator opens the preview
    page.goto(f"{live_server.url}/accounts/login/?next=/releases/{draft.pk}/preview/")
    page.get_by_label("Username").fill("curator1")
    page.get_by_label("Password").fill("pw-test-12345")
    page.get_by_role("button", name="Log in").click()

    # then every simulated chart is drawn, and the accuracy is said in ranks and cells
    page.wait_for_selector("#simulated-3 .main-svg")
    assert page.locator("#simulated-charts .js-plotly-plot").count() == 4
    text = page.inner_text("main")
    assert "each published quantile's rank is within ±" in text
    assert "each published cell of the table is within ±" in text
    assert "each published bin is within ±" in text
    screenshot(page, "wizard-preview-tables")

    # when it is published and the public opens its page
    release_submit(release=draft, user=curator)
    release = Release.objects.get(pk=draft.pk)
    assert release.status == Release.Status.PUBLISHED
    page.goto(f"{live_server.url}/catalog/{release.series.slug}/v1/")

    # then every product has a chart and no script failed
    page.wait_for_selector("#chart-1 .main-svg")
    page.wait_for_selector("#chart-3 .main-svg")
    assert page.locator("#chart-0.js-plotly-plot").count() == 1
    assert "exponential mechanism" in page.inner_text("main")
    screenshot(page, "release-page-tables")
    assert page.console_errors == []


def test_the_public_asks_any_range_of_a_range_histogram(page, live_server):
    # given a published histogram of 3,000 ages in 200 bins, for any range
    curator = make_user("curator1", "curator")
    ages = "".join(
        f"{round(40 + 18 * math.sin(i * 0.7) * math.cos(i * 0.013), 1)},F,1\n" for i in range(3000)
    )
    dataset = dataset_create(
        owner=curator,
        name="Clinic",
        upload=csv_upload(("age,sex,visits\n" + ages).encode()),
        budget_epsilon="2",
    )
    dataset = dataset_schema_update(dataset=dataset, user=curator, schema=CLINIC_SCHEMA)
    draft = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Ages for any range",
        definition={"kind": "pure_dp", "epsilon": 1.0},
        queries=[{"kind": "range_histogram", "column": "age", "bins": 200}],
    )
    release_submit(release=draft, user=curator)
    release = Release.objects.get(pk=draft.pk)
    assert release.status == Release.Status.PUBLISHED

    # when the public opens its page and asks for ages 20 to 40
    page.goto(f"{live_server.url}/catalog/{release.series.slug}/v1/")
    page.wait_for_selector("#chart-0 .main-svg")
    page.get_by_label("From").fill("20")
    page.get_by_label("To", exact=True).fill("40")
    page.get_by_role("button", name="Show the answer").click()

    # then the page answers that range with its interval
    answer = page.locator(".range-answer")
    answer.wait_for()
    assert "Records from 20 to 40 (40 bins)" in answer.inner_text()
    assert "95% interval" in answer.inner_text()
    screenshot(page, "release-page-range")

    # when the reader drags across the chart instead
    box = page.locator("#chart-0 .nsewdrag").first.bounding_box()
    y = box["y"] + box["height"] / 2
    with page.expect_navigation():
        page.mouse.move(box["x"] + box["width"] * 0.1, y)
        page.mouse.down()
        page.mouse.move(box["x"] + box["width"] * 0.5, y, steps=8)
        page.mouse.up()

    # then the range dragged over is asked and answered
    dragged = page.locator(".range-answer").inner_text()
    assert "Records from" in dragged
    assert "Records from 20 to 40" not in dragged
    assert page.console_errors == []


def test_a_histogram_of_65536_bins_is_drawn_as_512_bars_and_answers_a_drag(page, live_server):
    # given a published histogram of ages in 65,536 bins
    curator = make_user("curator1", "curator")
    ages = "".join(f"{round(40 + 18 * math.sin(i * 0.7), 2)},F,1\n" for i in range(3000))
    dataset = dataset_create(
        owner=curator,
        name="Clinic",
        upload=csv_upload(("age,sex,visits\n" + ages).encode()),
        budget_epsilon="2",
    )
    dataset = dataset_schema_update(dataset=dataset, user=curator, schema=CLINIC_SCHEMA)
    draft = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Ages in fine bins",
        definition={"kind": "pure_dp", "epsilon": 1.0},
        queries=[{"kind": "range_histogram", "column": "age", "bins": 65_536}],
    )
    release_submit(release=draft, user=curator)
    release = Release.objects.get(pk=draft.pk)
    assert release.status == Release.Status.PUBLISHED

    # when the public opens its page
    response = page.goto(f"{live_server.url}/catalog/{release.series.slug}/v1/")
    page.wait_for_selector("#chart-0 .main-svg")

    # then the page is small, the chart has 512 bars and says each sums 128 bins
    assert len(response.body()) < 100_000
    assert page.locator("#chart-0 .point").count() == 512
    assert "Each bar of the chart sums 128 neighbouring bins of the 65,536" in page.content()
    screenshot(page, "release-page-range-65536")

    # and a drag across the chart is answered (the mouse moves in the window: chart in view)
    page.locator("#chart-0").scroll_into_view_if_needed()
    box = page.locator("#chart-0 .nsewdrag").first.bounding_box()
    y = box["y"] + box["height"] / 2
    with page.expect_navigation():
        page.mouse.move(box["x"] + box["width"] * 0.3, y)
        page.mouse.down()
        page.mouse.move(box["x"] + box["width"] * 0.6, y, steps=8)
        page.mouse.up()
    assert "Records from" in page.locator(".range-answer").inner_text()
    assert page.console_errors == []
