"""A published k-means release in a real browser: the public page draws the centroids as a
Plotly scatter sized by cluster, lists every cluster in a table, and no script fails."""

import pytest

from releases.models import Release
from releases.services.datasets import dataset_create, dataset_schema_update
from releases.services.releases import release_draft_create, release_submit
from tests.browser.conftest import screenshot
from tests.conftest import csv_upload, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CENTRES = [(40, 40, 200), (200, 60, 40), (120, 220, 120)]
PIXELS = b"r,g,b\n" + b"".join(
    f"{r + i % 7 - 3},{g + i % 5 - 2},{b + i % 3 - 1}\n".encode()
    for i in range(600)
    for r, g, b in [CENTRES[i % 3]]
)
SCHEMA = {
    "columns": {c: {"kind": "numeric", "lower": 0, "upper": 255} for c in ("r", "g", "b")},
    "declared_size": 600,
}


def test_the_public_page_draws_the_centroids_and_lists_them(page, live_server):
    # given a published release of a count and the centroids of r, g and b
    curator = make_user("curator1", "curator")
    dataset = dataset_create(
        owner=curator, name="Pixels", upload=csv_upload(PIXELS, "pixels.csv"), budget_epsilon="10"
    )
    dataset = dataset_schema_update(dataset=dataset, user=curator, schema=SCHEMA)
    draft = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Pixel colours",
        definition={"kind": "pure_dp", "epsilon": 8.0},
        queries=[
            {"kind": "count"},
            {"kind": "kmeans", "columns": ["r", "g", "b"], "k": 3, "iterations": 5},
        ],
    )
    release_submit(release=draft, user=curator)
    release = Release.objects.get(pk=draft.pk)
    assert release.status == Release.Status.PUBLISHED, release.failure_reason

    # when the public opens its page
    page.goto(f"{live_server.url}/catalog/{release.series.slug}/v1/")

    # then the scatter is drawn: one marker (and one label) per cluster, with error bars
    page.wait_for_selector("#chart-1 .main-svg")
    assert page.locator("#chart-1.js-plotly-plot").count() == 1
    assert page.locator("#chart-1 .scatterlayer .point").count() == 3
    assert page.locator("#chart-1 .scatterlayer .textpoint").count() == 3
    assert page.locator("#chart-1 .errorbar").count() == 3
    assert page.locator("#chart-1 .xtitle").text_content() == "r"
    assert page.locator("#chart-1 .ytitle").text_content() == "g"
    # the larger cluster, the larger marker
    sizes = page.evaluate(
        """() => Array.from(document.querySelectorAll('#chart-1 .scatterlayer .point'))
              .map((p) => p.getBBox().width)"""
    )
    data = page.evaluate("() => JSON.parse(document.getElementById('chart-data').textContent)")
    (chart,) = [c for c in data if c["id"] == "chart-1"]
    order = sorted(range(3), key=lambda i: chart["sizes"][i])
    assert [sizes[i] for i in order] == sorted(sizes)

    # and hovering a cluster shows its size and every coordinate
    page.locator("#chart-1 .scatterlayer .point").first.hover(force=True)
    page.wait_for_selector("#chart-1 .hoverlayer .hovertext")
    hover = page.locator("#chart-1 .hoverlayer .hovertext").text_content()
    assert "cluster 1" in hover
    assert "size " in hover
    for column in ("r ", "g ", "b "):
        assert column in hover

    # and the table lists every cluster with its size and coordinates
    table = page.locator("#statistic-1 table.clusters")
    assert table.locator("caption").inner_text().startswith("Clusters of r, g, b")
    assert table.locator("thead th").all_inner_texts() == ["Cluster", "Size", "r", "g", "b"]
    assert table.locator("tbody tr").count() == 3
    assert table.locator("tbody th[scope=row]").all_inner_texts() == ["1", "2", "3"]
    assert "What was clustered" in page.inner_text("#statistic-1")
    screenshot(page, "release-page-kmeans")
    assert page.console_errors == []
