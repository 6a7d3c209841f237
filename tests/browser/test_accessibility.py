"""axe-core on every page of the product, in the states its users see, with the pages' own
JavaScript on; a negative control proving the check can fail; and the wizard completed with the
keyboard alone."""

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from axe_playwright_python.sync_playwright import Axe
from django.urls import Resolver404, resolve
from playwright.sync_api import Page

from releases.models import Dataset, LedgerEntry, Release
from releases.services.approvals import dataset_approval_requirement_set
from releases.services.datasets import dataset_create, dataset_schema_update
from releases.services.ledger import budget_increase_request
from releases.services.releases import release_draft_create, release_submit
from releases.services.versions import release_withdraw
from tests.browser.conftest import wait_until
from tests.conftest import CLINIC_CSV_CRLF, CLINIC_SCHEMA, csv_upload, make_user
from tests.url_patterns import every_route

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AXE = Axe()
FAILING_IMPACTS = {"serious", "critical"}

# Routes that are no page of their own, each with the reason; every other route must be crawled,
# so a page added later is scanned from the day it exists.
NOT_PAGES = {
    "logout": "POST only; redirects",
    "set_language": "POST only: the language switcher's form on every page; redirects back",
    "catalog-feed": "an Atom feed (XML), not a page",
    "audit-export": "a CSV download",
    "audit-dataset-approval": "POST only; redirects to the report",
    "approval-approve": "POST only; redirects to the review",
    "approval-reject": "POST only; redirects to the review",
    "budget-increase-approve": "POST only; redirects to the ledger",
    "budget-increase-reject": "POST only; redirects to the ledger",
    "dataset-raw-delete": "POST only; its refusal is the dataset page, crawled with errors",
    "wizard-blowfish-explanation": "JSON for the privacy step's script",
    "wizard-risk-card": "POST only: the privacy step's risk card, scanned there",
    "release-publish-again": "POST only; redirects to the status page",
    "release-withdraw": "POST only; redirects to the status page",
    "release-new-version": "POST only; redirects to the wizard",
    "api-schema": "the OpenAPI document (YAML/JSON)",
}


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


def log_in(page: Page, base_url: str, username: str) -> None:
    page.goto(f"{base_url}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill("pw-test-12345")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_selector("header form button.link")


def log_out(page: Page) -> None:
    page.get_by_role("button", name="Log out").click()
    page.wait_for_load_state()


@contextmanager
def broker_without_worker() -> Iterator[None]:
    """Tasks sent to an in-memory broker no worker reads: a submitted release stays queued."""
    from config.celery import app

    previous = app.conf.broker_url
    app.conf.broker_url = "memory://"
    app._pool = None
    app.amqp._producer_pool = None
    app.conf.task_always_eager = False
    try:
        yield
    finally:
        app.conf.task_always_eager = True
        app.conf.broker_url = previous
        app._pool = None
        app.amqp._producer_pool = None


def _publish(curator, dataset, *, epsilon: float, queries: list[dict], series=None) -> Release:
    draft = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Clinic visits 2026",
        definition={"kind": "pure_dp", "epsilon": epsilon},
        queries=queries,
        series_slug=series,
    )
    release_submit(release=draft, user=curator)  # the eager task runs on commit
    return Release.objects.get(pk=draft.pk)


# Statistics whose pages have more to show: a range tool, quantiles.
MORE_PRODUCTS = [
    {"kind": "range_histogram", "column": "age", "bins": 20},
    {"kind": "quantile", "column": "age", "quantiles": [0.25, 0.5, 0.75]},
]


@pytest.fixture
def product(settings):
    """Every state of every page: a dataset with two published versions of a series (the first
    withdrawn), a failed, a queued and an awaiting-approval release, an ε-DP and a Blowfish
    draft, a pending budget increase; a dataset whose schema is not declared yet, one still
    converting and one whose upload failed."""
    curator = make_user("curator1", "curator")
    officer = make_user("officer1", "compliance")
    dataset = dataset_create(
        owner=curator, name="Clinic", upload=csv_upload(), budget_epsilon="5.0"
    )
    dataset = dataset_schema_update(dataset=dataset, user=curator, schema=CLINIC_SCHEMA)
    queries = [{"kind": "count"}, {"kind": "histogram", "column": "sex"}]
    first = _publish(curator, dataset, epsilon=0.5, queries=queries)
    second = _publish(
        curator,
        dataset,
        epsilon=0.8,
        queries=[*queries, *MORE_PRODUCTS],
        series=first.series.slug,
    )
    assert (first.status, second.version) == (Release.Status.PUBLISHED, 2)
    release_withdraw(release=first, user=curator, reason="A coding error in the sex column.")

    # A signing key the worker cannot use fails the release (a real failure, with its reason).
    key = Path(settings.SIGNING_KEY_PATH)
    good_key = key.read_bytes()
    key.write_bytes(b"-----BEGIN PRIVATE KEY-----\ngarbage\n-----END PRIVATE KEY-----\n")
    failed = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Clinic failed",
        definition={"kind": "pure_dp", "epsilon": 0.2},
        queries=queries,
    )
    release_submit(release=failed, user=curator)
    key.write_bytes(good_key)
    failed.refresh_from_db()
    assert failed.status == Release.Status.FAILED

    queued = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Clinic queued",
        definition={"kind": "pure_dp", "epsilon": 0.2},
        queries=queries,
    )
    with broker_without_worker():
        release_submit(release=queued, user=curator)
    queued.refresh_from_db()
    assert queued.status == Release.Status.QUEUED

    dataset_approval_requirement_set(dataset=dataset, user=officer, required=True)
    awaiting = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Clinic awaiting approval",
        definition={"kind": "pure_dp", "epsilon": 0.2},
        queries=queries,
    )
    release_submit(release=awaiting, user=curator)
    assert Release.objects.get(pk=awaiting.pk).status == Release.Status.AWAITING_APPROVAL

    draft = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Clinic draft",
        definition={"kind": "pure_dp", "epsilon": 0.5},
        queries=[*queries, *MORE_PRODUCTS],
    )
    blowfish = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Clinic Blowfish draft",
        definition={
            "kind": "blowfish",
            "epsilon": 0.5,
            "policy": {"graph": "distance_threshold", "column": "age", "theta": 5},
        },
        queries=[{"kind": "sum", "column": "age"}],
    )
    budget_increase_request(
        dataset=dataset, user=curator, epsilon="1", reason="A second survey wave."
    )

    undeclared = dataset_create(
        owner=curator, name="Clinic raw", upload=csv_upload(CLINIC_CSV_CRLF), budget_epsilon="1"
    )
    converting = dataset_create(
        owner=curator,
        name="Clinic converting",
        upload=csv_upload(b"a,b\n1,2\n", name="small.csv"),
        budget_epsilon="1",
    )
    Dataset.objects.filter(pk=converting.pk).update(status=Dataset.Status.PROCESSING)
    refused = dataset_create(
        owner=curator,
        name="Clinic refused",
        upload=csv_upload(b"a,b\n3,4\n", name="refused.csv"),
        budget_epsilon="1",
    )
    Dataset.objects.filter(pk=refused.pk).update(
        status=Dataset.Status.FAILED, failure_reason="Row 3 is blank."
    )
    return {
        "dataset": dataset,
        "first": first,
        "failed": failed,
        "queued": queued,
        "awaiting": awaiting,
        "draft": draft,
        "blowfish": blowfish,
        "refused": refused,
        "undeclared": undeclared,
        "converting": converting,
    }


# The privacy step's script has answered: its odds view is filled in.
ODDS_SHOWN = "document.getElementById('odds-view').textContent.includes('at most')"


def test_every_page_has_no_serious_or_critical_accessibility_violation(
    page, live_server, product, settings
):
    base = live_server.url
    violations: list[str] = []
    crawled: set[str] = set()

    def scan(ready: str | None = None, until: str | None = None) -> None:
        """Checks the page once it shows ``ready`` (a selector) and ``until`` (a JavaScript
        expression) is true: its scripts have drawn what users see."""
        page.wait_for_load_state()
        if ready:
            page.wait_for_selector(ready)
        if until:
            wait_until(page, until)
        with suppress(Resolver404):  # the 404 page is no route
            crawled.add(resolve(urlsplit(page.url).path).url_name or "")
        violations.extend(serious_violations(page))

    def visit(path: str, ready: str | None = None, until: str | None = None) -> None:
        page.goto(base + path)
        scan(ready, until)

    dataset, slug = product["dataset"], product["first"].series.slug
    draft = product["draft"]

    # the public
    visit("/")
    visit("/catalog/")
    visit(f"/catalog/{slug}/v1/", "#chart-1 .main-svg")
    visit(f"/catalog/{slug}/v2/", "#chart-3 .main-svg")
    visit(f"/catalog/{slug}/v1/card/")
    visit(f"/catalog/{slug}/diff/")
    visit("/api/docs/", ".swagger-ui .info")
    visit("/accounts/login/")
    page.get_by_role("button", name="Log in").click()
    scan(".errorlist")  # the form with its errors
    visit("/no-such-page/")  # 404

    # a curator
    log_in(page, base, "curator1")
    visit("/datasets/")
    visit("/datasets/new/")
    page.get_by_role("button", name="Upload").click()
    scan(".has-error")  # the form with its errors
    visit(f"/datasets/{dataset.pk}/")
    # the raw-data deletion refused by the server (the browser asks for the empty fields itself)
    page.get_by_label("Why delete the raw data?").fill("Collected in error\u200d")
    page.get_by_label("I understand that the raw data cannot be recovered.").check()
    page.locator("#raw-delete").get_by_role("button", name="Delete raw data").click()
    scan("#raw-delete .errorlist")
    visit(f"/datasets/{product['undeclared'].pk}/")
    visit(f"/datasets/{product['converting'].pk}/")
    visit(f"/datasets/{product['refused'].pk}/")
    visit(f"/datasets/{dataset.pk}/ledger/", "#ledger-chart .main-svg")
    page.locator("#budget-increase-form").get_by_role("button").click()
    scan("#budget-increase-form .has-error")  # the request with its errors
    visit(f"/datasets/{dataset.pk}/releases/new/", until=ODDS_SHOWN)
    visit(f"/releases/{draft.pk}/privacy/", until=ODDS_SHOWN)
    visit(f"/releases/{product['blowfish'].pk}/privacy/", "#distance-chart .main-svg")
    visit(f"/releases/{draft.pk}/statistics/", ".share")
    visit(f"/releases/{draft.pk}/preview/", "#error-chart .main-svg")
    visit(f"/releases/{draft.pk}/confirm/")
    for name in ("first", "failed", "queued", "awaiting"):
        visit(f"/releases/{product[name].pk}/")
    # 400: a file name longer than the server accepts
    visit("/datasets/new/")
    page.get_by_label("Name").fill("Long name")
    page.get_by_label("File").set_input_files(
        {"name": "n" * 2000 + ".csv", "mimeType": "text/csv", "buffer": b"a,b\n1,2\n"}
    )
    page.get_by_role("button", name="Upload").click()
    page.wait_for_selector("text=This request could not be read")
    violations.extend(serious_violations(page))
    log_out(page)

    # compliance
    log_in(page, base, "officer1")
    visit("/audit/")
    visit(f"/audit/datasets/{dataset.pk}/report/", "#ledger-chart .main-svg")
    visit("/audit/approvals/")
    visit(f"/audit/approvals/{product['awaiting'].pk}/")
    visit(f"/datasets/{dataset.pk}/ledger/", "#ledger-chart .main-svg")  # with approve/reject
    log_out(page)

    # 403: a form whose CSRF cookie is gone
    page.goto(f"{base}/accounts/login/")
    page.context.clear_cookies()
    page.get_by_label("Username").fill("curator1")
    page.get_by_label("Password").fill("pw-test-12345")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_selector("text=This form could not be accepted")
    violations.extend(serious_violations(page))

    # 429: a login paused after repeated failures
    for attempt in range(5):
        page.goto(f"{base}/accounts/login/")
        page.get_by_label("Username").fill("nobody")
        page.get_by_label("Password").fill("wrong-password")
        page.get_by_role("button", name="Log in").click()
        page.wait_for_load_state()
        if attempt == 0:
            scan(".errorlist")  # the login page refusing the credentials
    page.wait_for_selector("text=Login paused")
    violations.extend(serious_violations(page))

    # 413: a body above the route's limit
    settings.REQUEST_MAX_BODY_BYTES = 100
    visit("/accounts/login/")
    page.get_by_label("Username").fill("curator1")
    page.get_by_label("Password").fill("pw-test-12345")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_selector("text=Request too large")
    violations.extend(serious_violations(page))

    assert violations == [], "Accessibility violations:\n" + "\n".join(violations)
    admin = {name for path, name in every_route() if path.startswith(("/admin/", "/api/v1/"))}
    pages = {name for _, name in every_route()} - admin - set(NOT_PAGES)
    assert pages - crawled == set()
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
