"""A published synthetic table in a real browser: the page draws each column's published shares
beside the synthetic rows' (a menu picks the column), says the rows are not real, and the rows
download."""

import csv
import io
from pathlib import Path

import pytest

from releases.models import Release
from releases.services.datasets import dataset_create, dataset_schema_update
from releases.services.releases import release_draft_create, release_submit
from tests.browser.conftest import screenshot, wait_until
from tests.conftest import csv_upload, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WARDS = b"ward,sex,age\n" + b"".join(
    b"%s,%s,%d\n" % ([b"a", b"b", b"c"][i % 3], [b"F", b"M"][(i // 3) % 2], 20 + i % 60)
    for i in range(1_500)
)
SCHEMA = {
    "columns": {
        "ward": {"kind": "categorical", "categories": ["a", "b", "c"], "other": "o", "fill": "a"},
        "sex": {"kind": "categorical", "categories": ["F", "M"], "other": "o", "fill": "F"},
        "age": {"kind": "numeric", "lower": 0, "upper": 100, "fill": 40},
    },
    "declared_size": 1_500,
}


def test_the_public_page_draws_the_marginals_and_the_rows_download(page, live_server):
    # given a synthetic table of three columns under ε-DP
    curator = make_user("curator1", "curator")
    dataset = dataset_create(
        owner=curator, name="Wards", upload=csv_upload(WARDS, "w.csv"), budget_epsilon="5"
    )
    dataset = dataset_schema_update(dataset=dataset, user=curator, schema=SCHEMA)
    draft = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Wards",
        definition={"kind": "pure_dp", "epsilon": 2.0},
        queries=[{"kind": "synthetic", "columns": ["ward", "sex", "age"]}],
    )
    release_submit(release=draft, user=curator)
    release = Release.objects.get(pk=draft.pk)
    assert release.status == Release.Status.PUBLISHED, release.failure_reason

    # when the public opens its page
    page.goto(f"{live_server.url}/catalog/{release.series.slug}/v1/")

    # then the first column's buckets are drawn twice: published counts and synthetic rows
    page.wait_for_selector("#chart-0 .main-svg")
    bars = page.locator("#chart-0 .barlayer .point")
    assert bars.count() == 2 * 4  # a, b, c and the other bucket, twice
    legend = page.locator("#chart-0 .legendtext").all_text_contents()
    assert legend == ["published counts", "synthetic rows"]
    summary = page.inner_text("#statistic-0 .records-summary")
    assert "The rows are not real records" in summary
    screenshot(page, "release-page-synthetic")

    # and the menu shows another column: age's ten bins, twice
    page.locator("#chart-0 .updatemenu-header").click()
    page.locator("#chart-0 .updatemenu-dropdown-button", has_text="age").click()
    wait_until(page, "document.querySelectorAll('#chart-0 .barlayer .point').length === 20")

    # and the rows download: a header and as many rows as the page says
    with page.expect_download() as download:
        page.get_by_role("link", name="Download the records of statistic 1 (CSV)").click()
    rows = list(csv.reader(io.StringIO(Path(download.value.path()).read_text())))
    assert rows[0] == ["ward", "sex", "age"]
    assert f"{len(rows) - 1:,} rows generated" in summary
    assert page.console_errors == []
