"""Restricting a statistic to groups in a real browser: the statistics step's "Only for these
groups" choice reaches the preview, and the confirm page charges disjoint groups once."""

import pytest

from releases.models import Release
from releases.services.releases import release_draft_create
from tests.browser.conftest import screenshot
from tests.conftest import CLINIC_SCHEMA, csv_upload, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def draft():
    from releases.services.datasets import dataset_create, dataset_schema_update

    curator = make_user("curator1", "curator")
    curator.set_password("pw-curator-123")
    curator.save()
    dataset = dataset_create(
        owner=curator, name="Clinic", upload=csv_upload(), budget_epsilon="1.0"
    )
    dataset = dataset_schema_update(dataset=dataset, user=curator, schema=CLINIC_SCHEMA)
    return release_draft_create(
        user=curator,
        dataset=dataset,
        title="Ages by sex",
        definition={"kind": "pure_dp", "epsilon": 1.0},
        queries=[{"kind": "mean", "column": "age"}, {"kind": "mean", "column": "age"}],
    )


def test_two_means_on_disjoint_groups_each_get_the_whole_epsilon(page, live_server, draft):
    # given the curator at the statistics step of a draft with two means of age
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill("curator1")
    page.get_by_label("Password").fill("pw-curator-123")
    page.get_by_role("button", name="Log in").click()
    page.goto(f"{live_server.url}/releases/{draft.pk}/statistics/")

    # when the first is restricted to F and the second to M
    rows = page.locator("tr.statistic-row")
    for index, group in enumerate(["F", "M"]):
        row = rows.nth(index)
        row.locator("summary", has_text="Only for these groups").click()
        row.get_by_label("Only for these groups").select_option(label=group)
    assert rows.nth(0).locator(".share").inner_text() == "on the preview (groups share ε)"
    screenshot(page, "statistics-groups")
    page.get_by_role("button", name="Save and preview accuracy →").click()
    page.wait_for_url(f"**/releases/{draft.pk}/preview/")

    # then the draft holds both restrictions, the preview names them, and each mean got ε 1
    release = Release.objects.get(pk=draft.pk)
    assert [q["where"] for q in release.queries] == [
        {"column": "sex", "in": ["F"]},
        {"column": "sex", "in": ["M"]},
    ]
    text = page.inner_text("main")
    assert "where sex is F" in text
    assert "where sex is M" in text
    assert [entry["epsilon"] for entry in release.preview] == [1.0, 1.0]
    # each mean's ε, in the preview's ε column
    assert page.locator("#preview tbody tr td:nth-child(4)").all_inner_texts() == ["1", "1"]
    assert page.console_errors == []
