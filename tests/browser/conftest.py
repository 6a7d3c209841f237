"""Playwright driving Debian's Chromium against pytest-django's live server.

Never downloads a browser: Chromium comes from `apt-get install chromium` (see the Makefile).
"""

import os
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


@pytest.fixture
def page(chromium):
    context = chromium.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    page = context.new_page()
    page.console_errors = []
    page.on("console", lambda m: m.type == "error" and page.console_errors.append(m.text))
    page.on("pageerror", lambda e: page.console_errors.append(str(e)))
    yield page
    context.close()


def screenshot(page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
