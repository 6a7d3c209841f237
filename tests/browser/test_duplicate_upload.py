"""A curator uploads a table already stored: the page refuses it as an error, keeps what was
typed, and lets the curator confirm a new collection with a checkbox."""

import pytest

from releases.models import Dataset
from releases.services.datasets import dataset_create
from tests.browser.conftest import screenshot
from tests.conftest import CLINIC_CSV, csv_upload, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_duplicate_upload_is_an_error_with_a_confirm_box(page, live_server, tmp_path):
    # given a curator whose table is already stored
    curator = make_user("curator1", "curator")
    first = dataset_create(
        owner=curator, name="Clinic 2024", upload=csv_upload(), budget_epsilon="1"
    )
    page.goto(f"{live_server.url}/accounts/login/?next=/datasets/new/")
    page.get_by_label("Username").fill("curator1")
    page.get_by_label("Password").fill("pw-test-12345")
    page.get_by_role("button", name="Log in").click()
    csv_path = tmp_path / "clinic.csv"
    csv_path.write_bytes(CLINIC_CSV)

    # when they upload the same file again
    page.get_by_label("Name").fill("Clinic 2025")
    page.get_by_label("File").set_input_files(str(csv_path))
    page.get_by_text("Set the budget yourself").click()
    page.get_by_label("Total privacy budget (ε)").fill("2.5")
    page.get_by_role("button", name="Upload").click()

    # then it is refused as an error naming the earlier dataset, with what was typed kept
    error = page.locator("#duplicate-upload")
    assert error.get_attribute("role") == "alert"
    assert f"your dataset #{first.pk} “Clinic 2024”" in error.inner_text()
    assert page.input_value("#id_name") == "Clinic 2025"
    assert page.input_value("#id_budget_epsilon") == "2.5"
    screenshot(page, "upload-duplicate-refused")
    assert Dataset.objects.count() == 1

    # when they confirm a new collection and choose the file again
    page.get_by_label("This is a new collection of records").check()
    page.get_by_label("File").set_input_files(str(csv_path))
    page.get_by_role("button", name="Upload").click()

    # then the pair is created and the dataset page says so
    # (the upload page sends the form in the background: wait for the dataset page first)
    assert "The same bytes were already stored as your dataset" in page.inner_text("#duplicate-of")
    second = Dataset.objects.get(name="Clinic 2025")
    assert second.duplicate_of == first
    assert page.console_errors == []
