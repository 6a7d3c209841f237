"""The curator's guided path in Simplified Chinese (issue 13, point 7): a curator whose browser
prefers zh-Hans finds no interface text left in English from the upload (blank, and refused
with its errors) through the dataset page, each step of the wizard (privacy, statistics, preview
with its charts, confirmation) to the submitted release's page and the list of datasets. The
same check as the public pages' (tests/browser/test_chinese_pages.py): data (the table's name,
its columns and categories, the release's title), numbers, formulas, addresses, hashes and
``translate="no"`` are set aside; a run of three or more English words left is untranslated.
The same crawl in English is its negative control."""

import pytest
from playwright.sync_api import Page

from tests.browser.conftest import wait_until
from tests.browser.test_chinese_pages import (
    CHART_WORDS,
    CHINESE,
    ENGLISH,
    TITLE,
    VISIBLE_TEXTS,
    untranslated,
)
from tests.conftest import CLINIC_CSV, make_user
from tests.languages import compiled_catalogues  # noqa: F401 (a fixture)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("compiled_catalogues"),
]


def log_in(page: Page, live_server) -> None:
    page.goto(f"{live_server.url}/accounts/login/")
    page.locator("#id_username").fill("curator1")
    page.locator("#id_password").fill("pw-test-12345")
    page.locator("#id_password").press("Enter")
    page.wait_for_url(f"{live_server.url}/")


def crawl(new_context, live_server, tmp_path, options: dict) -> dict[str, list[str]]:
    """Each page of the path, read with a browser of the given locale: its untranslated runs
    and its <html lang>."""
    make_user("curator1", "curator")
    page = new_context(**options).new_page()
    log_in(page, live_server)
    found = {}

    def read(name: str) -> None:
        page.wait_for_load_state("load")
        found[name] = untranslated(page.evaluate(VISIBLE_TEXTS))
        found[f"{name} lang"] = [page.evaluate("document.documentElement.lang")]

    page.goto(f"{live_server.url}/datasets/new/")
    read("upload")
    # sent with nothing chosen: the page again, with its errors
    page.locator("#upload-form button[type=submit]").click()
    page.wait_for_selector(".errorlist")
    read("upload refused")

    # a table uploaded with the two questions answered: the dataset page and its budget's reasons
    table = tmp_path / "clinic.csv"
    table.write_bytes(CLINIC_CSV)
    page.locator("#id_name").fill(TITLE)
    page.locator("#id_file").set_input_files(str(table))
    page.locator("#id_declared_size").fill("300")
    page.locator("#upload-form button[type=submit]").click()
    page.wait_for_selector("#schema-form")
    page.locator("#budget-reasons summary").click()
    read("dataset")
    # the suggestion read from the data, then saved: the warnings it leaves
    page.locator("#fill-from-data").click()
    page.wait_for_selector("#schema-form")
    read("dataset suggestion")
    page.locator("#schema-form button[value=save]").click()
    page.wait_for_selector("#from-data-columns")
    read("dataset saved")

    # the wizard's privacy step, its sentences written by the script once the server answers
    page.locator("#save-and-continue").click()
    page.wait_for_selector("#privacy-form")
    page.locator("#id_title").fill(TITLE)
    wait_until(page, "document.getElementById('odds-view').textContent !== '…'")
    wait_until(page, "document.getElementById('cumulative-view').textContent !== ''")
    read("privacy")
    # and the starting point suggested from the two questions
    page.goto(f"{page.url.split('?')[0]}?harm=low&releases=few")
    page.wait_for_selector("#suggestion")
    read("privacy suggestion")

    # the statistics step, with a statistic added in one click and one's accuracy asked for
    page.locator("#id_title").fill(TITLE)
    page.locator("#privacy-form > p > button[type=submit]").click()
    page.wait_for_selector("#statistics-form")
    read("statistics")
    page.locator(".quick-add").first.click()
    wait_until(page, "document.getElementById('quick-add-status').textContent !== ''")
    target = page.locator("tr.statistic-row .target").first
    target.fill("10")
    target.press("Tab")
    wait_until(
        page, "!['', '…'].includes(document.querySelector('tr.statistic-row .needed').textContent)"
    )
    read("statistics edited")

    # the preview, the confirmation, the submitted release's page and the list of datasets
    page.locator("#save-statistics").click()
    page.wait_for_selector("#error-chart .main-svg")
    read("preview")
    # and what Plotly drew: axis titles, legends, chart titles
    found["preview"] += untranslated(page.locator(CHART_WORDS).all_text_contents())
    page.locator("a.button[href$='/confirm/']").click()
    page.wait_for_selector("#summary")
    read("confirm")
    page.locator("#confirm-data-derived").check()  # the bounds were filled in from the data
    page.locator("main form:not([action]) button[type=submit]").click()
    page.wait_for_selector("#release-status")
    read("release status")
    page.goto(f"{live_server.url}/datasets/")
    read("datasets")
    return found


@pytest.mark.parametrize("options", [CHINESE], ids=["zh-Hans"])
def test_a_chinese_curator_finds_no_english_on_the_guided_path(
    new_context, live_server, tmp_path, options
):
    # when a curator whose browser is set to Chinese walks the guided path
    found = crawl(new_context, live_server, tmp_path, options)

    # then every page says it is in Chinese and no interface text is left in English
    languages = {name: texts for name, texts in found.items() if name.endswith(" lang")}
    assert set(map(tuple, languages.values())) == {("zh-hans",)}
    left = {name: runs for name, runs in found.items() if runs and name not in languages}
    assert left == {}


def test_the_same_walk_in_english_finds_english_everywhere(new_context, live_server, tmp_path):
    # when the same walk is read by an English browser (the negative control)
    found = crawl(new_context, live_server, tmp_path, ENGLISH)

    # then the check flags every page: it can see untranslated text
    pages = [name for name in found if not name.endswith(" lang")]
    assert [name for name in pages if not found[name]] == []
    assert {tuple(found[f"{name} lang"]) for name in pages} == {("en",)}
