"""The dataset page's column form in a real browser (issue 13, point 3): a column's fields follow
its kind as it changes, with scripts and without, and categories are tags edited with the
keyboard alone."""

import pytest
from playwright.sync_api import expect

from releases.models import Dataset
from releases.services.datasets import dataset_create, dataset_schema_update
from tests.browser.conftest import screenshot
from tests.conftest import CLINIC_SCHEMA, csv_upload, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def log_in(page, base_url: str, next_path: str) -> None:
    page.goto(f"{base_url}/accounts/login/?next={next_path}")
    page.get_by_label("Username").fill("curator1")
    page.get_by_label("Password").fill("pw-test-12345")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_load_state("networkidle")


@pytest.fixture
def clinic() -> Dataset:
    curator = make_user("curator1", "curator")
    dataset = dataset_create(owner=curator, name="Clinic", upload=csv_upload(), budget_epsilon="1")
    return dataset_schema_update(dataset=dataset, user=curator, schema=CLINIC_SCHEMA)


def test_changing_a_columns_kind_shows_only_that_kinds_fields_and_loses_nothing(
    page, live_server, clinic
):
    # given age declared numeric
    log_in(page, live_server.url, f"/datasets/{clinic.pk}/")
    lower = page.get_by_label("Lower bound of age")
    typical = page.get_by_label("Typical value of age (public)")
    categories = page.get_by_label("Categories of age")
    fill = page.get_by_label("Fill missing age with")
    expect(lower).to_be_visible()
    expect(typical).to_be_visible()
    expect(categories).to_be_hidden()
    expect(fill).to_have_attribute("placeholder", "e.g. 0")

    # when made categorical
    page.get_by_label("Kind of age").select_option("categorical")

    # then
    expect(lower).to_be_hidden()
    expect(typical).to_be_hidden()
    expect(categories).to_be_visible()
    expect(page.get_by_label("Other bucket of age")).to_be_visible()
    expect(fill).to_have_attribute("placeholder", "e.g. F")
    screenshot(page, "schema-columns-kind-switched")

    # when made an identifier
    page.get_by_label("Kind of age").select_option("identifier")

    # then nothing is asked
    expect(categories).to_be_hidden()
    expect(fill).to_be_hidden()
    age_row = page.locator("tr.schema-column", has=page.get_by_label("Kind of age"))
    expect(age_row.get_by_text("Not used by any statistic: nothing to declare.")).to_be_visible()

    # when made numeric again, the bounds are still there
    page.get_by_label("Kind of age").select_option("numeric")
    expect(lower).to_be_visible()
    expect(lower).to_have_value("0.0")
    assert page.console_errors == []


def test_categories_are_tags_added_and_removed_with_the_keyboard(page, live_server, clinic):
    # given sex declared with F and M
    log_in(page, live_server.url, f"/datasets/{clinic.pk}/")
    entry = page.get_by_label("Categories of sex")
    tags = page.locator("tr.schema-column", has=entry).locator(".tags li span")
    expect(tags).to_have_text(["F", "M"])

    # when X is typed and Enter pressed, Y is typed with a comma, and Backspace removes Y
    entry.focus()
    page.keyboard.type("X")
    page.keyboard.press("Enter")
    page.keyboard.type("Y,")
    expect(tags).to_have_text(["F", "M", "X", "Y"])
    page.keyboard.press("Backspace")

    # then Enter added a tag and did not submit the form
    expect(tags).to_have_text(["F", "M", "X"])
    expect(entry).to_have_value("")
    expect(entry).to_be_focused()
    expect(page.get_by_role("status").filter(has_text="Removed Y")).to_have_count(1)

    # when the keyboard reaches F's remove button and presses it
    remove_f = page.get_by_role("button", name="Remove category F from sex")
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Shift+Tab")
    expect(remove_f).to_be_focused()
    page.keyboard.press("Enter")

    # then F is gone and the focus is back in the box
    expect(tags).to_have_text(["M", "X"])
    expect(entry).to_be_focused()
    screenshot(page, "schema-columns-tags")

    # when saved
    page.get_by_role("button", name="Save schema").click()

    # then the tags are the declared categories
    expect(page.locator("main")).to_contain_text("Schema saved.")
    clinic.refresh_from_db()
    assert clinic.schema["columns"]["sex"]["categories"] == ["M", "X"]
    assert page.console_errors == []


def test_without_scripts_the_fields_still_follow_the_kind_and_the_form_saves(
    new_context, live_server, clinic
):
    # given a browser with scripts off
    page = new_context(java_script_enabled=False).new_page()
    log_in(page, live_server.url, f"/datasets/{clinic.pk}/")
    expect(page.get_by_label("Categories of visits")).to_be_hidden()

    # when visits is made categorical and its categories typed comma-separated
    page.get_by_label("Kind of visits").select_option("categorical")
    page.get_by_label("Categories of visits").fill("none, some, many")
    page.get_by_role("button", name="Save schema").click()

    # then
    expect(page.get_by_label("Lower bound of visits")).to_be_hidden()
    expect(page.locator("main")).to_contain_text("Schema saved.")
    clinic.refresh_from_db()
    assert clinic.schema["columns"]["visits"] == {
        "kind": "categorical",
        "categories": ["none", "some", "many"],
    }
