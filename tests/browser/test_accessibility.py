"""axe-core on every page of the product, in the states its users see, with the pages' own
JavaScript on; a negative control proving the check can fail; and the wizard completed with the
keyboard alone."""

from decimal import Decimal

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page

from releases.models import LedgerEntry, Release
from releases.services.datasets import dataset_create, dataset_schema_update
from tests.browser.conftest import wait_until
from tests.browser.every_page import (
    broker_without_worker,
    routes_not_walked,
    walk_every_page,
)
from tests.conftest import CLINIC_SCHEMA, csv_upload, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AXE = Axe()
FAILING_IMPACTS = {"serious", "critical"}


def serious_violations(page: Page) -> list[str]:
    """axe-core's serious and critical violations on the page as it is now: one line per rule,
    naming the page and the offending nodes' targets."""
    results = AXE.run(page)
    return [
        f"{violation['id']} ({violation['impact']}) on {page.url}: "
        + "; ".join(" ".join(node["target"]) for node in violation["nodes"])
        for violation in results.response["violations"]
        if violation["impact"] in FAILING_IMPACTS
    ]


def test_every_page_has_no_serious_or_critical_accessibility_violation(
    page, live_server, product, settings
):
    # when every page is scanned in each state its users see
    violations: list[str] = []

    def check() -> None:
        violations.extend(serious_violations(page))

    walked = walk_every_page(page, live_server.url, product, settings, check)

    # then none has a serious or critical violation, and no page was left out
    assert violations == [], "Accessibility violations:\n" + "\n".join(violations)
    assert routes_not_walked(walked) == set()
    # The error pages' own statuses are the only console errors.
    unexpected = [
        error
        for error in page.console_errors
        if not error.startswith("Failed to load resource: the server responded with a status of 4")
    ]
    assert unexpected == []


BROKEN_PAGE = """<!doctype html><html lang="en"><head><title>Broken</title></head><body>
<main><h1>Broken</h1><form><input type="text" name="q"></form><img src="/static/favicon.svg">
</main></body></html>"""


def test_the_check_fails_a_page_with_an_unlabelled_field_and_an_image_without_text(page):
    # given a page whose field has no label and whose image has no text alternative
    page.set_content(BROKEN_PAGE)

    # when it is checked
    found = serious_violations(page)

    # then both are named, each with its node
    assert [line.split(" ", 1)[0] for line in found] == ["image-alt", "label"]
    assert found[0].endswith(": img")
    assert found[1].endswith(": input")


def test_the_check_fails_a_real_page_given_an_unlabelled_field(page, live_server):
    # given a page of the app that passes the check
    page.goto(f"{live_server.url}/catalog/")
    assert serious_violations(page) == []

    # when a field without a label and an image without a text alternative are added to it
    page.evaluate(
        "document.querySelector('main').insertAdjacentHTML('beforeend',"
        ' \'<input id="unlabelled" type="text"><img id="bare" src="/static/favicon.svg">\')'
    )

    # then the check names both
    found = serious_violations(page)
    assert [line.split(" ", 1)[0] for line in found] == ["image-alt", "label"]
    assert found[0].endswith(": #bare")
    assert found[1].endswith(": #unlabelled")


# True when the focused element shows where the keyboard is: it matches :focus-visible and
# draws an outline at least 2 px wide.
FOCUS_SHOWN = """(() => {
  const element = document.activeElement;
  const style = getComputedStyle(element);
  return element.matches(":focus-visible") && style.outlineStyle !== "none"
    && parseFloat(style.outlineWidth) >= 2;
})()"""


def tab_to(page: Page, selector: str, *, backwards: bool = False, limit: int = 80) -> None:
    """Presses Tab (or Shift+Tab) until the element matching ``selector`` has the focus,
    checking that every element the keyboard passes through shows its focus."""
    key = "Shift+Tab" if backwards else "Tab"
    for _ in range(limit):
        page.keyboard.press(key)
        if page.evaluate("document.activeElement === document.body"):
            continue  # wrapped past the end of the page
        outline = page.evaluate(FOCUS_SHOWN)
        focused = page.evaluate("document.activeElement.outerHTML.slice(0, 120)")
        assert outline, f"focus not visible on {focused} at {page.url}"
        if page.evaluate("(s) => document.activeElement.matches(s)", selector):
            return
    raise AssertionError(f"{selector} not reached with {key} within {limit} presses on {page.url}")


def choose_with_arrows(page: Page, value: str, limit: int = 20) -> None:
    """Moves the focused select down, option by option, to ``value``."""
    for _ in range(limit):
        if page.evaluate("document.activeElement.value") == value:
            return
        page.keyboard.press("ArrowDown")
    raise AssertionError(f"option {value} not reached with ArrowDown")


def test_a_curator_completes_the_wizard_with_the_keyboard_alone(page, live_server):
    # given a curator and a dataset whose public shape is declared
    curator = make_user("curator1", "curator")
    dataset = dataset_create(
        owner=curator, name="Clinic", upload=csv_upload(), budget_epsilon="2.0"
    )
    dataset = dataset_schema_update(dataset=dataset, user=curator, schema=CLINIC_SCHEMA)

    # when they log in and walk the wizard with Tab, Shift+Tab, arrows, Space, Enter and typing
    page.goto(f"{live_server.url}/accounts/login/")
    tab_to(page, "#id_username")
    page.keyboard.type("curator1")
    tab_to(page, "#id_password")
    page.keyboard.type("pw-test-12345")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{live_server.url}/")
    tab_to(page, "a[href='/datasets/']")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{live_server.url}/datasets/")
    tab_to(page, f"a[href='/datasets/{dataset.pk}/']")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{live_server.url}/datasets/{dataset.pk}/")
    tab_to(page, f"a[href='/datasets/{dataset.pk}/releases/new/']")
    page.keyboard.press("Enter")

    # privacy: a title and ε, the definition left at ε-DP
    page.wait_for_selector("#privacy-form")
    tab_to(page, "#id_title")
    page.keyboard.type("Keyboard release")
    tab_to(page, "#id_epsilon")
    page.keyboard.type("0.5")
    wait_until(page, "document.getElementById('id_truth_probability').value !== ''")
    tab_to(page, "#privacy-form button[type=submit]")
    page.keyboard.press("Enter")

    # statistics: the count it starts with, and a histogram of sex added with Space
    page.wait_for_selector("#statistics-form")
    tab_to(page, "#add-statistic")
    page.keyboard.press("Space")
    tab_to(page, "select[name='stat-1-kind']", backwards=True)
    choose_with_arrows(page, "histogram")
    tab_to(page, "select[name='stat-1-column']")
    choose_with_arrows(page, "sex")
    tab_to(page, "#statistics-form button[type=submit]")
    page.keyboard.press("Enter")

    # preview, then confirm
    page.wait_for_selector("#error-chart .main-svg")
    tab_to(page, "a.button[href$='/confirm/']")
    page.keyboard.press("Enter")
    page.wait_for_selector("#summary")
    with broker_without_worker():
        tab_to(page, "main form button[type=submit]")
        page.keyboard.press("Enter")
        page.wait_for_selector("#release-status")

    # then the release was submitted as chosen: queued for a worker, its budget reserved
    release = Release.objects.get(title="Keyboard release")
    assert release.status == Release.Status.QUEUED
    assert release.definition == {"kind": "pure_dp", "epsilon": 0.5}
    assert [q["kind"] for q in release.queries] == ["count", "histogram"]
    assert release.queries[1]["column"] == "sex"
    entry = release.ledger_entry
    assert (entry.state, entry.epsilon) == (LedgerEntry.State.RESERVED, Decimal("0.5"))
    assert page.url == f"{live_server.url}/releases/{release.pk}/"
    assert page.console_errors == []
