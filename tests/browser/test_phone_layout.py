"""Curator and compliance pages on a phone-sized window: nothing overflows sideways (wide tables
scroll inside their own box)."""

import pytest

from releases.services.datasets import dataset_create, dataset_schema_update
from tests.browser.conftest import screenshot
from tests.conftest import CLINIC_SCHEMA, csv_upload, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}


def log_in(page, base_url: str, username: str, next_path: str) -> None:
    page.goto(f"{base_url}/accounts/login/?next={next_path}")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill("pw-test-12345")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_load_state("networkidle")


@pytest.mark.parametrize(
    ("user", "role", "path"),
    [
        ("curator1", "curator", "/datasets/"),
        ("curator1", "curator", "/datasets/{dataset}/"),
        ("curator1", "curator", "/datasets/{dataset}/releases/new/"),
        ("curator1", "curator", "/datasets/new/"),
        ("auditor", "compliance", "/audit/"),
    ],
)
def test_page_fits_a_phone_screen(new_context, live_server, user, role, path):
    # given
    curator = make_user("curator1", "curator")
    if role == "compliance":
        make_user(user, role)
    dataset = dataset_create(
        owner=curator, name="Clinic", upload=csv_upload(), budget_epsilon="1", declared_size=100
    )
    dataset_schema_update(dataset=dataset, user=curator, schema=CLINIC_SCHEMA)
    context = new_context(viewport=PHONE)
    page = context.new_page()

    # when
    log_in(page, live_server.url, user, path.format(dataset=dataset.pk))

    # then
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    screenshot(page, "phone" + path.format(dataset="d").replace("/", "-").rstrip("-"))
