"""The upload page shows a bar for the transfer, then the dataset page one for the conversion, which
moves by polling the API; errors come back on the form with what was typed, and without JavaScript
the form posts as it always did."""

import re

import pytest
from playwright.sync_api import expect

from audit.chain import AuditAction
from audit.models import AuditEvent
from releases.models import Dataset
from releases.services.datasets import dataset_convert, dataset_create
from tests.browser.conftest import screenshot, wait_until
from tests.conftest import csv_upload, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# About 1.9 MB: above the inline limit the tests set, and long enough to send at a throttled rate
# that the bar is seen between 0 and 1.
ROWS = 150_000
LARGE_TABLE = "patient,age,sex\n" + "".join(
    f"P{i:06d},{(i * 37) % 90 + 5},{'F' if i % 3 else 'M'}\n" for i in range(ROWS)
)
UPLOAD_BYTES_PER_SECOND = 1024 * 1024
DATASET_PAGE = re.compile(r"/datasets/\d+/$")

# Every value the transfer bar takes, kept on the window: the page's document is replaced by the
# server's answer, the window (and this list) stays.
RECORD_TRANSFER = """() => {
  window.transferValues = [];
  const bar = document.getElementById("transfer-progress");
  new MutationObserver(() => window.transferValues.push(bar.value))
    .observe(bar, {attributes: true, attributeFilter: ["value"]});
}"""


def _log_in(page, live_server, next_path: str):
    curator = make_user("curator1", "curator")
    page.goto(f"{live_server.url}/accounts/login/?next={next_path}")
    page.get_by_label("Username").fill("curator1")
    page.get_by_label("Password").fill("pw-test-12345")
    page.get_by_role("button", name="Log in").click()
    return curator


def _throttle_upload(page, bytes_per_second: int) -> None:
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send(
        "Network.emulateNetworkConditions",
        {
            "offline": False,
            "latency": 0,
            "downloadThroughput": -1,
            "uploadThroughput": bytes_per_second,
        },
    )


def test_a_large_upload_shows_the_transfer_then_the_ready_dataset(
    page, live_server, tmp_path, settings
):
    # given a curator on the upload page, a table above the inline limit and a slow connection
    settings.DATASET_CONVERT_INLINE_BYTES = 64 * 1024
    _log_in(page, live_server, "/datasets/new/")
    csv_path = tmp_path / "register.csv"
    csv_path.write_text(LARGE_TABLE)
    assert csv_path.stat().st_size > 3 * UPLOAD_BYTES_PER_SECOND / 2
    page.evaluate(RECORD_TRANSFER)
    _throttle_upload(page, UPLOAD_BYTES_PER_SECOND)

    # when they upload it
    page.get_by_label("Name").fill("Register 2026")
    page.get_by_label("File").set_input_files(str(csv_path))
    page.get_by_text("Set the budget yourself").click()
    page.get_by_label("Total privacy budget (ε)").fill("2")
    page.get_by_role("button", name="Upload").click()

    # then the bar shows the transfer under way, the button waits for it
    expect(page.locator("#upload-transfer")).to_be_visible()
    wait_until(
        page,
        "(() => { const v = document.getElementById('transfer-progress').value; "
        "return v > 0.2 && v < 0.8; })()",
    )
    expect(page.locator("#transfer-text")).to_contain_text(re.compile(r"Sent [\d.]+ of [\d.]+ MB"))
    expect(page.get_by_role("button", name="Upload")).to_be_disabled()
    screenshot(page, "upload-transfer-progress")
    page.screenshot(path="/tmp/upload-progress.png", full_page=True)

    # and the page ends on the dataset, converted by the (here eager) Celery task, with its columns
    page.wait_for_url(DATASET_PAGE, timeout=30_000)
    expect(page.get_by_label("Kind of patient")).to_be_visible()
    expect(page.get_by_label("Kind of age")).to_be_visible()
    values = page.evaluate("window.transferValues")
    assert max(values) == 1
    assert any(0 < value < 1 for value in values)
    dataset = Dataset.objects.get()
    assert page.url == f"{live_server.url}/datasets/{dataset.pk}/"
    assert dataset.status == Dataset.Status.READY
    assert dataset.row_count == ROWS
    assert dataset.name == "Register 2026"
    assert AuditEvent.objects.filter(
        action=AuditAction.DATASET_CONVERTED, object_id=dataset.pk
    ).exists()
    assert page.console_errors == []


def test_a_refused_file_comes_back_on_the_form_with_what_was_typed(page, live_server, tmp_path):
    # given a curator on the upload page and a table with a blank line inside
    _log_in(page, live_server, "/datasets/new/")
    csv_path = tmp_path / "broken.csv"
    csv_path.write_bytes(b"a,b\n1,2\n\n3,4\n")

    # when they upload it
    page.get_by_label("Name").fill("Broken 2026")
    page.get_by_label("File").set_input_files(str(csv_path))
    page.get_by_text("Set the budget yourself").click()
    page.get_by_label("Total privacy budget (ε)").fill("2.5")
    page.get_by_role("button", name="Upload").click()

    # then the form comes back with the error under the file and the other values kept
    expect(page.locator(".has-error .errorlist")).to_contain_text("Row 3 is blank")
    assert page.url == f"{live_server.url}/datasets/new/"
    assert page.input_value("#id_name") == "Broken 2026"
    assert page.input_value("#id_budget_epsilon") == "2.5"
    expect(page.locator("#upload-transfer")).to_be_hidden()
    assert Dataset.objects.count() == 0

    # and the form that came back is sent with the bar again
    fixed_path = tmp_path / "fixed.csv"
    fixed_path.write_bytes(b"a,b\n1,2\n3,4\n")
    page.get_by_label("File").set_input_files(str(fixed_path))
    page.get_by_role("button", name="Upload").click()
    page.wait_for_url(DATASET_PAGE)
    expect(page.get_by_label("Kind of a")).to_be_visible()
    expect(page.locator(".messages")).to_contain_text(
        "Uploaded. Now declare what is public about each column."
    )
    assert Dataset.objects.get().name == "Broken 2026"

    # and Back returns to the upload form, as after a plain post
    page.go_back()
    expect(page.get_by_role("heading", name="Upload a table")).to_be_visible()
    assert page.url == f"{live_server.url}/datasets/new/"
    assert page.console_errors == []


def test_the_conversion_page_moves_its_bar_without_reloading_then_shows_the_columns(
    page, live_server, settings, monkeypatch
):
    # given a dataset whose conversion is queued but not yet run
    settings.DATASET_CONVERT_INLINE_BYTES = 0
    monkeypatch.setattr("releases.services.datasets._send_conversion", lambda dataset_id: None)
    curator = _log_in(page, live_server, "/datasets/")
    dataset = dataset_create(
        owner=curator, name="Clinic 2026", upload=csv_upload(), budget_epsilon="1"
    )
    page.goto(f"{live_server.url}/datasets/{dataset.pk}/")
    expect(page.locator("#conversion-percent")).to_have_text("0%")
    page.evaluate("window.sameDocument = true")

    # when the worker reports progress
    Dataset.objects.filter(pk=dataset.pk).update(progress=0.42)

    # then the bar and the percentage follow, and the page is not reloaded (the <noscript>
    # refresh would have reloaded it after 2 s)
    expect(page.locator("#conversion-percent")).to_have_text("42%")
    assert page.get_attribute("#conversion-progress", "value") == "0.42"
    page.wait_for_timeout(2500)
    assert page.evaluate("window.sameDocument") is True
    screenshot(page, "dataset-conversion-progress")

    # when the conversion ends
    dataset_convert(dataset_id=dataset.pk)

    # then the page shows the columns to declare
    expect(page.get_by_label("Kind of age")).to_be_visible()
    assert page.console_errors == []


def test_the_conversion_page_shows_why_a_conversion_failed(
    page, live_server, settings, monkeypatch
):
    # given a queued dataset whose table has a blank line inside
    settings.DATASET_CONVERT_INLINE_BYTES = 0
    monkeypatch.setattr("releases.services.datasets._send_conversion", lambda dataset_id: None)
    curator = _log_in(page, live_server, "/datasets/")
    dataset = dataset_create(
        owner=curator,
        name="Broken",
        upload=csv_upload(b"a,b\n1,2\n\n3,4\n", "broken.csv"),
        budget_epsilon="1",
    )
    page.goto(f"{live_server.url}/datasets/{dataset.pk}/")
    expect(page.locator("#conversion-progress")).to_be_visible()

    # when the conversion fails
    dataset_convert(dataset_id=dataset.pk)

    # then the page names the reason
    expect(page.locator("#failure-reason")).to_contain_text("Row 3 is blank")
    assert page.console_errors == []


def test_without_javascript_the_form_posts_as_before(new_context, live_server, tmp_path):
    # given a browser with JavaScript off and a curator on the upload page
    context = new_context(java_script_enabled=False)
    page = context.new_page()
    _log_in(page, live_server, "/datasets/new/")
    csv_path = tmp_path / "clinic.csv"
    csv_path.write_bytes(b"name,age\nAnn,34\nBob,51\n")

    # when they upload a table
    page.get_by_label("Name").fill("Clinic 2026")
    page.get_by_label("File").set_input_files(str(csv_path))
    page.get_by_text("Set the budget yourself").click()
    page.get_by_label("Total privacy budget (ε)").fill("1")
    page.get_by_role("button", name="Upload").click()

    # then the plain post lands on the dataset page; the transfer bar never showed
    page.wait_for_url(DATASET_PAGE)
    expect(page.get_by_label("Kind of age")).to_be_visible()
    assert Dataset.objects.get().name == "Clinic 2026"
