"""Dual control in a real browser: a compliance officer reviews a release awaiting approval,
approves it with a comment, a worker publishes it, and its curator sees who approved it."""

import pytest
from playwright.sync_api import expect

from releases.models import Release
from releases.services.approvals import dataset_approval_requirement_set
from releases.services.datasets import dataset_create, dataset_schema_update
from releases.services.releases import release_draft_create, release_submit
from tests.browser.conftest import screenshot
from tests.conftest import CLINIC_SCHEMA, csv_upload, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def log_in(page, base_url: str, username: str, next_path: str) -> None:
    page.goto(f"{base_url}/accounts/login/?next={next_path}")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill("pw-test-12345")
    page.get_by_role("button", name="Log in").click()


def test_an_officer_approves_and_the_curator_sees_it(page, live_server):
    # given a release awaiting approval on a dataset that requires it
    curator = make_user("curator1", "curator")
    officer = make_user("officer1", "compliance")
    dataset = dataset_create(
        owner=curator, name="Clinic", upload=csv_upload(), budget_epsilon="1.0"
    )
    dataset = dataset_schema_update(dataset=dataset, user=curator, schema=CLINIC_SCHEMA)
    dataset_approval_requirement_set(dataset=dataset, user=officer, required=True)
    draft = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Clinic visits 2026",
        definition={"kind": "pure_dp", "epsilon": 0.5},
        queries=[{"kind": "count"}, {"kind": "histogram", "column": "sex"}],
    )
    release_submit(release=draft, user=curator)

    # when the officer opens the approvals and the release
    log_in(page, live_server.url, "officer1", "/audit/")
    page.get_by_role("link", name="Approvals").click()
    page.get_by_role("link", name=f"#{draft.pk} Clinic visits 2026").click()

    # then they see the guarantee, the risk and the expected accuracy
    expect(page.locator("#approval-risk")).to_contain_text("0.622")
    expect(page.locator("#approval-statistics")).to_contain_text("Histogram of sex")
    screenshot(page, "approval-review")

    # when they approve it with a comment
    page.get_by_label("Comment for the curator and the trail (required)").fill(
        "Categories are public; the count is fine."
    )
    page.get_by_role("button", name="Approve and run").click()

    # then it is decided, and a worker published it
    expect(page.locator("#decided")).to_contain_text("Approved by officer1")
    assert Release.objects.get(pk=draft.pk).status == Release.Status.PUBLISHED

    # and its curator sees who approved it, and why
    page.get_by_role("button", name="Log out").click()
    log_in(page, live_server.url, "curator1", f"/releases/{draft.pk}/")
    expect(page.locator("#approval")).to_contain_text("Approved by officer1 on")
    expect(page.locator("#approval")).to_contain_text("Categories are public; the count is fine.")
    expect(page.locator("#status-text")).to_have_text("Published")
    screenshot(page, "release-approved")
    assert page.console_errors == []
