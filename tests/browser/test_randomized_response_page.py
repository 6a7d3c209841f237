"""A published randomized-response release in a real browser: the page draws each category's
estimated share with its interval, says what the file is, and its records download."""

import math
from pathlib import Path

import pytest

from releases.models import Release
from releases.services.datasets import dataset_create, dataset_schema_update
from releases.services.releases import release_draft_create, release_submit
from tests.browser.conftest import screenshot
from tests.conftest import csv_upload, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ANSWERS = b"smoker,age\n" + b"".join(
    (b"yes" if i % 4 == 0 else b"no") + b",%d\n" % (20 + i % 50) for i in range(2_000)
)
SCHEMA = {
    "columns": {
        "smoker": {"kind": "categorical", "categories": ["yes"], "other": "no", "fill": "no"},
        "age": {"kind": "numeric", "lower": 0, "upper": 100},
    },
    "declared_size": 2_000,
}


def test_the_public_page_draws_the_shares_and_the_records_download(page, live_server):
    # given the two-coin procedure under Blowfish
    curator = make_user("curator1", "curator")
    dataset = dataset_create(
        owner=curator, name="Smokers", upload=csv_upload(ANSWERS, "s.csv"), budget_epsilon="5"
    )
    dataset = dataset_schema_update(dataset=dataset, user=curator, schema=SCHEMA)
    draft = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Smokers",
        definition={"kind": "blowfish", "epsilon": math.log(3), "policy": {"graph": "full_domain"}},
        queries=[{"kind": "randomized_response", "column": "smoker"}],
    )
    release_submit(release=draft, user=curator)
    release = Release.objects.get(pk=draft.pk)
    assert release.status == Release.Status.PUBLISHED, release.failure_reason

    # when the public opens its page
    page.goto(f"{live_server.url}/catalog/{release.series.slug}/v1/")

    # then a bar per category is drawn, with its interval, on a share axis
    page.wait_for_selector("#chart-0 .main-svg")
    assert page.locator("#chart-0 .barlayer .point").count() == 2
    assert page.locator("#chart-0 .errorbar").count() == 2
    assert "estimated share" in page.locator("#chart-0 .ytitle").text_content()
    summary = page.inner_text("#statistic-0 .records-summary")
    assert "2,000 rows in a random order" in summary
    assert "probability 0.75" in summary
    screenshot(page, "release-page-randomized-response")

    # and the records download: a header and a row per record
    with page.expect_download() as download:
        page.get_by_role("link", name="Download the records of statistic 1 (CSV)").click()
    rows = Path(download.value.path()).read_text().splitlines()
    assert rows[0] == "smoker"
    assert len(rows) == 2_001
    assert set(rows[1:]) == {"yes", "no"}
    assert page.console_errors == []
