"""Browser tests: Playwright (Python) driving Debian's Chromium against a live server.

Chromium comes from Debian (`make test` installs the package when it is missing); Playwright never
downloads a browser. A screenshot of the page is saved under test-artifacts/ when a test fails.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("FLEETCAP_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PASSWORD = "pw-for-tests-only"


@pytest.fixture(scope="session")
def browser() -> Iterator:
    # Playwright's sync API runs an event loop in this thread; Django's ORM calls made by the test
    # itself (fixtures, assertions) are still synchronous, which is what this flag allows.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"Debian's Chromium is not installed at {CHROMIUM}: run `make test` (it installs it).")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed:
        for page in getattr(item, "_pages", []):
            ARTIFACTS.mkdir(exist_ok=True)
            path = ARTIFACTS / f"{item.name}-{uuid.uuid4().hex[:6]}.png"
            try:
                page.screenshot(path=str(path), full_page=True)
                report.sections.append(("screenshot", str(path)))
            except Exception as exc:  # a closed page cannot be shot; say so instead of hiding the failure
                report.sections.append(("screenshot", f"not taken: {exc}"))


@pytest.fixture
def open_page(request, browser, live_server):
    """``open_page(username)``: a new browser context logged in through the login form."""
    contexts = []
    request.node._pages = []

    def make(username: str):
        context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(15_000)
        request.node._pages.append(page)
        page.goto(f"{live_server.url}/accounts/login/")
        page.fill("#id_username", username)
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(f"{live_server.url}/")
        return page

    yield make
    for context in contexts:
        context.close()
