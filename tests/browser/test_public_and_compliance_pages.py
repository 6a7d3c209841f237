"""A visitor finds a release and downloads its CSV; compliance logs in and reviews the trail."""

import hashlib
from pathlib import Path

import pytest

from releases.models import Release, ReleaseFile
from releases.services.releases import release_draft_create, release_submit
from tests.browser.conftest import screenshot
from tests.conftest import CLINIC_SCHEMA, csv_upload, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def published_release(settings, tmp_path):
    from releases.services.datasets import dataset_create, dataset_schema_update

    curator = make_user("curator1", "curator")
    dataset = dataset_create(
        owner=curator, name="Clinic", upload=csv_upload(), budget_epsilon="1.0"
    )
    dataset = dataset_schema_update(dataset=dataset, user=curator, schema=CLINIC_SCHEMA)
    draft = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Clinic visits 2026",
        definition={"kind": "pure_dp", "epsilon": 0.5},
        queries=[
            {"kind": "count"},
            {"kind": "histogram", "column": "sex"},
            {"kind": "mean", "column": "age"},
        ],
    )
    release_submit(release=draft, user=curator)  # the eager task runs on commit
    release = Release.objects.get(pk=draft.pk)
    assert release.status == Release.Status.PUBLISHED
    return release


def test_visitor_finds_release_in_catalog_and_downloads_csv(page, live_server, published_release):
    # given the public catalog
    page.goto(f"{live_server.url}/catalog/")

    # when the visitor searches and opens the release
    page.get_by_label("Search titles").fill("clinic")
    page.get_by_role("button", name="Search").click()
    page.get_by_role("link", name="Clinic visits 2026").click()

    # then the statistics, the guarantee and a chart are shown
    page.wait_for_selector("#chart-1 .main-svg")
    assert "ε = 0.5" in page.inner_text("#guarantee")
    for summary in page.locator("details.technical > summary").all():
        summary.click()  # the mechanisms are behind each statistic's technical details
    assert "Mechanism geometric" in page.inner_text("main")
    screenshot(page, "release-page")

    # and the CSV downloads with the published checksum
    with page.expect_download() as download_info:
        page.get_by_role("link", name="Download CSV").click()
    content = Path(download_info.value.path()).read_bytes()
    published = ReleaseFile.objects.get(release=published_release, format="csv")
    assert hashlib.sha256(content).hexdigest() == published.sha256
    assert page.console_errors == []


def test_compliance_officer_logs_in_and_sees_events_and_chain(page, live_server, published_release):
    # given a compliance officer
    make_user("auditor", "compliance")

    # when they log in and open the audit page
    page.goto(f"{live_server.url}/accounts/login/?next=/audit/")
    page.get_by_label("Username").fill("auditor")
    page.get_by_label("Password").fill("pw-test-12345")
    page.get_by_role("button", name="Log in").click()

    # then the chain status, budgets and events are there
    page.wait_for_selector("#chain-status")
    assert "Hash chain intact" in page.inner_text("#chain-status")
    assert "Signed in as auditor (compliance)" in page.inner_text("header")
    events = page.inner_text("#events")
    assert "release.published" in events
    assert "user.login" in events
    screenshot(page, "audit-page")

    # and filtering by action narrows the list
    page.get_by_label("Action").select_option("release.published")
    page.get_by_role("button", name="Filter").click()
    rows = page.locator("#events tbody tr")
    assert rows.count() == 1
    assert "Every dataset's budget matches the trail" in page.inner_text("#chain-status")

    # and the dataset's privacy report draws its budget over time and lists the release
    page.goto(f"{live_server.url}/audit/")
    page.get_by_role("link", name="Privacy report").first.click()
    page.wait_for_selector("#ledger-chart .main-svg")
    assert published_release.title in page.inner_text("#report-releases")
    screenshot(page, "privacy-report")
    assert page.console_errors == []


def test_pages_fit_a_phone_screen(new_context, live_server, published_release):
    # given a phone-sized window
    context = new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()

    # when the release page is opened
    page.goto(f"{live_server.url}/catalog/{published_release.series.slug}/v1/")

    # then nothing overflows sideways
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390
    screenshot(page, "release-page-phone")
