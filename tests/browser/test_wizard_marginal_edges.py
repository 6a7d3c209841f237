"""The statistics step in a real browser: a table of two numeric columns asks for the second
column's edges ("Edges across") only when it is numeric, and reaches the preview."""

import pytest
from playwright.sync_api import expect

from releases.models import Release
from releases.services.datasets import dataset_create, dataset_schema_update
from releases.services.releases import release_draft_create
from tests.browser.conftest import screenshot
from tests.conftest import CLINIC_SCHEMA, csv_upload, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def open_statistics_step(page, live_server) -> Release:
    """A curator's draft of one count on the clinic table (age 0–100 and visits 0–10 numeric,
    sex categorical), its statistics step open in the browser."""
    curator = make_user("curator1", "curator")
    dataset = dataset_create(
        owner=curator, name="Clinic", upload=csv_upload(), budget_epsilon="2", declared_size=500
    )
    dataset = dataset_schema_update(
        dataset=dataset, user=curator, schema={**CLINIC_SCHEMA, "declared_size": 500}
    )
    draft = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Ages and visits",
        definition={"kind": "pure_dp", "epsilon": 1.0},
        queries=[{"kind": "count"}],
    )
    page.goto(f"{live_server.url}/accounts/login/?next=/releases/{draft.pk}/statistics/")
    page.get_by_label("Username").fill("curator1")
    page.get_by_label("Password").fill("pw-test-12345")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_selector("#statistics-form")
    return draft


def test_a_table_of_two_numeric_columns_takes_edges_for_each(page, live_server):
    # given
    draft = open_statistics_step(page, live_server)
    rows = page.locator("tr.statistic-row")
    expect(rows.nth(0).get_by_label("Edges across")).to_be_hidden()

    # when the curator adds a table of ages across a categorical column
    page.get_by_role("button", name="+ Add a statistic").click()
    table = rows.nth(1)
    table.get_by_label("Statistic").select_option("marginal")
    table.get_by_label("Column", exact=True).select_option("age")
    table.get_by_label("Table across").select_option("sex")

    # then no second edges are asked for
    expect(table.get_by_label("Edges across")).to_be_hidden()

    # when the column across is numeric too
    table.get_by_label("Table across").select_option("visits")

    # then its edges are asked for, and both are filled
    expect(table.get_by_label("Edges across")).to_be_visible()
    table.get_by_label("Bins", exact=True).fill("0, 18, 65, 100")
    table.get_by_label("Edges across").fill("0, 2, 5, 10")

    # and accuracy first prices the table with both columns' edges
    table.get_by_label("Error you can live with").fill("20")
    table.get_by_label("Error you can live with").press("Tab")
    expect(table.locator(".needed")).to_contain_text("needs ε =")
    screenshot(page, "wizard-statistics-two-numeric-table")
    page.get_by_role("button", name="Save and preview accuracy →").click()

    # then the preview gives the table's expected accuracy
    page.wait_for_url(f"**/releases/{draft.pk}/preview/")
    text = page.inner_text("main")
    assert "each published cell of the table is within ±" in text
    assert "Table of two columns" in text
    draft.refresh_from_db()
    assert draft.queries[1] == {
        "kind": "marginal",
        "columns": ["age", "visits"],
        "bins": {"age": [0.0, 18.0, 65.0, 100.0], "visits": [0.0, 2.0, 5.0, 10.0]},
    }
    assert draft.preview[1]["expected_abs_error"] > 0
    assert page.console_errors == []


def test_kmeans_is_built_from_ticked_numeric_columns_and_previewed(page, live_server):
    # given
    draft = open_statistics_step(page, live_server)
    rows = page.locator("tr.statistic-row")
    expect(rows.nth(0).get_by_label("k: number of clusters")).to_be_hidden()

    # when the curator adds clusters
    page.get_by_role("button", name="+ Add a statistic").click()
    clusters = rows.nth(1)
    clusters.get_by_label("Statistic").select_option("kmeans")

    # then the clusters' fields replace the single column's, with numeric columns only
    expect(clusters.get_by_label("k: number of clusters")).to_be_visible()
    expect(clusters.get_by_label("k: number of clusters")).to_have_value("4")
    # left empty: the engine chooses them from ε and the declared size
    expect(clusters.get_by_label("Iterations")).to_have_value("")
    expect(clusters.get_by_label("Iterations")).to_have_attribute("placeholder", "automatic")
    expect(clusters.get_by_label("Column", exact=True)).to_be_hidden()
    expect(clusters.locator("input[type=checkbox][name$='-columns']")).to_have_count(2)
    # (the row's synthetic-table boxes, hidden, also list sex and age: look at the clusters' own)
    expect(clusters.locator("input[name$='-columns'][value=sex]")).to_have_count(0)

    # when two columns are ticked and 3 clusters asked for
    clusters.locator("input[name$='-columns'][value=age]").check()
    clusters.locator("input[name$='-columns'][value=visits]").check()
    clusters.get_by_label("k: number of clusters").fill("3")
    screenshot(page, "wizard-statistics-kmeans")
    page.get_by_role("button", name="Save and preview accuracy →").click()

    # then the preview lists the clusters
    page.wait_for_url(f"**/releases/{draft.pk}/preview/")
    assert "Clusters (k-means centres)" in page.inner_text("main")
    draft.refresh_from_db()
    assert draft.queries[1] == {
        "kind": "kmeans",
        "columns": ["age", "visits"],
        "k": 3,
    }
    assert page.console_errors == []
