"""Playwright driving Debian's Chromium against pytest-django's live server.

Never downloads a browser: Chromium comes from `apt-get install chromium` (see the Makefile).
"""

import os
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from tests.conftest import skip_or_fail

# Playwright's sync API runs an event loop in the test thread; the ORM calls the tests make there
# are ordinary synchronous ones.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
SCREENSHOTS = Path(
    os.environ.get("SCREENSHOT_DIR", Path(__file__).resolve().parents[2] / "var" / "screenshots")
)


@pytest.fixture(scope="session")
def chromium():
    if not Path(CHROMIUM).exists():
        skip_or_fail(f"Chromium not found at {CHROMIUM} (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        skip_or_fail("playwright is not installed")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


# Reports every Content-Security-Policy violation of a page to the test (pages with scripts on).
_REPORT_CSP_VIOLATIONS = """
document.addEventListener("securitypolicyviolation", (event) => {
  window.__reportCspViolation(
    `${event.effectiveDirective} refused ${event.blockedURI || "inline"} at ` +
      `${event.sourceFile}:${event.lineNumber} (${event.sample})`
  );
});
"""


@contextmanager
def csp_watched_context(chromium, **options) -> Iterator:
    """A browser context whose test fails on any Content-Security-Policy violation: the page's
    own report (the securitypolicyviolation event) or Chromium's console message, which also
    comes with scripts off."""
    context = chromium.new_context(**options)
    violations: list[str] = []
    context.expose_binding(
        "__reportCspViolation",
        lambda source, text: violations.append(f"{source['page'].url}: {text}"),
    )
    context.add_init_script(_REPORT_CSP_VIOLATIONS)

    def on_console(message) -> None:
        if "Content Security Policy" in message.text:
            violations.append(message.text)

    context.on("console", on_console)
    context.violations = violations
    try:
        yield context
        for open_page in context.pages:
            open_page.wait_for_timeout(50)  # lets reports of the last action arrive
    finally:
        context.close()
    assert violations == [], "Content-Security-Policy violations:\n" + "\n".join(violations)


@pytest.fixture
def new_context(chromium):
    """Makes browser contexts of other shapes (a phone, scripts off), each watched for
    Content-Security-Policy violations like ``page``'s."""
    with ExitStack() as contexts:
        yield lambda **options: contexts.enter_context(csp_watched_context(chromium, **options))


@pytest.fixture
def page(chromium):
    with csp_watched_context(
        chromium, viewport={"width": 1280, "height": 900}, accept_downloads=True
    ) as context:
        page = context.new_page()
        page.console_errors = []
        page.on("console", lambda m: m.type == "error" and page.console_errors.append(m.text))
        page.on("pageerror", lambda e: page.console_errors.append(str(e)))
        yield page


def screenshot(page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def wait_until(page, expression: str, timeout_s: float = 30) -> None:
    """Wait until a JavaScript expression is true in the page. Playwright's wait_for_function
    compiles its expression inside the page, which the Content-Security-Policy refuses (no
    eval); an evaluation from outside is not the page's own code."""
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise AssertionError(f"Not true within {timeout_s} s: {expression}")
        page.wait_for_timeout(10)


# Every page's states, shared by the accessibility scan and the Simplified Chinese crawl (imported
# last: the walk uses wait_until above).
from tests.browser.every_page import product  # noqa: E402, F401
