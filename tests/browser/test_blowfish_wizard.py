"""A curator configures a Blowfish distance-threshold release and compares it with ε-DP."""

import pytest
from playwright.sync_api import expect

from releases.models import Release
from releases.services.datasets import dataset_create, dataset_schema_update
from tests.browser.conftest import screenshot, wait_until
from tests.conftest import CLINIC_SCHEMA, csv_upload, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_blowfish_distance_threshold_preview_sits_beside_epsilon_dp(page, live_server):
    # given a curator with a declared dataset
    curator = make_user("curator1", "curator")
    dataset = dataset_create(
        owner=curator, name="Clinic", upload=csv_upload(), budget_epsilon="2", declared_size=500
    )
    dataset_schema_update(
        dataset=dataset,
        user=curator,
        schema={
            **CLINIC_SCHEMA,
            "declared_size": 500,
            "columns": {
                **CLINIC_SCHEMA["columns"],
                "age": {"kind": "numeric", "lower": 0, "upper": 100, "fill": 0},
            },
        },
    )
    page.goto(f"{live_server.url}/accounts/login/?next=/datasets/{dataset.pk}/releases/new/")
    page.get_by_label("Username").fill("curator1")
    page.get_by_label("Password").fill("pw-test-12345")
    page.get_by_role("button", name="Log in").click()

    # when they ask the questionnaire for a starting point and take it
    page.get_by_text("Not sure where to start?").click()
    page.get_by_label("How harmful would disclosing one person's data be?").select_option("severe")
    page.get_by_label("How many releases of this table are planned?").select_option("few")
    page.get_by_role("button", name="Suggest").click()
    assert "ε = 0.125" in page.inner_text("#suggestion")
    page.get_by_role("link", name="Use this ε").click()
    assert page.input_value("#id_epsilon") == "0.125"

    # and choose Blowfish with a distance threshold of 5 on age
    page.get_by_label("Release title").fill("Ages under Blowfish")
    page.get_by_label("Blowfish privacy with a policy").check()
    expect(page.locator("#delta-section")).to_be_hidden()
    expect(page.locator("#policy-section")).to_be_visible()
    page.get_by_label("Policy", exact=True).select_option("distance_threshold")
    page.get_by_label("Column of the policy").select_option("age")
    page.get_by_label("θ: distance within which values are protected").fill("5")
    page.get_by_label("ε for this release").fill("1")
    page.wait_for_selector("#distance-chart .main-svg")
    expect(page.locator("#blowfish-explanation")).to_contain_text("closer than θ = 5")
    # age declares a fill value here, so whether it is missing is protected and not listed
    expect(page.locator("#blowfish-explanation")).not_to_contain_text("is missing")
    wait_until(page, "document.getElementById('id_truth_probability').value === '0.73106'")
    screenshot(page, "wizard-blowfish")
    page.get_by_role("button", name="Save and choose statistics →").click()

    # and publish a count and the sum of age
    rows = page.locator("tr.statistic-row")
    page.get_by_role("button", name="+ Add a statistic").click()
    rows.nth(1).get_by_label("Statistic").select_option("sum")
    rows.nth(1).get_by_label("Column").select_option("age")
    page.get_by_role("button", name="Save and preview accuracy →").click()

    # then the preview shows the policy's error next to ε-DP's, and the count is exact
    page.wait_for_selector("#blowfish-comparison")
    release = Release.objects.get(title="Ages under Blowfish")
    assert release.definition["policy"] == {
        "graph": "distance_threshold",
        "column": "age",
        "theta": 5.0,
    }
    count, age_sum = release.preview
    assert count["mechanism"].startswith("none")
    assert age_sum["sensitivity"] == 5.0
    assert age_sum["pure_dp"]["sensitivity"] == 100.0
    # Blowfish: the count is free, so the sum gets all of ε = 1 and b = 5/1. ε-DP: the count and
    # the sum share ε, so b = 100/0.5.
    assert age_sum["expected_abs_error"] == pytest.approx(5.0)
    assert age_sum["pure_dp"]["expected_abs_error"] == pytest.approx(200.0)
    table = page.inner_text("#preview")
    assert "Same ε under ε-DP" in table
    assert "sensitivity 100" in table
    page.wait_for_selector("#simulated-charts .main-svg")
    screenshot(page, "wizard-blowfish-preview")
    assert page.console_errors == []
