"""Every page of the product in the states its users see, walked in a real browser with the
pages' own JavaScript on: the walk the accessibility scan (test_accessibility.py) and the
Simplified Chinese crawl (test_chinese_every_page.py) share. It finds fields and buttons by their
ids and places, never by their words, so that it walks the pages in any language; a route added
later must be walked or listed in NOT_PAGES with its reason."""

from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.urls import Resolver404, resolve
from playwright.sync_api import Page

from privacy_engine.wording import phrase
from releases.models import Dataset, Release
from releases.services.approvals import dataset_approval_requirement_set
from releases.services.datasets import dataset_create, dataset_schema_update
from releases.services.ledger import budget_increase_request
from releases.services.releases import release_draft_create, release_submit
from releases.services.tables import NO_ROWS
from releases.services.versions import release_withdraw
from tests.browser.conftest import wait_until
from tests.conftest import CLINIC_CSV_CRLF, CLINIC_SCHEMA, csv_upload, make_user
from tests.url_patterns import every_route

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


def log_in(page: Page, base_url: str, username: str) -> None:
    page.goto(f"{base_url}/accounts/login/")
    page.locator("#id_username").fill(username)
    page.locator("#id_password").fill("pw-test-12345")
    page.locator("main form button[type=submit]").click()
    page.wait_for_selector("header form button.link")


def log_out(page: Page) -> None:
    page.locator("header form button.link").click()
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


def _publish(
    curator,
    dataset,
    *,
    epsilon: float,
    queries: list[dict],
    series=None,
    definition: dict | None = None,
    title: str = "Clinic visits 2026",
) -> Release:
    draft = release_draft_create(
        user=curator,
        dataset=dataset,
        title=title,
        definition=definition or {"kind": "pure_dp", "epsilon": epsilon},
        queries=queries,
        series_slug=series,
    )
    release_submit(release=draft, user=curator)  # the eager task runs on commit
    release = Release.objects.get(pk=draft.pk)
    assert release.status == Release.Status.PUBLISHED, release.failure_reason
    return release


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
    # What a conversion that found no rows stores (releases/services/tables.py).
    Dataset.objects.filter(pk=refused.pk).update(
        status=Dataset.Status.FAILED, failure_reason=phrase(NO_ROWS)
    )
    return {
        **_other_definitions_and_statistics(curator),
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


WARDS = b"ward,sex,age,visits\n" + b"".join(
    b"%s,%s,%d,%d\n" % ([b"a", b"b", b"c"][i % 3], [b"F", b"M"][(i // 3) % 2], 20 + i % 60, i % 7)
    for i in range(600)
)
WARDS_SCHEMA = {
    "columns": {
        "ward": {"kind": "categorical", "categories": ["a", "b", "c"], "other": "o", "fill": "a"},
        "sex": {"kind": "categorical", "categories": ["F", "M"], "other": "o", "fill": "F"},
        "age": {"kind": "numeric", "lower": 0, "upper": 100, "fill": 40},
        "visits": {"kind": "numeric", "lower": 0, "upper": 10, "fill": 0},
    },
    "declared_size": 600,
}
# Every definition and every kind of statistic the other dataset's pages show.
OTHER_RELEASES = {
    "approx": (
        {"kind": "approx_dp", "epsilon": 1.0, "delta": 1e-7},
        [{"kind": "count"}, {"kind": "mean", "column": "age"}],
    ),
    "blowfish_published": (
        {
            "kind": "blowfish",
            "epsilon": 1.0,
            "policy": {"graph": "distance_threshold", "column": "age", "theta": 5},
        },
        [{"kind": "sum", "column": "age"}],
    ),
    "kmeans": (
        {"kind": "pure_dp", "epsilon": 2.0},
        [{"kind": "kmeans", "columns": ["age", "visits"], "k": 2, "iterations": 3}],
    ),
    "synthetic": (
        {"kind": "pure_dp", "epsilon": 2.0},
        [{"kind": "synthetic", "columns": ["ward", "sex", "age"]}],
    ),
    "randomized": (
        {"kind": "blowfish", "epsilon": 1.0, "policy": {"graph": "full_domain"}},
        [{"kind": "randomized_response", "column": "sex"}],
    ),
    "table": (
        {"kind": "pure_dp", "epsilon": 1.0},
        [{"kind": "marginal", "columns": ["ward", "sex"]}],
    ),
}


def _other_definitions_and_statistics(curator) -> dict[str, Release]:
    """More tables (a Blowfish release needs a table of its own: its budget is accounted under
    its policy), each definition and statistic published from them, and drafts under (ε, δ)-DP
    and of k-means and a synthetic table, whose wizard pages say more."""
    tables = {}
    for copy, name in enumerate(("Wards", "Wards randomized", "Wards blowfish_published")):
        content = WARDS.replace(b"\n", b" " * copy + b"\n")  # other bytes: no duplicate upload
        table = dataset_create(
            owner=curator,
            name=name,
            upload=csv_upload(content, "wards.csv"),
            budget_epsilon="20",
            budget_delta="1e-6",
        )
        tables[name] = dataset_schema_update(dataset=table, user=curator, schema=WARDS_SCHEMA)
    wards = tables["Wards"]
    made = {
        name: _publish(
            curator,
            tables.get(f"Wards {name}", tables["Wards"]),
            epsilon=0,
            definition=definition,
            queries=queries,
            title=f"Wards {name}",
        )
        for name, (definition, queries) in OTHER_RELEASES.items()
    }
    made["approx_draft"] = release_draft_create(
        user=curator,
        dataset=wards,
        title="Wards draft",
        definition={"kind": "approx_dp", "epsilon": 0.5, "delta": 1e-7},
        queries=[{"kind": "count"}, {"kind": "mean", "column": "age"}],
    )
    made["models_draft"] = release_draft_create(
        user=curator,
        dataset=wards,
        title="Wards models",
        definition={"kind": "pure_dp", "epsilon": 1.0},
        queries=[q for name in ("kmeans", "synthetic") for q in OTHER_RELEASES[name][1]],
    )
    return made


# Plotly has drawn every chart of the page.
CHARTS_DRAWN = "document.querySelectorAll('div.chart:not(:has(.main-svg))').length === 0"
# The privacy step's script has answered: its odds view is filled in.
ODDS_SHOWN = "document.getElementById('odds-view').textContent !== '…'"


def walk_every_page(page: Page, base: str, product: dict, settings, check: Callable[[], None]):
    """Opens every page in each state of ``product`` and calls ``check`` once the page shows
    what its users see (its charts drawn, its script's answers in). Returns the route names
    walked."""
    walked: set[str] = set()

    def scan(ready: str | None = None, until: str | None = None) -> None:
        page.wait_for_load_state()
        if ready:
            page.wait_for_selector(ready)
        if until:
            wait_until(page, until)
        with suppress(Resolver404):  # the 404 page is no route
            walked.add(resolve(urlsplit(page.url).path).url_name or "")
        check()

    def visit(path: str, ready: str | None = None, until: str | None = None) -> None:
        page.goto(base + path)
        scan(ready, until)

    def submit_expecting(status: int) -> None:
        """Sends the page's main form and checks the error page's status."""
        with page.expect_navigation() as navigation:
            page.locator("main form button[type=submit]").first.click()
        assert navigation.value.status == status
        scan()

    dataset, slug = product["dataset"], product["first"].series.slug

    # the public
    visit("/")
    visit("/catalog/")
    visit(f"/catalog/{slug}/v1/", "#chart-1 .main-svg")
    visit(f"/catalog/{slug}/v2/", "#chart-3 .main-svg")
    for name in OTHER_RELEASES:
        visit(f"/catalog/{product[name].series.slug}/v1/", until=CHARTS_DRAWN)
    visit(f"/catalog/{slug}/v1/card/")
    visit(f"/catalog/{product['blowfish_published'].series.slug}/v1/card/")
    visit(f"/catalog/{slug}/diff/")
    visit("/api/docs/", ".swagger-ui .info")
    visit("/accounts/login/")
    page.locator("main form button[type=submit]").click()
    scan(".errorlist")  # the form with its errors
    visit("/no-such-page/")  # 404

    # a curator
    log_in(page, base, "curator1")
    visit("/datasets/")
    visit("/datasets/new/")
    page.locator("#upload-form button[type=submit]").click()
    scan(".has-error")  # the form with its errors
    visit(f"/datasets/{dataset.pk}/")
    # the raw-data deletion refused by the server (the browser asks for the empty fields itself)
    page.locator("#raw-delete-reason").fill("Collected in error\u200d")
    page.locator("#raw-delete-confirm").check()
    page.locator("#raw-delete button[type=submit]").click()
    scan("#raw-delete .errorlist")
    visit(f"/datasets/{product['undeclared'].pk}/")
    visit(f"/datasets/{product['converting'].pk}/")
    visit(f"/datasets/{product['refused'].pk}/")
    visit(f"/datasets/{dataset.pk}/ledger/", "#ledger-chart .main-svg")
    page.locator("#budget-increase-form button[type=submit]").click()
    scan("#budget-increase-form .has-error")  # the request with its errors
    visit(f"/datasets/{product['approx'].dataset_id}/ledger/", "#ledger-chart .main-svg")
    visit(f"/datasets/{dataset.pk}/releases/new/", until=ODDS_SHOWN)
    for name in ("draft", "approx_draft"):
        visit(f"/releases/{product[name].pk}/privacy/", until=ODDS_SHOWN)
    visit(f"/releases/{product['blowfish'].pk}/privacy/", "#distance-chart .main-svg")
    for name in ("draft", "models_draft"):
        visit(f"/releases/{product[name].pk}/statistics/", ".share")
        visit(f"/releases/{product[name].pk}/preview/", "#error-chart .main-svg")
        visit(f"/releases/{product[name].pk}/confirm/")
    visit(f"/releases/{product['approx_draft'].pk}/confirm/")
    visit(f"/releases/{product['blowfish'].pk}/confirm/")
    for name in ("first", "failed", "queued", "awaiting"):
        visit(f"/releases/{product[name].pk}/")
    # 400: a file name longer than the server accepts
    page.goto(f"{base}/datasets/new/")
    page.locator("#id_name").fill("Long name")
    page.locator("#id_file").set_input_files(
        {"name": "n" * 2000 + ".csv", "mimeType": "text/csv", "buffer": b"a,b\n1,2\n"}
    )
    page.locator("#upload-form button[type=submit]").click()  # sent by the page's script
    page.wait_for_selector("#bad-request")
    check()
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
    page.locator("#id_username").fill("curator1")
    page.locator("#id_password").fill("pw-test-12345")
    submit_expecting(403)

    # 429: a login paused after repeated failures
    for attempt in range(5):
        page.goto(f"{base}/accounts/login/")
        page.locator("#id_username").fill("nobody")
        page.locator("#id_password").fill("wrong-password")
        if attempt < 4:
            page.locator("main form button[type=submit]").click()
            page.wait_for_load_state()
        if attempt == 0:
            scan(".errorlist")  # the login page refusing the credentials
    submit_expecting(429)

    # 413: a body above the route's limit
    settings.REQUEST_MAX_BODY_BYTES = 100
    visit("/accounts/login/")
    page.locator("#id_username").fill("curator1")
    page.locator("#id_password").fill("pw-test-12345")
    submit_expecting(413)
    return walked


def routes_not_walked(walked: set[str]) -> set[str]:
    """The product's page routes (the admin's and the API's aside) the walk did not open."""
    admin = {name for path, name in every_route() if path.startswith(("/admin/", "/api/v1/"))}
    return {name for _, name in every_route()} - admin - set(NOT_PAGES) - walked
